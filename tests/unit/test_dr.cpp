// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// Directed-route SMPs (IBA 14.2.2) across 0 to 7 hops, their return paths,
// bad hop pointers and paths, and the mixed LID/DR forms.
#include "tests/unit/fabric_helpers.h"

#include "fabric/smi.h"
#include "fabric/smp_attrs.h"

#include <catch2/catch.hpp>

using namespace ibemu;
using namespace ibemu::test;

namespace {

/*
 * src[1] -- [2]S1[3] -- [4]S2[5] -- [6]S3[7] -- ... -- [12]S6[13] -- [1]dst
 * Switch Si reaches S(i+1) through port 2i+1 and is reached on port 2i, so
 * every hop has a different port number and return paths are checkable.
 */
std::string chainTopology()
{
	std::string t;
	for (int i = 1; i <= 6; i++) {
		t += "switchguid=" + std::to_string(100 + i) + "\n";
		t += "Switch 16 \"S" + std::to_string(i) + "\"\n";
		t += "[" + std::to_string(2 * i) + "] \"" +
			(i == 1 ? std::string("src") : "S" + std::to_string(i - 1)) + "\"[" +
			(i == 1 ? std::string("1") : std::to_string(2 * i - 1)) + "]\n";
		t += "[" + std::to_string(2 * i + 1) + "] \"" +
			(i == 6 ? std::string("dst") : "S" + std::to_string(i + 1)) + "\"[" +
			(i == 6 ? std::string("1") : std::to_string(2 * i + 2)) + "]\n\n";
	}
	t += "caguid=0x1000\nCa 1 \"src\"\n[1] \"S1\"[2]\n\ncaguid=0x2000\nCa 1 \"dst\"\n[1] \"S6\"[13]\n";
	return t;
}

/* Initial path from src to switch k (k hops), or to dst (k = 7). */
std::vector<uint8_t> pathTo(int k)
{
	std::vector<uint8_t> p{ 1 };
	for (int j = 1; j < k; j++)
		p.push_back(static_cast<uint8_t>(2 * j + 1));
	return p;
}

uint64_t nodeGuidOf(const Mad &m)
{
	return overlay<ib_node_info>(smpData(m))->node_guid.get();
}

} /* namespace */

TEST_CASE("DR NodeInfo across 1 to 7 hops carries the return path back", "[dr]")
{
	Subnet s;
	load(s, chainTopology());
	Port &src = s.findNode("src")->port(1);

	for (int k = 1; k <= 7; k++) {
		INFO("hops " << k);
		auto r = roundTrip(s, src, drSmp(IB_MGMT_METHOD_GET, IB_SMP_ATTR_NODE_INFO, 0, pathTo(k)));
		REQUIRE(r);
		const ib_smp &resp = *smp(*r);
		CHECK(resp.method == IB_MGMT_METHOD_GET_RESP);
		CHECK(resp.status.get() == IB_SMP_DIRECTION); /* D bit, status 0 */
		CHECK(resp.hop_cnt == k);
		CHECK(resp.hop_ptr == 0);
		const ib_node_info &ni = *overlay<ib_node_info>(resp.data);
		if (k <= 6) {
			CHECK(ni.node_guid.get() == uint64_t(100 + k));
			CHECK(ni.node_type == 2);
			CHECK(ni.local_port_num == 2 * k);
		} else {
			CHECK(ni.node_guid.get() == 0x2000);
			CHECK(ni.node_type == 1);
			CHECK(ni.port_guid.get() == 0x2001);
			CHECK(ni.local_port_num == 1);
		}
		for (int j = 1; j <= std::min(k, 6); j++)
			CHECK(resp.return_path[j] == 2 * j);
		if (k == 7)
			CHECK(resp.return_path[7] == 1);
	}
}

TEST_CASE("DR hop count 0 is answered by the local SMA", "[dr]")
{
	Subnet s;
	load(s, chainTopology());
	Port &src = s.findNode("src")->port(1);
	auto r = roundTrip(s, src, drSmp(IB_MGMT_METHOD_GET, IB_SMP_ATTR_NODE_INFO, 0, {}));
	REQUIRE(r);
	CHECK(nodeGuidOf(*r) == 0x1000);
	CHECK(s.findNode("S1")->port(2).counters.rcvPkts == 0); /* never reached the wire */
}

