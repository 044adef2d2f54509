// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// Topology files: the upstream examples, tolerated oddities, and one test
// per kind of malformed input, each checking the line number and message.
#include "fabric/generators.h"
#include "fabric/subnet.h"
#include "fabric/topology.h"

#include <catch2/catch.hpp>

#include <cerrno>

using namespace ibemu::fabric;

namespace {

struct Counts {
	size_t switches, cas, routers, links;
	bool operator==(const Counts &o) const
	{
		return switches == o.switches && cas == o.cas && routers == o.routers && links == o.links;
	}
};

std::ostream &operator<<(std::ostream &os, const Counts &c)
{
	return os << "{" << c.switches << " switches, " << c.cas << " CAs, " << c.routers << " routers, " << c.links
		  << " links}";
}

Counts counts(const Subnet &s)
{
	return { s.numSwitches(), s.numCas(), s.numRouters(), s.numLinks() };
}

/* Parses and builds; returns the error (empty on success). */
std::string tryLoad(std::string_view text, Subnet &subnet)
{
	Topology topo;
	TopologyError err;
	int rc = parseTopology(text, "t.topo", topo, err);
	if (rc == 0)
		rc = buildSubnet(topo, subnet, err);
	return rc ? err.str() : std::string();
}

std::string errorOf(std::string_view text)
{
	Subnet s;
	return tryLoad(text, s);
}

} /* namespace */

TEST_CASE("upstream example files load with the right counts", "[topology]")
{
	struct Case {
		const char *file;
		Counts expect;
	} cases[] = {
		{ "net", { 2, 2, 0, 4 } },
		{ "net.1", { 1, 2, 0, 2 } },
		{ "net.2sw2path", { 2, 2, 0, 4 } },
		{ "net.2sw2path4hca", { 2, 4, 0, 6 } },
		{ "net.2sw2path4hca2port", { 2, 2, 0, 6 } },
		{ "ibnetdiscover-manpage.topo", { 2, 4, 0, 7 } },
		{ "net.ibnd44.topo", { 2, 2, 0, 4 } },
		{ "net.ibnd44-full.topo", { 2, 2, 0, 4 } },
		{ "manpage-roundtrip.ibnd44.topo", { 2, 4, 0, 7 } },
		{ "speeds.input.net", { 1, 6, 1, 7 } },
		{ "speeds.ibnd44.topo", { 1, 6, 1, 7 } },
	};
	for (const auto &c : cases) {
		INFO(c.file);
		Topology topo;
		TopologyError err;
		int rc = loadTopologyFile(std::string(IBEMU_TEST_DATA) + "/topology/" + c.file, topo, err);
		INFO(err.str());
		REQUIRE(rc == 0);
		Subnet s;
		REQUIRE(buildSubnet(topo, s, err) == 0);
		CHECK(counts(s) == c.expect);
	}
}

TEST_CASE("ibsim GUID defaults and file GUIDs", "[topology]")
{
	Subnet s;
	Topology topo;
	TopologyError err;
	REQUIRE(loadTopologyFile(std::string(IBEMU_TEST_DATA) + "/topology/net", topo, err) == 0);
	REQUIRE(buildSubnet(topo, s, err) == 0);
	/* ibsim: switches from 0x200000, CAs from 0x100000 stepping nports+1 */
	CHECK(s.findNode("Switch1")->nodeGuid == 0x200000);
	CHECK(s.findNode("Switch2")->nodeGuid == 0x200001);
	CHECK(s.findNode("Hca1")->nodeGuid == 0x100000);
	CHECK(s.findNode("Hca2")->nodeGuid == 0x100003);
	CHECK(s.findNode("Hca2")->port(2).guid == 0x100005);
	CHECK(s.findNode("Hca2")->port(2).peer == &s.findNode("Switch1")->port(2));

	Subnet m;
	Topology t2;
	REQUIRE(loadTopologyFile(std::string(IBEMU_TEST_DATA) + "/topology/ibnetdiscover-manpage.topo", t2, err) == 0);
	REQUIRE(buildSubnet(t2, m, err) == 0);
	Node *sw = m.findNodeByGuid(0x5442ba00003080);
	REQUIRE(sw);
	CHECK(sw->desc == "ISR9024 Voltaire");
	CHECK(sw->vendorId == 0x8f1);
	CHECK(sw->deviceId == 0x5a06);
	CHECK(sw->sysImageGuid == 0x5442ba00003000);
	CHECK(sw->port(0).lid == 6);
	Node *ca = m.findNodeByGuid(0x8f10403960558);
	REQUIRE(ca);
	CHECK(ca->port(2).guid == 0x8f1040396055a);
	CHECK(ca->port(1).lid == 10);
	CHECK(ca->port(1).lmc == 1);
	/* 1xSDR on one end and 4xSDR on the other trains at 1x, as ibsim does */
	CHECK(ca->port(1).linkWidthActive == kWidth1x);
	CHECK(ca->port(2).linkWidthActive == kWidth4x);
}

