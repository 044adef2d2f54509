// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// Turning a parsed topology into a Subnet: GUIDs, link speeds, cables; or
// grafting a fragment onto a running one (graftTopology), its port lines
// naming the running fabric's ports it is cabled to.
#include "fabric/subnet.h"
#include "fabric/topology.h"

#include <cassert>
#include <cerrno>
#include <cstdio>
#include <set>
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

/* The far end of a port line: a node of the topology, or (grafting) a
 * node of the running fabric */
struct PeerRef {
	size_t idx = SIZE_MAX;
	Node *running = nullptr;
	uint8_t port = 0;
};

struct Builder {
	const Topology &topo;
	Subnet &subnet; /* where the nodes are built */
	TopologyError &err;
	/* grafting: the running fabric, whose nodes the topology may cable
	 * to and whose ids and GUIDs it must not take; null otherwise */
	const Subnet *running = nullptr;
	std::vector<Node *> built; /* parallel to topo.nodes */
	std::unordered_map<std::string_view, size_t> byId;
	std::unordered_map<std::string_view, std::pair<size_t, uint8_t>> aliases;
	std::set<const Port *> attached; /* running ports a port line cables to */

	int fail(uint32_t file, uint32_t line, std::string msg)
	{
		err.file = topo.files[file];
		err.line = line;
		err.message = std::move(msg);
		return -EINVAL;
	}

	std::vector<uint64_t> guids; /* parallel to topo.nodes, once assigned */

	bool runningHas(uint64_t guid) const;
	int assignGuids();
	int checkGraftGuids();
	int createNodes();
	const TopoPort *portLine(size_t nodeIdx, unsigned num) const;
	int resolvePeer(const TopoNode &tn, const TopoPort &tp, PeerRef &peer);
	int attach(const TopoPort &tp, const PeerRef &peer, Port &a);
	int connectAll();
};

/* How many GUIDs past its node GUID a node's ports take: none for a
 * switch (its ports share the node GUID), one per port for a CA or router */
unsigned portGuidSpan(const TopoNode &n)
{
	return n.type == NodeType::Switch ? 0 : n.numPorts;
}

bool Builder::runningHas(uint64_t guid) const
{
	return running && (running->findNodeByGuid(guid) || running->findPortByGuid(guid));
}

int Builder::assignGuids()
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
	/* In a split subnet every daemon would hand out the same GUIDs: a node
	 * grafted there brings its own */
	bool split = false;
	if (running)
		for (const auto &rn : running->nodes())
			split |= rn->foreign;
	uint64_t next[3] = { kCaGuidBase, kSwitchGuidBase, kRouterGuidBase };
	for (size_t i = 0; i < topo.nodes.size(); i++) {
		const TopoNode &n = topo.nodes[i];
		if (n.guid)
			continue;
		if (split)
			return fail(
				n.file, n.line,
				"\"" + n.id +
					"\" has no GUID: in a subnet split across daemons a new node needs "
					"one, unique in the whole subnet (an id such as \"H-0002c90300000900\", or a "
					"caguid=/switchguid= line)");
		int t = n.type == NodeType::CA ? 0 : n.type == NodeType::Switch ? 1 : 2;
		uint64_t step = n.type == NodeType::Switch ? 1 : n.numPorts + 1;
		/* grafting: a GUID whose ports' GUIDs are free in the running fabric too */
		auto freeHere = [&](uint64_t g) {
			for (uint64_t k = 0; k <= portGuidSpan(n); k++)
				if (runningHas(g + k))
					return false;
			return true;
		};
		while (used.count(next[t]) || !freeHere(next[t]))
			next[t] += step;
		guids[i] = next[t];
		used.emplace(next[t], i);
		next[t] += step;
	}
	return running ? checkGraftGuids() : 0;
}

/* Grafting: every GUID the fragment's nodes and ports will have, new to
 * the running fabric and used once in the fragment, so that the real run
 * finds nothing the dry run did not */
