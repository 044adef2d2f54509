// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// Pictures of a fabric (tools/observe/fabric_picture): what the dot says about
// nodes, cables and their states, the summaries of large fabrics, and
// Graphviz reading and drawing it; the live view's answers (tools/observe/web_view).
#include "tests/unit/fabric_helpers.h"
#include "tests/unit/manual_clock.h"

#include "fabric/capability.h"
#include "fabric/generators.h"
#include "tools/observe/fabric_picture.h"
#include "tools/instance/fabric_source.h"
#include "tools/observe/packet_capture.h"
#include "tools/observe/sweep_replay.h"
#include "tools/observe/web_view.h"

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

TEST_CASE("picture: a split subnet names hosts and draws another host's nodes as not known here",
	  "[picture][remote-cable]")
{
	SplitSubnet net;
	net.connect();
	MiniSm sm(net.a, SplitSubnet::port(net.a, "H1", 1));
	sm.run();
	tools::SubnetSplit split;
	split.hosts = { { "a", "127.0.0.1:7701" }, { "b", "127.0.0.1:7702" } };
	for (const auto &n : net.a.nodes())
		split.ownerOf.push_back(n->foreign ? 1 : 0);
	Subnet &a = net.a;
	const std::string s1 = std::to_string(a.findNode("S1")->index), s2 = std::to_string(a.findNode("S2")->index);
	const std::string h2 = std::to_string(a.findNode("H2")->index);
	auto cable = [&](const char *node, unsigned port) {
		const Port &p = SplitSubnet::port(a, node, port);
		const Port &q = *p.peer;
		const Port &owner = q.node->index < p.node->index ? q : p; /* drawn from the lower index */
		return "l" + std::to_string(owner.node->index) + "p" + std::to_string(owner.num);
	};

	std::string dot = tools::fabricDot(a, { .split = &split });
	/* daemon a's own switch with its LID and host; b's stand-ins without */
	CHECK(dot.find("label=\"sw1\\nhost a\\nLID " + std::to_string(a.findNode("S1")->port(0).lid) +
		       "\", shape=box]") != std::string::npos);
	CHECK(dot.find("n" + s2 + " [id=\"n" + s2 + "\", label=\"sw2\\nhost b\", shape=box, style=dashed") !=
	      std::string::npos);
	CHECK(dot.find("n" + h2 + " [id=\"n" + h2 + "\", label=\"h2 HCA-1\\nhost b\", shape=ellipse, style=dashed") !=
	      std::string::npos);
	/* the cables to b, Active at a's end, are green; b's own is not known here */
	CHECK(dot.find("id=\"" + cable("S1", 7) + "\"") != std::string::npos);
	CHECK(count(dot, "color=\"forestgreen\"") == 4); /* S1-H1, S1-S2 twice, S2-H3 */
	CHECK(count(dot, "color=\"gray60\", style=dotted") == 1); /* S2-H2 */

	tools::PacketCapture cap(a);
	boost::asio::io_context io;
	tools::WebView web(
		io, a, cap, [] { return nlohmann::ordered_json{}; }, &split);
	auto st = nlohmann::json::parse(web.get("/api/state").body());
	CHECK(st["cables"][cable("S1", 7)] == "active");
	CHECK(st["cables"][cable("S2", 1)] == "elsewhere");
	CHECK(st["cables"][cable("H3", 1)] == "active");
	CHECK(st["states"]["Active"] == 5); /* a's own: S1's three cabled ports, H1's and H3's */
	for (const auto &port : st["ports"])
		CHECK(port["node"] != "n" + s2); /* another host's ports are its daemon's to show */
	/* a's end goes down: the cable to b is down, whatever b's stand-in says */
	a.setDisabled(SplitSubnet::port(a, "S1", 7), true);
	ManualClock::advance(tools::WebView::kStateEvery); /* the state is looked at again */
	st = nlohmann::json::parse(web.get("/api/state").body());
	CHECK(st["cables"][cable("S1", 7)] == "down");
	CHECK(web.get("/api/picture.svg").body().find("host b") != std::string::npos);
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
	CHECK(a.body().find("<script src=\"/app.js\"") != std::string::npos);
	CHECK(web.get("/app.js").type == "text/javascript; charset=utf-8");

	a = web.get("/api/state?x=1");
	REQUIRE(a.status == 200);
	auto s = nlohmann::json::parse(a.body());
	CHECK(s["instance"] == "unit");
	CHECK(s["cables"].size() == 8);
	CHECK(s["cables"]["l" + std::to_string(f.sw1->index) + "p7"] == "active");
	CHECK(s["states"]["Active"] == 16);
	CHECK(s["sm"]["state"] == "no SM has set up the fabric"); /* the MiniSm sets no IsSM */
	CHECK(s["mads"].empty());
	CHECK(cap.active() == 0); /* the recent MADs come from the ring, not a capture */

	roundTrip(f.s, *f.host1, pmaMad(IB_MGMT_METHOD_GET, IB_PMA_PORT_COUNTERS, 1, f.host2->lid));
	ManualClock::advance(tools::WebView::kStateEvery); /* the state is looked at again */
	s = nlohmann::json::parse(web.get("/api/state").body());
	REQUIRE(s["mads"].size() == 4); /* out and in at host1 and host2 */
	CHECK(s["mads"][0]["text"].get<std::string>().rfind("PerfGet(PortCounters) LID ", 0) == 0);

	f.host1->capMask |= IB_PORT_SM; /* as OpenSM's issm open does */
	ManualClock::advance(tools::WebView::kStateEvery); /* the state is looked at again */
	s = nlohmann::json::parse(web.get("/api/state").body());
	CHECK(s["sm"]["lid"] == f.host1->lid);
	CHECK(s["sm"]["node"] == "ibemu-host1 HCA-1");

	const auto picture = s["picture"];
	f.s.pullCable(f.sw1->port(7));
	ManualClock::advance(tools::WebView::kStateEvery); /* the state is looked at again */
	s = nlohmann::json::parse(web.get("/api/state").body());
	CHECK(s["picture"] != picture); /* the drawing changes: the page fetches it again */
	CHECK(s["cables"]["l" + std::to_string(f.sw1->index) + "p7"] == "pulled");

	a = web.get("/api/picture.svg");
	CHECK(a.type == "image/svg+xml");
	CHECK(a.picture == s["picture"].get<size_t>()); /* drawn for this state */
	CHECK(a.body().find("<g id=\"l" + std::to_string(f.sw1->index) + "p7\" class=\"edge\"") != std::string::npos);

	auto n = nlohmann::json::parse(web.get("/api/node/" + std::to_string(f.sw2->index)).body());
	CHECK(n["type"] == "switch");
	CHECK(n["ports"].size() == 9); /* port 0 and 1-8 */
	CHECK_FALSE(n["lft"].empty());
	CHECK(n.dump().find("mkey") == std::string::npos); /* no keys shown */
	CHECK(web.get("/api/node/9999").status == 404);
	CHECK(web.get("/api/node/-1").status == 404);
	CHECK(web.get("/api/node/").status == 404);
	CHECK(web.get("/../etc/passwd").status == 404);

	web.close();
}