TEST_CASE("speeds and widths come from the link token", "[topology]")
{
	Subnet s;
	Topology topo;
	TopologyError err;
	REQUIRE(loadTopologyFile(std::string(IBEMU_TEST_DATA) + "/topology/speeds.input.net", topo, err) == 0);
	REQUIRE(buildSubnet(topo, s, err) == 0);
	Node *sw = s.findNode("S-a");
	REQUIRE(sw);
	CHECK(sw->sw->enhancedPort0);
	CHECK(sw->port(1).speedActive == Speed::FDR);
	CHECK(sw->port(2).speedActive == Speed::EDR);
	CHECK(sw->port(3).speedActive == Speed::HDR);
	CHECK(sw->port(4).speedActive == Speed::FDR10);
	CHECK(sw->port(5).speedActive == Speed::QDR);
	CHECK(sw->port(5).linkWidthActive == kWidth12x);
	CHECK(sw->port(6).speedActive == Speed::DDR);
	CHECK(sw->port(6).linkWidthActive == kWidth1x);
}

TEST_CASE("human-readable oddities are accepted", "[topology]")
{
	SECTION("spaces instead of tabs, no GUIDs, no blank line between records")
	{
		Subnet s;
		CHECK(tryLoad("Switch 4 \"sw\"\n[1] \"a\"[1]\n[2]   \"b\"[1]\nCa 1 \"a\"\n[1] \"sw\"[1]\nCa 1 "
			      "\"b\"\n[1] \"sw\"[2]\n",
			      s) == "");
		CHECK(counts(s) == Counts{ 1, 2, 0, 2 });
	}
	SECTION("a link written on one side only")
	{
		Subnet s;
		CHECK(tryLoad("Switch 4 \"sw\"\n[1] \"a\"[1]\n\nCa 1 \"a\"\n", s) == "");
		CHECK(s.numLinks() == 1);
		CHECK(s.findNode("a")->port(1).linkUp());
	}
	SECTION("peer named by GUID")
	{
		Subnet s;
		CHECK(tryLoad("switchguid=0x10\nSwitch 4 \"sw\"\n[1] \"H-0000000000000020\"[1]\n\ncaguid=0x20\nCa 1 "
			      "\"host\"\n[1] \"S-0000000000000010\"[1]\n",
			      s) == "");
		CHECK(s.numLinks() == 1);
	}
	SECTION("Windows line endings, comments and ibnetdiscover -g lines")
	{
		Subnet s;
		CHECK(tryLoad("# comment\r\nNon-Chassis Nodes\r\nSwitch\t2 \"sw\"\r\n[1]\t\"a\"[1]\r\n\r\nHca\t1 "
			      "\"a\"\r\n",
			      s) == "");
		CHECK(s.numLinks() == 1);
	}
	SECTION("ibsim aliases and options")
	{
		Subnet s;
		CHECK(tryLoad("width=3\nSwitch 4 \"sw\"\n@[3] \"up\"\n[1] \"a\"[1] w=1\n\nCa 1 \"a\"\n\nCa 1 "
			      "\"b\"\n[1] \"@up\"\n",
			      s) == "");
		CHECK(s.numLinks() == 2);
		CHECK(s.findNode("b")->port(1).peer == &s.findNode("sw")->port(3));
		CHECK(s.findNode("a")->port(1).linkWidthActive == kWidth1x);
	}
	SECTION("module prefixes")
	{
		Subnet s;
		CHECK(tryLoad("module=\"m1\"\nSwitch 2 \"sw\"\n[1] \"a\"[1]\n\nCa 1 \"a\"\n", s) == "");
		CHECK(s.findNode("m1#sw"));
		CHECK(s.findNode("m1#a"));
	}
}

