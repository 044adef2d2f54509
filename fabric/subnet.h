// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// The simulated subnet: owns the nodes, joins ports with cables, moves
// packets between them.
//
// Where things happen:
//   subnet.cpp   node creation, lookup, cables
//   link.cpp     link training and port state changes (IBA 7.2, 14.2.5.6)
//   routing.cpp  packet transport: LID routing through LFTs, DR hop
//                processing (smi.cpp), delivery to SMA/PMA/host stacks
//   sma.cpp      the subnet management agent of every node
//   pma.cpp      the performance management agent of every port
//
//   remote_cable.cpp  foreign nodes: cables to nodes another daemon
//                simulates (fabric/remote_cable.h)
//
// Not thread-safe: the daemon's io_context thread owns a Subnet.
#pragma once

#include "fabric/mad_ring.h"
#include "fabric/node.h"
#include "fabric/packet.h"
#include "fabric/packet_tap.h"
#include "fabric/remote_cable.h"

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace ibemu::fabric {

class Subnet {
public:
	Subnet();
	~Subnet();
	Subnet(const Subnet &) = delete;
	Subnet &operator=(const Subnet &) = delete;

	/* --- nodes (subnet.cpp) --- */

	/* Creates a node with default attributes; name and GUID must be unique. */
	Node &addNode(NodeType type, unsigned numPorts, std::string name, uint64_t nodeGuid);
	const std::vector<std::unique_ptr<Node>> &nodes() const { return nodes_; }
	Node *findNode(std::string_view name) const;
	Node *findNodeByGuid(uint64_t guid) const;
	Port *findPortByGuid(uint64_t guid) const;
	/* A node as people name it: its node id, its NodeDescription, the host
	 * name that starts a CA's description ("host HCA-1"), or its node GUID
	 * ("0x..."). Null when nothing matches, or more than one node has
	 * that description or host name (then *ambiguous is set). */
	Node *resolveNode(std::string_view what, bool *ambiguous = nullptr) const;
	/* `no node "what" in the fabric`, and the names (node ids,
	 * descriptions, host names) nearest to it, if any are within two
	 * edits: `; did you mean "sw1" or "sw2"?` */
	std::string noSuchNode(std::string_view what) const;
	/* A port (CA port or switch port 0) whose LID range covers lid, if any. */
	Port *findPortByLid(uint16_t lid) const;
	/* Changes a port's GUID (topology files may give CA port GUIDs). */
	void setPortGuid(Port &p, uint64_t guid);
	size_t numSwitches() const { return numSwitches_; }
	size_t numCas() const { return numCas_; }
	size_t numRouters() const { return numRouters_; }
	size_t numLinks() const { return numLinks_; }

	/* --- cables and link state (link.cpp) --- */

	/* Joins two ports with a cable and trains the link if both ends are
	 * enabled. Returns 0, -EBUSY if a port is already cabled, -EINVAL for a
	 * port cabled to itself or to port 0 of a switch. */
	int connect(Port &a, Port &b);
	/* Pulls the cable out of a port; both ends go Down/Polling. */
	void disconnect(Port &p);
	/* PortPhysicalState Disabled (true) or Polling (false), as an SMA Set or
	 * `ibportstate disable/enable` does. LinkDownedCounter stays: a request,
	 * not a lost link. */
	void setDisabled(Port &p, bool disabled);
	/* PortState Down requested by an SM: the link goes down and retrains.
	 * LinkDownedCounter stays, as for setDisabled(). */
	void bounceLink(Port &p);
	/* A logical state change requested through PortInfo (Armed, Active). */
	void setLogicalState(Port &p, PortState s);
	/* The host (issm, driver) changes a port's CapabilityMask; emits Trap 144. */
	void setCapMask(Port &p, uint32_t capMask);
	/* Re-derives the active width and speed of a trained link from what both
	 * ends support and have enabled. */
	void negotiate(Port &p);
	/* An SM changed p's LinkWidthEnabled or LinkSpeed(Ext)Enabled. */
	void enabledChanged(Port &p);

	/* --- nodes another daemon simulates (remote_cable.cpp) --- */

	/* Where packets for foreign nodes go, and changes to the local ends of
	 * their cables; null: nowhere (the remote outlives its being set). */
	void setRemoteCables(RemoteCables *remote) { remote_ = remote; }
	/* n is simulated by another daemon: its cables to local ports go
	 * down until that daemon reports their far ends (farEndReported). */
	void setForeign(Node &n);
	/* some nodes are another daemon's: the subnet is split across hosts */
	bool split() const { return split_; }
	/* The daemon of far (a foreign port) reports its end of far's cable;
	 * the local end trains, renegotiates, retrains or goes down. */
	void farEndReported(Port &far, const CableEnd &end);
	/* far's daemon is unreachable: the cable goes down at the local end,
	 * as when the far end is pulled out. */
	void farEndLost(Port &far);
	/* pkt left the foreign port far onto its cable, in far's daemon,
	 * having crossed `hops` cables before it: it arrives at far's local
	 * peer and goes on from there, as send() does. */
	void arriveFromFar(Port &far, Packet pkt, unsigned hops);
	/* The same for a data message: routed on by its DLID, it reaches a
	 * local CA port that owns it (handed to the data listener), leaves
	 * for another daemon again, or is lost as routeData() loses it. A
	 * multicast DLID follows the MFTs as routeMulticast(): every CA port
	 * of this daemon it reaches takes a copy. */
	void arriveDataFromFar(Port &far, DataPackets packets, unsigned hops);
	/* A daemon connected anew: one that restarted sends from the same QP
	 * numbers and PSNs again, so the multicast messages remembered as
	 * relayed (the loop guard of routeMulticast) are forgotten, lest its
	 * first messages be taken for a loop's copies. */
	void forgetRelayed();
	/* The host side of a CA port takes data messages that came from
	 * another daemon (the verbs responder, or a requester's replies). */
	using DataListener = std::function<void(Port &dst, DataPackets &&packets)>;
	void setDataListener(DataListener fn) { dataListener_ = std::move(fn); }

	/* --- faults from outside the subnet (link_faults.cpp) --- */

	/* Pulls the cable out of p as a person would: both ends go
	 * Down/Polling, LinkDownedCounter moves, switches send Trap 128. The
	 * cable is remembered on both ends (Port::pulledPeer) for plugCable().
	 * -ENOTCONN when p has no cable. */
	int pullCable(Port &p);
	/* Plugs p's pulled cable back in and trains the link. -ENOTCONN when
	 * none was pulled from p, -EBUSY when an end has been cabled since. */
	int plugCable(Port &p);
	/* A damaged cable at p: it trains no wider than `width` (a LinkWidth
	 * bit; 0: no limit) and no faster than `speed`. Both ends of the
	 * cable keep the limit, so either can lift it. A link that is up
	 * retrains at once (Down, then up at the new width and speed). */
	void degradeLink(Port &p, uint8_t width, std::optional<Speed> speed);
	/* Packet loss on p's cable, both directions, counted at the receiving
	 * end: a drop as SymbolErrorCounter and PortRcvErrors, a corrupted
	 * packet as PortRcvErrors; neither reaches the receiver. When both
	 * ends have rates, each direction uses its receiving end's. Rates in
	 * [0,1]; both 0 removes the fault. */
	void setLinkErrors(Port &p, double dropRate, double corruptRate, uint64_t seed);
	/* The node's SMA and PMA stop answering Gets and Sets (requests time
	 * out) and send no traps; its links and switching go on. */
	void setSilent(Node &n, bool silent) { n.silent = silent; }

	/* --- packets (routing.cpp) --- */

	/* Transmits pkt out of `egress` onto its cable. Delivery happens before
	 * send() returns, unless send() is called from inside a delivery, in which
	 * case the packet is queued and carried after the current one. */
	void send(Port &egress, Packet pkt);
	/* Sends from a node's management port: a switch routes it through its own
	 * LFT (or DR path), a CA sends it out of `port`. */
	void sendFromNode(Port &port, Packet pkt);
	/* Answers req, which arrived at `port` (for a switch: the external port it
	 * came in on), with the MAD `resp`, addressing the reply as IBA 13.5.1
	 * (LID-routed) or 14.2.2 (DR) prescribe. */
	void respond(Port &port, const Packet &req, const Mad &resp);

	/* Carries the packets of one data message (not MADs: verbs traffic of
	 * `packets` packets, `wireBytes` octets in all) from CA port `src` to
	 * `dlid` through the LFTs, counting them like carry() does at every
	 * port they cross. Returns the CA port that accepts the DLID, or null
	 * when they are lost (link down, port not Active, no LFT entry, a CA
	 * that does not own the DLID).
	 *
	 * `wire` holds the packets' bytes when tappingData() (what a capture
	 * records at the ports it watches); empty otherwise.
	 *
	 * A message whose route reaches another daemon's node returns null
	 * with `away` set (when given; otherwise it is lost there): the
	 * sender builds its packets and hands them to sendAway(). */
	Port *routeData(Port &src, uint16_t dlid, uint32_t packets, uint64_t wireBytes,
			std::span<const std::vector<uint8_t>> wire = {}, Away *away = nullptr);
	/* The packets of a message routeData() sent away, to its daemon;
	 * `onWire` as for RemoteCables::transmitData(). */
	void sendAway(const Away &away, DataPackets packets, OnWire onWire = {});
	/* The same for a multicast DLID: the packets follow the switches' MFTs
	 * (never back out of the port they came in by) and every CA port they
	 * reach goes into `reached`, counted as multicast traffic. A switch
	 * whose MFT has no entry for the MLID drops them
	 * (PortRcvSwitchRelayErrors). `wire` as for routeData().
	 *
	 * Copies that reach another daemon's nodes go into `away` (when
	 * given; otherwise they are lost there), for the sender to hand its
	 * packets to sendAway(); in a split subnet `wire` must then hold
	 * them, as it names the message to the switches of every daemon. */
	void routeMulticast(Port &src, uint16_t mlid, uint32_t packets, uint64_t wireBytes,
			    std::vector<Port *> &reached, std::span<const std::vector<uint8_t>> wire = {},
			    std::vector<Away> *away = nullptr);

	/* A capture watching the wire, or null (fabric/packet_tap.h). The
	 * tap outlives its being set. */
	void setTap(PacketTap *tap) { tap_ = tap; }
	/* Whether data senders should hand routeData() their packets' bytes:
	 * a tap is set and wants data packets. */
	bool tappingData() const { return tap_ && tap_->wantsData(); }
	bool tapping() const { return tap_ != nullptr; }
	/* Where every MAD crossing a CA port's cable is recorded, or null
	 * (fabric/mad_ring.h: the live view's). It outlives its being set. */
	void setMadRing(MadRing *ring) { ring_ = ring; }

	/* Packets dropped anywhere in the fabric since creation (for tests/status). */
	uint64_t droppedPackets() const { return dropped_; }

	/* The host side of a CA port wants to know when its PortInfo or P_Key
	 * table may have changed (link state, a Set from an SM): the kernel's
	 * port events. Called with the port; spurious calls are allowed. */
	using PortListener = std::function<void(Port &port, bool clientReregister)>;
	void setPortListener(PortListener fn) { portListener_ = std::move(fn); }
	void portChanged(Port &p, bool clientReregister = false)
	{
		if (portListener_ && !p.node->isSwitch() && !p.node->foreign)
			portListener_(p, clientReregister);
	}

	/* Fault injection: called for every packet about to leave a port onto a
	 * cable; returning true loses the packet there (counted as a drop). */
	using DropFilter = std::function<bool(const Port &egress, const Packet &pkt)>;
	void setDropFilter(DropFilter filter) { dropFilter_ = std::move(filter); }

private:
	struct Transit {
		Port *egress;
		Packet pkt;
		bool sent = false; /* left egress in another daemon (arriveFromFar) */
		unsigned hops = 0; /* cables crossed before egress */
	};

	void drain();
	void carry(Port *egress, Packet &pkt, bool sent, unsigned hops);
	void caArrive(Port &in, Packet &pkt);
	Port *relay(Node &sw, Port &in, Packet &pkt);
	Port *routeDr(Node &node, Port &in, Packet &pkt, bool lidArrival);
	Port *lftEgress(Node &sw, Port *in, Packet &pkt);
	void deliver(Port &port, const Packet &pkt);
	Port *carryData(Port *out, uint16_t dlid, uint32_t packets, uint64_t wireBytes,
			std::span<const std::vector<uint8_t>> wire, bool sent, unsigned hops, Away *away);
	void carryMulticast(Port *out, uint16_t mlid, uint32_t packets, uint64_t wireBytes,
			    std::vector<Port *> &reached, std::span<const std::vector<uint8_t>> wire, bool sent,
			    unsigned hops, std::vector<Away> *away);
	/* false if switch sw relayed the multicast message `id` lately */
	bool relayedOnce(uint64_t id, const Node &sw);
	void drop(Port *at, const char *why);
	void countXmit(Port &p, const Packet &pkt);
	void countRcv(Port &p, const Packet &pkt);
	void tapMad(const Port &p, bool out, const Packet &pkt);
	void tapData(const Port &p, bool out, std::span<const std::vector<uint8_t>> wire, uint64_t packets);

	/* Draws the fate of `packets` packets crossing from `out` to `in`
	 * through a lossy cable, counts the losses at `in` and as drops; how
	 * many were lost (link_faults.cpp). */
	uint64_t lostOnCable(Port &out, Port &in, uint64_t packets);

	/* What takes a link down. LinkDownedCounter counts a link lost (IBA
	 * 14.2.5.6: link error recovery gave up and downed the link), at both
	 * ends; not a Down or Disable asked for through a PortInfo Set, which
	 * is no error (OpenSM sends one in its first sweep, ibportstate on
	 * request). */
	enum class DownCause { Lost, Requested };
	void linkDown(Port &p, PhysState localPhys, DownCause cause = DownCause::Lost);
	static bool canTrain(const Port &p);
	void train(Port &p);
	void retrain(Port &p, DownCause cause = DownCause::Lost);
	void tellFarEnd(Port &p);
	void portStateChanged(Port &p);

	std::vector<std::unique_ptr<Node>> nodes_;
	std::unordered_map<std::string, Node *> byName_;
	std::unordered_map<uint64_t, Node *> byGuid_;
	std::unordered_map<uint64_t, Port *> portByGuid_;
	size_t numSwitches_ = 0;
	size_t numCas_ = 0;
	size_t numRouters_ = 0;
	size_t numLinks_ = 0;

	PacketTap *tap_ = nullptr;
	MadRing *ring_ = nullptr;
	RemoteCables *remote_ = nullptr;
	bool split_ = false;
	/* (multicast message, switch) pairs that crossed daemons, the last
	 * 4,096 (relayedOnce) */
	std::set<std::pair<uint64_t, uint32_t>> farRelayed_;
	std::deque<std::pair<uint64_t, uint32_t>> farRelayedOrder_;
	DropFilter dropFilter_;
	PortListener portListener_;
	DataListener dataListener_;
	std::deque<Transit> queue_;
	bool draining_ = false;
	uint64_t dropped_ = 0;
};

/* LID range check: does port p (CA port or switch port 0) own lid? */
bool ownsLid(const Port &p, uint16_t lid);

} /* namespace ibemu::fabric */
