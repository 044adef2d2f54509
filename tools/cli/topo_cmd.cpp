// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// `ibemu topo gen|check|show`: generate, validate and describe topology files.
#include "tools/cli/commands.h"
#include "tools/cli/control_client.h"
#include "tools/control/json_text.h"
#include "tools/instance/fabric_source.h"
#include "tools/observe/fabric_picture.h"
#include "tools/observe/fabric_summary.h"

#include "fabric/generators.h"
#include "fabric/subnet.h"
#include "fabric/topology.h"

#include <nlohmann/json.hpp>

#include <cinttypes>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>
#include <unistd.h>

namespace ibemu::tools {

using namespace ibemu::fabric;

namespace {

/* The picture a running instance's daemon draws of its fabric: its dot,
 * or (summary) its description in words */
bool livePicture(const std::string &instance, bool summary, std::string &text, int &exitCode)
{
	const char *cmd = "ibemu topo show";
	const char *key = summary ? "summary" : "dot";
	ControlClient c;
	if ((exitCode = c.connect(instance, cmd)) != 0)
		return false;
	ControlClient::Json reply;
	if (!c.call({ { "op", "picture" }, { "summary", summary } }, reply, cmd)) {
		exitCode = kNotRunning;
		return false;
	}
	if (!reply.value("ok", false) || !reply.contains(key) || !reply[key].is_string()) {
		fprintf(stderr, "%s: %s\n", cmd, reply.value("error", std::string("the daemon drew nothing")).c_str());
		exitCode = kRefused;
		return false;
	}
	text = reply[key].get<std::string>();
	return true;
}

bool writeOutput(const std::string &path, const std::string &text)
{
	if (path == "-") {
		fwrite(text.data(), 1, text.size(), stdout);
		return true;
	}
	std::ofstream out(path, std::ios::binary | std::ios::trunc);
	out << text;
	out.close();
	if (!out) {
		fprintf(stderr, "ibemu: cannot write %s\n", path.c_str());
		return false;
	}
	return true;
}

bool parseDims(const std::string &s, std::vector<unsigned> &dims)
{
	std::stringstream ss(s);
	std::string part;
	while (std::getline(ss, part, 'x')) {
		if (part.empty() || part.find_first_not_of("0123456789") != std::string::npos || part.size() > 6)
			return false;
		dims.push_back(static_cast<unsigned>(std::stoul(part)));
	}
	return !dims.empty();
}

/* Differences between two subnets, by GUID: nodes, ports and cables. */
std::vector<std::string> diffSubnets(const Subnet &a, const Subnet &b)
{
	std::vector<std::string> out;
	char buf[256];
	auto cable = [](const Port &p) {
		char s[64];
		if (!p.peer)
			return std::string("-");
		snprintf(s, sizeof(s), "0x%016" PRIx64 "[%u]", p.peer->node->nodeGuid, p.peer->num);
		return std::string(s);
	};
	for (const auto &n : a.nodes()) {
		const Node *m = b.findNodeByGuid(n->nodeGuid);
		if (!m) {
			snprintf(buf, sizeof(buf), "only in the first: node 0x%016" PRIx64 " \"%s\"", n->nodeGuid,
				 n->desc.c_str());
			out.push_back(buf);
			continue;
		}
		if (m->type != n->type || m->numPorts != n->numPorts || m->desc != n->desc) {
			snprintf(buf, sizeof(buf), "node 0x%016" PRIx64 ": %s %u ports \"%s\" vs %s %u ports \"%s\"",
				 n->nodeGuid, nodeTypeName(n->type), n->numPorts, n->desc.c_str(),
				 nodeTypeName(m->type), m->numPorts, m->desc.c_str());
			out.push_back(buf);
			continue;
		}
		for (unsigned p = 1; p <= n->numPorts; p++) {
			std::string x = cable(n->port(p)), y = cable(m->port(p));
			if (x != y) {
				snprintf(buf, sizeof(buf), "node 0x%016" PRIx64 " port %u: cabled to %s vs %s",
					 n->nodeGuid, p, x.c_str(), y.c_str());
				out.push_back(buf);
			}
		}
	}
	for (const auto &m : b.nodes())
		if (!a.findNodeByGuid(m->nodeGuid)) {
			snprintf(buf, sizeof(buf), "only in the second: node 0x%016" PRIx64 " \"%s\"", m->nodeGuid,
				 m->desc.c_str());
			out.push_back(buf);
		}
	return out;
}

} /* namespace */

void addTopoCommands(CLI::App &app, int &exitCode)
{
	CLI::App *topo = app.add_subcommand("topo", "Generate, check and show topology files");
	topo->require_subcommand(1);

	/* topo gen */
	struct GenOpts {
		std::string kind, out, speed = "EDR", dims;
		unsigned levels = 2, hosts = 0, radix = 36, switches = 0, hostsPerSwitch = 1, width = 4;
	};
	auto g = std::make_shared<GenOpts>();
	CLI::App *gen = topo->add_subcommand("gen", "Generate a topology in ibnetdiscover format");
	gen->add_option("kind", g->kind, "fat-tree, ring or torus")
		->required()
		->check(CLI::IsMember({ "fat-tree", "ring", "torus" }));
	gen->add_option("-o,--output", g->out, "Output file ('-' for stdout)")->required();
	gen->add_option("--levels", g->levels, "fat-tree: switch levels (2 or 3)");
	gen->add_option("--hosts", g->hosts, "fat-tree: number of hosts (single-port CAs)");
	gen->add_option("--radix", g->radix, "fat-tree: ports per switch");
	gen->add_option("--switches", g->switches, "ring: number of switches");
	gen->add_option("--dims", g->dims, "torus: dimensions, e.g. 4x4 or 4x4x4");
	gen->add_option("--hosts-per-switch", g->hostsPerSwitch, "ring, torus: CAs on each switch");
	gen->add_option("--speed", g->speed, "link speed: SDR DDR QDR FDR10 FDR EDR HDR NDR");
	gen->add_option("--width", g->width, "link width in lanes: 1 2 4 8 12");
	gen->callback([g, &exitCode] {
		LinkSpec link;
		auto speed = parseSpeed(g->speed);
		auto width = widthFromLanes(g->width);
		if (!speed || !width) {
			fprintf(stderr, "ibemu: bad --speed or --width\n");
			exitCode = 2;
			return;
		}
		link.speed = *speed;
		link.width = *width;
		Subnet subnet;
		std::string err;
		int rc;
		std::string what;
		if (g->kind == "fat-tree") {
			rc = generateFatTree(subnet, g->levels, g->hosts, g->radix, link, err);
			what = std::to_string(g->levels) + "-level fat tree, " + std::to_string(g->hosts) +
				" hosts, radix " + std::to_string(g->radix);
		} else if (g->kind == "ring") {
			rc = generateRing(subnet, g->switches, g->hostsPerSwitch, link, err);
			what = "ring of " + std::to_string(g->switches) + " switches";
		} else {
			std::vector<unsigned> dims;
			if (!parseDims(g->dims, dims)) {
				fprintf(stderr, "ibemu: --dims must look like 4x4 or 4x4x4\n");
				exitCode = 2;
				return;
			}
			rc = generateTorus(subnet, dims, g->hostsPerSwitch, link, err);
			what = g->dims + " torus";
		}
		if (rc) {
			fprintf(stderr, "ibemu: %s\n", err.c_str());
			exitCode = 1;
			return;
		}
		if (!writeOutput(g->out, writeTopology(subnet, what)))
			exitCode = 1;
	});

	/* topo check */
	auto checkFile = std::make_shared<std::string>();
	CLI::App *check = topo->add_subcommand("check", "Validate a topology file and count its parts");
	check->add_option("file", *checkFile, "Topology file")->required();
	check->callback([checkFile, &exitCode] {
		Subnet subnet;
		SubnetSplit split;
		if (!loadFabric(*checkFile, subnet, nullptr, &split)) {
			exitCode = 1;
			return;
		}
		nlohmann::ordered_json j;
		j["switches"] = subnet.numSwitches();
		j["cas"] = subnet.numCas();
		j["routers"] = subnet.numRouters();
		j["links"] = subnet.numLinks();
		if (!split.hosts.empty()) {
			/* split across hosts: how many, and the cables between them */
			size_t crossing = 0;
			for (const auto &n : subnet.nodes())
				for (const Port &p : n->ports)
					if (p.peer && p.peer->node->index > n->index &&
					    split.ownerOf[p.peer->node->index] != split.ownerOf[n->index])
						crossing++;
			j["hosts"] = split.hosts.size();
			j["crossing_links"] = crossing;
		}
		printf("%s\n", jsonText(j).c_str());
	});

	/* topo diff */
	auto files = std::make_shared<std::vector<std::string>>();
	CLI::App *diff = topo->add_subcommand("diff",
					      "Compare two topologies by GUID (e.g. a file and ibnetdiscover's view)");
	diff->add_option("files", *files, "Two topology files; '-' for the built-in default")->expected(2)->required();
	diff->callback([files, &exitCode] {
		Subnet a, b;
		if (!loadFabric((*files)[0] == "-" ? "" : (*files)[0], a) ||
		    !loadFabric((*files)[1] == "-" ? "" : (*files)[1], b)) {
			exitCode = 2;
			return;
		}
		auto d = diffSubnets(a, b);
		for (const auto &line : d)
			printf("%s\n", line.c_str());
		if (d.empty())
			printf("same: %zu nodes, %zu links\n", a.nodes().size(), a.numLinks());
		exitCode = d.empty() ? 0 : 1;
	});

	/* topo show */
	struct ShowOpts {
		std::string file, out = "-", format, instance;
		bool dot = false;
	};
	auto s = std::make_shared<ShowOpts>();
	CLI::App *show = topo->add_subcommand(
		"show",
		"Describe or draw a topology (the built-in default without FILE), or a running instance's fabric");
	show->add_option("file", s->file, "Topology file");
	auto *inst = show->add_option("--instance", s->instance,
				      "Draw this running instance's fabric: LIDs, port states, links down");
	inst->excludes(show->get_option("file"));
	show->add_option("--format", s->format, "Draw it: dot (Graphviz), svg or png")
		->check(CLI::IsMember({ "dot", "svg", "png" }));
	show->add_flag("--dot", s->dot, "The same as --format dot");
	show->add_option("-o,--output", s->out, "Output file ('-' for stdout)");
	show->callback([s, &exitCode] {
		std::string format = s->dot ? "dot" : s->format;
		std::string dot;
		if (!s->instance.empty()) {
			if (!livePicture(s->instance, format.empty(), dot, exitCode))
				return;
			if (format.empty()) { /* the summary, as for a file */
				if (!writeOutput(s->out, dot))
					exitCode = 1;
				return;
			}
		} else {
			Subnet subnet;
			SubnetSplit split;
			if (!loadFabric(s->file, subnet, nullptr, &split)) {
				exitCode = 1;
				return;
			}
			if (format.empty()) {
				const std::string &what = s->file.empty() ? "(built-in default)" : s->file;
				if (!writeOutput(s->out, fabricSummary(subnet, what)))
					exitCode = 1;
				return;
			}
			dot = fabricDot(subnet, { .live = false, .split = split.hosts.empty() ? nullptr : &split });
		}
		std::string out = dot, err;
		if (format != "dot" && !renderDot(dot, format, out, err)) {
			fprintf(stderr, "ibemu topo show: %s\n", err.c_str());
			exitCode = 1;
			return;
		}
		if (format == "png" && s->out == "-" && isatty(STDOUT_FILENO)) {
			fprintf(stderr, "ibemu topo show: a PNG is not for a terminal; give -o FILE\n");
			exitCode = 2;
			return;
		}
		if (!writeOutput(s->out, out))
			exitCode = 1;
	});
}

} /* namespace ibemu::tools */