TEST_CASE("malformed input is reported with its line", "[topology]")
{
	struct Case {
		const char *text;
		const char *error;
	} cases[] = {
		{ "Switch 8\n", "t.topo:1: node header needs a quoted node id after the port count" },
		{ "Switch x \"a\"\n", "t.topo:1: node header needs a port count after the type" },
		{ "Switch 0 \"a\"\n", "t.topo:1: port count 0 is out of range (1-254)" },
		{ "Switch 300 \"a\"\n", "t.topo:1: port count 300 is out of range (1-254)" },
		{ "Switch 8 \"abc\n", "t.topo:1: unterminated node id (missing closing quote)" },
		{ "Switch 8 \"\"\n", "t.topo:1: empty node id" },
		{ "Switch 8 \"a\" junk\n", "t.topo:1: unexpected text after the node id: \"junk\"" },
		{ "[1] \"a\"[1]\n", "t.topo:1: port line outside a node record (no Switch/Ca/Rt header before it)" },
		{ "Switch 8 \"a\"\n[9] \"b\"[1]\n", "t.topo:2: port 9 is out of range for \"a\" (1-8)" },
		{ "Switch 8 \"a\"\n[0] \"b\"[1]\n", "t.topo:2: port 0 is out of range for \"a\" (1-8)" },
		{ "Switch 8 \"a\"\n[x] \"b\"[1]\n", "t.topo:2: port line needs a port number inside [ ]" },
		{ "Switch 8 \"a\"\n[1 \"b\"[1]\n", "t.topo:2: port number must be closed with ']'" },
		{ "Switch 8 \"a\"\n[1] b[1]\n", "t.topo:2: port line needs the peer's quoted node id" },
		{ "Switch 8 \"a\"\n[1] \"b\"[z]\n", "t.topo:2: bad peer port \"[z]\"" },
		{ "Switch 8 \"a\"\n[1](xyz) \"b\"[1]\n", "t.topo:2: bad port GUID \"(xyz)\"" },
		{ "Switch 8 \"a\"\n[1] \"b\"[1] trailing\n", "t.topo:2: unexpected text after the peer: \"trailing\"" },
		{ "Switch 8 \"a\"\n[1] \"b\"[1] w=9x\n", "t.topo:2: option 'w=9x' needs a number" },
		{ "Switch 8 \"a\"\n[1] \"b\"[1]\n[1] \"c\"[1]\n",
		  "t.topo:3: port 1 of \"a\" is listed twice (first on line 2)" },
		{ "blah\n", "t.topo:1: unrecognised line \"blah\"" },
		{ "vendid=zz\n", "t.topo:1: 'vendid' needs a number, got \"zz\"" },
		{ "vendid=0x1000000\n", "t.topo:1: vendid must fit in 24 bits" },
		{ "width=40\n", "t.topo:1: width= takes a LinkWidth bit mask from 1 to 31" },
		{ "include nofile\n", "t.topo:1: include needs a quoted file name" },
		{ "include \"/nonexistent/x\"\n",
		  "t.topo:1: cannot open included file \"/nonexistent/x\": No such file or directory" },
		{ "Switch 8 \"a\" # \"d\" lid 50000\n", "t.topo:1: switch LID 50000 is not a unicast LID" },
		{ "Ca 2 \"a\"\n[1](2) \"s\"[1] # lid 3 lmc 9 \"s\" lid 1 4xSDR\n", "t.topo:2: LMC must be 0-7" },
		{ "", "t.topo: no nodes found (expected Switch, Ca or Rt records)" },
		/* errors found when building */
		{ "Switch 8 \"a\"\n[1] \"nosuch\"[1]\n", "t.topo:2: port 1 of \"a\" names an unknown node \"nosuch\"" },
		{ "Switch 8 \"a\"\n[1] \"b\"[5]\n\nCa 2 \"b\"\n", "t.topo:2: \"b\" has no port 5 (it has 2)" },
		{ "Switch 8 \"a\"\n\nSwitch 8 \"a\"\n", "t.topo:3: node id \"a\" is already used (t.topo:1)" },
		{ "switchguid=0x5\nSwitch 8 \"a\"\n\nswitchguid=0x5\nSwitch 8 \"b\"\n",
		  "t.topo:5: node GUID 0x5 of \"b\" is already used by \"a\" (t.topo:2)" },
		{ "Switch 8 \"a\"\n[1] \"b\"[1]\n\nCa 1 \"b\"\n[1] \"a\"[2]\n",
		  "t.topo:2: \"a\"[1] is cabled to \"b\"[1], but t.topo:5 cables that port to \"a\"[2]" },
		{ "Switch 8 \"a\"\n[1] \"a\"[1]\n", "t.topo:2: port 1 is cabled to itself" },
		{ "Switch 8 \"a\"\n[1] \"c\"[1]\n[2] \"c\"[1]\n\nCa 1 \"c\"\n",
		  "t.topo:3: \"c\"[1] is already cabled to \"a\"[1]" },
		{ "Switch 8 \"a\"\n[1] \"@nope\"\n", "t.topo:2: unknown port alias \"@nope\"" },
	};
	for (const auto &c : cases) {
		INFO("input: " << c.text);
		CHECK(errorOf(c.text) == c.error);
	}
}