namespace {

/* A PortInfo Set asking port `port` of the node at `path` for PortState
 * `state`, the rest as a Get answered (`got`), as an SM writes it */
Packet portStateSet(const std::vector<uint8_t> &path, uint8_t port, uint8_t state, const Mad *got = nullptr)
{
	Packet pkt = drSmp(IB_MGMT_METHOD_SET, IB_SMP_ATTR_PORT_INFO, port, path);
	if (got)
		std::copy(smpData(*got), smpData(*got) + 64, pkt.mad.data() + kSmpDataOffset);
	noStateChange(pkt.mad.data() + kSmpDataOffset);
	pkt.mad[kSmpDataOffset + 32] |= state;
	return pkt;
}

} /* namespace */

TEST_CASE("mad ring: the last MADs in a fixed ring, the last sweep that set a port state kept aside", "[web]")
{
	DefaultFabric f;
	MadRing ring;
	const Packet get = drSmp(IB_MGMT_METHOD_GET, IB_SMP_ATTR_NODE_INFO, 0, { 1 });
	const Packet set = portStateSet({ 1 }, 7, 4);
	CHECK(MadRing::setsPortState(set));
	CHECK_FALSE(MadRing::setsPortState(get));
	CHECK_FALSE(MadRing::setsPortState(portStateSet({ 1 }, 7, 0))); /* NoChange */
	auto sweep = [&] {
		std::vector<int64_t> t;
		ring.lastSweep([&](const MadRing::Entry &e) { t.push_back(e.ns); });
		return t;
	};
	const int64_t s = 1'000'000'000;
	ring.recordAt(s, *f.host1, true, get);
	CHECK(ring.sweepEnd() == 0); /* no port state set yet */
	CHECK(sweep().empty());
	ring.recordAt(s + 100, *f.host1, true, set);
	CHECK(ring.sweepEnd() == 2); /* the burst going on */
	CHECK(sweep() == std::vector<int64_t>{ s, s + 100 });
	/* other MADs go into the ring, not into the sweep, and do not prolong it */
	const Packet pma = pmaMad(IB_MGMT_METHOD_GET, IB_PMA_PORT_COUNTERS, 1, f.host2->lid);
	for (int i = 1; i <= 4; i++)
		ring.recordAt(s + i * s / 2, *f.host1, true, pma);
	CHECK(ring.count() == 6);
	CHECK(ring.sweepEnd() == 2);
	CHECK(sweep() == std::vector<int64_t>{ s, s + 100 });
	/* light sweeps a second later and on, far more than the ring holds */
	for (int i = 0; i < 3000; i++)
		ring.recordAt(3 * s + i * s / 2, *f.host1, i % 2, get);
	CHECK(ring.count() == 3006);
	CHECK(ring.find(0) == nullptr);
	CHECK(ring.find(3006 - MadRing::kSize - 1) == nullptr);
	REQUIRE(ring.find(3006 - MadRing::kSize) != nullptr);
	CHECK(ring.find(3005)->ns == 3 * s + 2999 * s / 2);
	CHECK(ring.find(3006) == nullptr);
	CHECK(ring.sweepEnd() == 2); /* kept aside */
	CHECK(sweep() == std::vector<int64_t>{ s, s + 100 });
	/* a sweep longer than the ring: its last kSize MADs */
	const int64_t t = 10'000 * s;
	ring.recordAt(t, *f.host1, true, set);
	for (int i = 1; i < 1500; i++)
		ring.recordAt(t + i, *f.host1, true, get);
	CHECK(ring.sweepEnd() == ring.count());
	auto last = sweep();
	REQUIRE(last.size() == MadRing::kSize);
	CHECK(last.front() == t + 1500 - int64_t(MadRing::kSize));
	CHECK(last.back() == t + 1499);
	ring.recordAt(t + 2 * s, *f.host1, true, get); /* it ends: kept aside */
	CHECK(sweep() == last);
}

