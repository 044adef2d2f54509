// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// Faults from outside the subnet: pulled and replugged cables, degraded
// links, lossy cables counted where a receiver counts, silent agents,
// counters set by name; the daemon's operations (FabricControl), scenario
// files and ibsim lines that drive them.
#include "tests/unit/fabric_helpers.h"

#include "fabric/pma.h"
#include "fabric/port_counters.h"
#include "fabric/smp_attrs.h"
#include "fabric/topology.h"
#include "tools/control/fabric_control.h"
#include "tools/control/ibsim_script.h"
#include "tools/control/scenario.h"

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <catch2/catch.hpp>

#include <cerrno>
#include <cstdio>
#include <fstream>
#include <unistd.h>

using namespace ibemu;
using namespace ibemu::test;
using Json = nlohmann::ordered_json;

namespace {

struct Fixture : DefaultFabric {
	std::optional<Mad> nodeDesc(const Port &target)
	{
		return roundTrip(s, *host1,
				 lidSmp(IB_MGMT_METHOD_GET, IB_SMP_ATTR_NODE_DESC, 0, sm->lidOf(target), ++tid));
	}
	std::optional<Mad> nodeDescDr(const Node &n)
	{
		return roundTrip(s, *host1, drSmp(IB_MGMT_METHOD_GET, IB_SMP_ATTR_NODE_DESC, 0, sm->pathTo(n), ++tid));
	}
};

/* A scratch file for an event log, removed at the end */
struct TempFile {
	std::string path;
	TempFile()
	{
		char t[] = "/tmp/ibemu-faults-XXXXXX";
		int fd = mkstemp(t);
		REQUIRE(fd >= 0);
		close(fd);
		path = t;
	}
	~TempFile() { unlink(path.c_str()); }
	std::vector<Json> lines() const
	{
		std::vector<Json> out;
		std::ifstream in(path);
		for (std::string l; std::getline(in, l);)
			out.push_back(Json::parse(l));
		return out;
	}
};

/* The fabric with a FabricControl that logs to a scratch file */
struct ControlFixture : Fixture {
	boost::asio::io_context io;
	TempFile log;
	tools::FabricControl ctl{ io, s, log.path };

	/* Runs a request; its reply (null until it comes) */
	Json run(const Json &req)
	{
		Json reply;
		ctl.run(req, { { "source", "test" } }, [&reply](Json r) { reply = r; });
		return reply;
	}
	/* A scenario file, parsed */
	tools::Scenario scenario(const char *text)
	{
		tools::Scenario sc;
		std::string err;
		REQUIRE(tools::parseScenario(text, "s.toml", ctl, sc, err));
		return sc;
	}
};

} /* namespace */

TEST_CASE_METHOD(Fixture, "a pulled cable takes both ends down and plugs back in", "[faults]")
{
	Port &a = sw1->port(7), &b = sw2->port(7);
	REQUIRE(a.state == PortState::Active);
	Capture sink(s);
	host1->host = &sink;

	REQUIRE(s.pullCable(a) == 0);
	CHECK(a.peer == nullptr);
	CHECK(b.peer == nullptr);
	CHECK(a.pulledPeer == &b);
	CHECK(b.pulledPeer == &a);
	for (Port *p : { &a, &b }) {
		CHECK(p->state == PortState::Down);
		CHECK(p->physState == PhysState::Polling);
		CHECK(p->counters.linkDowned == 1);
	}
	/* the switch on the SM's side tells it, as real ones do (sw2's trap
	 * may be lost: its route to the SM may have crossed the pulled cable) */
	unsigned traps = 0;
	for (const Packet &p : sink.got) {
		const ib_smp &smpIn = *smp(p.mad);
		if (smpIn.method == IB_MGMT_METHOD_TRAP && smpIn.attr_id.get() == IB_SMP_ATTR_NOTICE) {
			const ib_notice &n = *overlay<ib_notice>(smpIn.data);
			traps += n.trap_num.get() == 128 && n.issuer_lid.get() == sm->lidOf(sw1->port(0));
		}
	}
	CHECK(traps == 1);
	host1->host = nullptr;

	CHECK(s.pullCable(a) == -ENOTCONN);
	REQUIRE(s.plugCable(b) == 0);
	CHECK(a.peer == &b);
	CHECK(a.pulledPeer == nullptr);
	CHECK(a.physState == PhysState::LinkUp);
	CHECK(a.state == PortState::Init);
	CHECK(s.plugCable(a) == -ENOTCONN);

	/* an end cabled elsewhere since: nothing to plug back */
	REQUIRE(s.pullCable(a) == 0);
	Port &spare = sw1->port(6);
	REQUIRE(s.connect(b, spare) == 0);
	CHECK(s.plugCable(a) == -EBUSY);
}

