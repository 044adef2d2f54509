// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// A subnet split across two daemons (fabric/remote_cable.h): two Subnets
// built from one topology file, each simulating its host's nodes, joined
// by a wire that carries their packets as bytes (encodeMadPacket and
// back) and their cable ends, as tools/peer/peer_traffic.cpp does over TCP. An SM
// in one brings the whole subnet up through the other.
#include "tests/unit/fabric_helpers.h"

#include "fabric/packet_format.h"
#include "fabric/smp_attrs.h"
#include "fabric/topology.h"

#include <catch2/catch.hpp>

using namespace ibemu;
using namespace ibemu::test;

TEST_CASE("cables to another daemon stay down until it reports its ends", "[remote-cable]")
{
	SplitSubnet f;
	Port &sw1p7 = f.port(f.a, "S1", 7);
	Port &sw2p7 = f.port(f.b, "S2", 7);
	CHECK(f.port(f.a, "S1", 1).state == PortState::Init); /* local cables train */
	CHECK(sw1p7.state == PortState::Down);
	CHECK(sw1p7.physState == PhysState::Polling);
	CHECK(sw1p7.counters.linkDowned == 0);
	CHECK(sw2p7.state == PortState::Down);
	CHECK(f.a.findNode("S2")->foreign);
	CHECK_FALSE(f.b.findNode("S2")->foreign);

	f.connect();
	for (Subnet *s : { &f.a, &f.b })
		for (auto [node, num] : { std::pair{ "S1", 7u }, { "S1", 8u }, { "S2", 3u } }) {
			Port &p = f.port(*s, node, num);
			if (p.node->foreign)
				continue;
			INFO(node << " port " << num);
			CHECK(p.physState == PhysState::LinkUp);
			CHECK(p.state == PortState::Init);
		}
	CHECK(f.port(f.a, "H3", 1).state == PortState::Init);
}

TEST_CASE("a fragment grafted in a split subnet attaches to this host's nodes only", "[remote-cable][topology]")
{
	SplitSubnet f;
	f.connect();
	auto graft = [&](Subnet &s, const char *text, TopologyError &err) {
		Topology frag;
		REQUIRE(parseTopology(text, "frag.topo", frag, err, false) == 0);
		return graftTopology(frag, s, err);
	};
	TopologyError err;
	/* S2 is host b's: in a it is a stand-in, whose daemon would never
	 * hear of the cable */
	CHECK(graft(f.a, "Ca 1 \"H-0002c90300000900\"\n[1] \"S2\"[4]\n", err) != 0);
	CHECK(err.str() ==
	      "frag.topo:2: \"S2\" is simulated by another host's daemon: a fragment attaches to "
	      "this host's nodes only");
	CHECK_FALSE(f.a.findNodeByGuid(0x0002c90300000900));
	CHECK_FALSE(f.port(f.a, "S2", 4).peer);
	/* every daemon would number nodes without a GUID alike */
	err = {};
	CHECK(graft(f.a, "Ca 1 \"H9\"\n[1] \"S1\"[4]\n", err) != 0);
	CHECK(err.str().starts_with("frag.topo:1: \"H9\" has no GUID: in a subnet split across daemons"));
	/* S1 port 7's cable to b, pulled: plugged back, not re-used */
	f.a.pullCable(f.port(f.a, "S1", 7));
	err = {};
	CHECK(graft(f.a, "Ca 1 \"H-0002c90300000900\"\n[1] \"S1\"[7]\n", err) != 0);
	CHECK(err.str() ==
	      "frag.topo:2: \"S1\"[7] belongs to a cable to \"S2\" of another host (pulled): plug "
	      "it back instead");
	/* S1 is a's own: the new CA is a's and trains with it */
	err = {};
	int rc = graft(f.a, "Ca 1 \"H-0002c90300000900\"\n[1] \"S1\"[4]\n", err);
	INFO(err.str());
	CHECK(rc == 0);
	const Node *h9 = f.a.findNodeByGuid(0x0002c90300000900);
	REQUIRE(h9);
	CHECK_FALSE(h9->foreign);
	CHECK(f.port(f.a, "H-0002c90300000900", 1).state == PortState::Init);
}

