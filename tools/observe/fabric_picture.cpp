// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
#include "tools/observe/fabric_picture.h"

#include "fabric/subnet.h"
#include "tools/instance/fabric_source.h"
#include "tools/observe/shared_library.h"
#include "tools/observe/sonames.h"

#include <fmt/format.h>
#include <graphviz/cgraph.h>
#include <graphviz/gvc.h>

#include <algorithm>
#include <deque>
#include <map>
#include <memory>

namespace ibemu::tools {

using fabric::Node;
using fabric::Port;
using fabric::PortState;
using fabric::Subnet;

namespace {

constexpr int kNoLevel = -1;

/* A label safe inside dot's double quotes */
std::string escaped(std::string_view s)
{
	std::string out;
	for (char c : s) {
		if (c == '"' || c == '\\')
			out += '\\';
		out += c >= 0x20 || c < 0 ? c : ' ';
	}
	return out;
}

std::string nodeLabel(const Node &n, const PictureOptions &o)
{
	std::string label = escaped(n.desc.empty() ? n.name : n.desc);
	if (o.split && n.index < o.split->ownerOf.size() && o.split->ownerOf[n.index] >= 0)
		label += "\\nhost " + escaped(o.split->hosts[size_t(o.split->ownerOf[n.index])].name);
	if (!o.live || n.foreign) /* a stand-in's LIDs are its own daemon's */
		return label;
	if (n.isSwitch()) {
		if (n.port(0).lid)
			label += fmt::format("\\nLID {}", n.port(0).lid);
		return label;
	}
	std::string lids;
	for (unsigned i = 1; i <= n.numPorts; i++)
		if (n.port(i).lid)
			lids += fmt::format("{}{}", lids.empty() ? "" : ",", n.port(i).lid);
	if (!lids.empty())
		label += "\\nLID " + lids;
	return label;
}

/* How a cable looks: its colour and style by its state (cableState) */
std::string cableStyle(const Port &a, bool live)
{
	if (!live)
		return "color=\"gray30\"";
	const std::string_view state = cableState(a);
	if (state == "elsewhere")
		return "color=\"gray60\", style=dotted";
	if (state == "active")
		return "color=\"forestgreen\"";
	if (state == "up")
		return "color=\"orange\"";
	return "color=\"red\", style=dashed";
}

std::string cableLabel(const Port &p, bool live)
{
	if (live) {
		const std::string_view state = cableState(p);
		if (state == "pulled" || state == "down")
			return std::string(state);
	}
	unsigned lanes = fabric::widthLanes(p.linkWidthActive);
	return fmt::format("{}x{}", lanes ? lanes : 4, fabric::speedName(p.speedActive));
}

/* Levels counted from the CAs (CA 0, a switch with a CA 1, ...) by
 * breadth-first search over the cables; true when the fabric draws well
 * in ranks: every cable between switches joins neighbouring levels or
 * one level (a tree, a fat tree), mostly the former */
bool computeLevels(const Subnet &s, std::vector<int> &level)
{
	const auto &nodes = s.nodes();
	level.assign(nodes.size(), kNoLevel);
	std::deque<const Node *> queue;
	for (const auto &n : nodes)
		if (!n->isSwitch()) {
			level[n->index] = 0;
			queue.push_back(n.get());
		}
	while (!queue.empty()) {
		const Node *n = queue.front();
		queue.pop_front();
		for (unsigned i = 1; i <= n->numPorts; i++) {
			const Port *peer = n->port(i).peer;
			if (!peer || !peer->node->isSwitch() || level[peer->node->index] != kNoLevel)
				continue;
			level[peer->node->index] = level[n->index] + 1;
			queue.push_back(peer->node);
		}
	}
	bool levelled = true;
	size_t across = 0, within = 0; /* cable ends between levels, inside one */
	for (const auto &n : nodes) {
		if (!n->isSwitch())
			continue;
		if (level[n->index] == kNoLevel) {
			levelled = false;
			continue;
		}
		for (unsigned i = 1; i <= n->numPorts; i++) {
			const Port *peer = n->port(i).peer;
			if (!peer || !peer->node->isSwitch())
				continue;
			int d = std::abs(level[peer->node->index] - level[n->index]);
			levelled &= d <= 1;
			(d ? across : within)++;
		}
	}
	/* a few switches cabled side by side still draw well in ranks; a
	 * torus, all of whose switches have CAs, does not */
	return levelled && (within <= across || s.numSwitches() <= 4);
}

/* Hops from the first switch, for fabrics without levels */
void computeShells(const Subnet &s, std::vector<int> &shell)
{
	const auto &nodes = s.nodes();
	shell.assign(nodes.size(), kNoLevel);
	for (const auto &start : nodes) {
		if (!start->isSwitch() || shell[start->index] != kNoLevel)
			continue;
		std::deque<const Node *> queue{ start.get() };
		shell[start->index] = 0;
		while (!queue.empty()) {
			const Node *n = queue.front();
			queue.pop_front();
			for (unsigned i = 1; i <= n->numPorts; i++) {
				const Port *peer = n->port(i).peer;
				if (peer && peer->node->isSwitch() && shell[peer->node->index] == kNoLevel) {
					shell[peer->node->index] = shell[n->index] + 1;
					queue.push_back(peer->node);
				}
			}
		}
	}
}

/* The switch a CA hangs off (its first cabled port's), or null */
const Node *caSwitch(const Node &ca)
{
	for (unsigned i = 1; i <= ca.numPorts; i++)
		if (const Port *peer = ca.port(i).peer)
			return peer->node->isSwitch() ? peer->node : nullptr;
	return nullptr;
}

void header(std::string &out, bool tree)
{
	out += "graph fabric {\n";
	out += tree ? "\tlayout=dot;\n\tranksep=1.2;\n" : "\tlayout=neato;\n\toverlap=false;\n\tsplines=true;\n";
	out += "\tnode [fontname=\"monospace\", fontsize=10];\n\tedge [fontname=\"monospace\", fontsize=8];\n";
}

/* Every node and cable */
std::string drawWhole(const Subnet &s, const std::vector<int> &level, bool tree, const PictureOptions &o, bool groupCas)
{
	std::string out;
	header(out, tree);
	std::map<const Node *, unsigned> casOf; /* switch -> CAs folded into it */
	unsigned loose = 0;
	for (const auto &n : s.nodes()) {
		if (!n->isSwitch() && groupCas) {
			if (const Node *sw = caSwitch(*n))
				casOf[sw]++;
			else
				loose++;
			continue;
		}
		out += fmt::format("\tn{} [id=\"n{}\", label=\"{}\", shape={}{}];\n", n->index, n->index,
				   nodeLabel(*n, o), n->isSwitch() ? "box" : "ellipse",
				   o.live && n->foreign ? ", style=dashed, color=\"gray60\", fontcolor=\"gray40\""
							: "");
	}
	for (const auto &[sw, count] : casOf)
		out += fmt::format("\tc{} [id=\"c{}\", label=\"{} CAs\", shape=ellipse, style=dashed];\n"
				   "\tc{} -- n{} [color=\"gray50\"];\n",
				   sw->index, sw->index, count, sw->index, sw->index);
	if (loose)
		out += fmt::format("\tloose [label=\"{} CAs without a cable\", shape=ellipse, style=dashed];\n", loose);
	for (const auto &n : s.nodes()) {
		if (!n->isSwitch() && groupCas)
			continue;
		for (unsigned i = 1; i <= n->numPorts; i++) {
			const Port &p = n->port(i);
			const Port *q = p.cableEnd();
			if (!q || (!q->node->isSwitch() && groupCas))
				continue;
			if (q->node->index < n->index || (q->node == n.get() && q->num < p.num))
				continue; /* drawn from the other end */
			/* in ranks, the upper end first: dot puts an edge's tail above */
			const Port *top = &p, *bottom = q;
			if (tree && level[n->index] < level[q->node->index])
				std::swap(top, bottom);
			out += fmt::format("\tn{} -- n{} [id=\"l{}p{}\", taillabel=\"{}\", headlabel=\"{}\", "
					   "label=\"{}\", {}];\n",
					   top->node->index, bottom->node->index, n->index, p.num, top->num,
					   bottom->num, cableLabel(p, o.live), cableStyle(p, o.live));
		}
	}
	if (tree) {
		std::map<int, std::vector<unsigned>> ranks;
		for (const auto &n : s.nodes())
			if (n->isSwitch() && level[n->index] != kNoLevel)
				ranks[level[n->index]].push_back(n->index);
		for (const auto &[lvl, ids] : ranks) {
			out += "\t{ rank=same;";
			for (unsigned id : ids)
				out += fmt::format(" n{};", id);
			out += " }\n";
		}
	}
	out += "}\n";
	return out;
}

/* One node per group of switches (a level, or a distance) */
std::string drawGroups(const Subnet &s, const std::vector<int> &group, bool tree, const PictureOptions &o)
{
	struct Group {
		unsigned switches = 0, cas = 0, active = 0;
	};
	struct Bundle {
		unsigned cables = 0, down = 0;
	};
	std::map<int, Group> groups;
	std::map<std::pair<int, int>, Bundle> bundles;
	unsigned loose = 0;
	for (const auto &n : s.nodes()) {
		if (!n->isSwitch()) {
			const Node *sw = caSwitch(*n);
			if (sw)
				groups[group[sw->index]].cas++;
			else
				loose++;
			continue;
		}
		Group &g = groups[group[n->index]];
		g.switches++;
		for (unsigned i = 1; i <= n->numPorts; i++) {
			const Port &p = n->port(i);
			if (p.state == PortState::Active && !n->foreign)
				g.active++;
			const Port *q = p.peer;
			if (!q || !q->node->isSwitch() || q->node->index < n->index)
				continue;
			auto key = std::minmax(group[n->index], group[q->node->index]);
			Bundle &b = bundles[key];
			b.cables++;
			const std::string_view state = cableState(p);
			if (state == "down" || state == "pulled")
				b.down++;
		}
	}
	std::string out;
	header(out, tree);
	for (const auto &[g, info] : groups) {
		std::string name = g == kNoLevel ? "switches without CAs"
						 : fmt::format("{} {}", tree ? "level" : "distance", g);
		std::string label = fmt::format("{}\\n{} switches", name, info.switches);
		if (info.cas)
			label += fmt::format("\\n{} CAs", info.cas);
		if (o.live)
			label += fmt::format("\\n{} ports Active", info.active);
		out += fmt::format("\tg{} [id=\"g{}\", label=\"{}\", shape=box3d];\n", g + 1, g + 1, label);
	}
	if (loose)
		out += fmt::format("\tloose [label=\"{} CAs without a cable\", shape=ellipse, style=dashed];\n", loose);
	for (const auto &[key, b] : bundles) {
		std::string label = fmt::format("{} cables", b.cables);
		if (o.live && b.down)
			label += fmt::format(", {} down", b.down);
		/* the upper level first: dot puts an edge's tail above */
		out += fmt::format("\tg{} -- g{} [label=\"{}\"{}];\n", key.second + 1, key.first + 1, label,
				   o.live && b.down ? ", color=\"red\"" : "");
	}
	out += "}\n";
	return out;
}

} /* namespace */

const char *cableState(const Port &p)
{
	const Port *q = p.cableEnd();
	if (!p.peer || !q)
		return "pulled";
	if (p.node->foreign && q->node->foreign)
		return "elsewhere";
	/* an end another daemon simulates tells nothing here: the local one
	 * stands for both */
	const Port &a = p.node->foreign ? *q : p;
	const Port &b = q->node->foreign ? a : *q;
	if (!a.linkUp() || !b.linkUp())
		return "down";
	return a.state == PortState::Active && b.state == PortState::Active ? "active" : "up";
}

std::string fabricDot(const Subnet &subnet, const PictureOptions &o)
{
	std::vector<int> level;
	const bool tree = computeLevels(subnet, level);
	if (subnet.numSwitches() > o.maxSwitches) {
		if (!tree)
			computeShells(subnet, level);
		return drawGroups(subnet, level, tree, o);
	}
	return drawWhole(subnet, level, tree, o, subnet.nodes().size() > o.maxNodes);
}

namespace {

/* what Graphviz complained of last, for the caller's message */
thread_local std::string graphvizSaid;

int keepGraphvizError(char *msg)
{
	graphvizSaid += msg;
	return 0;
}

/* The part of Graphviz a picture is drawn with. libgvc (and libcgraph,
 * which it needs) is opened when the first picture is drawn, not linked
 * (tools/observe/shared_library.h). */
struct GraphvizCalls {
	decltype(&::agseterrf) agseterrf = nullptr;
	decltype(&::agmemread) agmemread = nullptr;
	decltype(&::agclose) agclose = nullptr;
	decltype(&::gvContext) gvContext = nullptr;
	decltype(&::gvLayoutJobs) gvLayoutJobs = nullptr;
	decltype(&::gvRenderData) gvRenderData = nullptr;
	decltype(&::gvFreeRenderData) gvFreeRenderData = nullptr;
	decltype(&::gvFreeLayout) gvFreeLayout = nullptr;
};

const GraphvizCalls *loadGraphviz(std::string &err)
{
	static SharedLibrary lib(IBEMU_GVC_SONAME);
	static GraphvizCalls calls;
	static const bool ok = IBEMU_BIND(lib, calls, agseterrf) && IBEMU_BIND(lib, calls, agmemread) &&
		IBEMU_BIND(lib, calls, agclose) && IBEMU_BIND(lib, calls, gvContext) &&
		IBEMU_BIND(lib, calls, gvLayoutJobs) && IBEMU_BIND(lib, calls, gvRenderData) &&
		IBEMU_BIND(lib, calls, gvFreeRenderData) && IBEMU_BIND(lib, calls, gvFreeLayout);
	if (!ok) {
		err = "Graphviz's library is needed to draw: " + lib.error();
		return nullptr;
	}
	return &calls;
}

} /* namespace */

bool renderDot(const std::string &dot, std::string_view format, std::string &out, std::string &err)
{
	const GraphvizCalls *gv = loadGraphviz(err);
	if (!gv)
		return false;
	graphvizSaid.clear();
	gv->agseterrf(keepGraphvizError);
	auto why = [] {
		std::string s = graphvizSaid;
		while (!s.empty() && (s.back() == '\n' || s.back() == ' '))
			s.pop_back();
		return s.empty() ? std::string() : " (" + s + ")";
	};
	/* One context for the process, never freed: Graphviz's text layout
	 * (the pango plugin) caches fonts across contexts, and a second
	 * context reads what freeing the first one freed (ASan saw it) */
	static GVC_t *const gvc = gv->gvContext();
	if (!gvc) {
		err = "Graphviz could not start";
		return false;
	}
	std::unique_ptr<Agraph_t, int (*)(Agraph_t *)> g(gv->agmemread(dot.c_str()), gv->agclose);
	if (!g) {
		err = "Graphviz could not read the picture" + why();
		return false;
	}
	if (gv->gvLayoutJobs(gvc, g.get()) != 0) {
		err = "Graphviz could not lay the picture out" + why();
		return false;
	}
	char *data = nullptr;
	unsigned int len = 0;
	std::string fmtName(format);
	int rc = gv->gvRenderData(gvc, g.get(), fmtName.c_str(), &data, &len);
	if (rc == 0 && data)
		out.assign(data, len);
	gv->gvFreeRenderData(data);
	gv->gvFreeLayout(gvc, g.get());
	if (rc != 0) {
		err = "Graphviz cannot write " + fmtName + why();
		return false;
	}
	return true;
}

} /* namespace ibemu::tools */
