// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
#include "tools/observe/web_state.h"

#include "tools/observe/fabric_picture.h"

#include "fabric/capability.h"
#include "fabric/subnet.h"

#include <fmt/format.h>

#include <functional>

namespace ibemu::tools {

using fabric::Node;
using fabric::Port;
using fabric::PortState;
using Json = nlohmann::ordered_json;

namespace {

const char *stateName(PortState s)
{
	switch (s) {
	case PortState::Down:
		return "Down";
	case PortState::Init:
		return "Init";
	case PortState::Armed:
		return "Armed";
	case PortState::Active:
		return "Active";
	default:
		return "?";
	}
}

uint64_t portErrors(const fabric::PortCounters &c)
{
	return uint64_t(c.symbolErrors) + c.linkErrorRecovery + c.linkDowned + c.rcvErrors + c.rcvRemotePhysErrors +
		c.rcvSwitchRelayErrors + c.xmitDiscards + c.xmitConstraintErrors + c.rcvConstraintErrors +
		c.localLinkIntegrityErrors + c.excessiveBufferOverruns + c.vl15Dropped;
}

std::string nodeName(const Node &n)
{
	return n.desc.empty() ? n.name : n.desc;
}

Json portJson(const Port &p)
{
	Json j = { { "node", fmt::format("n{}", p.node->index) },
		   { "name", nodeName(*p.node) },
		   { "port", p.num },
		   { "lid", p.node->isSwitch() ? p.node->port(0).lid : p.lid },
		   { "state", stateName(p.state) },
		   { "phys", fabric::physStateName(p.physState) },
		   { "xmit_pkts", p.counters.extXmitPkts },
		   { "rcv_pkts", p.counters.extRcvPkts },
		   { "errors", portErrors(p.counters) } };
	if (const Port *q = p.cableEnd())
		j["peer"] = fmt::format("{}:{}", nodeName(*q->node), q->num);
	return j;
}

/* Whether p is the end a cable is named and drawn from: the one on the
 * node with the lower index (the lower port number on one node) */
bool cableOwner(const Port &p)
{
	const Port *q = p.cableEnd();
	return q && (q->node->index > p.node->index || (q->node == p.node && q->num > p.num));
}

} /* namespace */

std::string cableId(const Port &p)
{
	const Port *q = p.cableEnd();
	if (!q)
		return {};
	const Port &owner = cableOwner(p) ? p : *q;
	return fmt::format("l{}p{}", owner.node->index, owner.num);
}

size_t pictureKey(const fabric::Subnet &subnet)
{
	size_t key = subnet.nodes().size();
	auto mix = [&key](size_t v) { key = key * 1000003u ^ v; };
	for (const auto &n : subnet.nodes()) {
		for (unsigned i = n->firstPort(); i <= n->numPorts; i++) {
			const Port &p = n->port(i);
			if (n->isSwitch() == (i == 0)) /* a switch's LID is port 0's */
				mix(p.lid);
			/* the picture draws a cable's state and its width and speed */
			if (i > 0 && cableOwner(p))
				mix(size_t(cableState(p)[0]) << 16 | size_t(p.linkWidthActive) << 8 |
				    size_t(p.speedActive));
		}
	}
	return key;
}

size_t stateKey(const fabric::Subnet &subnet)
{
	size_t key = pictureKey(subnet);
	auto mix = [&key](size_t v) { key = key * 1000003u ^ v; };
	for (const auto &n : subnet.nodes()) {
		mix(std::hash<std::string>{}(n->desc));
		for (unsigned i = 1; i <= n->numPorts; i++) {
			const Port &p = n->port(i);
			mix(size_t(p.state) << 8 | size_t(p.physState));
			mix(p.lid);
			mix(p.smLid);
			mix(p.capMask & fabric::IB_PORT_SM);
			mix(p.counters.extXmitPkts);
			mix(p.counters.extRcvPkts);
			mix(portErrors(p.counters));
			const Port *q = p.cableEnd();
			mix(q ? size_t(q->node->index) << 8 | q->num : 0);
		}
	}
	return key;
}

Json fabricState(const fabric::Subnet &subnet)
{
	/* cables in a std::map: an ordered_json object finds a key by looking
	 * at every one before it, and a fabric has tens of thousands of them */
	nlohmann::json cables = nlohmann::json::object();
	Json ports = Json::array(), states = Json::object();
	size_t total = 0;
	for (const auto &n : subnet.nodes())
		if (!n->foreign)
			total += n->numPorts;
	Json sm;
	for (const auto &n : subnet.nodes()) {
		for (unsigned i = 1; i <= n->numPorts; i++) {
			const Port &p = n->port(i);
			if (cableOwner(p))
				cables[cableId(p)] = cableState(p);
			if (n->foreign) /* another host's: its daemon knows its state */
				continue;
			states[stateName(p.state)] = states.value(stateName(p.state), 0) + 1;
			/* the SM: a CA port with IsSM whose LID the others point at */
			if (!n->isSwitch() && (p.capMask & fabric::IB_PORT_SM) && p.lid && p.lid == p.smLid)
				sm = { { "lid", p.lid }, { "node", nodeName(*n) }, { "port", p.num } };
			if (total <= kMaxListedPorts)
				ports.push_back(portJson(p));
		}
	}
	Json j = { { "picture", pictureKey(subnet) }, { "cables", cables }, { "states", states } };
	if (total <= kMaxListedPorts)
		j["ports"] = ports;
	else
		j["ports_omitted"] = total;
	j["sm"] = sm.is_null() ? Json{ { "state", "no SM has set up the fabric" } } : sm;
	return j;
}

Json nodeState(const Node &n)
{
	Json j = { { "id", fmt::format("n{}", n.index) },
		   { "name", nodeName(n) },
		   { "node_id", n.name },
		   { "type",
		     n.isSwitch()                             ? "switch"
			     : n.type == fabric::NodeType::CA ? "CA"
							      : "router" },
		   { "node_guid", fmt::format("{:#018x}", n.nodeGuid) },
		   { "num_ports", n.numPorts } };
	Json ports = Json::array();
	for (unsigned i = n.firstPort(); i <= n.numPorts; i++) {
		const Port &p = n.port(i);
		Json pj = portJson(p);
		pj["port_guid"] = fmt::format("{:#018x}", p.guid);
		pj["sm_lid"] = p.smLid;
		pj["lmc"] = p.lmc;
		pj["width"] = fabric::widthLanes(p.linkWidthActive);
		pj["speed"] = fabric::speedName(p.speedActive);
		pj["mtu"] = 128u << p.neighborMtu;
		pj["cap_mask"] = fmt::format("{:#010x}", p.capMask);
		pj["counters"] = { { "SymbolErrorCounter", p.counters.symbolErrors },
				   { "LinkDownedCounter", p.counters.linkDowned },
				   { "PortRcvErrors", p.counters.rcvErrors },
				   { "PortXmitDiscards", p.counters.xmitDiscards },
				   { "VL15Dropped", p.counters.vl15Dropped },
				   { "PortXmitData", p.counters.extXmitData },
				   { "PortRcvData", p.counters.extRcvData },
				   { "PortXmitPkts", p.counters.extXmitPkts },
				   { "PortRcvPkts", p.counters.extRcvPkts } };
		ports.push_back(pj);
	}
	j["ports"] = ports;
	if (n.isSwitch()) {
		const auto &sw = *n.sw;
		Json lft = Json::array();
		for (unsigned lid = 1; lid <= sw.linearFdbTop && lid < 1024; lid++)
			if (uint8_t port = sw.lftEntry(static_cast<uint16_t>(lid)); port != 0xff)
				lft.push_back({ lid, port });
		j["linear_fdb_top"] = sw.linearFdbTop;
		j["lft"] = lft;
	}
	return j;
}

} /* namespace ibemu::tools */