TEST_CASE("bad hop pointers and paths are dropped, as hardware does", "[dr]")
{
	Subnet s;
	load(s, chainTopology());
	Port &src = s.findNode("src")->port(1);
	Node &s1 = *s.findNode("S1");
	uint64_t drops = 0; /* what each section loses in the fabric */

	SECTION("the sender's hop pointer must be 0 or past the end (C14-9)")
	{
		Packet p = drSmp(IB_MGMT_METHOD_GET, IB_SMP_ATTR_NODE_INFO, 0, pathTo(3));
		smp(p.mad)->hop_ptr = 5;
		CHECK_FALSE(smi::prepareSend(*smp(p.mad), false, 1));
		smp(p.mad)->hop_ptr = 2; /* a CA cannot be an intermediate hop */
		CHECK_FALSE(smi::prepareSend(*smp(p.mad), false, 1));
	}
	SECTION("the first hop must leave through the sending port")
	{
		Packet p = drSmp(IB_MGMT_METHOD_GET, IB_SMP_ATTR_NODE_INFO, 0, { 2, 3 });
		CHECK_FALSE(smi::prepareSend(*smp(p.mad), false, 1));
	}
	SECTION("hop count of 64 or more")
	{
		Packet p = drSmp(IB_MGMT_METHOD_GET, IB_SMP_ATTR_NODE_INFO, 0, pathTo(2));
		smp(p.mad)->hop_cnt = 64;
		CHECK_FALSE(smi::prepareSend(*smp(p.mad), false, 1));
	}
	SECTION("an unreasonable hop pointer on the wire")
	{
		Packet p = drSmp(IB_MGMT_METHOD_GET, IB_SMP_ATTR_NODE_INFO, 0, pathTo(3));
		smp(p.mad)->hop_ptr = 9; /* > hop_cnt + 1: C14-9:5 */
		Capture cap(s);
		src.host = &cap;
		s.send(src, p);
		src.host = nullptr;
		CHECK(cap.got.empty());
		CHECK(s1.port(2).counters.vl15Dropped == 1);
		drops = 1;
	}
	SECTION("a path through a port with no cable")
	{
		auto r = roundTrip(s, src, drSmp(IB_MGMT_METHOD_GET, IB_SMP_ATTR_NODE_INFO, 0, { 1, 9, 2 }));
		CHECK_FALSE(r);
		CHECK(s1.port(9).counters.xmitDiscards == 1);
		drops = 1;
	}
	SECTION("a path through a port the switch does not have")
	{
		auto r = roundTrip(s, src, drSmp(IB_MGMT_METHOD_GET, IB_SMP_ATTR_NODE_INFO, 0, { 1, 99, 2 }));
		CHECK_FALSE(r);
		CHECK(s1.port(2).counters.vl15Dropped == 1);
		drops = 1;
	}
	SECTION("a CA in the middle of a path")
	{
		auto path = pathTo(7);
		path.push_back(1);
		auto r = roundTrip(s, src, drSmp(IB_MGMT_METHOD_GET, IB_SMP_ATTR_NODE_INFO, 0, path));
		CHECK_FALSE(r);
		CHECK(s.findNode("dst")->port(1).counters.vl15Dropped == 1);
		drops = 1;
	}
	SECTION("a disabled link on the path")
	{
		s.setDisabled(s.findNode("S3")->port(7), true);
		CHECK(roundTrip(s, src, drSmp(IB_MGMT_METHOD_GET, IB_SMP_ATTR_NODE_INFO, 0, pathTo(3))));
		CHECK_FALSE(roundTrip(s, src, drSmp(IB_MGMT_METHOD_GET, IB_SMP_ATTR_NODE_INFO, 0, pathTo(4))));
		CHECK(s.findNode("S3")->port(7).counters.xmitDiscards == 1);
		drops = 1; /* the second SMP; no SM LID, so no Trap 128 either */
	}
	/* the sections that fail in prepareSend never reach the wire */
	CHECK(s.droppedPackets() == drops);
}

TEST_CASE("mixed LID-routed and directed-route segments", "[dr]")
{
	Subnet s;
	load(s, chainTopology());
	Port &src = s.findNode("src")->port(1);
	MiniSm sm(s, src);
	sm.run();
	uint16_t srcLid = sm.lidOf(src);
	uint16_t dstLid = sm.lidOf(s.findNode("dst")->port(1));
	uint16_t s3Lid = sm.lidOf(s.findNode("S3")->port(0));
	REQUIRE(srcLid);
	REQUIRE(dstLid);

	SECTION("directed to S2, then LID-routed to DrDLID")
	{
		Packet p = drSmp(IB_MGMT_METHOD_GET, IB_SMP_ATTR_NODE_INFO, 0, pathTo(2));
		smp(p.mad)->dr_dlid = dstLid;
		auto r = roundTrip(s, src, p);
		REQUIRE(r);
		CHECK(nodeGuidOf(*r) == 0x2000);
		CHECK(smp(*r)->hop_ptr == 0);
		CHECK(smp(*r)->status.get() == IB_SMP_DIRECTION);
	}
	SECTION("LID-routed to S3 (DrSLID = the SM), then directed two hops")
	{
		Packet p = drSmp(IB_MGMT_METHOD_GET, IB_SMP_ATTR_NODE_INFO, 0, {});
		ib_smp &q = *smp(p.mad);
		q.hop_cnt = 2;
		q.initial_path[1] = 7;
		q.initial_path[2] = 9;
		q.dr_slid = srcLid;
		p.dlid = s3Lid;
		auto r = roundTrip(s, src, p);
		REQUIRE(r);
		CHECK(nodeGuidOf(*r) == 105); /* S5 */
		CHECK(smp(*r)->return_path[1] == 8);
		CHECK(smp(*r)->return_path[2] == 10);
		CHECK(smp(*r)->hop_ptr == 0);
	}
}
