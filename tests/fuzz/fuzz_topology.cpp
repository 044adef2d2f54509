// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// Fuzz target: the topology parser (fabric::parseTopology) and, for inputs
// that parse, building the subnet (fabric::buildSubnet) and writing it back
// out (writeTopology, and the picture of tools/observe/fabric_picture).
//
// The input is the text of a topology file.
//
// `include "FILE"` lines make the parser open files, relative to the
// including file's directory and then to the current directory. The input's
// own name here is "fuzz.topo", so includes resolve against the current
// directory: RUN THIS TARGET FROM A SCRATCH DIRECTORY (tests/fuzz/run.sh and
// bench/fuzz.sh make one and copy tests/data/topology into it, so that
// includes of those names find something). Inputs whose include lines name
// a path with a '/' in it (absolute, or leaving the directory) are rejected
// before parsing, so the fuzzer never reads anything outside that directory
// (no /dev/stdin, /proc, FIFOs).
//
// Every input that builds is also written out and read back: the property
// tests/unit/test_topology.cpp checks for generated fabrics ("written
// topologies read back identically"); the target traps when it does not
// hold (what it found is in tests/fuzz/crashes/README.md).
#include "fabric/subnet.h"
#include "fabric/topology.h"
#include "tools/observe/fabric_picture.h"

#include <cctype>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>

using namespace ibemu::fabric;

namespace {

/* Does every line that could be an include stay in the current directory? */
bool includesStayHere(std::string_view text)
{
	size_t pos = 0;
	while (pos < text.size()) {
		size_t nl = text.find('\n', pos);
		if (nl == std::string_view::npos)
			nl = text.size();
		std::string_view line = text.substr(pos, nl - pos);
		pos = nl + 1;
		if (line.find('/') == std::string_view::npos)
			continue;
		std::string lower(line);
		for (char &c : lower)
			c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
		if (lower.find("include") != std::string::npos)
			return false;
	}
	return true;
}

struct Shape {
	size_t switches, cas, routers, links;
	bool operator==(const Shape &) const = default;
};

Shape shapeOf(const Subnet &s)
{
	return { s.numSwitches(), s.numCas(), s.numRouters(), s.numLinks() };
}

[[noreturn]] void roundTripFailed(const char *what, const std::string &text, const std::string &detail)
{
	fprintf(stderr, "round trip: %s\n%s\n--- written ---\n%s--- end ---\n", what, detail.c_str(), text.c_str());
	__builtin_trap();
}

void checkRoundTrip(const Subnet &a)
{
	std::string text = writeTopology(a);
	Topology topo;
	TopologyError err;
	Subnet b;
	if (parseTopology(text, "written.topo", topo, err) || buildSubnet(topo, b, err))
		roundTripFailed("the written topology does not read back", text, err.str());
	if (!(shapeOf(b) == shapeOf(a)))
		roundTripFailed("it reads back with other counts", text, "");
	for (const auto &n : a.nodes()) {
		const Node *m = b.findNodeByGuid(n->nodeGuid);
		if (!m || m->type != n->type || m->numPorts != n->numPorts)
			roundTripFailed("a node is missing or changed", text, n->name);
		for (unsigned p = 1; p <= n->numPorts; p++) {
			const Port &x = n->port(p);
			const Port &y = m->port(p);
			if (bool(x.peer) != bool(y.peer) ||
			    (x.peer &&
			     (x.peer->node->nodeGuid != y.peer->node->nodeGuid || x.peer->num != y.peer->num)))
				roundTripFailed("a cable moved", text, n->name + " port " + std::to_string(p));
		}
	}
	if (writeTopology(b) != text)
		roundTripFailed("writing it again gives other text", text, writeTopology(b));
}

} /* namespace */

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	std::string_view text(reinterpret_cast<const char *>(data), size);
	if (!includesStayHere(text))
		return -1; /* not worth keeping in the corpus either */

	Topology topo;
	TopologyError err;
	if (parseTopology(text, "fuzz.topo", topo, err) != 0) {
		(void)err.str();
		return 0;
	}
	Subnet subnet;
	if (buildSubnet(topo, subnet, err) != 0) {
		(void)err.str();
		return 0;
	}
	std::string written = writeTopology(subnet, "fuzz");
	std::string dot = ibemu::tools::fabricDot(subnet);
	if (written.empty() || dot.empty())
		__builtin_trap();
	checkRoundTrip(subnet);
	return 0;
}