TEST_CASE("binary garbage is rejected, not crashed on", "[topology]")
{
	std::string junk("Switch 4 \"a\"\n\x01\x02\x00\xff", 17);
	CHECK(errorOf(junk) == "t.topo:2: binary data (NUL byte) in topology file");
	CHECK(errorOf(std::string(5000, '[')).rfind("t.topo:1:", 0) == 0);
}

TEST_CASE("an unreadable file gives errno and the path", "[topology]")
{
	Topology topo;
	TopologyError err;
	CHECK(loadTopologyFile("/nonexistent/net", topo, err) == -ENOENT);
	CHECK(err.str() == "/nonexistent/net: cannot open: No such file or directory");
}

TEST_CASE("written topologies read back identically", "[topology]")
{
	Subnet a;
	LinkSpec link;
	std::string err;
	REQUIRE(generateFatTree(a, 2, 20, 8, link, err) == 0);
	std::string text = writeTopology(a);
	Subnet b;
	REQUIRE(tryLoad(text, b) == "");
	CHECK(counts(b) == counts(a));
	REQUIRE(b.nodes().size() == a.nodes().size());
	for (const auto &n : a.nodes()) {
		Node *m = b.findNodeByGuid(n->nodeGuid);
		REQUIRE(m);
		CHECK(m->desc == n->desc);
		for (unsigned p = 1; p <= n->numPorts; p++) {
			const Port &x = n->port(p);
			const Port &y = m->port(p);
			CHECK(y.guid == x.guid);
			CHECK(bool(y.peer) == bool(x.peer));
			if (x.peer && y.peer) {
				CHECK(y.peer->node->nodeGuid == x.peer->node->nodeGuid);
				CHECK(y.peer->num == x.peer->num);
				CHECK(y.speedActive == Speed::EDR);
				CHECK(y.linkWidthActive == kWidth4x);
			}
		}
	}
	CHECK(writeTopology(b) == text);
}