TEST_CASE_METHOD(Fixture, "a degraded cable retrains narrower and slower", "[faults]")
{
	Port &a = sw1->port(7), &b = sw2->port(7);
	REQUIRE(a.linkWidthActive == kWidth4x);
	Speed before = a.speedActive;
	s.degradeLink(a, kWidth1x, Speed::SDR);
	for (Port *p : { &a, &b }) {
		CHECK(p->linkWidthActive == kWidth1x);
		CHECK(p->speedActive == Speed::SDR);
		CHECK(p->counters.linkDowned == 1); /* it retrained */
		CHECK(p->state == PortState::Init);
		/* what the port could do is unchanged: iblinkinfo says "could be 4X" */
		CHECK((p->linkWidthSupported & kWidth4x) != 0);
	}
	s.degradeLink(a, 0, std::nullopt);
	CHECK(b.linkWidthActive == kWidth4x);
	CHECK(b.speedActive == before);
}

TEST_CASE_METHOD(Fixture, "a lossy cable loses packets and counts them at the receiver", "[faults]")
{
	/* host1 -> sw1 -> sw2 (port 7 or 8) -> host2: make both inter-switch
	 * cables lose everything */
	for (unsigned n : { 7u, 8u })
		s.setLinkErrors(sw1->port(n), 1.0, 0, 1);
	/* sw2 counts what it received on either cable from sw1 */
	auto sw2Counts = [&] {
		unsigned symbols = 0, rcv = 0;
		for (unsigned n : { 7u, 8u }) {
			symbols += sw2->port(n).counters.symbolErrors;
			rcv += sw2->port(n).counters.rcvErrors;
		}
		return std::make_pair(symbols, rcv);
	};
	CHECK_FALSE(nodeDesc(*host2));
	CHECK(sw2Counts() == std::make_pair(1u, 1u));

	/* a corrupted packet is a receive error, not a symbol error */
	for (unsigned n : { 7u, 8u })
		s.setLinkErrors(sw1->port(n), 0, 1.0, 1);
	CHECK_FALSE(nodeDesc(*host2));
	CHECK(sw2Counts() == std::make_pair(1u, 2u));

	/* both 0: the fault is gone */
	for (unsigned n : { 7u, 8u })
		s.setLinkErrors(sw1->port(n), 0, 0, 0);
	CHECK(sw1->port(7).errors == nullptr);
	CHECK(nodeDesc(*host2));
}

TEST_CASE("the same seed loses the same packets", "[faults]")
{
	auto losses = [](uint64_t seed) {
		Fixture f;
		for (unsigned n : { 7u, 8u })
			f.s.setLinkErrors(f.sw1->port(n), 0.3, 0.1, seed);
		std::string fate;
		for (int i = 0; i < 200; i++)
			fate += f.nodeDesc(*f.host2) ? '.' : 'x';
		return fate;
	};
	std::string a = losses(42);
	CHECK(a == losses(42));
	CHECK(a != losses(43));
	CHECK(a.find('x') != std::string::npos);
	CHECK(a.find('.') != std::string::npos);
}

TEST_CASE_METHOD(Fixture, "a silent switch answers nothing but still switches", "[faults]")
{
	s.setSilent(*sw2, true);
	CHECK_FALSE(nodeDesc(sw2->port(0)));
	CHECK_FALSE(nodeDescDr(*sw2));
	/* the PMA is silent too */
	CHECK_FALSE(roundTrip(s, *host1,
			      pmaMad(IB_MGMT_METHOD_GET, IB_PMA_PORT_COUNTERS, 1, sm->lidOf(sw2->port(0)), ++tid)));
	/* traffic through it goes on: host2 sits behind sw2 */
	auto r = nodeDesc(*host2);
	REQUIRE(r);
	CHECK(madStatus(*r) == 0);
	/* and it sends no traps */
	Capture sink(s);
	host1->host = &sink;
	s.pullCable(sw2->port(1));
	host1->host = nullptr;
	unsigned fromSw2 = 0;
	for (const Packet &p : sink.got)
		fromSw2 += smp(p.mad)->method == IB_MGMT_METHOD_TRAP;
	CHECK(fromSw2 == 0);

	s.setSilent(*sw2, false);
	CHECK(nodeDesc(sw2->port(0)));
}

