// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
#include "tools/instance/fabric_source.h"

#include "fabric/generators.h"
#include "fabric/topology.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <sstream>

namespace ibemu::tools {

using namespace ibemu::fabric;

bool loadFabric(const std::string &path, Subnet &subnet, std::vector<DoLine> *commands, SubnetSplit *split)
{
	Topology topo;
	TopologyError err;
	int rc = path.empty() ? parseTopology(defaultTopology(), "<built-in default>", topo, err)
			      : loadTopologyFile(path, topo, err);
	if (rc == 0)
		rc = buildSubnet(topo, subnet, err);
	for (const auto &w : topo.warnings)
		fprintf(stderr, "ibemu: warning: %s\n", w.c_str());
	for (const auto &c : topo.commands) {
		std::string where = topo.files[c.file] + ":" + std::to_string(c.line);
		if (commands)
			commands->push_back({ where, c.text });
		else
			fprintf(stderr, "ibemu: warning: %s: `do %s`: ibemud runs it once the fabric is built\n",
				where.c_str(), c.text.c_str());
	}
	if (rc) {
		fprintf(stderr, "ibemu: %s\n", err.str().c_str());
		return false;
	}
	if (split && !topo.hosts.empty()) {
		split->hosts = topo.hosts;
		split->ownerOf.assign(subnet.nodes().size(), -1);
		for (const TopoNode &n : topo.nodes)
			if (Node *built = subnet.findNode(n.id))
				split->ownerOf[built->index] = n.host;
	}
	return true;
}

namespace {

bool number(const std::map<std::string, std::string> &kv, const char *key, unsigned &out)
{
	auto it = kv.find(key);
	if (it == kv.end())
		return true;
	if (it->second.empty() || it->second.find_first_not_of("0123456789") != std::string::npos ||
	    it->second.size() > 7) {
		fprintf(stderr, "ibemu: --gen: %s needs a number, got \"%s\"\n", key, it->second.c_str());
		return false;
	}
	out = static_cast<unsigned>(std::stoul(it->second));
	return true;
}

} /* namespace */

bool generateFabric(const std::string &spec, Subnet &subnet)
{
	size_t colon = spec.find(':');
	std::string kind = spec.substr(0, colon);
	std::map<std::string, std::string> kv;
	if (colon != std::string::npos) {
		std::stringstream ss(spec.substr(colon + 1));
		std::string item;
		while (std::getline(ss, item, ',')) {
			size_t eq = item.find('=');
			if (eq == std::string::npos) {
				fprintf(stderr, "ibemu: --gen: expected key=value, got \"%s\"\n", item.c_str());
				return false;
			}
			kv[item.substr(0, eq)] = item.substr(eq + 1);
		}
	}
	static const std::map<std::string, std::vector<std::string>> known = {
		{ "fat-tree", { "levels", "hosts", "radix", "speed", "width" } },
		{ "ring", { "switches", "hosts-per-switch", "speed", "width" } },
		{ "torus", { "dims", "hosts-per-switch", "speed", "width" } },
	};
	auto k = known.find(kind);
	if (k == known.end()) {
		fprintf(stderr, "ibemu: --gen: unknown kind \"%s\" (fat-tree, ring or torus)\n", kind.c_str());
		return false;
	}
	for (const auto &[key, v] : kv)
		if (std::find(k->second.begin(), k->second.end(), key) == k->second.end()) {
			fprintf(stderr, "ibemu: --gen: %s takes no \"%s\"\n", kind.c_str(), key.c_str());
			return false;
		}

	LinkSpec link;
	unsigned levels = 2, hosts = 16, radix = 8, switches = 4, perSwitch = 1, width = 4;
	if (!number(kv, "levels", levels) || !number(kv, "hosts", hosts) || !number(kv, "radix", radix) ||
	    !number(kv, "switches", switches) || !number(kv, "hosts-per-switch", perSwitch) ||
	    !number(kv, "width", width))
		return false;
	if (kv.count("speed")) {
		auto s = parseSpeed(kv["speed"]);
		if (!s) {
			fprintf(stderr, "ibemu: --gen: unknown speed \"%s\"\n", kv["speed"].c_str());
			return false;
		}
		link.speed = *s;
	}
	auto w = widthFromLanes(width);
	if (!w) {
		fprintf(stderr, "ibemu: --gen: width is 1, 2, 4, 8 or 12\n");
		return false;
	}
	link.width = *w;

	std::string err;
	int rc;
	if (kind == "fat-tree") {
		rc = generateFatTree(subnet, levels, hosts, radix, link, err);
	} else if (kind == "ring") {
		rc = generateRing(subnet, switches, perSwitch, link, err);
	} else {
		std::vector<unsigned> dims;
		std::stringstream ss(kv.count("dims") ? kv["dims"] : "2x2");
		std::string part;
		while (std::getline(ss, part, 'x')) {
			if (part.empty() || part.find_first_not_of("0123456789") != std::string::npos ||
			    part.size() > 5) {
				fprintf(stderr, "ibemu: --gen: dims look like 3x3 or 2x2x2\n");
				return false;
			}
			dims.push_back(static_cast<unsigned>(std::stoul(part)));
		}
		rc = generateTorus(subnet, dims, perSwitch, link, err);
	}
	if (rc) {
		fprintf(stderr, "ibemu: --gen: %s\n", err.c_str());
		return false;
	}
	return true;
}

} /* namespace ibemu::tools */
