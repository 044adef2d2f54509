// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// Topology generators.
//
// GUIDs follow a fixed scheme so that generated files are reproducible:
// switches 0x0002c90200000000 + n, CAs 0x0002c90300000000 + 16 n (the port
// GUID is the node GUID + 1).
#include "fabric/generators.h"

#include "fabric/subnet.h"

#include <cerrno>
#include <cstdio>

namespace ibemu::fabric {

namespace {

constexpr uint64_t kSwitchGuidBase = 0x0002c90200000000ULL;
constexpr uint64_t kCaGuidBase = 0x0002c90300000000ULL;
constexpr unsigned kMaxPorts = 254;

struct Gen {
	Subnet &subnet;
	LinkSpec link;
	unsigned switches = 0;
	unsigned cas = 0;

	void setCaps(Node &n)
	{
		uint8_t widths = static_cast<uint8_t>(kWidth1x | link.width);
		uint8_t speedBits = linkSpeedBits(link.speed) == 0x4 ? 0x7 : linkSpeedBits(link.speed) | 0x1;
		uint8_t ext = 0;
		for (uint8_t b = linkSpeedExtBits(link.speed); b; b >>= 1)
			ext |= b;
		for (auto &p : n.ports) {
			p.linkWidthSupported = p.linkWidthEnabled = widths;
			p.speedSupported = link.speed;
			p.linkSpeedEnabled = speedBits;
			p.linkSpeedExtEnabled = ext;
		}
	}

	Node &addSwitch(unsigned ports, const std::string &desc)
	{
		uint64_t guid = kSwitchGuidBase + ++switches;
		char id[24];
		snprintf(id, sizeof(id), "S-%016llx", static_cast<unsigned long long>(guid));
		Node &n = subnet.addNode(NodeType::Switch, ports, id, guid);
		n.desc = desc;
		setCaps(n);
		return n;
	}

	Node &addHost()
	{
		unsigned idx = ++cas;
		uint64_t guid = kCaGuidBase + 16ULL * idx;
		char id[24], desc[48];
		snprintf(id, sizeof(id), "H-%016llx", static_cast<unsigned long long>(guid));
		snprintf(desc, sizeof(desc), "host%05u HCA-1", idx);
		Node &n = subnet.addNode(NodeType::CA, 1, id, guid);
		n.desc = desc;
		setCaps(n);
		return n;
	}

