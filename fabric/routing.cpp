// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// Packet transport: cables, switch relay through the LFT/MFT, directed-route
// hop processing and delivery to the node at the end of the path.
//
//   send(egress) -> carry: cross a cable, count, arrive
//        CA      -> caArrive -> deliver -> HostStack::receive | idleHostReceive
//        switch  -> relay    -> LFT/MFT or DR next hop -> carry on
//                            -> addressed to the switch -> deliver (SMA/PMA)
//
// Drops follow hardware: a down link or a non-Active egress for data
// (PortXmitDiscards), an unprogrammed LFT entry or a DLID above
// LinearFDBTop (PortRcvSwitchRelayErrors), a bad DR path (VL15Dropped).
#include "fabric/packet_format.h"
#include "fabric/process_mad.h"
#include "fabric/smi.h"
#include "fabric/subnet.h"

#include <algorithm>

namespace ibemu::fabric {

namespace {

constexpr unsigned kMaxHops = 255;

bool isDrSmp(const Packet &pkt)
{
	return pkt.isVl15() && pkt.mad[1] == IB_MGMT_CLASS_SUBN_DIRECTED_ROUTE;
}

template <typename T> void addSaturating(T &counter, uint64_t n)
{
	constexpr uint64_t max = static_cast<T>(~T{ 0 });
	uint64_t v = counter + n;
	counter = static_cast<T>(v > max ? max : v);
}

/* PortCounters and PortCountersExtended for `packets` packets of `words`
 * 4-octet words in all, leaving (xmit) or entering a port */
void countTraffic(PortCounters &c, bool xmit, uint64_t packets, uint64_t words, bool multicast)
{
	addSaturating(xmit ? c.xmitPkts : c.rcvPkts, packets);
	addSaturating(xmit ? c.xmitData : c.rcvData, words);
	(xmit ? c.extXmitPkts : c.extRcvPkts) += packets;
	(xmit ? c.extXmitData : c.extRcvData) += words;
	if (multicast)
		(xmit ? c.extMulticastXmitPkts : c.extMulticastRcvPkts) += packets;
	else
		(xmit ? c.extUnicastXmitPkts : c.extUnicastRcvPkts) += packets;
}

} /* namespace */

void Subnet::countXmit(Port &p, const Packet &pkt)
{
	countTraffic(p.counters, true, 1, pkt.wireBytes() / 4, pkt.isMulticast());
}

void Subnet::countRcv(Port &p, const Packet &pkt)
{
	countTraffic(p.counters, false, 1, pkt.wireBytes() / 4, pkt.isMulticast());
}

void Subnet::tapMad(const Port &p, bool out, const Packet &pkt)
{
	if (tap_->watches(p))
		tap_->onWire(p, out, encodeMadPacket(pkt));
}

/* The first `packets` of a data message's packets (those that got through
 * a lossy cable arrive, as its counters say) */
void Subnet::tapData(const Port &p, bool out, std::span<const std::vector<uint8_t>> wire, uint64_t packets)
{
	if (!tap_->watches(p))
		return;
	/* a capture that reaches its count goes, and may take the tap with it */
	for (size_t i = 0; i < wire.size() && i < packets && tap_; i++)
		tap_->onWire(p, out, wire[i]);
}

void Subnet::drop(Port *, const char *)
{
	dropped_++;
}

void Subnet::send(Port &egress, Packet pkt)
{
	queue_.push_back({ &egress, std::move(pkt) });
	drain();
}

void Subnet::drain()
{
	if (draining_)
		return;
	draining_ = true;
	while (!queue_.empty()) {
		Transit t = std::move(queue_.front());
		queue_.pop_front();
		carry(t.egress, t.pkt, t.sent, t.hops);
	}
	draining_ = false;
}

/* `sent`: the packet already left `out` in the daemon that simulates it
 * (a foreign port), and only arrives here; `hops`: cables it crossed
 * before that one */
void Subnet::carry(Port *out, Packet &pkt, bool sent, unsigned hops)
{
	/* An HCA loops packets for its own LIDs back without using the cable. */
	if (!sent && !out->node->isSwitch() && ownsLid(*out, pkt.dlid))
		return caArrive(*out, pkt);
	for (unsigned hop = hops; hop < kMaxHops; hop++, sent = false) {
		Port *in = out->peer;
		if (sent) {
			/* the link went down while it crossed between daemons */
			if (!in || !in->linkUp())
				return drop(in, "link down on arrival");
		} else {
			if (!in || !out->linkUp() || !in->linkUp()) {
				addSaturating(out->counters.xmitDiscards, 1);
				return drop(out, "link down");
			}
			if (!pkt.isVl15() && out->state != PortState::Active) {
				addSaturating(out->counters.xmitDiscards, 1);
				return drop(out, "egress not active");
			}
			countXmit(*out, pkt);
			if (tap_)
				tapMad(*out, true, pkt);
			if (ring_ && !out->node->isSwitch())
				ring_->record(*out, true, pkt);
			if (dropFilter_ && dropFilter_(*out, pkt))
				return drop(out, "fault injection");
			if (in->node->foreign) {
				/* in's daemon counts its arrival, and carries it on */
				if (remote_)
					remote_->transmit(*in, pkt, hop);
				return;
			}
		}
		if ((in->errors || out->errors) && lostOnCable(*out, *in, 1))
			return;
		countRcv(*in, pkt);
		if (tap_)
			tapMad(*in, false, pkt);
		if (ring_ && !in->node->isSwitch())
			ring_->record(*in, false, pkt);
		if (!pkt.isVl15() && in->state != PortState::Armed && in->state != PortState::Active) {
			addSaturating(in->counters.rcvErrors, 1);
			return drop(in, "ingress not armed");
		}

		Node &node = *in->node;
		if (!node.isSwitch())
			return caArrive(*in, pkt);
		out = relay(node, *in, pkt);
		if (!out)
			return;
	}
	drop(out, "hop limit");
}

void Subnet::caArrive(Port &in, Packet &pkt)
{
	if (pkt.dlid == IB_LID_PERMISSIVE) {
		if (isDrSmp(pkt)) {
			routeDr(*in.node, in, pkt, false);
			return;
		}
		if (pkt.isVl15())
			return deliver(in, pkt);
		addSaturating(in.counters.rcvErrors, 1);
		return drop(&in, "permissive DLID on a GMP");
	}
	if (ownsLid(in, pkt.dlid)) {
		if (isDrSmp(pkt)) {
			routeDr(*in.node, in, pkt, true);
			return;
		}
		return deliver(in, pkt);
	}
	if (pkt.isMulticast() && in.host)
		return deliver(in, pkt);
	addSaturating(in.counters.rcvErrors, 1);
	drop(&in, "DLID not ours");
}

Port *Subnet::relay(Node &sw, Port &in, Packet &pkt)
{
	if (pkt.dlid == IB_LID_PERMISSIVE) {
		if (isDrSmp(pkt))
			return routeDr(sw, in, pkt, false);
		if (pkt.isVl15()) {
			deliver(in, pkt);
			return nullptr;
		}
		addSaturating(in.counters.rcvErrors, 1);
		drop(&in, "permissive DLID on a GMP");
		return nullptr;
	}
	if (ownsLid(sw.port(0), pkt.dlid)) {
		if (isDrSmp(pkt))
			return routeDr(sw, in, pkt, true);
		deliver(in, pkt);
		return nullptr;
	}
	return lftEgress(sw, &in, pkt);
}

Port *Subnet::routeDr(Node &node, Port &in, Packet &pkt, bool lidArrival)
{
	ib_smp &s = *smp(pkt.mad);
	bool isSwitch = node.isSwitch();
	smi::Decision d = lidArrival ? smi::lidArrival(s, isSwitch, in.num, node.numPorts)
				     : smi::receive(s, isSwitch, in.num, node.numPorts);
	switch (d.action) {
	case smi::Action::Drop:
		addSaturating(in.counters.vl15Dropped, 1);
		drop(&in, "bad directed route");
		return nullptr;
	case smi::Action::Local:
		deliver(in, pkt);
		return nullptr;
	case smi::Action::SendPort:
		pkt.slid = IB_LID_PERMISSIVE;
		pkt.dlid = IB_LID_PERMISSIVE;
		if (!isSwitch) {
			/* a CA starting a directed segment it was LID-routed to */
			send(node.port(d.port), pkt);
			return nullptr;
		}
		return &node.port(d.port);
	case smi::Action::SendLid:
		pkt.dlid = d.lid;
		pkt.slid = node.mgmtPort(in.num).lid;
		if (ownsLid(node.mgmtPort(in.num), d.lid))
			return routeDr(node, in, pkt, true);
		return isSwitch ? lftEgress(node, &in, pkt) : nullptr;
	}
	return nullptr;
}

Port *Subnet::lftEgress(Node &sw, Port *in, Packet &pkt)
{
	SwitchState &st = *sw.sw;
	if (pkt.isMulticast()) {
		unsigned positions = (sw.numPorts + 16) / 16;
		size_t base = size_t(pkt.dlid - IB_MULTICAST_LID_BASE) * positions;
		if (base + positions > st.mft.size()) {
			if (in)
				addSaturating(in->counters.rcvSwitchRelayErrors, 1);
			drop(in, "MFT entry not programmed");
			return nullptr;
		}
		for (unsigned pos = 0; pos < positions; pos++) {
			uint16_t mask = st.mft[base + pos];
			for (unsigned bit = 0; bit < 16; bit++) {
				unsigned num = pos * 16 + bit;
				if (!(mask & (1u << bit)) || num == 0 || num > sw.numPorts)
					continue;
				if (in && num == in->num)
					continue;
				queue_.push_back({ &sw.port(num), pkt });
			}
		}
		return nullptr;
	}

	uint8_t outNum = st.lftEntry(pkt.dlid);
	if (pkt.dlid > st.linearFdbTop || outNum == 0xff || outNum == 0 || outNum > sw.numPorts) {
		if (in)
			addSaturating(in->counters.rcvSwitchRelayErrors, 1);
		drop(in, "no LFT entry");
		return nullptr;
	}
	return &sw.port(outNum);
}

void Subnet::sendFromNode(Port &port, Packet pkt)
{
	Node &n = *port.node;
	if (!n.isSwitch())
		return send(port, std::move(pkt));
	if (ownsLid(n.port(0), pkt.dlid)) {
		deliver(n.port(0), pkt);
		return;
	}
	if (Port *egress = lftEgress(n, nullptr, pkt))
		send(*egress, std::move(pkt));
	else
		drain();
}

void Subnet::respond(Port &port, const Packet &req, const Mad &resp)
{
	Node &n = *port.node;
	Packet out;
	out.mad = resp;
	out.sl = req.sl;
	out.srcQp = req.dstQp;
	out.dstQp = req.srcQp;
	out.pkey = req.pkey;
	out.qkey = out.dstQp == IB_QP0 ? 0 : IB_QP1_QKEY;

	if (isDrSmp(req)) {
		ib_smp &s = *smp(out.mad);
		smi::Decision d = smi::send(s, n.numPorts, req.slid);
		switch (d.action) {
		case smi::Action::Drop:
			return drop(&port, "bad directed route in response");
		case smi::Action::Local:
			return deliver(port, out);
		case smi::Action::SendPort:
			return send(n.port(d.port), out);
		case smi::Action::SendLid:
			out.dlid = d.lid;
			out.slid = n.mgmtPort(port.num).lid;
			return sendFromNode(n.mgmtPort(port.num), out);
		}
		return;
	}

	out.dlid = req.slid;
	Port &mgmt = n.mgmtPort(port.num);
	out.slid = (req.dlid != IB_LID_PERMISSIVE && !req.isMulticast()) ? req.dlid : mgmt.lid;
	if (req.grh) {
		out.grh = true;
		out.sgid = req.dgid;
		out.dgid = req.sgid;
		out.hopLimit = 0xff;
		out.trafficClass = req.trafficClass;
		out.flowLabel = req.flowLabel;
	}
	sendFromNode(mgmt.node->isSwitch() ? mgmt : port, out);
}

Port *Subnet::routeData(Port &src, uint16_t dlid, uint32_t packets, uint64_t wireBytes,
			std::span<const std::vector<uint8_t>> wire, Away *away)
{
	if (ownsLid(src, dlid)) /* HCA loopback */
		return &src;
	if (dlid >= IB_MULTICAST_LID_BASE || dlid == 0)
		return nullptr;
	return carryData(&src, dlid, packets, wireBytes, wire, false, 0, away);
}

/* routeData() from `out` on; `sent` and `hops` as for carry() */
Port *Subnet::carryData(Port *out, uint16_t dlid, uint32_t packets, uint64_t wireBytes,
			std::span<const std::vector<uint8_t>> wire, bool sent, unsigned hops, Away *away)
{
	uint64_t words = wireBytes / 4;
	for (unsigned hop = hops; hop < kMaxHops; hop++, sent = false) {
		Port *in = out->peer;
		if (sent) {
			if (!in || !in->linkUp()) { /* the link went down under it */
				dropped_ += packets;
				return nullptr;
			}
		} else {
			if (!in || !out->linkUp() || !in->linkUp() || out->state != PortState::Active) {
				addSaturating(out->counters.xmitDiscards, packets);
				dropped_ += packets;
				return nullptr;
			}
			countTraffic(out->counters, true, packets, words, false);
			if (tap_)
				tapData(*out, true, wire, packets);
			if (in->node->foreign) { /* in's daemon counts the arrival */
				if (!away || !remote_) {
					dropped_ += packets;
					return nullptr;
				}
				*away = { in, hop };
				return nullptr;
			}
		}
		if (in->errors || out->errors) {
			/* the packets that got through arrive; the message is lost */
			if (uint64_t lost = lostOnCable(*out, *in, packets)) {
				countTraffic(in->counters, false, packets - lost, words / packets * (packets - lost),
					     false);
				if (tap_)
					tapData(*in, false, wire, packets - lost);
				dropped_ += packets - lost;
				return nullptr;
			}
		}
		countTraffic(in->counters, false, packets, words, false);
		if (tap_)
			tapData(*in, false, wire, packets);
		if (in->state != PortState::Armed && in->state != PortState::Active) {
			addSaturating(in->counters.rcvErrors, packets);
			dropped_ += packets;
			return nullptr;
		}
		Node &node = *in->node;
		if (!node.isSwitch()) {
			if (ownsLid(*in, dlid))
				return in;
			dropped_ += packets; /* a CA drops packets for LIDs it does not own */
			return nullptr;
		}
		SwitchState &st = *node.sw;
		uint8_t outNum = st.lftEntry(dlid);
		if (dlid > st.linearFdbTop || outNum == 0xff || outNum == 0 || outNum > node.numPorts) {
			addSaturating(in->counters.rcvSwitchRelayErrors, packets);
			dropped_ += packets;
			return nullptr;
		}
		out = &node.port(outNum);
	}
	dropped_ += packets;
	return nullptr;
}

void Subnet::routeMulticast(Port &src, uint16_t mlid, uint32_t packets, uint64_t wireBytes,
			    std::vector<Port *> &reached, std::span<const std::vector<uint8_t>> wire,
			    std::vector<Away> *away)
{
	carryMulticast(&src, mlid, packets, wireBytes, reached, wire, false, 0, away);
}

/* routeMulticast() from `out` on; `sent` and `hops` as for carry() */
void Subnet::carryMulticast(Port *src, uint16_t mlid, uint32_t packets, uint64_t wireBytes,
			    std::vector<Port *> &reached, std::span<const std::vector<uint8_t>> wire, bool sent,
			    unsigned hops, std::vector<Away> *away)
{
	const uint64_t words = wireBytes / 4;
	/* A message that crosses daemons is known by its first packet, so
	 * that a switch relays it once even when a loop in badly programmed
	 * MFTs brings it back through another daemon: an arrival asks
	 * relayedOnce() at every switch, and a message that leaves for
	 * another daemon records the switches that relayed it here */
	uint64_t id = 0;
	if (split_ && !wire.empty() && wire.front().size() > kVcrcBytes + 8)
		id = std::hash<std::string_view>{}(std::string_view(
			reinterpret_cast<const char *>(wire.front().data()) + 8, wire.front().size() - 8 - kVcrcBytes));
	const bool arrived = sent;
	const size_t awayBefore = away ? away->size() : 0;
	/* cables still to cross, breadth first, with the cables crossed
	 * before each; a switch relays one copy only, so a loop ends */
	std::vector<std::pair<Port *, unsigned>> egress{ { src, hops } };
	std::vector<const Node *> relayed;
	for (size_t i = 0; i < egress.size(); i++, sent = false) {
		auto [out, hop] = egress[i];
		Port *in = out->peer;
		if (sent) { /* left `out` in another daemon: only the arrival is ours */
			if (!in || !in->linkUp()) {
				dropped_ += packets;
				continue;
			}
		} else {
			if (!in || !out->linkUp() || !in->linkUp() || out->state != PortState::Active ||
			    hop >= kMaxHops || (in->node->foreign && (!away || !remote_))) {
				addSaturating(out->counters.xmitDiscards, packets);
				dropped_ += packets;
				continue;
			}
			countTraffic(out->counters, true, packets, words, true);
			if (tap_)
				tapData(*out, true, wire, packets);
			if (in->node->foreign) { /* in's daemon counts the arrival */
				away->push_back({ in, hop });
				continue;
			}
		}
		if (in->errors || out->errors) {
			if (uint64_t lost = lostOnCable(*out, *in, packets)) {
				countTraffic(in->counters, false, packets - lost, words / packets * (packets - lost),
					     true);
				if (tap_)
					tapData(*in, false, wire, packets - lost);
				dropped_ += packets - lost;
				continue;
			}
		}
		countTraffic(in->counters, false, packets, words, true);
		if (tap_)
			tapData(*in, false, wire, packets);
		if (in->state != PortState::Armed && in->state != PortState::Active) {
			addSaturating(in->counters.rcvErrors, packets);
			dropped_ += packets;
			continue;
		}
		Node &node = *in->node;
		if (!node.isSwitch()) {
			reached.push_back(in);
			continue;
		}
		if (std::find(relayed.begin(), relayed.end(), &node) != relayed.end())
			continue;
		relayed.push_back(&node);
		if (id && arrived && !relayedOnce(id, node))
			continue;
		const SwitchState &st = *node.sw;
		const unsigned positions = (node.numPorts + 16) / 16;
		const size_t base = size_t(mlid - IB_MULTICAST_LID_BASE) * positions;
		if (base + positions > st.mft.size()) {
			addSaturating(in->counters.rcvSwitchRelayErrors, packets);
			dropped_ += packets;
			continue;
		}
		for (unsigned num = 1; num <= node.numPorts; num++) {
			if (num != in->num && (st.mft[base + num / 16] >> (num % 16) & 1))
				egress.push_back({ &node.port(num), hop + 1 });
		}
	}
	if (id && !arrived && away && away->size() > awayBefore)
		for (const Node *sw : relayed)
			relayedOnce(id, *sw);
}

void Subnet::forgetRelayed()
{
	farRelayed_.clear();
	farRelayedOrder_.clear();
}

bool Subnet::relayedOnce(uint64_t id, const Node &sw)
{
	constexpr size_t kRemembered = 4096;
	const std::pair<uint64_t, uint32_t> key{ id, sw.index };
	if (!farRelayed_.insert(key).second)
		return false;
	farRelayedOrder_.push_back(key);
	if (farRelayedOrder_.size() > kRemembered) {
		farRelayed_.erase(farRelayedOrder_.front());
		farRelayedOrder_.pop_front();
	}
	return true;
}

namespace {

/* What a node's SMA or PMA would answer: a Get, Set or TrapRepress of
 * the SM classes, a Get or Set of PerfMgt */
bool forAgents(const Packet &pkt)
{
	const ib_mad_hdr &h = *madHdr(pkt.mad);
	if (isSmpClass(h.mgmt_class))
		return h.method == IB_MGMT_METHOD_GET || h.method == IB_MGMT_METHOD_SET ||
			h.method == IB_MGMT_METHOD_TRAP_REPRESS;
	return h.mgmt_class == IB_MGMT_CLASS_PERF_MGMT &&
		(h.method == IB_MGMT_METHOD_GET || h.method == IB_MGMT_METHOD_SET);
}

} /* namespace */

void Subnet::deliver(Port &port, const Packet &pkt)
{
	if (port.node->silent && forAgents(pkt))
		return drop(&port, "agents silenced");
	if (port.host)
		port.host->receive(port, pkt);
	else
		idleHostReceive(*this, port, pkt);
}

} /* namespace ibemu::fabric */