TEST_CASE("live view: the recent MADs from its start, and the last sweep replayed", "[picture][web]")
{
	DefaultFabric f;
	boost::asio::io_context io;
	tools::PacketCapture cap(f.s);
	tools::WebView web(io, f.s, cap, [] { return nlohmann::ordered_json{}; });
	/* the cable sw1:7 -- sw2:7 trained again, its ends Armed: an SM sweeps,
	 * reading the ports, then setting them Active, before any page asks */
	Port &a = f.sw1->port(7), &b = f.sw2->port(7);
	a.state = b.state = PortState::Armed;
	auto ga = roundTrip(f.s, *f.host1, drSmp(IB_MGMT_METHOD_GET, IB_SMP_ATTR_PORT_INFO, 7, { 1 }));
	auto gb = roundTrip(f.s, *f.host1, drSmp(IB_MGMT_METHOD_GET, IB_SMP_ATTR_PORT_INFO, 7, { 1, 7 }));
	REQUIRE(ga);
	REQUIRE(gb);
	CHECK(madStatus(*roundTrip(f.s, *f.host1, portStateSet({ 1 }, 7, 4, &*ga))) == IB_SMP_DIRECTION);
	CHECK(madStatus(*roundTrip(f.s, *f.host1, portStateSet({ 1, 7 }, 7, 4, &*gb))) == IB_SMP_DIRECTION);
	CHECK(a.state == PortState::Active);
	CHECK(b.state == PortState::Active);

	auto s = nlohmann::json::parse(web.get("/api/state").body());
	REQUIRE(s["mads"].size() == 8); /* each out of host1 and back */
	CHECK(s["mads"][0]["text"] == "SubnGet(PortInfo) DR 0,1 → \"ibemu-sw1\" port 7");
	CHECK(s["mads"][7]["text"] == "SubnGetResp(PortInfo) DR 0,1,7 ← \"ibemu-sw2\" port 7: LID 0, state Active, LinkUp");
	CHECK(s["mads"][7]["dir"] == "in");
	CHECK(web.stats()["mads_recorded"] == 8);

	const std::string cable = "l" + std::to_string(f.sw1->index) + "p7";
	auto r = nlohmann::json::parse(web.get("/api/sweep").body());
	CHECK(r["mads"] == 8);
	CHECK(r["start"][cable] == "up"); /* as the sweep found it */
	CHECK(r["start"]["l" + std::to_string(f.sw1->index) + "p8"] == "active");
	REQUIRE(r["steps"].size() == 4); /* the requests */
	CHECK(r["steps"][0]["to"] == "n" + std::to_string(f.sw1->index));
	CHECK(r["steps"][1]["to"] == "n" + std::to_string(f.sw2->index));
	CHECK(r["steps"][2]["text"] == "SubnSet(PortInfo) DR 0,1 → \"ibemu-sw1\" port 7: LID 0, state Armed → Active");
	CHECK_FALSE(r["steps"][2].contains("cables")); /* one end Active: still up */
	CHECK(r["steps"][3]["cables"][cable] == "active"); /* both: green */
	CHECK(r["steps"][3]["t"].get<double>() >= 0);

	/* a fresh view knows nothing of what came before it */
	web.close();
	tools::WebView later(io, f.s, cap, [] { return nlohmann::ordered_json{}; });
	CHECK(nlohmann::json::parse(later.get("/api/sweep").body())["steps"].empty());
	later.close();
}

