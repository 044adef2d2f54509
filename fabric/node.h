// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// Nodes and ports of the simulated subnet: plain state, no behaviour.
//
// Lifetime rules: the Subnet owns every Node through a unique_ptr, so a Node
// never moves. A Node owns its ports in a vector that is sized once at
// creation and never resized, so Port pointers (Port::peer, Port::node and
// the pointers other layers keep) stay valid for the life of the Subnet.
#pragma once

#include "fabric/types.h"

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <unordered_map>
#include <vector>

namespace ibemu::fabric {

struct Node;
class HostStack;

/*
 * One end of a cable across daemons, as its daemon reports it to the
 * daemon at the other end (fabric/remote_cable.h): the inputs of link
 * training, which only that daemon can change.
 */
struct CableEnd {
	bool cabled = false; /* the cable is plugged in at this end */
	bool disabled = false; /* PortPhysicalState Disabled */
	uint8_t widthEnabled = 0;
	uint8_t widthSupported = 0;
	uint8_t speedEnabled = 0;
	uint8_t speedExtEnabled = 0;
	Speed speedSupported = Speed::SDR;
	uint8_t degradedWidth = 0;
	std::optional<Speed> degradedSpeed;
	uint32_t retrains = 0; /* Port::retrains: a change retrains the link */

	bool operator==(const CableEnd &) const = default;
};

/* SLtoVLMappingTable: VL for each of the 16 SLs. */
using Sl2Vl = std::array<uint8_t, 16>;

/* VLArbitrationTable entry (IBA 14.2.5.9): a VL and its weight. */
struct VlArbEntry {
	uint8_t vl = 0;
	uint8_t weight = 0;
};
/* The four 32-entry blocks: low 0-31, low 32-63, high 0-31, high 32-63. */
using VlArbTables = std::array<std::array<VlArbEntry, 32>, 4>;

/*
 * Port counters kept in host order. The 32-bit PortCounters view and the
 * 64-bit PortCountersExtended view are separate attributes that a PMA Set
 * clears independently, so both are kept.
 */
struct PortCounters {
	uint16_t symbolErrors = 0;
	uint8_t linkErrorRecovery = 0;
	uint8_t linkDowned = 0;
	uint16_t rcvErrors = 0;
	uint16_t rcvRemotePhysErrors = 0;
	uint16_t rcvSwitchRelayErrors = 0;
	uint16_t xmitDiscards = 0;
	uint8_t xmitConstraintErrors = 0;
	uint8_t rcvConstraintErrors = 0;
	uint8_t localLinkIntegrityErrors = 0; /* 4 bits */
	uint8_t excessiveBufferOverruns = 0; /* 4 bits */
	uint16_t vl15Dropped = 0;
	uint32_t xmitData = 0; /* 32-bit saturating view, in 4-octet words */
	uint32_t rcvData = 0;
	uint32_t xmitPkts = 0;
	uint32_t rcvPkts = 0;
	uint32_t xmitWait = 0;

	uint64_t extXmitData = 0; /* PortCountersExtended */
	uint64_t extRcvData = 0;
	uint64_t extXmitPkts = 0;
	uint64_t extRcvPkts = 0;
	uint64_t extUnicastXmitPkts = 0;
	uint64_t extUnicastRcvPkts = 0;
	uint64_t extMulticastXmitPkts = 0;
	uint64_t extMulticastRcvPkts = 0;
};

/*
 * A damaged cable end (`ibemu errors`): packets crossing the cable are lost
 * with these probabilities, drawn from a generator seeded once so that the
 * same packets meet the same fate. See fabric/link_faults.cpp.
 */
struct LinkErrors {
	double dropRate = 0; /* symbol errors: the receiver cannot frame the packet */
	double corruptRate = 0; /* a bad VCRC/ICRC: the receiver discards it */
	uint64_t seed = 0;
	std::mt19937_64 rng;
	uint64_t dropped = 0; /* packets this cable end lost, by kind */
	uint64_t corrupted = 0;
};

struct Port {
	Node *node = nullptr;
	uint8_t num = 0;
	Port *peer = nullptr; /* the port at the other end of the cable */
	HostStack *host = nullptr; /* host MAD stack bound to a CA port, if any */