TEST_CASE("descriptions with quotes and header words read back", "[topology]")
{
	/* found by tests/fuzz/fuzz_topology: a '"' in a description made the
	 * written port line's comment look like a w= option, and " lid " in a
	 * switch description cut the header before its closing quote */
	Subnet a;
	REQUIRE(tryLoad("Switch 8 \"S1\" # \"w\"w=R\" base port 0 lid 3 lmc 0\n"
			"[1] \"S2\"[1]\n"
			"Switch 4 \"S2\" # \"spare lid 5 sw\" enhanced port 0 lid 4 lmc 0\n"
			"[1] \"S1\"[1]\n",
			a) == "");
	const Node *s1 = a.findNode("S1");
	const Node *s2 = a.findNode("S2");
	REQUIRE(s1);
	REQUIRE(s2);
	CHECK(s1->desc == "w\"w=R");
	CHECK(s1->port(0).lid == 3);
	CHECK(s2->desc == "spare lid 5 sw");
	CHECK(s2->port(0).lid == 4);
	std::string text = writeTopology(a);
	Subnet b;
	REQUIRE(tryLoad(text, b) == "");
	CHECK(b.findNodeByGuid(s1->nodeGuid)->desc == s1->desc);
	CHECK(b.findNodeByGuid(s2->nodeGuid)->desc == s2->desc);
	CHECK(writeTopology(b) == text);
}

TEST_CASE("a long description is cut between characters", "[topology]")
{
	/* found by tests/fuzz/fuzz_topology: cutting at 64 bytes split the
	 * two-byte e-acute, and the written file did not read back (not UTF-8) */
	std::string desc = std::string(63, 'a') + "\xc3\xa9" + "bc";
	Subnet a;
	REQUIRE(tryLoad("Ca 1 \"H1\" # \"" + desc + "\"\n[1] \"S1\"[1]\nSwitch 2 \"S1\"\n[1] \"H1\"[1]\n", a) == "");
	const Node *h = a.findNode("H1");
	REQUIRE(h);
	CHECK(h->desc == std::string(63, 'a'));
	Subnet b;
	CHECK(tryLoad(writeTopology(a), b) == "");
	/* a character that fits whole stays */
	Subnet c;
	REQUIRE(tryLoad("Ca 1 \"H1\" # \"" + std::string(62, 'a') + "\xc3\xa9" +
				"\"\n[1] \"S1\"[1]\nSwitch 2 \"S1\"\n[1] \"H1\"[1]\n",
			c) == "");
	CHECK(c.findNode("H1")->desc == std::string(62, 'a') + "\xc3\xa9");
}

TEST_CASE("generators build the shapes they promise", "[topology]")
{
	LinkSpec link;
	std::string err;
	SECTION("2-level fat tree")
	{
		Subnet s;
		REQUIRE(generateFatTree(s, 2, 100, 20, link, err) == 0);
		/* 10 spines, 10 leaves with 10 hosts each; every leaf meets every spine */
		CHECK(counts(s) == Counts{ 20, 100, 0, 100 + 100 });
		CHECK(generateFatTree(s, 2, 201, 20, link, err) == -EINVAL);
		CHECK(err == "a 2-level fat tree of radix 20 holds at most 200 hosts");
	}
	SECTION("3-level fat tree")
	{
		Subnet s;
		REQUIRE(generateFatTree(s, 3, 128, 8, link, err) == 0);
		/* radix 8: 16 hosts per pod, 8 pods, 16 cores, 4 aggs + 4 leaves per pod */
		CHECK(counts(s) == Counts{ 16 + 8 * 8, 128, 0, 128 + 8 * 16 + 8 * 16 });
		Subnet t;
		CHECK(generateFatTree(t, 3, 129, 8, link, err) == -EINVAL);
	}
	SECTION("ring and torus")
	{
		Subnet r;
		REQUIRE(generateRing(r, 6, 2, link, err) == 0);
		CHECK(counts(r) == Counts{ 6, 12, 0, 6 + 12 });
		Subnet t;
		REQUIRE(generateTorus(t, { 3, 4, 2 }, 1, link, err) == 0);
		CHECK(counts(t) == Counts{ 24, 24, 0, 3 * 24 + 24 });
		Subnet u;
		CHECK(generateTorus(u, { 1, 4 }, 1, link, err) == -EINVAL);
	}
}