TEST_CASE("live view: the state is built once per change, and every request is sent the same", "[picture][web]")
{
	DefaultFabric f;
	boost::asio::io_context io;
	tools::PacketCapture cap(f.s);
	tools::WebView web(io, f.s, cap, [] { return nlohmann::ordered_json{ { "instance", "unit" } }; });
	const auto builds = [&] { return web.stats()["state_builds"].get<uint64_t>(); };

	const auto first = web.get("/api/state");
	CHECK(builds() == 1);
	/* many requests, unchanged: one body, never built again */
	for (int i = 0; i < 20; i++) {
		CHECK(web.get("/api/state").data == first.data);
		ManualClock::advance(tools::WebView::kStateEvery / 4);
	}
	CHECK(web.get("/api/state").data == first.data); /* looked at: unchanged */
	CHECK(builds() == 1);

	/* a change is seen once the state is looked at again */
	roundTrip(f.s, *f.host1, pmaMad(IB_MGMT_METHOD_GET, IB_PMA_PORT_COUNTERS, 1, f.host2->lid));
	CHECK(web.get("/api/state").data == first.data); /* looked at less than kStateEvery ago */
	ManualClock::advance(tools::WebView::kStateEvery);
	const auto second = web.get("/api/state");
	CHECK(second.data != first.data);
	CHECK(builds() == 2);
	CHECK(nlohmann::json::parse(second.body())["mads"].size() == 4);
	ManualClock::advance(tools::WebView::kStateEvery);
	CHECK(web.get("/api/state").data == second.data);
	CHECK(builds() == 2);

	/* the picture likewise */
	const auto svg = web.get("/api/picture.svg");
	ManualClock::advance(tools::WebView::kStateEvery);
	CHECK(web.get("/api/picture.svg").data == svg.data);
	CHECK(web.stats()["picture_builds"] == 1);
	web.close();
}

TEST_CASE("live view: names that are not UTF-8 are shown with U+FFFD", "[picture][web]")
{
	DefaultFabric f;
	f.host1->node->desc = "\xff\xfe host1";
	boost::asio::io_context io;
	tools::PacketCapture cap(f.s);
	tools::WebView web(io, f.s, cap, [] { return nlohmann::ordered_json{ { "instance", "\xc3" } }; });
	auto s = nlohmann::json::parse(web.get("/api/state").body());
	CHECK(s["instance"] == "\xef\xbf\xbd");
	/* MADs from it, decoded for the page */
	roundTrip(f.s, *f.host1, drSmp(IB_MGMT_METHOD_GET, IB_SMP_ATTR_NODE_DESC, 0, { 1 }));
	ManualClock::advance(tools::WebView::kStateEvery);
	s = nlohmann::json::parse(web.get("/api/state").body());
	CHECK(s["mads"].size() == 2);
	auto n = nlohmann::json::parse(web.get("/api/node/" + std::to_string(f.host1->node->index)).body());
	CHECK(n["name"] == "\xef\xbf\xbd\xef\xbf\xbd host1");
	web.close();
}

TEST_CASE("live view: whose a local connection is", "[web]")
{
	using boost::asio::ip::tcp;
	boost::asio::io_context io;
	for (const char *addr : { "127.0.0.1", "::1" }) {
		boost::system::error_code ec;
		tcp::acceptor acc(io);
		acc.open(tcp::endpoint(boost::asio::ip::make_address(addr), 0).protocol(), ec);
		if (!ec)
			acc.bind(tcp::endpoint(boost::asio::ip::make_address(addr), 0), ec);
		if (ec)
			continue; /* no IPv6 here */
		acc.listen();
		tcp::socket client(io);
		client.connect(acc.local_endpoint());
		tcp::socket server = acc.accept();
		tools::SocketOwner owners;
		auto uid = owners.uidOf(server.local_endpoint(), server.remote_endpoint());
		REQUIRE(uid);
		CHECK(*uid == getuid());
		/* no such socket: another port */
		CHECK_FALSE(owners.uidOf(server.local_endpoint(),
					 tcp::endpoint(server.remote_endpoint().address(), acc.local_endpoint().port())));
	}
}