	uint64_t guid = 0;

	/* PortInfo (IBA 14.2.5.6), in host order */
	uint64_t mkey = 0;
	uint64_t gidPrefix = 0xfe80000000000000ULL;
	uint16_t lid = 0;
	uint16_t smLid = 0;
	uint32_t capMask = 0;
	uint16_t capMask2 = 0;
	uint16_t diagCode = 0;
	uint16_t mkeyLeasePeriod = 0;
	uint8_t linkWidthEnabled = 0;
	uint8_t linkWidthSupported = 0;
	uint8_t linkWidthActive = 0;
	Speed speedSupported = Speed::SDR; /* the fastest supported speed */
	Speed speedActive = Speed::SDR;
	uint8_t linkSpeedEnabled = 0; /* PortInfo:LinkSpeedEnabled bits */
	uint8_t linkSpeedExtEnabled = 0; /* PortInfo:LinkSpeedExtEnabled bits */
	PortState state = PortState::Down;
	PhysState physState = PhysState::Polling;
	uint8_t linkDownDefault = 2; /* 1 sleep, 2 polling */
	uint8_t mkeyProtect = 0;
	uint8_t lmc = 0;
	uint8_t neighborMtu = kMtu2048;
	uint8_t masterSmSl = 0;
	uint8_t vlCap = 4; /* 1: VL0, 2: VL0-1, 3: VL0-3, 4: VL0-7, 5: VL0-14 */
	uint8_t initType = 0;
	uint8_t vlHighLimit = 0;
	uint8_t vlArbHighCap = 8;
	uint8_t vlArbLowCap = 8;
	uint8_t initTypeReply = 0;
	uint8_t mtuCap = kMtu4096;
	uint8_t vlStallCount = 0;
	uint8_t hoqLife = 0;
	uint8_t operationalVls = 0;
	uint8_t enforcementBits = 0; /* PartitionEnforcementIn/Out, FilterRawIn/Out */
	uint16_t mkeyViolations = 0;
	uint16_t pkeyViolations = 0;
	uint16_t qkeyViolations = 0;
	uint8_t guidCap = 8;
	bool clientReregister = false;
	uint8_t subnetTimeout = 0;
	uint8_t respTimeValue = 16;
	uint8_t localPhyErrors = 0;
	uint8_t overrunErrors = 0;
	uint16_t maxCreditHint = 0;
	uint32_t linkRoundTripLatency = 0;
	uint8_t mlnxStateChangeEnable = 0; /* Mellanox ExtendedPortInfo */

	std::vector<uint16_t> pkeys; /* P_KeyTable; entries past the end read as 0 */
	std::vector<uint64_t> aliasGuids; /* GUIDInfo entries 1..GUIDCap-1 that were set */
	Sl2Vl sl2vl{};
	std::unique_ptr<VlArbTables> vlArb; /* allocated on the first Set */

	PortCounters counters;

	/* Faults injected from outside (fabric/link_faults.cpp) */
	Port *pulledPeer = nullptr; /* the far end of a cable pulled out (Subnet::pullCable) */
	uint8_t degradedWidth = 0; /* a damaged cable trains no wider than this width bit; 0: any */
	std::optional<Speed> degradedSpeed; /* ... and no faster than this */
	std::unique_ptr<LinkErrors> errors; /* a lossy cable end; null: none */

	/* Cables across daemons (fabric/remote_cable.h) */
	uint32_t retrains = 0; /* times an SM's PortState=Down retrained this port's link */
	/* On a foreign node's port: what its daemon last said of it; null
	 * while that daemon is unreachable (the cable cannot train) */
	std::unique_ptr<CableEnd> farEnd;
	/* On a local port cabled to a foreign one: what its daemon was last
	 * told of this end (Subnet::tellFarEnd tells only changes) */
	std::unique_ptr<CableEnd> toldEnd;