TEST_CASE("counters are set by perfquery's names", "[faults]")
{
	PortCounters c;
	CHECK(setPortCounter(c, "SymbolErrorCounter", 100) == 0);
	CHECK(c.symbolErrors == 100);
	CHECK(setPortCounter(c, "portrcverrors", 7) == 0);
	CHECK(c.rcvErrors == 7);
	CHECK(setPortCounter(c, "LinkDownedCounter", 256) == -ERANGE);
	CHECK(c.linkDowned == 0);
	CHECK(setPortCounter(c, "PortXmitData", 0x100000000ull) == 0);
	CHECK(c.extXmitData == 0x100000000ull);
	CHECK(c.xmitData == 0xffffffffu); /* the 32-bit view saturates */
	CHECK(setPortCounter(c, "NoSuchCounter", 1) == -ENOENT);
	CHECK(setPortCounter(c, "all", 16) == -ERANGE); /* 4-bit counters */
	CHECK(setPortCounter(c, "all", 15) == 0);
	CHECK(c.excessiveBufferOverruns == 15);
	CHECK(c.extMulticastRcvPkts == 15);
	CHECK(portCounterNames().size() == 21);
}

TEST_CASE_METHOD(ControlFixture, "FabricControl: bad requests change nothing and say why", "[faults]")
{
	auto refused = [&](Json req) {
		Json reply = run(req);
		CHECK_FALSE(reply.value("ok", true));
		return reply.value("error", "");
	};
	CHECK_THAT(refused({ { "op", "link.sever" } }), Catch::Contains("unknown op \"link.sever\""));
	CHECK_THAT(refused(Json::array()), Catch::Contains("JSON object"));
	CHECK_THAT(refused({ { "op", "link.down" }, { "node", "nowhere" }, { "port", 1 } }),
		   Catch::Contains("no node \"nowhere\""));
	CHECK_THAT(refused({ { "op", "link.down" }, { "node", "ibemu-sw1" }, { "port", 9 } }),
		   Catch::Contains("has ports 1-8; there is no port 9"));
	CHECK_THAT(refused({ { "op", "link.down" }, { "node", "ibemu-sw1" }, { "port", 4 } }),
		   Catch::Contains("has no cable"));
	CHECK_THAT(refused({ { "op", "link.down" }, { "node", "ibemu-sw1" }, { "port", 7 }, { "prot", 1 } }),
		   Catch::Contains("unknown argument \"prot\""));
	CHECK_THAT(refused({ { "op", "errors" }, { "node", "ibemu-sw1" }, { "port", 7 }, { "drop", 1.5 } }),
		   Catch::Contains("[0, 1]"));
	CHECK_THAT(refused({ { "op", "errors" }, { "node", "ibemu-sw1" }, { "port", 7 }, { "drop", -0.1 } }),
		   Catch::Contains("[0, 1]"));
	CHECK_THAT(refused({ { "op", "link.up" }, { "node", "ibemu-sw1" }, { "port", 7 } }),
		   Catch::Contains("cabled already"));
	CHECK_THAT(refused({ { "op", "counters.set" },
			     { "node", "ibemu-sw1" },
			     { "port", 7 },
			     { "counter", "LinkDownedCounter" },
			     { "value", 300 } }),
		   Catch::Contains("does not fit"));
	CHECK_THAT(refused({ { "op", "link.degrade" }, { "node", "ibemu-sw1" }, { "port", 7 }, { "width", "3x" } }),
		   Catch::Contains("width must be"));
	/* the fabric is as it was, and nothing was logged */
	CHECK(sw1->port(7).peer == &sw2->port(7));
	CHECK(sw1->port(7).errors == nullptr);
	CHECK(sw1->port(7).counters.linkDowned == 0);
	CHECK(log.lines().empty());
}

