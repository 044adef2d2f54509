// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// A fabric in words (tools/observe/fabric_summary.h).
#include "tools/observe/fabric_summary.h"

#include "fabric/subnet.h"

#include <fmt/format.h>

#include <iterator>

namespace ibemu::tools {

using namespace ibemu::fabric;

namespace {

/* "4xEDR Active/LinkUp": what a cable trained to and where its end is */
std::string linkDesc(const Port &p)
{
	unsigned lanes = widthLanes(p.linkWidthActive);
	return fmt::format("{}x{} {}/{}", lanes ? lanes : 4, speedName(p.speedActive), portStateName(p.state),
			   physStateName(p.physState));
}

} /* namespace */

std::string fabricSummary(const Subnet &subnet, const std::string &what)
{
	std::string out = fmt::format("Fabric {}: {} switches, {} CAs, {} routers, {} links\n", what,
				      subnet.numSwitches(), subnet.numCas(), subnet.numRouters(), subnet.numLinks());
	auto to = std::back_inserter(out);
	for (NodeType t : { NodeType::Switch, NodeType::CA, NodeType::Router }) {
		for (const auto &n : subnet.nodes()) {
			if (n->type != t)
				continue;
			const char *kind = t == NodeType::Switch ? "Switch" : t == NodeType::CA ? "CA" : "Router";
			fmt::format_to(to, "\n{} \"{}\"  node GUID 0x{:016x}  {} ports\n", kind, n->desc, n->nodeGuid,
				       n->numPorts);
			for (unsigned num = 1; num <= n->numPorts; num++) {
				const Port &p = n->port(num);
				if (!p.peer && n->isSwitch())
					continue;
				fmt::format_to(to, "  port {:<3}", num);
				if (!n->isSwitch())
					fmt::format_to(to, " GUID 0x{:016x}", p.guid);
				if (p.peer)
					fmt::format_to(to, "  -> \"{}\" port {}  {}\n", p.peer->node->desc, p.peer->num,
						       linkDesc(p));
				else
					out += "  (no cable)\n";
			}
		}
	}
	return out;
}

} /* namespace ibemu::tools */