	void cable(Node &a, unsigned pa, Node &b, unsigned pb) { subnet.connect(a.port(pa), b.port(pb)); }
};

std::string name(const char *prefix, unsigned i, unsigned width = 3)
{
	char buf[32];
	snprintf(buf, sizeof(buf), "%s-%0*u", prefix, width, i);
	return buf;
}

} /* namespace */

int generateFatTree(Subnet &subnet, unsigned levels, unsigned hosts, unsigned radix, const LinkSpec &link,
		    std::string &err)
{
	if (levels != 2 && levels != 3) {
		err = "a fat tree has 2 or 3 levels";
		return -EINVAL;
	}
	if (radix < 4 || radix > kMaxPorts || radix % 2) {
		err = "the switch radix must be even, from 4 to " + std::to_string(kMaxPorts);
		return -EINVAL;
	}
	if (hosts < 1) {
		err = "a fat tree needs at least one host";
		return -EINVAL;
	}
	unsigned half = radix / 2;
	Gen g{ subnet, link };

	if (levels == 2) {
		unsigned long max = 2UL * half * half;
		if (hosts > max) {
			err = "a 2-level fat tree of radix " + std::to_string(radix) + " holds at most " +
				std::to_string(max) + " hosts";
			return -EINVAL;
		}
		unsigned leaves = (hosts + half - 1) / half;
		std::vector<Node *> spines;
		for (unsigned s = 0; s < half; s++)
			spines.push_back(&g.addSwitch(radix, name("spine", s + 1)));
		unsigned host = 0;
		for (unsigned l = 0; l < leaves; l++) {
			Node &leaf = g.addSwitch(radix, name("leaf", l + 1));
			for (unsigned s = 0; s < half; s++)
				g.cable(leaf, half + 1 + s, *spines[s], l + 1);
			for (unsigned p = 1; p <= half && host < hosts; p++, host++)
				g.cable(g.addHost(), 1, leaf, p);
		}
		return 0;
	}

	unsigned long perPod = 1UL * half * half;
	unsigned long max = perPod * radix;
	if (hosts > max) {
		err = "a 3-level fat tree of radix " + std::to_string(radix) + " holds at most " + std::to_string(max) +
			" hosts";
		return -EINVAL;
	}
	unsigned pods = static_cast<unsigned>((hosts + perPod - 1) / perPod);
	std::vector<Node *> cores;
	for (unsigned c = 0; c < half * half; c++)
		cores.push_back(&g.addSwitch(radix, name("core", c + 1, 4)));
	unsigned host = 0;
	for (unsigned pod = 0; pod < pods; pod++) {
		std::vector<Node *> aggs;
		for (unsigned a = 0; a < half; a++) {
			Node &agg = g.addSwitch(radix, name("pod", pod + 1) + " " + name("agg", a + 1));
			/* aggregation switch a of every pod meets cores a*half .. a*half+half-1 */
			for (unsigned u = 0; u < half; u++)
				g.cable(agg, half + 1 + u, *cores[a * half + u], pod + 1);
			aggs.push_back(&agg);
		}
		unsigned podHosts = static_cast<unsigned>(std::min<unsigned long>(perPod, hosts - host));
		unsigned leaves = (podHosts + half - 1) / half;
		for (unsigned l = 0; l < leaves; l++) {
			Node &leaf = g.addSwitch(radix, name("pod", pod + 1) + " " + name("leaf", l + 1));
			for (unsigned a = 0; a < half; a++)
				g.cable(leaf, half + 1 + a, *aggs[a], l + 1);
			for (unsigned p = 1; p <= half && host < hosts; p++, host++)
				g.cable(g.addHost(), 1, leaf, p);
		}
	}
	return 0;
}

int generateRing(Subnet &subnet, unsigned switches, unsigned hostsPerSwitch, const LinkSpec &link, std::string &err)
{
	if (switches < 3) {
		err = "a ring needs at least 3 switches";
		return -EINVAL;
	}
	if (hostsPerSwitch + 2 > kMaxPorts) {
		err = "too many hosts per switch";
		return -EINVAL;
	}
	Gen g{ subnet, link };
	unsigned ports = hostsPerSwitch + 2;
	std::vector<Node *> sw;
	for (unsigned i = 0; i < switches; i++)
		sw.push_back(&g.addSwitch(ports, name("ring", i + 1)));
	for (unsigned i = 0; i < switches; i++) {
		/* port 1 goes clockwise, port 2 counter-clockwise */
		g.cable(*sw[i], 1, *sw[(i + 1) % switches], 2);
		for (unsigned h = 0; h < hostsPerSwitch; h++)
			g.cable(g.addHost(), 1, *sw[i], 3 + h);
	}
	return 0;
}

int generateTorus(Subnet &subnet, const std::vector<unsigned> &dims, unsigned hostsPerSwitch, const LinkSpec &link,
		  std::string &err)
{
	if (dims.size() != 2 && dims.size() != 3) {
		err = "a torus has 2 or 3 dimensions";
		return -EINVAL;
	}
	unsigned long total = 1;
	for (unsigned d : dims) {
		if (d < 2 || d > 1024) {
			err = "every torus dimension must be from 2 to 1024";
			return -EINVAL;
		}
		total *= d;
	}
	if (total > 100000) {
		err = "a torus of more than 100000 switches is not supported";
		return -EINVAL;
	}
	unsigned nd = static_cast<unsigned>(dims.size());
	unsigned ports = 2 * nd + hostsPerSwitch;
	if (ports > kMaxPorts) {
		err = "too many hosts per switch";
		return -EINVAL;
	}
	Gen g{ subnet, link };
	std::vector<Node *> sw(total);
	for (unsigned long i = 0; i < total; i++) {
		unsigned long rest = i;
		std::string label = "torus";
		for (unsigned d = 0; d < nd; d++) {
			label += (d ? "," : "-") + std::to_string(rest % dims[d]);
			rest /= dims[d];
		}
		sw[i] = &g.addSwitch(ports, label);
	}
	/* in dimension d, port 2d+1 goes to +1 and port 2d+2 comes from -1 */
	for (unsigned long i = 0; i < total; i++) {
		unsigned long stride = 1;
		for (unsigned d = 0; d < nd; d++) {
			unsigned long coord = (i / stride) % dims[d];
			unsigned long next = i - coord * stride + ((coord + 1) % dims[d]) * stride;
			g.cable(*sw[i], 2 * d + 1, *sw[next], 2 * d + 2);
			stride *= dims[d];
		}
		for (unsigned h = 0; h < hostsPerSwitch; h++)
			g.cable(g.addHost(), 1, *sw[i], 2 * nd + 1 + h);
	}
	return 0;
}

} /* namespace ibemu::fabric */