TEST_CASE_METHOD(ControlFixture, "FabricControl carries out requests and logs each", "[faults]")
{
	/* a node by GUID, description and host name */
	Json r = run({ { "op", "link.down" }, { "node", "0x0002c90200000001" }, { "port", 7 } });
	REQUIRE(r.value("ok", false));
	CHECK(r["peer"] == "\"ibemu-sw2\"[7]");
	CHECK(sw1->port(7).peer == nullptr);
	CHECK(run({ { "op", "link.up" }, { "node", "ibemu-sw2" }, { "port", 7 } }).value("ok", false));
	CHECK(sw1->port(7).peer == &sw2->port(7));
	CHECK(run({ { "op", "node.silence" }, { "node", "ibemu-host2" } }).value("ok", false));
	CHECK(host2->node->silent);
	CHECK(run({ { "op", "errors" }, { "node", "ibemu-sw1" }, { "drop", 0.25 }, { "seed", 9 } }).value("ok", false));
	for (unsigned n = 1; n <= 8; n++)
		CHECK((sw1->port(n).errors && sw1->port(n).errors->dropRate == 0.25));
	CHECK(run({ { "op", "counters.set" },
		    { "node", "ibemu-sw1" },
		    { "port", 3 },
		    { "counter", "SymbolErrorCounter" },
		    { "value", 5 } })
		      .value("ok", false));
	CHECK(sw1->port(3).counters.symbolErrors == 5);
	CHECK(run({ { "op", "node.remove" }, { "node", "ibemu-sw2" } }).value("ok", false));
	for (unsigned n = 1; n <= 8; n++)
		CHECK(sw2->port(n).peer == nullptr);
	r = run({ { "op", "node.add" }, { "node", "ibemu-sw2" } });
	REQUIRE(r.value("ok", false));
	CHECK(r["cables"].size() == 5);
	CHECK(sw2->port(8).peer == &sw1->port(8));

	auto lines = log.lines();
	REQUIRE(lines.size() == 7);
	CHECK(lines[0]["op"] == "link.down");
	CHECK(lines[0]["node"] == "ibemu-sw1");
	CHECK(lines[0]["port"] == 7);
	CHECK(lines[0]["source"] == "test");
	CHECK(lines[0]["seq"] == 1);
	CHECK(lines[6]["op"] == "node.add");
	Json st = ctl.state();
	CHECK(st["silent_nodes"] == Json::array({ "ibemu-host2 HCA-1" }));
	CHECK(st["lossy_ports"].size() == 8);
	CHECK(st["pulled_cables"].empty());
}

TEST_CASE_METHOD(ControlFixture, "a flapping link goes down and up, then replies", "[faults]")
{
	Json reply;
	ctl.run({ { "op", "link.flap" }, { "node", "ibemu-sw1" }, { "port", 8 }, { "count", 3 }, { "interval_ms", 1 } },
		{ { "source", "test" } }, [&](Json r) { reply = r; });
	CHECK(reply.is_null()); /* still flapping */
	io.run();
	REQUIRE(reply.value("ok", false));
	CHECK(reply["flaps"] == 3);
	CHECK(sw1->port(8).peer == &sw2->port(8));
	CHECK(sw1->port(8).counters.linkDowned == 3);
	auto lines = log.lines();
	REQUIRE(lines.size() == 6);
	CHECK(lines[0]["op"] == "link.down");
	CHECK(lines[1]["op"] == "link.up");
	CHECK(lines[5]["flap"] == 3);
}

TEST_CASE_METHOD(ControlFixture, "a flap whose client went away ends, its cable plugged back", "[faults]")
{
	Json reply;
	auto cancel = ctl.run(
		{ { "op", "link.flap" }, { "node", "ibemu-sw1" }, { "port", 8 }, { "count", 1000 }, { "interval_ms", 1000 } },
		{ { "source", "test" } }, [&](Json r) { reply = r; });
	REQUIRE(cancel);
	CHECK(sw1->port(8).peer == nullptr); /* the first edge: pulled */
	CHECK(ctl.state()["flapping"] == 1);
	cancel();
	REQUIRE(reply.is_object());
	CHECK_FALSE(reply.value("ok", true));
	CHECK(reply["error"] == "the flapping stopped: its client went away");
	CHECK(sw1->port(8).peer == &sw2->port(8));
	CHECK(ctl.state()["flapping"] == 0);
	auto lines = log.lines();
	REQUIRE(lines.size() == 2);
	CHECK(lines[1]["op"] == "link.up");
	cancel(); /* once only */
	io.run(); /* the cancelled timer: no edge after the end */
	CHECK(log.lines().size() == 2);
	/* an op answered at once has nothing to cancel */
	CHECK_FALSE(ctl.run({ { "op", "node.silence" }, { "node", "ibemu-sw2" } }, { { "source", "test" } },
			    [](Json) {}));
}

