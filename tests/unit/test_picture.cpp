// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// Pictures of a fabric (tools/fabric_picture): what the dot says about
// nodes, cables and their states, the summaries of large fabrics, and
// Graphviz reading and drawing it; the live view's answers (tools/web_view).
#include "tests/unit/fabric_helpers.h"

#include "fabric/capability.h"
#include "fabric/generators.h"
#include "tools/fabric_picture.h"
#include "tools/packet_capture.h"
#include "tools/web_view.h"

#include <catch2/catch.hpp>

using namespace ibemu;
using namespace ibemu::fabric;
using namespace ibemu::test;

namespace {

size_t count(const std::string &text, const std::string &what)
{
	size_t n = 0;
	for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1))
		n++;
	return n;
}

} /* namespace */

TEST_CASE("picture: cables coloured by their ends' states", "[picture]")
{
	DefaultFabric f;
	std::string dot = tools::fabricDot(f.s);
	CHECK(count(dot, " -- ") == 8);
	CHECK(count(dot, "color=\"forestgreen\"") == 8); /* the MiniSm made every port Active */
	CHECK(dot.find("label=\"ibemu-host1 HCA-1\\nLID " + std::to_string(f.host1->lid) + "\"") != std::string::npos);
	CHECK(dot.find("layout=dot") != std::string::npos); /* two switches side by side: ranks */

	Port &sw1p7 = f.sw1->port(7);
	REQUIRE(f.s.pullCable(sw1p7) == 0);
	dot = tools::fabricDot(f.s);
	CHECK(count(dot, "color=\"forestgreen\"") == 7);
	CHECK(dot.find("id=\"l" + std::to_string(f.sw1->index) +
		       "p7\", taillabel=\"7\", headlabel=\"7\", label=\"pulled\", color=\"red\", style=dashed") !=
	      std::string::npos);

	/* a file's fabric: no states, no LIDs */
	dot = tools::fabricDot(f.s, { .live = false });
	CHECK(count(dot, "color=\"gray30\"") == 8);
	CHECK(dot.find("LID") == std::string::npos);
}

TEST_CASE("picture: names are quoted safely and Graphviz draws them", "[picture]")
{
	DefaultFabric f;
	f.sw1->desc = "sw \"one\" \\ end";
	std::string dot = tools::fabricDot(f.s);
	CHECK(dot.find("label=\"sw \\\"one\\\" \\\\ end\\nLID") != std::string::npos);
	std::string svg, err;
	REQUIRE(tools::renderDot(dot, "svg", svg, err));
	CHECK(svg.find("<svg") != std::string::npos);
	CHECK(count(svg, "class=\"edge\"") == 8);
	CHECK(svg.find("sw &quot;one&quot; \\ end") != std::string::npos);

	CHECK_FALSE(tools::renderDot("graph {", "svg", svg, err));
	CHECK(err == "Graphviz could not read the picture (Error: syntax error in line 2)");
	CHECK_FALSE(tools::renderDot(dot, "nosuchformat", svg, err));
	CHECK(err == "Graphviz cannot write nosuchformat (Error: renderer for nosuchformat is unavailable)");
}

TEST_CASE("picture: large fabrics are summarized", "[picture]")
{
	Subnet s;
	std::string err;
	REQUIRE(generateFatTree(s, 2, 32, 8, {}, err) == 0);
	/* whole: 8 leaves, 4 spines and 32 CAs */
	std::string dot = tools::fabricDot(s, { .live = false });
	CHECK(count(dot, "shape=box]") == 12);
	CHECK(count(dot, "shape=ellipse]") == 32);
	/* past maxNodes: each switch's CAs in one node */
	dot = tools::fabricDot(s, { .maxNodes = 20, .live = false });
	CHECK(count(dot, "shape=box]") == 12);
	CHECK(count(dot, "\"4 CAs\"") == 8);
	/* past maxSwitches: one node per level, bundles of cables */
	dot = tools::fabricDot(s, { .maxNodes = 20, .maxSwitches = 4, .live = false });
	CHECK(count(dot, "shape=box3d") == 2);
	CHECK(dot.find("level 1\\n8 switches\\n32 CAs") != std::string::npos);
	CHECK(dot.find("level 2\\n4 switches") != std::string::npos);
	CHECK(dot.find("[label=\"32 cables\"]") != std::string::npos);
}

TEST_CASE("live view: what the page asks for", "[picture][web]")
{
	DefaultFabric f;
	boost::asio::io_context io;
	tools::PacketCapture cap(f.s);
	tools::WebView web(io, f.s, cap, [] { return nlohmann::ordered_json{ { "instance", "unit" } }; });

	auto a = web.get("/");
	CHECK(a.status == 200);
	CHECK(a.type == "text/html; charset=utf-8");
	CHECK(a.body.find("<script src=\"/app.js\"") != std::string::npos);
	CHECK(web.get("/app.js").type == "text/javascript; charset=utf-8");

	a = web.get("/api/state?x=1");
	REQUIRE(a.status == 200);
	auto s = nlohmann::json::parse(a.body);
	CHECK(s["instance"] == "unit");
	CHECK(s["cables"].size() == 8);
	CHECK(s["cables"]["l" + std::to_string(f.sw1->index) + "p7"] == "active");
	CHECK(s["states"]["Active"] == 16);
	CHECK(s["sm"]["state"] == "no SM has set up the fabric"); /* the MiniSm sets no IsSM */
	CHECK(s["mads"].empty());
	CHECK(cap.active() == 1); /* a page polls: the recent MADs are captured */

	roundTrip(f.s, *f.host1, pmaMad(IB_MGMT_METHOD_GET, IB_PMA_PORT_COUNTERS, 1, f.host2->lid));
	s = nlohmann::json::parse(web.get("/api/state").body);
	REQUIRE(s["mads"].size() == 4); /* out and in at host1 and host2 */
	CHECK(s["mads"][0]["text"].get<std::string>().rfind("PerfGet(PortCounters) LID ", 0) == 0);

	f.host1->capMask |= IB_PORT_SM; /* as OpenSM's issm open does */
	s = nlohmann::json::parse(web.get("/api/state").body);
	CHECK(s["sm"]["lid"] == f.host1->lid);
	CHECK(s["sm"]["node"] == "ibemu-host1 HCA-1");

	const auto picture = s["picture"];
	f.s.pullCable(f.sw1->port(7));
	s = nlohmann::json::parse(web.get("/api/state").body);
	CHECK(s["picture"] != picture); /* the drawing changes: the page fetches it again */
	CHECK(s["cables"]["l" + std::to_string(f.sw1->index) + "p7"] == "pulled");

	a = web.get("/api/picture.svg");
	CHECK(a.type == "image/svg+xml");
	CHECK(a.body.find("<g id=\"l" + std::to_string(f.sw1->index) + "p7\" class=\"edge\"") != std::string::npos);

	auto n = nlohmann::json::parse(web.get("/api/node/" + std::to_string(f.sw2->index)).body);
	CHECK(n["type"] == "switch");
	CHECK(n["ports"].size() == 9); /* port 0 and 1-8 */
	CHECK_FALSE(n["lft"].empty());
	CHECK(n.dump().find("mkey") == std::string::npos); /* no keys shown */
	CHECK(web.get("/api/node/9999").status == 404);
	CHECK(web.get("/api/node/-1").status == 404);
	CHECK(web.get("/api/node/").status == 404);
	CHECK(web.get("/../etc/passwd").status == 404);

	web.close();
	CHECK(cap.active() == 0);
}
