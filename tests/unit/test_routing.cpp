// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// LID routing through the switches' LFTs, and the ways packets get dropped.
#include "tests/unit/fabric_helpers.h"

#include "fabric/generators.h"
#include "fabric/smp_attrs.h"

#include <catch2/catch.hpp>

using namespace ibemu;
using namespace ibemu::test;

namespace {

struct FatTree {
	Subnet s;
	std::vector<Port *> hosts;
	std::unique_ptr<MiniSm> sm;

	FatTree()
	{
		std::string err;
		REQUIRE(generateFatTree(s, 3, 32, 8, LinkSpec{}, err) == 0);
		for (const auto &n : s.nodes())
			if (!n->isSwitch())
				hosts.push_back(&n->port(1));
		REQUIRE(hosts.size() == 32);
		sm = std::make_unique<MiniSm>(s, *hosts[0]);
		sm->run();
	}

	std::optional<Mad> nodeInfoByLid(Port &from, uint16_t dlid, uint64_t tid)
	{
		return roundTrip(s, from, lidSmp(IB_MGMT_METHOD_GET, IB_SMP_ATTR_NODE_INFO, 0, dlid, tid));
	}
};

uint64_t guidIn(const Mad &m)
{
	return overlay<ib_node_info>(smpData(m))->port_guid.get();
}

} /* namespace */

TEST_CASE_METHOD(FatTree, "LID-routed SMPs reach every host of a 3-level fat tree", "[routing]")
{
	uint64_t tid = 1;
	for (Port *from : { hosts[0], hosts[5], hosts[31] }) {
		for (Port *to : hosts) {
			INFO("from " << from->node->desc << " to " << to->node->desc);
			auto r = nodeInfoByLid(*from, sm->lidOf(*to), ++tid);
			REQUIRE(r);
			CHECK(madStatus(*r) == 0);
			CHECK(guidIn(*r) == to->guid);
		}
	}
	/* and every switch, by its port-0 LID */
	for (const auto &n : s.nodes()) {
		if (!n->isSwitch())
			continue;
		auto r = nodeInfoByLid(*hosts[17], sm->lidOf(n->port(0)), ++tid);
		REQUIRE(r);
		CHECK(overlay<ib_node_info>(smpData(*r))->node_guid.get() == n->nodeGuid);
	}
	CHECK(s.droppedPackets() == 0);
}

TEST_CASE_METHOD(FatTree, "packets to unreachable or unprogrammed LIDs are dropped", "[routing]")
{
	Port &from = *hosts[3];
	Port &leafPort = *from.peer;
	uint64_t dropped = s.droppedPackets();

	SECTION("a LID above LinearFDBTop")
	{
		CHECK_FALSE(nodeInfoByLid(from, 4000, 7));
		CHECK(leafPort.counters.rcvSwitchRelayErrors == 1);
	}
	SECTION("an LFT entry that was never programmed")
	{
		Node &leaf = *leafPort.node;
		uint16_t target = sm->lidOf(*hosts[30]);
		leaf.sw->lft[target] = 0xff;
		CHECK_FALSE(nodeInfoByLid(from, target, 8));
		CHECK(leafPort.counters.rcvSwitchRelayErrors == 1);
		CHECK(nodeInfoByLid(from, sm->lidOf(*hosts[29]), 9)); /* others still fine */
	}
	SECTION("a down link on the path")
	{
		Port &target = *hosts[30];
		s.setDisabled(*target.peer, true);
		CHECK_FALSE(nodeInfoByLid(from, sm->lidOf(target), 10));
		CHECK(target.peer->counters.xmitDiscards == 1);
	}
	SECTION("a forwarding loop ends at the hop limit")
	{
		Node &leaf = *leafPort.node;
		uint16_t target = sm->lidOf(*hosts[30]);
		uint8_t up = leaf.sw->lft[target];
		Port &agg = *leaf.port(up).peer;
		agg.node->sw->lft[target] = agg.num; /* straight back down */
		CHECK_FALSE(nodeInfoByLid(from, target, 11));
	}
	CHECK(s.droppedPackets() == dropped + 1);
}

TEST_CASE_METHOD(FatTree, "data (non-VL15) packets need Active ports", "[routing]")
{
	Port &from = *hosts[1];
	Port &to = *hosts[20];
	auto pma = [&](uint64_t tid) {
		return roundTrip(s, from, pmaMad(IB_MGMT_METHOD_GET, IB_PMA_PORT_COUNTERS, 1, sm->lidOf(to), tid));
	};
	CHECK(pma(1));
	s.bounceLink(to); /* back to Init: GMPs stop, SMPs still pass */
	CHECK_FALSE(pma(2));
	CHECK(nodeInfoByLid(from, sm->lidOf(to), 3));
}