TEST_CASE_METHOD(ControlFixture, "scenario files: errors name the line", "[faults]")
{
	auto error = [&](const char *text) {
		tools::Scenario sc;
		std::string err;
		CHECK_FALSE(tools::parseScenario(text, "f.toml", ctl, sc, err));
		return err;
	};
	CHECK(error("seed = 1\n[[event]]\nat = 5\nop = \"node.silence\"\nnode = \"ibemu-sw1\"\n") ==
	      "f.toml:3: at must be a duration like \"500ms\", \"5s\" or \"2m\"");
	CHECK(error("[[event]]\nat = \"1s\"\nop = \"node.silence\"\nnode = \"sw9\"\n") ==
	      "f.toml:1: no node \"sw9\" in the fabric (give a node GUID, NodeDescription or host name)");
	CHECK_THAT(error("[[event]]\nat = \"1s\"\nop = \"link.down\"\nnode = \"ibemu-sw1\"\nport = 7\ncount = 2\n"),
		   Catch::Contains("f.toml:1: count goes with every"));
	CHECK_THAT(error("colour = 1\n"), Catch::Contains("f.toml:1: unknown key \"colour\""));
	CHECK_THAT(error("[[event]\n"), Catch::StartsWith("f.toml:1: "));
	CHECK(error("[[event]]\nevery = \"1ms\"\nop = \"node.silence\"\nnode = \"ibemu-sw1\"\n") ==
	      "f.toml:2: every must be at least 10ms");
	CHECK_THAT(error("[[event]]\nat = \"1s\"\nafter = \"dawn\"\nop = \"node.silence\"\nnode = \"ibemu-sw1\"\n"),
		   Catch::Contains("f.toml:3: after must be \"sm-master\""));
	CHECK_THAT(error("[[event]]\nprobability = 2\nop = \"node.silence\"\nnode = \"ibemu-sw1\"\n"),
		   Catch::Contains("f.toml:2: probability"));
	/* a link.up of a cable a later event pulls is fine: only what never
	 * changes is checked before the start */
	tools::Scenario sc;
	std::string err;
	CHECK(tools::parseScenario("[[event]]\nat = \"1s\"\nop = \"link.up\"\nnode = \"ibemu-sw1\"\nport = 7\n",
				   "f.toml", ctl, sc, err));
	uint64_t ms = 0;
	CHECK((tools::parseDuration("1.5s", ms) && ms == 1500));
	CHECK((tools::parseDuration("250ms", ms) && ms == 250));
	CHECK((tools::parseDuration("2m", ms) && ms == 120000));
	CHECK_FALSE(tools::parseDuration("5", ms));
	CHECK_FALSE(tools::parseDuration("-1s", ms));
	CHECK_FALSE(tools::parseDuration("1h", ms));
}

TEST_CASE("the same scenario and seed give the same events", "[faults]")
{
	const char *text = R"(seed = 7
[[event]]
every = "10ms"
count = 40
probability = 0.5
op = "node.silence"
node = "ibemu-sw2"

[[event]]
at = "2ms"
every = "10ms"
count = 30
probability = 0.3
op = "errors"
node = "ibemu-sw1"
port = 7
drop = 0.1
)";
	auto play = [&](uint64_t seed) {
		ControlFixture f;
		tools::Scenario sc = f.scenario(text);
		sc.seed = seed;
		auto &io = f.io;
		auto &log = f.log;
		tools::ScenarioRun run(io, f.ctl, f.s, sc);
		bool ended = false;
		run.start([&] { ended = true; });
		io.run();
		CHECK(ended);
		/* everything but the wall-clock time */
		std::vector<std::string> events;
		for (Json e : log.lines()) {
			e.erase("time");
			events.push_back(e.dump());
		}
		return events;
	};
	auto a = play(7);
	CHECK(a == play(7));
	CHECK(a != play(8));
	CHECK(a.size() > 10);
	CHECK(a.size() < 70);
}

TEST_CASE("a scenario that falls behind skips the ticks it missed", "[faults]")
{
	ControlFixture f;
	auto &io = f.io;
	tools::Scenario sc = f.scenario("[[event]]\nevery = \"10ms\"\nop = \"counters.set\"\nnode = \"ibemu-sw1\"\n"
					"port = 1\ncounter = \"SymbolErrorCounter\"\nvalue = 1\n");
	tools::ScenarioRun run(io, f.ctl, f.s, sc);
	run.start([] {});
	/* the io thread busy for 1.3 s: 130 ticks missed */
	boost::asio::post(io, [] { usleep(1300 * 1000); });
	io.run_for(std::chrono::milliseconds(1350));
	run.stop();
	auto lines = f.log.lines();
	uint64_t skipped = 0;
	for (const auto &e : lines)
		skipped += e.value("skipped", 0ull);
	/* not fired in a burst once the thread is free: skipped, and said so */
	CHECK(lines.size() < 60);
	CHECK(skipped >= 100);
	CHECK(run.state()["skipped"] == skipped);
}