	bool linkUp() const { return physState == PhysState::LinkUp; }
	bool connected() const { return peer != nullptr; }
	/* The far end of the port's cable, plugged in or pulled out */
	const Port *cableEnd() const { return peer ? peer : pulledPeer; }
	uint16_t pkeyCap() const;
};

/* SwitchInfo (IBA 14.2.5.4) and the forwarding tables. Only switches have one. */
struct SwitchState {
	uint16_t linearFdbCap = 49152;
	uint16_t randomFdbCap = 0;
	uint16_t mcastFdbCap = 1024;
	uint16_t linearFdbTop = 0;
	uint8_t defaultPort = 0;
	uint8_t defaultMcastPrimaryPort = 0;
	uint8_t defaultMcastNotPrimaryPort = 0;
	uint8_t lifeTimeValue = 0;
	bool portStateChange = false;
	uint8_t optimizedSl2Vl = 0;
	uint16_t lidsPerPort = 0;
	uint16_t partitionEnforcementCap = 32;
	uint8_t enforcementCaps = 0; /* InboundEnf, OutboundEnf, FilterRawIn, FilterRawOut */
	bool enhancedPort0 = false;
	uint16_t mcastFdbTop = 0;

	/* LinearForwardingTable: output port per LID, 0xff = not programmed.
	 * Grown on Set up to linearFdbCap entries. */
	std::vector<uint8_t> lft;
	/* MulticastForwardingTable: one 16-bit port mask per (MLID, position),
	 * indexed (mlid - 0xc000) * positions + position; grown on Set. */
	std::vector<uint16_t> mft;
	/* Switch SLtoVL tables are per (input, output) port pair; pairs never set
	 * use the default identity-modulo-VLs table. Key: in << 8 | out. */
	std::unordered_map<uint16_t, Sl2Vl> sl2vl;

	uint8_t lftEntry(uint16_t lid) const { return lid < lft.size() ? lft[lid] : 0xff; }
};

struct Node {
	NodeType type = NodeType::CA;
	uint8_t numPorts = 0;
	std::string name; /* the topology file's node id, e.g. "Switch1" or "H-0002c90300001234" */
	std::string desc; /* NodeDescription, at most 64 bytes */
	uint64_t nodeGuid = 0;
	uint64_t sysImageGuid = 0;
	uint32_t vendorId = 0x0002c9;
	uint16_t deviceId = 0;
	uint32_t revision = 0;
	uint16_t partitionCap = 64;
	uint32_t index = 0; /* position in Subnet::nodes() */
	uint32_t trapTid = 0; /* TID of the last trap this node sent */
	bool silent = false; /* its SMA and PMA answer nothing and send no traps */
	/* Simulated by another daemon (docs/multihost.md): a stand-in here,
	 * whose ports mirror what that daemon reports; packets reaching it
	 * leave for that daemon */
	bool foreign = false;

	/* Switches have ports 0..numPorts, CAs and routers 1..numPorts. */
	std::vector<Port> ports;
	std::unique_ptr<SwitchState> sw;

	bool isSwitch() const { return type == NodeType::Switch; }
	unsigned firstPort() const { return isSwitch() ? 0 : 1; }
	bool hasPort(unsigned num) const { return num >= firstPort() && num <= numPorts; }
	Port &port(unsigned num) { return ports[num - firstPort()]; }
	const Port &port(unsigned num) const { return ports[num - firstPort()]; }
	/* The port whose PortInfo carries the node's M_Key, LID and SM LID for
	 * node-wide purposes: port 0 on a switch, the given port otherwise. */
	Port &mgmtPort(unsigned arrivalPort) { return isSwitch() ? port(0) : port(arrivalPort); }
	const Port &mgmtPort(unsigned arrivalPort) const { return isSwitch() ? port(0) : port(arrivalPort); }
};

} /* namespace ibemu::fabric */