int Builder::checkGraftGuids()
{
	std::unordered_map<uint64_t, size_t> taken;
	for (size_t i = 0; i < topo.nodes.size(); i++) {
		const TopoNode &n = topo.nodes[i];
		std::vector<std::pair<uint64_t, std::string>> mine{ { guids[i], "node GUID" } };
		for (unsigned num = 1; num <= portGuidSpan(n); num++) {
			const TopoPort *tp = portLine(i, num);
			mine.push_back({ tp && tp->guid ? tp->guid : guids[i] + num,
					 "port " + std::to_string(num) + "'s GUID" });
		}
		for (const auto &[g, what] : mine) {
			if (runningHas(g))
				return fail(n.file, n.line,
					    what + " " + hex(g) + " of \"" + n.id +
						    "\" is in the running fabric already");
			auto [it, fresh] = taken.emplace(g, i);
			if (!fresh && it->second != i)
				return fail(n.file, n.line,
					    what + " " + hex(g) + " of \"" + n.id + "\" is also \"" +
						    topo.nodes[it->second].id + "\"'s");
		}
	}
	return 0;
}

int Builder::createNodes()
{
	if (int rc = assignGuids())
		return rc;

	built.resize(topo.nodes.size());
	for (size_t i = 0; i < topo.nodes.size(); i++) {
		const TopoNode &tn = topo.nodes[i];
		if (running && running->findNode(tn.id))
			return fail(tn.file, tn.line, "node id \"" + tn.id + "\" is in the running fabric already");
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

int Builder::resolvePeer(const TopoNode &tn, const TopoPort &tp, PeerRef &peer)
{
	peer = {};
	peer.port = tp.peerPort;
	if (tp.peer.find('@') != std::string::npos) {
		auto it = aliases.find(tp.peer);
		if (it == aliases.end())
			return fail(tp.file, tp.line, "unknown port alias \"" + tp.peer + "\"");
		peer.idx = it->second.first;
		peer.port = it->second.second;
		return 0;
	}
	auto it = byId.find(tp.peer);
	if (it != byId.end()) {
		peer.idx = it->second;
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
		/* grafting: a node of the fragment by GUID, else one of the
		 * running fabric by id or GUID */
		Node *r = nullptr, *n = nullptr;
		if (running) {
			for (size_t k = 0; ok && k < guids.size(); k++)
				if (guids[k] == guid) {
					peer.idx = k;
					break;
				}
			if (peer.idx == SIZE_MAX) {
				r = running->findNode(tp.peer);
				if (!r && ok)
					r = running->findNodeByGuid(guid);
			}
		} else if (ok) {
			n = subnet.findNodeByGuid(guid);
		}
		if (!n && !r && peer.idx == SIZE_MAX)
			return fail(tp.file, tp.line,
				    "port " + std::to_string(tp.num) + " of \"" + tn.id +
					    "\" names an unknown node \"" + tp.peer + "\"");
		if (r) {
			peer.running = r;
			if (peer.port < 1 || peer.port > r->numPorts)
				return fail(tp.file, tp.line,
					    "\"" + r->name + "\" has no port " + std::to_string(peer.port) +
						    " (it has " + std::to_string(r->numPorts) + ")");
			return 0;
		}
		if (n)
			peer.idx = n->index;
	}
	const TopoNode &pn = topo.nodes[peer.idx];
	if (peer.port < 1 || peer.port > pn.numPorts)
		return fail(tp.file, tp.line,
			    "\"" + pn.id + "\" has no port " + std::to_string(peer.port) + " (it has " +
				    std::to_string(pn.numPorts) + ")");
	return 0;
}

/* A port line that cables to the running fabric: its port must be free,
 * this daemon's own in a split subnet, and named by one line only */
int Builder::attach(const TopoPort &tp, const PeerRef &peer, Port &a)
{
	Port &b = peer.running->port(peer.port);
	/* a stand-in, or a port whose cable to another host was pulled: that
	 * host's daemon would never hear of the new cable */
	if (b.node->foreign)
		return fail(tp.file, tp.line,
			    "\"" + b.node->name +
				    "\" is simulated by another host's daemon: a fragment attaches to this host's "
				    "nodes only");
	if (b.pulledPeer && b.pulledPeer->node->foreign)
		return fail(tp.file, tp.line,
			    "\"" + b.node->name + "\"[" + std::to_string(b.num) + "] belongs to a cable to \"" +
				    b.pulledPeer->node->name + "\" of another host (pulled): plug it back instead");
	if (b.peer && b.peer != &a)
		return fail(tp.file, tp.line,
			    "\"" + b.node->name + "\"[" + std::to_string(b.num) + "] is cabled already (to \"" +
				    b.peer->node->name + "\"[" + std::to_string(b.peer->num) + "])");
	if (!attached.insert(&b).second)
		return fail(tp.file, tp.line,
			    "\"" + b.node->name + "\"[" + std::to_string(b.num) + "] is named by two port lines");
	if (a.peer)
		return fail(tp.file, tp.line, "cannot cable these ports");
	if (&subnet != running)
		return 0; /* the dry run on a scratch subnet: checked, not cabled */
	/* the new cable replaces any memory of one pulled from b */
	if (b.pulledPeer && b.pulledPeer->pulledPeer == &b)
		b.pulledPeer->pulledPeer = nullptr;
	b.pulledPeer = nullptr;
	return subnet.connect(a, b) == 0 ? 0 : fail(tp.file, tp.line, "cannot cable these ports");
}

int Builder::connectAll()
{
	for (size_t i = 0; i < topo.nodes.size(); i++) {
		const TopoNode &tn = topo.nodes[i];
		for (const TopoPort &tp : tn.ports) {
			if (tp.peer.empty())
				continue;
			PeerRef peer;
			if (int rc = resolvePeer(tn, tp, peer))
				return rc;
			if (peer.running) {
				if (int rc = attach(tp, peer, built[i]->port(tp.num)))
					return rc;
				continue;
			}
			size_t peerIdx = peer.idx;
			uint8_t peerPort = peer.port;
			if (peerIdx == i && peerPort == tp.num)
				return fail(tp.file, tp.line,
					    "port " + std::to_string(tp.num) + " is cabled to itself");

			/* If the peer describes its end, both must agree. */
			if (const TopoPort *back = portLine(peerIdx, peerPort); back && !back->peer.empty()) {
				PeerRef backRef;
				if (int rc = resolvePeer(topo.nodes[peerIdx], *back, backRef))
					return rc;
				if (backRef.running)
					return fail(tp.file, tp.line,
						    "\"" + tn.id + "\"[" + std::to_string(tp.num) +
							    "] is cabled to \"" + topo.nodes[peerIdx].id + "\"[" +
							    std::to_string(peerPort) + "], but " +
							    topo.files[back->file] + ":" + std::to_string(back->line) +
							    " cables that port to \"" + backRef.running->name + "\"[" +
							    std::to_string(backRef.port) + "]");
				size_t backIdx = backRef.idx;
				uint8_t backPort = backRef.port;
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
	Builder b{ topo, subnet, err };
	if (int rc = b.createNodes())
		return rc;
	return b.connectAll();
}

int graftTopology(const Topology &fragment, Subnet &running, TopologyError &err)
{
	/* a dry run first, on a scratch subnet: the running fabric gets nodes
	 * only when nothing can fail any more */
	Subnet scratch;
	Builder dry{ fragment, scratch, err, &running };
	if (int rc = dry.createNodes())
		return rc;
	if (int rc = dry.connectAll())
		return rc;
	Builder real{ fragment, running, err, &running };
	int rc = real.createNodes();
	if (rc == 0)
		rc = real.connectAll();
	assert(rc == 0); /* the dry run checked everything the real one does */
	return rc;
}

} /* namespace ibemu::fabric */