TEST_CASE("ibsim console lines become requests", "[faults]")
{
	auto one = [](const char *line) {
		tools::IbsimLine out;
		std::string err;
		REQUIRE(tools::translateIbsimLine(line, out, err));
		REQUIRE(out.requests.size() == 1);
		return out.requests[0];
	};
	auto error = [](const char *line) {
		tools::IbsimLine out;
		std::string err;
		CHECK_FALSE(tools::translateIbsimLine(line, out, err));
		return err;
	};
	CHECK(one("Unlink \"Switch1\"[3]") == Json({ { "op", "link.down" }, { "node", "Switch1" }, { "port", 3 } }));
	CHECK(one("unlink \"Switch1\"") == Json({ { "op", "node.remove" }, { "node", "Switch1" } }));
	CHECK(one("RELINK \"Switch1\"[0x3]") == Json({ { "op", "link.up" }, { "node", "Switch1" }, { "port", 3 } }));
	CHECK(one("ReLink \"Switch1\"") == Json({ { "op", "node.add" }, { "node", "Switch1" } }));
	CHECK(one("Link \"S-1\"[4] \"H-2\"[1]") ==
	      Json({ { "op", "link.connect" },
		     { "node", "S-1" },
		     { "port", 4 },
		     { "peer", "H-2" },
		     { "peer_port", 1 } }));
	CHECK(one("Error \"Switch1\"[2] 25") ==
	      Json({ { "op", "errors" }, { "node", "Switch1" }, { "port", 2 }, { "corrupt", 0.25 } }));
	CHECK(one("PerformanceSet \"Hca1\"[1] PortCounters.SymbolErrorCounter=100") ==
	      Json({ { "op", "counters.set" },
		     { "node", "Hca1" },
		     { "port", 1 },
		     { "counter", "SymbolErrorCounter" },
		     { "value", 100 } }));
	tools::IbsimLine out;
	std::string err;
	REQUIRE(tools::translateIbsimLine("  # a comment", out, err));
	CHECK(out.requests.empty());
	REQUIRE(tools::translateIbsimLine("Wait 2", out, err));
	CHECK(out.waitMs == 2000);
	REQUIRE(tools::translateIbsimLine("Dump", out, err));
	CHECK_THAT(out.note, Catch::Contains("skipped"));
	REQUIRE(tools::translateIbsimLine("!more.cmds", out, err));
	CHECK(out.include == "more.cmds");

	CHECK_THAT(error("l \"Switch1\"[3]"), Catch::Contains("unknown ibsim command \"l\""));
	CHECK_THAT(error("Error \"Switch1\"[2] 101"), Catch::Contains("[0, 100]"));
	CHECK_THAT(error("Error \"Switch1\"[2] 10 17"), Catch::Contains("attribute filter is not modelled"));
	CHECK_THAT(error("PerformanceSet \"Hca1\"[1] PortRcvErrorDetails.PortLoopingErrors=1"),
		   Catch::Contains("only PortCounters"));
	CHECK_THAT(error("Link \"S-1\"[4] \"H-2\""), Catch::Contains("both ports"));
	CHECK_THAT(error("Unlink Switch1"), Catch::Contains("quoted node id"));
	CHECK_THAT(error("Clear \"Switch1\""), Catch::Contains("not supported"));
}

TEST_CASE_METHOD(Fixture, "a degraded cable is lifted from either end", "[faults]")
{
	s.degradeLink(sw1->port(7), kWidth1x, std::nullopt);
	CHECK(sw2->port(7).linkWidthActive == kWidth1x);
	s.degradeLink(sw2->port(7), 0, std::nullopt);
	CHECK(sw1->port(7).degradedWidth == 0);
	CHECK(sw1->port(7).linkWidthActive == kWidth4x);
}

TEST_CASE_METHOD(Fixture, "a lossy cable counts what got through", "[faults]")
{
	s.setLinkErrors(sw1->port(7), 0.5, 0, 3);
	s.setLinkErrors(sw1->port(8), 0.5, 0, 3);
	Port &in7 = sw2->port(7), &in8 = sw2->port(8);
	uint64_t before = in7.counters.extRcvPkts + in8.counters.extRcvPkts;
	uint64_t dropsBefore = s.droppedPackets();
	/* a 100-packet message from host1 to host2: some lost, the rest arrive */
	CHECK(s.routeData(*host1, sm->lidOf(*host2), 100, 100 * 4096) == nullptr);
	uint64_t lost = in7.counters.symbolErrors + in8.counters.symbolErrors;
	CHECK(lost > 0);
	CHECK(in7.counters.extRcvPkts + in8.counters.extRcvPkts - before == 100 - lost);
	CHECK(s.droppedPackets() - dropsBefore == 100);
}