TEST_CASE("an SM in one daemon brings up the whole split subnet", "[remote-cable]")
{
	SplitSubnet f;
	f.connect();
	Port &h1 = f.port(f.a, "H1", 1);
	MiniSm sm(f.a, h1);
	sm.run();
	Port &h2 = f.port(f.b, "H2", 1);
	Port &h3 = f.port(f.a, "H3", 1);
	CHECK(h2.state == PortState::Active); /* in b, where it lives */
	CHECK(h3.state == PortState::Active);
	CHECK(h2.lid != 0);
	CHECK(f.b.findNode("S2")->sw->linearFdbTop != 0);
	CHECK(f.toB.packets > 0);
	CHECK(f.toA.packets > 0);

	/* LID-routed, from a to a port in b, and the answer back */
	auto r = roundTrip(f.a, h1, lidSmp(IB_MGMT_METHOD_GET, IB_SMP_ATTR_NODE_DESC, 0, h2.lid, 77));
	REQUIRE(r);
	CHECK(std::string(reinterpret_cast<const char *>(smpData(*r))) == "h2 HCA-1");
	/* and from a CA in a cabled to b's switch */
	r = roundTrip(f.a, h3, lidSmp(IB_MGMT_METHOD_GET, IB_SMP_ATTR_NODE_DESC, 0, h1.lid, 78));
	REQUIRE(r);
	CHECK(std::string(reinterpret_cast<const char *>(smpData(*r))) == "h1 HCA-1");
	CHECK(f.a.droppedPackets() == 0);
	CHECK(f.b.droppedPackets() == 0);
}

TEST_CASE("a daemon that goes away is a cable pulled out", "[remote-cable]")
{
	SplitSubnet f;
	f.connect();
	MiniSm sm(f.a, f.port(f.a, "H1", 1));
	sm.run();
	Port &sw1p7 = f.port(f.a, "S1", 7);
	Port &sw2p7 = f.port(f.b, "S2", 7);
	REQUIRE(sw1p7.state == PortState::Active);
	f.a.findNode("S1")->sw->portStateChange = false;

	f.disconnect();
	CHECK(sw1p7.state == PortState::Down);
	CHECK(sw1p7.physState == PhysState::Polling);
	CHECK(sw1p7.counters.linkDowned == 1);
	CHECK(f.a.findNode("S1")->sw->portStateChange); /* Trap 128 material */
	CHECK(sw2p7.state == PortState::Down);
	CHECK(f.port(f.a, "H3", 1).state == PortState::Down);
	CHECK(f.port(f.a, "H1", 1).state == PortState::Active); /* the rest keeps working */

	f.connect();
	CHECK(sw1p7.state == PortState::Init);
	CHECK(sw2p7.state == PortState::Init);
}

TEST_CASE("the far daemon's port changes reach the near end", "[remote-cable]")
{
	SplitSubnet f;
	f.connect();
	Port &sw1p7 = f.port(f.a, "S1", 7), &sw1p8 = f.port(f.a, "S1", 8);
	Port &sw2p7 = f.port(f.b, "S2", 7), &sw2p8 = f.port(f.b, "S2", 8);

	SECTION("disabled and enabled again")
	{
		f.b.setDisabled(sw2p7, true);
		CHECK(sw2p7.physState == PhysState::Disabled);
		CHECK(sw1p7.physState == PhysState::Polling);
		CHECK(sw1p7.state == PortState::Down);
		f.b.setDisabled(sw2p7, false);
		CHECK(sw1p7.physState == PhysState::LinkUp);
		CHECK(sw2p7.physState == PhysState::LinkUp);
	}
	SECTION("a damaged cable trains narrower at both ends")
	{
		f.b.degradeLink(sw2p8, kWidth1x, Speed::SDR);
		CHECK(sw2p8.linkWidthActive == kWidth1x);
		CHECK(sw1p8.linkWidthActive == kWidth1x);
		CHECK(sw1p8.speedActive == Speed::SDR);
		CHECK(sw1p7.linkWidthActive != kWidth1x);
	}
	SECTION("an SM's PortState=Down retrains both ends, a request: no LinkDowned")
	{
		f.b.bounceLink(sw2p7);
		CHECK(sw1p7.state == PortState::Init);
		CHECK(sw2p7.state == PortState::Init);
		f.a.bounceLink(sw1p7);
		f.b.setDisabled(sw2p7, true);
		f.b.setDisabled(sw2p7, false);
		CHECK(sw1p7.linkUp());
		CHECK(sw1p7.counters.linkDowned == 0);
		CHECK(sw2p7.counters.linkDowned == 0);
	}
	SECTION("a damaged cable at the far end is a lost link at both ends")
	{
		f.b.degradeLink(sw2p7, kWidth1x, std::nullopt);
		CHECK(sw1p7.counters.linkDowned == 1);
		CHECK(sw2p7.counters.linkDowned == 1);
	}
	SECTION("a cable pulled out at the far end, and plugged back in")
	{
		REQUIRE(f.b.pullCable(sw2p7) == 0);
		CHECK(sw1p7.state == PortState::Down);
		CHECK(sw1p7.physState == PhysState::Polling);
		REQUIRE(f.b.plugCable(sw2p7) == 0);
		CHECK(sw1p7.physState == PhysState::LinkUp);
		CHECK(sw2p7.physState == PhysState::LinkUp);
	}
}

