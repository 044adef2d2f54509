// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// Building the subnet an instance simulates: a topology file, a generator
// spec, or the built-in default.
#pragma once

#include "fabric/subnet.h"
#include "fabric/topology.h"

#include <string>
#include <vector>

namespace ibemu::tools {

/* An ibsim `do COMMAND` line of a topology file */
struct DoLine {
	std::string where; /* file:line */
	std::string text; /* COMMAND */
};

/* Which host owns which node of a subnet split across daemons: the
 * topology file's host= lines (docs/multihost.md). Empty hosts: one
 * daemon simulates it all. */
struct SubnetSplit {
	std::vector<fabric::TopoHost> hosts;
	std::vector<int> ownerOf; /* by Node::index: an index into hosts */
};

/* Loads `path`, or the built-in fabric when path is empty. Prints the
 * problem (file:line) and returns false on failure. The file's `do` lines
 * go to `commands` (ibemud runs them); without it they are only counted
 * in a warning. Its host= lines go to `split`, when given. */
bool loadFabric(const std::string &path, fabric::Subnet &subnet, std::vector<DoLine> *commands = nullptr,
		SubnetSplit *split = nullptr);

/*
 * Builds from a generator spec: "fat-tree:levels=3,hosts=100,radix=8",
 * "ring:switches=4,hosts-per-switch=2", "torus:dims=3x3,hosts-per-switch=1",
 * optionally with speed=EDR,width=4. Prints the problem on failure.
 */
bool generateFabric(const std::string &spec, fabric::Subnet &subnet);

} /* namespace ibemu::tools */