TEST_CASE("a node named by a description two nodes share is ambiguous", "[faults]")
{
	Subnet s;
	s.addNode(NodeType::Switch, 4, "S-1", 0x10).desc = "SwitchX - Mellanox";
	s.addNode(NodeType::Switch, 4, "S-2", 0x20).desc = "SwitchX - Mellanox";
	bool ambiguous = false;
	CHECK(s.resolveNode("SwitchX - Mellanox", &ambiguous) == nullptr);
	CHECK(ambiguous);
	CHECK(s.resolveNode("S-2") == s.findNodeByGuid(0x20));
	CHECK(s.resolveNode("0x20") == s.findNodeByGuid(0x20));
	CHECK(s.resolveNode("0x") == nullptr);
}

TEST_CASE("a node name that names nothing gets the nearest names", "[faults]")
{
	Subnet s;
	s.addNode(NodeType::Switch, 4, "S-1", 0x10).desc = "leaf1";
	s.addNode(NodeType::Switch, 4, "S-2", 0x20).desc = "leaf2";
	s.addNode(NodeType::CA, 1, "H-1", 0x30).desc = "node17 HCA-1";
	CHECK(s.noSuchNode("leaf3") == "no node \"leaf3\" in the fabric; did you mean \"leaf1\" or \"leaf2\"?");
	/* a host name is a name too; the nearer come first */
	CHECK(s.noSuchNode("nod17") == "no node \"nod17\" in the fabric; did you mean \"node17\"?");
	CHECK(s.noSuchNode("S-3") == "no node \"S-3\" in the fabric; did you mean \"S-1\", \"S-2\" or \"H-1\"?");
	CHECK(s.noSuchNode("S-11") == "no node \"S-11\" in the fabric; did you mean \"S-1\", \"S-2\" or \"H-1\"?");
	/* thousands near: three kept, the nearest first */
	Subnet many;
	for (unsigned i = 0; i < 5000; i++)
		many.addNode(NodeType::CA, 1, "H-" + std::to_string(i), 0x1000 + i).desc =
			"h" + std::to_string(10000 + i) + " HCA-1";
	CHECK(many.noSuchNode("h1000") ==
	      "no node \"h1000\" in the fabric; did you mean \"h10000\", \"h10001\" or \"h10002\"?");
	CHECK(many.noSuchNode("h1234x") ==
	      "no node \"h1234x\" in the fabric; did you mean \"h12340\", \"h12341\" or \"h12342\"?");
	/* nothing within two edits, and a long name costs its band only */
	CHECK(s.noSuchNode("spine") == "no node \"spine\" in the fabric");
	CHECK(s.noSuchNode(std::string(100000, 'x')) == "no node \"" + std::string(100000, 'x') + "\" in the fabric");
}

TEST_CASE_METHOD(ControlFixture, "a topology fragment hot-plugs new nodes, or changes nothing", "[faults]")
{
	const char *leaf = R"(Switch 4 "S-0002c90200000009" # "leaf9"
[1] "H-0002c90300000900"[1]
[4] "S-0002c90200000001"[6]
Ca 1 "H-0002c90300000900" # "host9 HCA-1"
[1] "S-0002c90200000009"[1]
)";
	size_t nodes = s.nodes().size();
	/* an attach point that is cabled already: refused whole */
	std::string busy = std::string(leaf);
	busy.replace(busy.find("[6]"), 3, "[7]");
	Json r = run({ { "op", "topology.add" }, { "file", "leaf.topo" }, { "text", busy } });
	CHECK_FALSE(r.value("ok", true));
	CHECK_THAT(r.value("error", ""), Catch::Contains("leaf.topo:3: \"S-0002c90200000001\"[7] is cabled already"));
	CHECK(s.nodes().size() == nodes);
	/* a node id the fabric has */
	std::string dup = std::string(leaf);
	dup.replace(dup.find("S-0002c90200000009\" #"), 18, "S-0002c90200000002");
	r = run({ { "op", "topology.add" }, { "file", "leaf.topo" }, { "text", dup } });
	CHECK_THAT(r.value("error", ""), Catch::Contains("is in the running fabric already"));
	CHECK(s.nodes().size() == nodes);
	CHECK(log.lines().empty());

	r = run({ { "op", "topology.add" }, { "file", "leaf.topo" }, { "text", leaf } });
	REQUIRE(r.value("ok", false));
	CHECK(r["nodes"] == Json::array({ "leaf9", "host9 HCA-1" }));
	REQUIRE(s.nodes().size() == nodes + 2);
	Node *leafNode = s.findNode("S-0002c90200000009");
	REQUIRE(leafNode);
	CHECK(leafNode->port(4).peer == &sw1->port(6));
	CHECK(leafNode->port(4).physState == PhysState::LinkUp);
	CHECK(s.findNode("H-0002c90300000900")->port(1).peer == &leafNode->port(1));
	/* reachable by directed route: host1 -> sw1 port 6 -> leaf port 1 */
	auto r2 = roundTrip(s, *host1, drSmp(IB_MGMT_METHOD_GET, IB_SMP_ATTR_NODE_DESC, 0, { 1, 6, 1 }, ++tid));
	REQUIRE(r2);
	CHECK(std::string(reinterpret_cast<const char *>(smpData(*r2))) == "host9 HCA-1");
	CHECK(log.lines().size() == 1);
}

