// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// Test helpers for the fabric: building subnets, sending SMPs the way a
// host's MAD layer does, and a minimal subnet manager that assigns LIDs and
// programs forwarding tables through real SMPs.
#pragma once

#include "fabric/mad.h"
#include "fabric/packet.h"
#include "fabric/subnet.h"

#include <boost/asio/io_context.hpp>

#include <map>
#include <memory>
#include <optional>
#include <string_view>
#include <vector>

namespace ibemu::test {

using namespace ibemu::fabric;

/* A host stack that records what arrives and, like a real host, lets its
 * own SMA/PMA answer requests addressed to it. */
struct Capture final : HostStack {
	explicit Capture(Subnet &s) : subnet(s) {}
	Subnet &subnet;
	std::vector<Packet> got;
	void receive(Port &port, const Packet &p) override;
};

/* Parses and builds topology text; fails the test on error. */
void load(Subnet &subnet, std::string_view text);

/* A DR SMP with the given initial path (hop i uses path[i-1]). */
Packet drSmp(uint8_t method, uint16_t attr, uint32_t am, const std::vector<uint8_t> &path, uint64_t tid = 0x1234);
/* A LID-routed SMP. */
Packet lidSmp(uint8_t method, uint16_t attr, uint32_t am, uint16_t dlid, uint64_t tid = 0x1234);
/* A PerfMgt GMP (QP1). */
Packet pmaMad(uint8_t method, uint16_t attr, uint8_t portSelect, uint16_t dlid, uint64_t tid = 0x4321);

/*
 * Sends pkt out of a CA port as the kernel MAD layer would (hop-count-0 DR
 * SMPs go to the local SMA, others get the C14-9:1 treatment) and returns
 * the response addressed back to that port, if one arrives.
 */
std::optional<Mad> roundTrip(Subnet &subnet, Port &from, Packet pkt);

/* Makes a PortInfo read by Get fit for a Set that changes no state:
 * PortState NoChange, PortPhysicalState NoChange (what OpenSM writes). */
void noStateChange(uint8_t *portInfo);

inline uint16_t madStatus(const Mad &m)
{
	return madHdr(m)->status.get();
}
inline const uint8_t *smpData(const Mad &m)
{
	return m.data() + kSmpDataOffset;
}
inline uint8_t *smpData(Mad &m)
{
	return m.data() + kSmpDataOffset;
}

class MiniSm;

/* The built-in default fabric, brought up by MiniSm from host1's port:
 * sw1 and sw2 are cabled by their ports 7 and 8. */
struct DefaultFabric {
	DefaultFabric();
	~DefaultFabric();
	Subnet s;
	Port *host1, *host2;
	Node *sw1, *sw2;
	std::unique_ptr<MiniSm> sm;
	uint64_t tid = 100;
};

/*
 * The smallest useful SM: discovers the subnet by directed route from
 * smPort, gives every CA port and switch LIDs from 1 up, programs min-hop
 * LFTs and SwitchInfo:LinearFDBTop, and brings every link to Active, all by
 * SMPs. It checks each response.
 */
class MiniSm {
public:
	MiniSm(Subnet &subnet, Port &smPort) : subnet_(subnet), sm_(smPort) {}
	void run();
	/* Path from the SM to a node, as an initial path. */
	const std::vector<uint8_t> &pathTo(const Node &n) const { return paths_.at(&n); }
	uint16_t lidOf(const Port &p) const;

private:
	Mad get(const std::vector<uint8_t> &path, uint16_t attr, uint32_t am);
	Mad set(const std::vector<uint8_t> &path, uint16_t attr, uint32_t am, const uint8_t *data);
	bool route(const Port &port, std::vector<uint8_t> &path, unsigned &am) const;
	void discover();
	void assignLids();
	void programLfts();
	void activate();

	Subnet &subnet_;
	Port &sm_;
	std::map<const Node *, std::vector<uint8_t>> paths_;
	std::vector<Node *> order_;
	std::map<const Port *, uint16_t> lids_;
	uint64_t tid_ = 0x100;
};

/* Host a: sw1, h1, h3; host b: sw2, h2. sw1 and sw2 are joined by two
 * cables, and h3 hangs off sw2: three cables cross. */
extern const std::string_view kSplitTopology;

/*
 * A subnet split across two daemons (fabric/remote_cable.h): two Subnets
 * built from kSplitTopology, each simulating its host's nodes, joined by
 * a wire that carries their packets as bytes (encodeMadPacket and back)
 * and their cable ends, as tools/peer/peer_traffic.cpp does over TCP. MAD
 * packets cross at once; data messages cross in a later turn of `io`
 * when one is given (a reply never overtakes its request's sender), at
 * once otherwise.
 */
struct SplitWire final : RemoteCables {
	Subnet *other = nullptr;
	boost::asio::io_context *io = nullptr;
	bool cut = false;
	uint64_t packets = 0; /* MAD packets carried */
	uint64_t dataMessages = 0;
	DataPackets lastData; /* the last data message carried, and where it arrived from */
	Port *lastFrom = nullptr;
	/* hold: data messages stay "on their way out" (their OnWire kept in
	 * held) until a test calls them */
	bool hold = false;
	std::vector<OnWire> held;

	/* the other daemon's copy of a port */
	Port &there(const Port &p) { return other->findNodeByGuid(p.node->nodeGuid)->port(p.num); }
	void transmit(const Port &far, const Packet &pkt, unsigned hops) override;
	void transmitData(const Port &far, DataPackets packets, unsigned hops, OnWire onWire) override;
	void endChanged(const Port &local, const Port &far) override;
};

struct SplitSubnet {
	explicit SplitSubnet(boost::asio::io_context *io = nullptr);
	Subnet a, b;
	SplitWire toB, toA;

	/* The connection comes up: each side tells all its cable ends */
	void connect();
	/* ... and goes: each side loses the other's ends */
	void disconnect();
	static Port &port(Subnet &s, const char *node, unsigned num) { return s.findNode(node)->port(num); }
};

} /* namespace ibemu::test */
