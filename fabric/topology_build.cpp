// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// Turning a parsed topology into a Subnet: GUIDs, link speeds, cables.
#include "fabric/subnet.h"
#include "fabric/topology.h"

#include <cerrno>
#include <cstdio>
#include <unordered_map>

namespace ibemu::fabric {

namespace {

/* ibsim's GUID bases, so that an ibsim net file gets the same GUIDs here. */
constexpr uint64_t kCaGuidBase = 0x100000;
constexpr uint64_t kSwitchGuidBase = 0x200000;
constexpr uint64_t kRouterGuidBase = 0x300000;

std::string hex(uint64_t v)
{
	char buf[24];
	snprintf(buf, sizeof(buf), "0x%llx", static_cast<unsigned long long>(v));
	return buf;
}

struct Builder {
	const Topology &topo;
	Subnet &subnet;
	TopologyError &err;
	std::vector<Node *> built; /* parallel to topo.nodes */
	std::unordered_map<std::string_view, size_t> byId;
	std::unordered_map<std::string_view, std::pair<size_t, uint8_t>> aliases;

	int fail(uint32_t file, uint32_t line, std::string msg)
	{
		err.file = topo.files[file];
		err.line = line;
		err.message = std::move(msg);
		return -EINVAL;
	}

	int assignGuids(std::vector<uint64_t> &guids);
	int createNodes();
	const TopoPort *portLine(size_t nodeIdx, unsigned num) const;
	int resolvePeer(const TopoNode &tn, const TopoPort &tp, size_t &peerIdx, uint8_t &peerPort);
	int connectAll();
};

int Builder::assignGuids(std::vector<uint64_t> &guids)
{
	std::unordered_map<uint64_t, size_t> used;
	guids.resize(topo.nodes.size());
	for (size_t i = 0; i < topo.nodes.size(); i++) {
		const TopoNode &n = topo.nodes[i];
		if (!n.guid)
			continue;
		auto [it, fresh] = used.emplace(n.guid, i);
		if (!fresh) {
			const TopoNode &o = topo.nodes[it->second];
			return fail(n.file, n.line,
				    "node GUID " + hex(n.guid) + " of \"" + n.id + "\" is already used by \"" + o.id +
					    "\" (" + topo.files[o.file] + ":" + std::to_string(o.line) + ")");
		}
		guids[i] = n.guid;
	}
	uint64_t next[3] = { kCaGuidBase, kSwitchGuidBase, kRouterGuidBase };
	for (size_t i = 0; i < topo.nodes.size(); i++) {
		const TopoNode &n = topo.nodes[i];
		if (n.guid)
			continue;
		int t = n.type == NodeType::CA ? 0 : n.type == NodeType::Switch ? 1 : 2;
		uint64_t step = n.type == NodeType::Switch ? 1 : n.numPorts + 1;
		while (used.count(next[t]))
			next[t] += step;
		guids[i] = next[t];
		used.emplace(next[t], i);
		next[t] += step;
	}
	return 0;
}

int Builder::createNodes()
{
	std::vector<uint64_t> guids;
	if (int rc = assignGuids(guids))
		return rc;

	built.resize(topo.nodes.size());
	for (size_t i = 0; i < topo.nodes.size(); i++) {
		const TopoNode &tn = topo.nodes[i];
		auto [it, fresh] = byId.emplace(tn.id, i);
		if (!fresh) {
			const TopoNode &o = topo.nodes[it->second];
			return fail(tn.file, tn.line,
				    "node id \"" + tn.id + "\" is already used (" + topo.files[o.file] + ":" +
					    std::to_string(o.line) + ")");
		}
		Node &n = subnet.addNode(tn.type, tn.numPorts, tn.id, guids[i]);
		built[i] = &n;
		n.desc = tn.desc;
		if (tn.vendorId)
			n.vendorId = tn.vendorId;
		if (tn.deviceId)
			n.deviceId = tn.deviceId;
		n.sysImageGuid = tn.sysImageGuid ? tn.sysImageGuid : n.nodeGuid;
		if (n.isSwitch()) {
			n.sw->enhancedPort0 = tn.enhancedPort0;
			n.port(0).lid = tn.lid;
			n.port(0).lmc = tn.enhancedPort0 ? tn.lmc : 0;
		}

		/* Link capabilities: every port of a node supports the fastest width
		 * and speed any of its links uses; each port enables what its own
		 * line says (so a degraded 1x link in the file stays 1x). */
		uint8_t widthSup = tn.widthEnabled;
		Speed speedSup = speedFromBits(tn.speedEnabled, tn.extSpeedEnabled);
		for (const TopoPort &tp : tn.ports) {
			if (tp.alias.size() && tp.peer.empty() && !tp.speed && !tp.widthEnabled)
				continue;
			widthSup |= tp.widthEnabled;
			Speed s = tp.speed
				? *tp.speed
				: speedFromBits(tp.speedEnabled, tp.extSpeedEnabled == 0xff ? 0 : tp.extSpeedEnabled);
			if (s > speedSup)
				speedSup = s;
		}
		for (auto &p : n.ports) {
			p.linkWidthSupported = widthSup;
			p.linkWidthEnabled = tn.widthEnabled & widthSup;
			p.speedSupported = speedSup;
			p.linkSpeedEnabled = tn.speedEnabled;
			p.linkSpeedExtEnabled = tn.extSpeedEnabled;
			if (!p.linkWidthEnabled)
				p.linkWidthEnabled = widthSup;
		}
		for (const TopoPort &tp : tn.ports) {
			Port &p = n.port(tp.num);
			if (tp.widthEnabled)
				p.linkWidthEnabled = tp.widthEnabled;
			if (tp.speedEnabled)
				p.linkSpeedEnabled = tp.speedEnabled;
			if (tp.extSpeedEnabled != 0xff)
				p.linkSpeedExtEnabled = tp.extSpeedEnabled;
			if (!n.isSwitch()) {
				if (tp.guid && tp.guid != p.guid) {
					Port *other = subnet.findPortByGuid(tp.guid);
					if (other && other != &p)
						return fail(tp.file, tp.line,
							    "port GUID " + hex(tp.guid) + " is already used by \"" +
								    other->node->name + "\" port " +
								    std::to_string(other->num));
					subnet.setPortGuid(p, tp.guid);
				}
				p.lid = tp.lid;
				p.lmc = tp.lmc;
			}
			if (!tp.alias.empty()) {
				auto [ait, afresh] = aliases.emplace(tp.alias, std::make_pair(i, tp.num));
				if (!afresh)
					return fail(tp.file, tp.line, "alias \"" + tp.alias + "\" is defined twice");
			}
		}
	}
	return 0;
}

const TopoPort *Builder::portLine(size_t nodeIdx, unsigned num) const
{
	for (const TopoPort &tp : topo.nodes[nodeIdx].ports)
		if (tp.num == num)
			return &tp;
	return nullptr;
}

int Builder::resolvePeer(const TopoNode &tn, const TopoPort &tp, size_t &peerIdx, uint8_t &peerPort)
{
	peerPort = tp.peerPort;
	if (tp.peer.find('@') != std::string::npos) {
		auto it = aliases.find(tp.peer);
		if (it == aliases.end())
			return fail(tp.file, tp.line, "unknown port alias \"" + tp.peer + "\"");
		peerIdx = it->second.first;
		peerPort = it->second.second;
		return 0;
	}
	auto it = byId.find(tp.peer);
	if (it != byId.end()) {
		peerIdx = it->second;
	} else {
		/* "S-0002c90300001234" or "0x0002c90300001234": a GUID */
		std::string_view g = tp.peer;
		if (g.size() > 2 && g[1] == '-')
			g.remove_prefix(2);
		else if (g.size() > 2 && g[0] == '0' && (g[1] == 'x' || g[1] == 'X'))
			g.remove_prefix(2);
		uint64_t guid = 0;
		bool ok = !g.empty() && g.size() <= 16 &&
			g.find_first_not_of("0123456789abcdefABCDEF") == std::string_view::npos;
		if (ok)
			guid = std::stoull(std::string(g), nullptr, 16);
		Node *n = ok ? subnet.findNodeByGuid(guid) : nullptr;
		if (!n)
			return fail(tp.file, tp.line,
				    "port " + std::to_string(tp.num) + " of \"" + tn.id +
					    "\" names an unknown node \"" + tp.peer + "\"");
		peerIdx = n->index;
	}
	const TopoNode &pn = topo.nodes[peerIdx];
	if (peerPort < 1 || peerPort > pn.numPorts)
		return fail(tp.file, tp.line,
			    "\"" + pn.id + "\" has no port " + std::to_string(peerPort) + " (it has " +
				    std::to_string(pn.numPorts) + ")");
	return 0;
}

int Builder::connectAll()
{
	for (size_t i = 0; i < topo.nodes.size(); i++) {
		const TopoNode &tn = topo.nodes[i];
		for (const TopoPort &tp : tn.ports) {
			if (tp.peer.empty())
				continue;
			size_t peerIdx;
			uint8_t peerPort;
			if (int rc = resolvePeer(tn, tp, peerIdx, peerPort))
				return rc;
			if (peerIdx == i && peerPort == tp.num)
				return fail(tp.file, tp.line,
					    "port " + std::to_string(tp.num) + " is cabled to itself");

			/* If the peer describes its end, both must agree. */
			if (const TopoPort *back = portLine(peerIdx, peerPort); back && !back->peer.empty()) {
				size_t backIdx;
				uint8_t backPort;
				if (int rc = resolvePeer(topo.nodes[peerIdx], *back, backIdx, backPort))
					return rc;
				if (backIdx != i || backPort != tp.num)
					return fail(tp.file, tp.line,
						    "\"" + tn.id + "\"[" + std::to_string(tp.num) +
							    "] is cabled to \"" + topo.nodes[peerIdx].id + "\"[" +
							    std::to_string(peerPort) + "], but " +
							    topo.files[back->file] + ":" + std::to_string(back->line) +
							    " cables that port to \"" + topo.nodes[backIdx].id + "\"[" +
							    std::to_string(backPort) + "]");
			}

			Port &a = built[i]->port(tp.num);
			Port &b = built[peerIdx]->port(peerPort);
			if (a.peer == &b)
				continue; /* the other end's line already made this cable */
			if (a.peer || b.peer) {
				Port &busy = a.peer ? a : b;
				return fail(tp.file, tp.line,
					    "\"" + busy.node->name + "\"[" + std::to_string(busy.num) +
						    "] is already cabled to \"" + busy.peer->node->name + "\"[" +
						    std::to_string(busy.peer->num) + "]");
			}
			if (subnet.connect(a, b) != 0)
				return fail(tp.file, tp.line, "cannot cable these ports");
		}
	}
	return 0;
}

} /* namespace */

int buildSubnet(const Topology &topo, Subnet &subnet, TopologyError &err)
{
	Builder b{ topo, subnet, err, {}, {}, {} };
	if (int rc = b.createNodes())
		return rc;
	return b.connectAll();
}

} /* namespace ibemu::fabric */
