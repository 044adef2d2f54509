// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
#include "tests/unit/fabric_helpers.h"

#include "fabric/packet_format.h"
#include "fabric/process_mad.h"
#include "fabric/smi.h"
#include "fabric/smp_attrs.h"
#include "fabric/topology.h"

#include <boost/asio/post.hpp>
#include <catch2/catch.hpp>

#include <deque>

namespace ibemu::test {

void load(Subnet &subnet, std::string_view text)
{
	Topology topo;
	TopologyError err;
	int rc = parseTopology(text, "test.topo", topo, err);
	if (rc == 0)
		rc = buildSubnet(topo, subnet, err);
	INFO(err.str());
	REQUIRE(rc == 0);
}

void Capture::receive(Port &port, const Packet &p)
{
	got.push_back(p);
	const ib_mad_hdr &h = *madHdr(p.mad);
	if (h.method == IB_MGMT_METHOD_GET || h.method == IB_MGMT_METHOD_SET)
		idleHostReceive(subnet, port, p);
}

void noStateChange(uint8_t *portInfo)
{
	ib_port_info &pi = *overlay<ib_port_info>(portInfo);
	pi.linkspeed_portstate &= 0xf0;
	pi.portphysstate_linkdown &= 0x0f;
}

static void fillHeader(Mad &m, uint8_t mgmtClass, uint8_t method, uint16_t attr, uint32_t am, uint64_t tid)
{
	ib_mad_hdr &h = *madHdr(m);
	h.base_version = 1;
	h.mgmt_class = mgmtClass;
	h.class_version = 1;
	h.method = method;
	h.tid = tid;
	h.attr_id = attr;
	h.attr_mod = am;
}

Packet drSmp(uint8_t method, uint16_t attr, uint32_t am, const std::vector<uint8_t> &path, uint64_t tid)
{
	Packet pkt;
	pkt.srcQp = pkt.dstQp = IB_QP0;
	fillHeader(pkt.mad, IB_MGMT_CLASS_SUBN_DIRECTED_ROUTE, method, attr, am, tid);
	ib_smp &s = *smp(pkt.mad);
	s.hop_cnt = static_cast<uint8_t>(path.size());
	for (size_t i = 0; i < path.size(); i++)
		s.initial_path[i + 1] = path[i];
	s.dr_slid = IB_LID_PERMISSIVE;
	s.dr_dlid = IB_LID_PERMISSIVE;
	return pkt;
}

Packet lidSmp(uint8_t method, uint16_t attr, uint32_t am, uint16_t dlid, uint64_t tid)
{
	Packet pkt;
	pkt.srcQp = pkt.dstQp = IB_QP0;
	pkt.dlid = dlid;
	fillHeader(pkt.mad, IB_MGMT_CLASS_SUBN_LID_ROUTED, method, attr, am, tid);
	return pkt;
}

Packet pmaMad(uint8_t method, uint16_t attr, uint8_t portSelect, uint16_t dlid, uint64_t tid)
{
	Packet pkt;
	pkt.srcQp = pkt.dstQp = IB_QP1;
	pkt.qkey = IB_QP1_QKEY;
	pkt.dlid = dlid;
	fillHeader(pkt.mad, IB_MGMT_CLASS_PERF_MGMT, method, attr, 0, tid);
	pkt.mad[kPmaDataOffset + 1] = portSelect;
	return pkt;
}

std::optional<Mad> roundTrip(Subnet &subnet, Port &from, Packet pkt)
{
	Capture cap(subnet);
	HostStack *old = from.host;
	from.host = &cap;
	uint64_t tid = madHdr(pkt.mad)->tid.get();
	std::optional<Mad> result;

	bool dr = pkt.mad[1] == IB_MGMT_CLASS_SUBN_DIRECTED_ROUTE;
	if (dr && smp(pkt.mad)->hop_cnt == 0) {
		Mad reply;
		if (processMad(subnet, from, pkt, reply) == MadResult::Reply)
			result = reply;
	} else {
		/* the kernel does SMI send processing only for SMPs that start with a
		 * directed segment (handle_outgoing_dr_smp) */
		if (dr && smp(pkt.mad)->dr_slid.get() == IB_LID_PERMISSIVE)
			REQUIRE(smi::prepareSend(*smp(pkt.mad), false, from.num));
		else
			pkt.slid = from.lid ? from.lid : IB_LID_PERMISSIVE;
		subnet.send(from, pkt);
		for (const Packet &p : cap.got) {
			if (!result && madHdr(p.mad)->tid.get() == tid && isResponseMad(*madHdr(p.mad)))
				result = p.mad;
			else if (old)
				old->receive(from, p); /* e.g. a trap meant for whoever listens */
		}
	}
	from.host = old;
	return result;
}

/* ---------------- MiniSm ---------------- */

Mad MiniSm::get(const std::vector<uint8_t> &path, uint16_t attr, uint32_t am)
{
	auto r = roundTrip(subnet_, sm_, drSmp(IB_MGMT_METHOD_GET, attr, am, path, ++tid_));
	INFO("Get attr " << attr << " am " << am << " path length " << path.size());
	REQUIRE(r);
	REQUIRE((madStatus(*r) & 0x7fff) == 0);
	return *r;
}

Mad MiniSm::set(const std::vector<uint8_t> &path, uint16_t attr, uint32_t am, const uint8_t *data)
{
	Packet pkt = drSmp(IB_MGMT_METHOD_SET, attr, am, path, ++tid_);
	memcpy(smp(pkt.mad)->data, data, 64);
	auto r = roundTrip(subnet_, sm_, pkt);
	REQUIRE(r);
	INFO("attr " << attr << " am " << am);
	REQUIRE((madStatus(*r) & 0x7fff) == 0);
	return *r;
}

void MiniSm::discover()
{
	std::deque<Node *> queue;
	paths_[sm_.node] = {};
	order_.push_back(sm_.node);
	queue.push_back(sm_.node);
	while (!queue.empty()) {
		Node *n = queue.front();
		queue.pop_front();
		const auto path = paths_[n];
		for (unsigned num = 1; num <= n->numPorts; num++) {
			if (!n->isSwitch() && num != sm_.num)
				continue; /* the SM reaches the fabric through its own port */
			Mad pi = get(path, IB_SMP_ATTR_PORT_INFO, num);
			auto &info = *overlay<ib_port_info>(smpData(pi));
			if (hiNibble(info.portphysstate_linkdown) != static_cast<uint8_t>(PhysState::LinkUp))
				continue;
			auto next = path;
			next.push_back(static_cast<uint8_t>(num));
			Mad ni = get(next, IB_SMP_ATTR_NODE_INFO, 0);
			uint64_t guid = overlay<ib_node_info>(smpData(ni))->node_guid.get();
			Node *peer = subnet_.findNodeByGuid(guid);
			REQUIRE(peer);
			if (!paths_.count(peer)) {
				paths_[peer] = next;
				order_.push_back(peer);
				if (peer->isSwitch())
					queue.push_back(peer);
			}
		}
	}
}

uint16_t MiniSm::lidOf(const Port &p) const
{
	const Port &lp = p.node->isSwitch() ? p.node->port(0) : p;
	auto it = lids_.find(&lp);
	return it == lids_.end() ? 0 : it->second;
}

/* Where the SM reaches a port: a path and the PortInfo attribute modifier.
 * CA ports other than the SM's own are reached through the switch port they
 * are cabled to, the way an SM sees them. */
bool MiniSm::route(const Port &port, std::vector<uint8_t> &path, unsigned &am) const
{
	const Node &n = *port.node;
	if (n.isSwitch() || &port == &sm_) {
		path = paths_.at(&n);
		am = port.num;
		return true;
	}
	if (!port.peer || !port.linkUp() || !paths_.count(port.peer->node))
		return false;
	path = paths_.at(port.peer->node);
	path.push_back(port.peer->num);
	am = 0;
	return true;
}

void MiniSm::assignLids()
{
	uint16_t next = 1;
	for (Node *n : order_) {
		if (n->isSwitch())
			lids_[&n->port(0)] = next++;
		else
			for (unsigned num = 1; num <= n->numPorts; num++)
				if (n->port(num).linkUp() || &n->port(num) == &sm_)
					lids_[&n->port(num)] = next++;
	}
	uint16_t smLid = lids_[&sm_];
	for (auto &[port, lid] : lids_) {
		std::vector<uint8_t> path;
		unsigned am;
		if (!route(*port, path, am))
			continue;
		Mad pi = get(path, IB_SMP_ATTR_PORT_INFO, am);
		auto &info = *overlay<ib_port_info>(smpData(pi));
		noStateChange(smpData(pi));
		info.lid = lid;
		info.sm_lid = smLid;
		set(path, IB_SMP_ATTR_PORT_INFO, am, smpData(pi));
	}
}

void MiniSm::programLfts()
{
	uint16_t maxLid = 0;
	for (auto &[port, lid] : lids_)
		maxLid = std::max(maxLid, lid);
	for (Node *sw : order_) {
		if (!sw->isSwitch())
			continue;
		/* BFS from this switch over the cabled graph; first hop port per node */
		std::map<const Node *, uint8_t> firstPort;
		std::deque<const Node *> queue{ sw };
		firstPort[sw] = 0;
		while (!queue.empty()) {
			const Node *n = queue.front();
			queue.pop_front();
			if (!n->isSwitch() && n != sw)
				continue;
			for (unsigned num = 1; num <= n->numPorts; num++) {
				const Port &p = n->port(num);
				if (!p.peer || !p.linkUp() || firstPort.count(p.peer->node))
					continue;
				firstPort[p.peer->node] = n == sw ? static_cast<uint8_t>(num) : firstPort[n];
				queue.push_back(p.peer->node);
			}
		}
		std::vector<uint8_t> lft((maxLid / 64 + 1) * 64, 0xff);
		for (auto &[port, lid] : lids_) {
			auto it = firstPort.find(port->node);
			if (it == firstPort.end())
				continue;
			lft[lid] = it->second;
			if (!port->node->isSwitch() && port->node != sw) {
				/* a CA port: leave the switch it is cabled to through that cable */
				const Port *peer = port->peer;
				if (peer && peer->node == sw)
					lft[lid] = peer->num;
				else if (peer && firstPort.count(peer->node))
					lft[lid] = firstPort[peer->node];
			}
		}
		const auto &path = paths_.at(sw);
		for (size_t block = 0; block * 64 < lft.size(); block++)
			set(path, IB_SMP_ATTR_LINEAR_FORWARD_TABLE, static_cast<uint32_t>(block), &lft[block * 64]);
		Mad si = get(path, IB_SMP_ATTR_SWITCH_INFO, 0);
		overlay<ib_switch_info>(smpData(si))->linear_fdb_top = maxLid;
		set(path, IB_SMP_ATTR_SWITCH_INFO, 0, smpData(si));
	}
}

void MiniSm::activate()
{
	for (PortState target : { PortState::Armed, PortState::Active }) {
		for (Node *n : order_) {
			for (unsigned num = n->firstPort(); num <= n->numPorts; num++) {
				Port &p = n->port(num);
				if (num != 0 && (!p.peer || !p.linkUp()))
					continue;
				std::vector<uint8_t> path;
				unsigned am;
				if (!route(p, path, am))
					continue;
				Mad pi = get(path, IB_SMP_ATTR_PORT_INFO, am);
				auto &info = *overlay<ib_port_info>(smpData(pi));
				info.linkspeed_portstate = nibbles(0, static_cast<uint8_t>(target));
				info.portphysstate_linkdown = nibbles(0, 0);
				set(path, IB_SMP_ATTR_PORT_INFO, am, smpData(pi));
			}
		}
	}
}

void MiniSm::run()
{
	discover();
	assignLids();
	programLfts();
	activate();
}

DefaultFabric::DefaultFabric()
{
	load(s, defaultTopology());
	host1 = &s.findNodeByGuid(0x2c90300000100)->port(1);
	host2 = &s.findNodeByGuid(0x2c90300000200)->port(1);
	sw1 = s.findNodeByGuid(0x2c90200000001);
	sw2 = s.findNodeByGuid(0x2c90200000002);
	sm = std::make_unique<MiniSm>(s, *host1);
	sm->run();
}

DefaultFabric::~DefaultFabric() = default;

/* ---------------- SplitSubnet ---------------- */

const std::string_view kSplitTopology = R"(host="a" addr="127.0.0.1:7701"
Switch 8 "S1" # "sw1" base port 0 lid 0 lmc 0
[1] "H1"[1]
[7] "S2"[7]
[8] "S2"[8]

Ca 1 "H1" # "h1 HCA-1"
[1] "S1"[1]

Ca 1 "H3" # "h3 HCA-1"
[1] "S2"[3]

host="b" addr="127.0.0.1:7702"
Switch 8 "S2" # "sw2" base port 0 lid 0 lmc 0
[1] "H2"[1]
[3] "H3"[1]
[7] "S1"[7]
[8] "S1"[8]

Ca 1 "H2" # "h2 HCA-1"
[1] "S2"[1]
)";

