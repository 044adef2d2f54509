// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// Subnet ownership: creating nodes with spec defaults and finding them again.
#include "fabric/subnet.h"

#include "fabric/capability.h"

#include <algorithm>
#include <cassert>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <stdexcept>

namespace ibemu::fabric {

namespace {

/* Default SLtoVL: SL n on VL n modulo the data VLs a VLCap of 4 gives (VL0-7). */
Sl2Vl defaultSl2Vl()
{
	Sl2Vl t{};
	for (unsigned sl = 0; sl < t.size(); sl++)
		t[sl] = static_cast<uint8_t>(sl % 8);
	return t;
}

void initPort(Node &node, Port &p, unsigned num)
{
	p.node = &node;
	p.num = static_cast<uint8_t>(num);
	p.pkeys.assign(1, 0xffff);
	p.sl2vl = defaultSl2Vl();
	p.linkWidthSupported = kWidth1x | kWidth4x;
	p.linkWidthEnabled = p.linkWidthSupported;
	p.speedSupported = Speed::QDR;
	p.linkSpeedEnabled = 0x7;
	p.linkSpeedExtEnabled = 0;

	if (node.isSwitch()) {
		/* switch ports share the node GUID (IBA 14.2.5.3) */
		p.guid = node.nodeGuid;
		if (num == 0) {
			p.capMask = kSwitchPort0CapMask;
			p.physState = PhysState::LinkUp; /* port 0 is always up */
			p.state = PortState::Active;
			p.linkWidthActive = kWidth4x;
			p.speedActive = Speed::SDR;
			p.mtuCap = kMtu4096;
			p.neighborMtu = kMtu4096;
		}
	} else {
		p.guid = node.nodeGuid + num;
		p.capMask = kCaPortCapMask;
	}
	if (!(node.isSwitch() && num == 0)) {
		p.state = PortState::Down;
		p.physState = PhysState::Polling;
	}
}

} /* namespace */

Subnet::Subnet() = default;
Subnet::~Subnet() = default;

Node &Subnet::addNode(NodeType type, unsigned numPorts, std::string name, uint64_t nodeGuid)
{
	assert(numPorts >= 1 && numPorts <= 254);
	auto node = std::make_unique<Node>();
	Node &n = *node;
	n.type = type;
	n.numPorts = static_cast<uint8_t>(numPorts);
	n.name = std::move(name);
	n.desc = n.name;
	n.nodeGuid = nodeGuid;
	n.sysImageGuid = nodeGuid;
	n.index = static_cast<uint32_t>(nodes_.size());
	if (type == NodeType::Switch) {
		n.deviceId = kDefaultSwitchDeviceId;
		n.partitionCap = 8;
		n.sw = std::make_unique<SwitchState>();
		n.ports.resize(numPorts + 1);
		numSwitches_++;
	} else {
		n.deviceId = kDefaultCaDeviceId;
		n.partitionCap = 128;
		n.ports.resize(numPorts);
		if (type == NodeType::CA)
			numCas_++;
		else
			numRouters_++;
	}
	for (unsigned num = n.firstPort(); num <= numPorts; num++)
		initPort(n, n.port(num), num);

	byName_.emplace(n.name, &n);
	byGuid_.emplace(n.nodeGuid, &n);
	for (auto &p : n.ports)
		portByGuid_.emplace(p.guid, &p);
	nodes_.push_back(std::move(node));
	return n;
}

Node *Subnet::findNode(std::string_view name) const
{
	auto it = byName_.find(std::string(name));
	return it == byName_.end() ? nullptr : it->second;
}

Node *Subnet::findNodeByGuid(uint64_t guid) const
{
	auto it = byGuid_.find(guid);
	return it == byGuid_.end() ? nullptr : it->second;
}

Node *Subnet::resolveNode(std::string_view what, bool *ambiguous) const
{
	if (Node *n = findNode(what))
		return n;
	/* by description, then by host name (NodeDescription is "hostname
	 * HCA-1" by convention): only when one node matches */
	for (bool hostName : { false, true }) {
		Node *found = nullptr;
		for (const auto &n : nodes_) {
			std::string_view d = n->desc;
			if (hostName && (n->isSwitch() || descHost(d) != what))
				continue;
			if (!hostName && d != what)
				continue;
			if (found) {
				if (ambiguous)
					*ambiguous = true;
				return nullptr;
			}
			found = n.get();
		}
		if (found)
			return found;
	}
	if (what.size() > 2 && what[0] == '0' && (what[1] == 'x' || what[1] == 'X')) {
		std::string hex(what.substr(2));
		char *end = nullptr;
		errno = 0;
		uint64_t g = strtoull(hex.c_str(), &end, 16);
		if (errno == 0 && end && !*end && hex.size() <= 16 && isxdigit(static_cast<unsigned char>(hex[0])))
			return findNodeByGuid(g);
	}
	return nullptr;
}

namespace {

/* The edit distance between a and b when it is at most kMax, else kMax + 1:
 * the band of Levenshtein's table within kMax of its diagonal, so a name
 * costs a few dozen steps however long it is */
constexpr size_t kMaxEdits = 2;

size_t editsWithin(std::string_view a, std::string_view b)
{
	constexpr size_t far = kMaxEdits + 1;
	if ((a.size() > b.size() ? a.size() - b.size() : b.size() - a.size()) > kMaxEdits)
		return far;
	std::vector<size_t> prev(b.size() + 1), cur(b.size() + 1);
	for (size_t j = 0; j <= b.size(); j++)
		prev[j] = j;
	for (size_t i = 1; i <= a.size(); i++) {
		size_t lo = i > kMaxEdits ? i - kMaxEdits : 1, hi = std::min(b.size(), i + kMaxEdits);
		cur.assign(b.size() + 1, far);
		cur[0] = i;
		size_t best = lo > 1 ? far : cur[0];
		for (size_t j = lo; j <= hi; j++) {
			size_t sub = prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1);
			cur[j] = std::min({ sub, prev[j] + 1, cur[j - 1] + 1, far });
			best = std::min(best, cur[j]);
		}
		if (best >= far)
			return far;
		std::swap(prev, cur);
	}
	return std::min(prev[b.size()], far);
}

} /* namespace */

