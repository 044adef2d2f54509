// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// Pictures of a fabric: the Graphviz text of `ibemu topo show --format`
// and of the live view's map, and its rendering to SVG or PNG through
// Graphviz's own library (libgvc).
//
// Switches are boxes, CAs ellipses, each labelled with its description
// and LIDs; a cable is an edge labelled with its width and speed, green
// when both ends are Active, orange while the link is up but not yet
// Active, red and dashed when it is down. A fabric whose switches form
// levels (trees: switch-to-switch cables join neighbouring levels,
// counted from the CAs, more often than they join one level) is drawn
// bottom-up in ranks; any other (tori, meshes) is laid out by springs
// (neato).
//
// A large fabric is summarized instead of drawn box by box: past
// kMaxNodes nodes, each switch's CAs become one "N CAs" node; past
// kMaxSwitches switches, the switches of each level (or, without
// levels, each distance from the first switch) become one node, and the
// cables between two groups one edge with their count.
//
// Element ids are stable ("n<index>" for node index, "l<index>p<port>"
// for the cable at that port, from its lower-indexed end), so a page can
// recolour a drawn map as ports change.
//
// A subnet split across hosts (docs/multihost.md) names each node's host
// in its label. In a daemon's live picture another host's nodes are
// stand-ins whose state this daemon does not know: they are drawn gray
// and dashed without LIDs, a cable between two of them gray and dotted,
// and a cable to one of them by its local end alone.
#pragma once

#include <string>
#include <string_view>

namespace ibemu::fabric {
class Subnet;
struct Port;
}

namespace ibemu::tools {

struct SubnetSplit;

struct PictureOptions {
	size_t maxNodes = 200;
	size_t maxSwitches = 150;
	bool live = true; /* port states and LIDs (false: a file's fabric, not brought up) */
	const SubnetSplit *split = nullptr; /* the file's host= lines, if any */
};

/* What the cable at p looks like, as the picture colours it and the live
 * view reports it: "active" (both ends Active), "up" (trained, not both
 * Active), "down", "pulled" (taken out), or "elsewhere" (between two
 * other hosts' nodes: not known here). A cable to another host's node
 * is judged by its local end, the one this daemon simulates. */
const char *cableState(const fabric::Port &p);

std::string fabricDot(const fabric::Subnet &subnet, const PictureOptions &o = {});

/* Lays out and renders dot text as "svg" or "png"; false with err set. */
bool renderDot(const std::string &dot, std::string_view format, std::string &out, std::string &err);

} /* namespace ibemu::tools */