void SplitWire::transmit(const Port &far, const Packet &pkt, unsigned hops)
{
	if (cut)
		return;
	Packet back;
	REQUIRE(decodeMadPacket(encodeMadPacket(pkt), back));
	Port &to = there(far);
	packets++;
	other->arriveFromFar(to.peer ? *to.peer : *to.pulledPeer, back, hops);
}

void SplitWire::transmitData(const Port &far, DataPackets data, unsigned hops, OnWire onWire)
{
	if (onWire && hold) {
		held.push_back(std::move(onWire));
	} else if (onWire) { /* on the wire at once, told in the next turn */
		REQUIRE(io);
		boost::asio::post(*io, [fn = std::move(onWire), sent = !cut] { fn(sent); });
	}
	if (cut)
		return;
	for (const auto &b : data)
		REQUIRE(packetIntact(b));
	Port *to = &there(far);
	Port *from = to->peer ? to->peer : to->pulledPeer;
	dataMessages++;
	lastData = data;
	lastFrom = from;
	if (!io)
		return other->arriveDataFromFar(*from, std::move(data), hops);
	boost::asio::post(*io, [s = other, from, data = std::move(data), hops]() mutable {
		s->arriveDataFromFar(*from, std::move(data), hops);
	});
}

void SplitWire::endChanged(const Port &local, const Port &)
{
	if (cut)
		return;
	other->farEndReported(there(local), cableEndOf(local));
}