TEST_CASE("a routing loop across daemons ends at the hop limit", "[remote-cable]")
{
	SplitSubnet f;
	f.connect();
	MiniSm sm(f.a, f.port(f.a, "H1", 1));
	sm.run();
	/* LID 200 bounces between the switches: sw1 and sw2 both send it
	 * out of port 7 */
	for (auto [s, name] : { std::pair{ &f.a, "S1" }, std::pair{ &f.b, "S2" } }) {
		SwitchState &st = *s->findNode(name)->sw;
		if (st.lft.size() <= 200)
			st.lft.resize(256, 0xff);
		st.lft[200] = 7;
		st.linearFdbTop = std::max<uint16_t>(st.linearFdbTop, 200);
	}
	uint64_t before = f.toB.packets + f.toA.packets;
	Port &h1 = f.port(f.a, "H1", 1);
	auto r = roundTrip(f.a, h1, lidSmp(IB_MGMT_METHOD_GET, IB_SMP_ATTR_NODE_DESC, 0, 200, 99));
	CHECK_FALSE(r);
	/* h1 -> sw1 is hop 0; the cable between the switches is crossed
	 * until the limit: 254 more times */
	CHECK(f.toB.packets + f.toA.packets - before == 254);
	CHECK(f.a.droppedPackets() + f.b.droppedPackets() == 1);
}

TEST_CASE("MAD packets read back from their bytes", "[remote-cable][capture]")
{
	Packet p = lidSmp(IB_MGMT_METHOD_GET, IB_SMP_ATTR_PORT_INFO, 3, 17, 0x99);
	p.slid = 4;
	p.sl = 5;
	p.srcQp = 1;
	p.dstQp = 1;
	p.qkey = IB_QP1_QKEY;
	p.pkey = 0x8001;
	p.grh = true;
	p.sgid[0] = 0xfe;
	p.dgid[15] = 0x42;
	p.hopLimit = 7;
	p.trafficClass = 3;
	p.flowLabel = 0x12345;
	std::vector<uint8_t> bytes = encodeMadPacket(p);
	Packet q;
	REQUIRE(decodeMadPacket(bytes, q));
	CHECK(q.slid == 4);
	CHECK(q.dlid == 17);
	CHECK(q.sl == 5);
	CHECK(q.pkey == 0x8001);
	CHECK(q.qkey == IB_QP1_QKEY);
	CHECK(q.grh);
	CHECK(q.sgid == p.sgid);
	CHECK(q.dgid == p.dgid);
	CHECK(q.hopLimit == 7);
	CHECK(q.trafficClass == 3);
	CHECK(q.flowLabel == 0x12345);
	CHECK(q.mad == p.mad);

	/* any bit flipped, or a byte short, and it is not a packet */
	for (size_t i : { size_t(0), size_t(9), size_t(60), bytes.size() - 1 }) {
		std::vector<uint8_t> bad = bytes;
		bad[i] ^= 0x10;
		INFO("byte " << i);
		CHECK_FALSE(decodeMadPacket(bad, q));
	}
	CHECK_FALSE(decodeMadPacket(std::span(bytes).first(bytes.size() - 1), q));
	/* QP0 off VL15 */
	Packet smpPkt = lidSmp(IB_MGMT_METHOD_GET, IB_SMP_ATTR_NODE_INFO, 0, 3);
	CHECK(decodeMadPacket(encodeMadPacket(smpPkt), q));
	CHECK(q.dstQp == IB_QP0);
}