std::string Subnet::noSuchNode(std::string_view what) const
{
	std::string msg = "no node \"" + std::string(what) + "\" in the fabric";
	/* the three nearest, nearer first, then in the fabric's order: only
	 * three are ever kept, however many names are near (host00001 ...) */
	constexpr size_t kKept = 3;
	std::vector<std::pair<size_t, std::string>> near;
	auto consider = [&](std::string_view name) {
		size_t d = editsWithin(what, name);
		if (d > kMaxEdits || (near.size() == kKept && d >= near.back().first))
			return;
		for (const auto &[_, seen] : near)
			if (seen == name)
				return;
		auto at = std::find_if(near.begin(), near.end(), [d](const auto &x) { return x.first > d; });
		near.emplace(at, d, std::string(name));
		if (near.size() > kKept)
			near.pop_back();
	};
	for (const auto &n : nodes_) {
		std::string_view d = n->desc;
		consider(n->name);
		consider(d);
		if (!n->isSwitch())
			consider(descHost(d));
	}
	for (size_t i = 0; i < near.size(); i++) {
		const char *sep = i == 0 ? "; did you mean \"" : i + 1 == near.size() ? " or \"" : ", \"";
		msg += sep + near[i].second + "\"";
	}
	if (!near.empty())
		msg += "?";
	return msg;
}

Port *Subnet::findPortByGuid(uint64_t guid) const
{
	auto it = portByGuid_.find(guid);
	return it == portByGuid_.end() ? nullptr : it->second;
}

uint16_t Port::pkeyCap() const
{
	if (node->isSwitch() && num != 0)
		return node->sw->partitionEnforcementCap;
	return node->partitionCap;
}

void Subnet::setPortGuid(Port &p, uint64_t guid)
{
	auto it = portByGuid_.find(p.guid);
	if (it != portByGuid_.end() && it->second == &p)
		portByGuid_.erase(it);
	p.guid = guid;
	portByGuid_.emplace(guid, &p);
}

bool ownsLid(const Port &p, uint16_t lid)
{
	if (p.lid == 0 || lid == 0 || lid >= IB_MULTICAST_LID_BASE)
		return false;
	uint16_t mask = static_cast<uint16_t>(~((1u << p.lmc) - 1));
	return (lid & mask) == (p.lid & mask);
}

Port *Subnet::findPortByLid(uint16_t lid) const
{
	for (const auto &n : nodes_) {
		if (n->isSwitch()) {
			if (ownsLid(n->port(0), lid))
				return &n->port(0);
			continue;
		}
		for (auto &p : n->ports)
			if (ownsLid(p, lid))
				return &p;
	}
	return nullptr;
}

} /* namespace ibemu::fabric */