namespace {

void buildShare(Subnet &s, const std::string &me)
{
	Topology topo;
	TopologyError err;
	int rc = parseTopology(kSplitTopology, "split.topo", topo, err);
	if (rc == 0)
		rc = buildSubnet(topo, s, err);
	INFO(err.str());
	REQUIRE(rc == 0);
	REQUIRE(topo.hosts.size() == 2);
	for (const TopoNode &n : topo.nodes)
		if (topo.hosts[size_t(n.host)].name != me)
			s.setForeign(*s.findNode(n.id));
}

} /* namespace */

SplitSubnet::SplitSubnet(boost::asio::io_context *io)
{
	buildShare(a, "a");
	buildShare(b, "b");
	toB.other = &b;
	toA.other = &a;
	toB.io = toA.io = io;
	a.setRemoteCables(&toB);
	b.setRemoteCables(&toA);
}

void SplitSubnet::connect()
{
	toB.cut = toA.cut = false;
	for (auto [s, w] : { std::pair{ &a, &toB }, std::pair{ &b, &toA } }) {
		for (const auto &n : s->nodes())
			for (Port &p : n->ports)
				if (!n->foreign && p.cableEnd() && p.cableEnd()->node->foreign)
					w->endChanged(p, *p.cableEnd());
	}
}

void SplitSubnet::disconnect()
{
	toB.cut = toA.cut = true;
	for (Subnet *s : { &a, &b })
		for (const auto &n : s->nodes())
			if (n->foreign)
				for (Port &p : n->ports)
					if (p.peer && !p.peer->node->foreign)
						s->farEndLost(p);
}

} /* namespace ibemu::test */