TEST_CASE("a topology file's do lines are kept for the daemon", "[faults]")
{
	Topology t;
	TopologyError err;
	REQUIRE(parseTopology("Switch 2 \"S-1\"\ndo Unlink \"S-1\"[1]\n", "t.topo", t, err) == 0);
	REQUIRE(t.commands.size() == 1);
	CHECK(t.commands[0].text == "Unlink \"S-1\"[1]");
	CHECK(t.commands[0].line == 2);
	CHECK(t.warnings.empty());
}

TEST_CASE_METHOD(ControlFixture, "a fragment that cannot be grafted adds nothing", "[faults]")
{
	size_t nodes = s.nodes().size();
	auto refused = [&](const char *text) {
		Json r = run({ { "op", "topology.add" }, { "file", "f" }, { "text", text } });
		CHECK_FALSE(r.value("ok", true));
		CHECK(s.nodes().size() == nodes);
		return r.value("error", "");
	};
	/* a port cabled into the running fabric by one line and to a fragment
	 * node by the other's */
	CHECK_THAT(refused("Ca 1 \"a\"\n[1] \"S-0002c90200000001\"[4]\nCa 1 \"b\"\n[1] \"a\"[1]\n"),
		   Catch::Contains("cables that port to \"S-0002c90200000001\"[4]"));
	/* GUIDs one CA's ports take from its node GUID, another CA's node or
	 * port line */
	CHECK_THAT(refused("caguid=0x50\nCa 2 \"a\"\ncaguid=0x51\nCa 1 \"b\"\n"), Catch::Contains("is also \"a\"'s"));
	CHECK_THAT(refused("caguid=0x50\nCa 2 \"a\"\ncaguid=0x60\nCa 1 \"b\"\n[1](52) \"S-0002c90200000001\"[4]\n"),
		   Catch::Contains("port 1's GUID 0x52 of \"b\" is also \"a\"'s"));
	/* a GUID a running port has */
	CHECK_THAT(refused("caguid=0x2c90300000100\nCa 1 \"c\"\n"), Catch::Contains("in the running fabric already"));
	CHECK_THAT(refused("Ca 1 \"d\"\n[1] \"S-0002c90200000001\"[0]\n"), Catch::Contains("out of range"));
	/* no file is read for a client */
	CHECK_THAT(refused("include \"/etc/passwd\"\n"), Catch::Contains("include is not allowed"));
	/* a fragment's own node named by GUID */
	Json r = run({ { "op", "topology.add" },
		       { "text",
			 "caguid=0x77\nCa 1 \"e\"\n[1] \"S-88\"[1]\nswitchguid=0x88\nSwitch 4 \"S-88\"\n"
			 "[1] \"0x77\"[1]\n[4] \"S-0002c90200000001\"[4]\n" } });
	CHECK(r.value("ok", false));
	CHECK(s.nodes().size() == nodes + 2);
}

TEST_CASE_METHOD(ControlFixture, "a flap stops when someone else replugs its cable", "[faults]")
{
	Json reply;
	ctl.run({ { "op", "link.flap" }, { "node", "ibemu-sw1" }, { "port", 8 }, { "count", 3 }, { "interval_ms", 1 } },
		{ { "source", "test" } }, [&](Json r) { reply = r; });
	REQUIRE(sw1->port(8).peer == nullptr); /* the first edge: pulled */
	REQUIRE(run({ { "op", "link.up" }, { "node", "ibemu-sw2" }, { "port", 8 } }).value("ok", false));
	io.run();
	CHECK_FALSE(reply.value("ok", true));
	CHECK_THAT(reply.value("error", ""),
		   Catch::Contains("the flapping stopped: \"ibemu-sw1\"[8] is cabled already"));
	CHECK(sw1->port(8).peer == &sw2->port(8));
}
