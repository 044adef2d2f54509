// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// The PMA: ClassPortInfo, PortCounters and PortCountersExtended, counters
// moving with real traffic, Set clearing them, AllPortSelect, saturation.
#include "tests/unit/fabric_helpers.h"

#include "fabric/pma.h"
#include "fabric/topology.h"

#include <catch2/catch.hpp>

using namespace ibemu;
using namespace ibemu::test;

namespace {

constexpr uint32_t kWordsPerMad = 288 / 4; /* LRH+BTH+DETH+MAD+ICRC */

struct Fixture : DefaultFabric {
	std::optional<Mad> pma(uint8_t method, uint16_t attr, uint8_t portSelect, const Port &target,
			       uint16_t counterSelect = 0)
	{
		Packet p = pmaMad(method, attr, portSelect, sm->lidOf(target), ++tid);
		*overlay<be16>(p.mad.data() + kPmaDataOffset + 2) = counterSelect;
		return roundTrip(s, *host1, p);
	}
	const ib_pma_portcounters &pc(const Mad &m) { return *overlay<ib_pma_portcounters>(m.data() + kPmaDataOffset); }
	const ib_pma_portcounters_ext &pcx(const Mad &m)
	{
		return *overlay<ib_pma_portcounters_ext>(m.data() + kPmaDataOffset);
	}
};

} /* namespace */

TEST_CASE_METHOD(Fixture, "ClassPortInfo advertises extended counters", "[pma]")
{
	auto r = pma(IB_MGMT_METHOD_GET, IB_PMA_CLASS_PORT_INFO, 0, *host2);
	REQUIRE(r);
	CHECK(madStatus(*r) == 0);
	auto &cpi = *overlay<ib_class_port_info>(r->data() + kPmaDataOffset);
	CHECK(cpi.base_version == 1);
	CHECK(cpi.class_version == 1);
	CHECK(cpi.capability_mask.get() == (IB_PMA_CLASS_CAP_EXT_WIDTH | IB_PMA_CLASS_CAP_XMIT_WAIT));
	CHECK(cpi.cap_mask2_resp_time.get() == 18);
	r = pma(IB_MGMT_METHOD_GET, IB_PMA_CLASS_PORT_INFO, 0, sw2->port(0));
	auto &scpi = *overlay<ib_class_port_info>(r->data() + kPmaDataOffset);
	CHECK((scpi.capability_mask.get() & IB_PMA_CLASS_CAP_ALLPORTSELECT) != 0);
}

TEST_CASE_METHOD(Fixture, "counters move with traffic, exactly", "[pma]")
{
	PortCounters before = host2->counters;
	uint32_t isl = sw1->port(7).counters.xmitPkts + sw1->port(8).counters.xmitPkts;
	const int n = 25;
	for (int i = 0; i < n; i++)
		REQUIRE(pma(IB_MGMT_METHOD_GET, IB_PMA_PORT_COUNTERS, 1, *host2));
	const PortCounters &now = host2->counters;
	CHECK(now.rcvPkts - before.rcvPkts == n);
	CHECK(now.xmitPkts - before.xmitPkts == n);
	CHECK(now.rcvData - before.rcvData == n * kWordsPerMad);
	CHECK(now.xmitData - before.xmitData == n * kWordsPerMad);
	CHECK(now.extRcvPkts - before.extRcvPkts == n);
	CHECK(now.extUnicastXmitPkts - before.extUnicastXmitPkts == n);
	/* the requests crossed sw1 -> sw2 on one of the two inter-switch links */
	CHECK(sw1->port(7).counters.xmitPkts + sw1->port(8).counters.xmitPkts - isl == n);

	/* what the PMA reports is what the port counted, as of the request */
	auto r = pma(IB_MGMT_METHOD_GET, IB_PMA_PORT_COUNTERS, 1, *host2);
	REQUIRE(r);
	CHECK(pc(*r).port_select == 1);
	CHECK(pc(*r).port_rcv_packets.get() == host2->counters.rcvPkts);
	CHECK(pc(*r).port_xmit_packets.get() == host2->counters.xmitPkts - 1);
	CHECK(pc(*r).port_rcv_data.get() == host2->counters.rcvData);
	r = pma(IB_MGMT_METHOD_GET, IB_PMA_PORT_COUNTERS_EXT, 1, *host2);
	REQUIRE(r);
	CHECK(pcx(*r).port_rcv_packets.get() == host2->counters.extRcvPkts);
	CHECK(pcx(*r).port_unicast_rcv_packets.get() == host2->counters.extUnicastRcvPkts);
	CHECK(pcx(*r).port_xmit_data.get() == host2->counters.extXmitData - kWordsPerMad);
}

TEST_CASE_METHOD(Fixture, "a PortCounters Set clears the selected counters", "[pma]")
{
	host2->counters.symbolErrors = 9;
	host2->counters.linkDowned = 3;
	auto r = pma(IB_MGMT_METHOD_SET, IB_PMA_PORT_COUNTERS, 1, *host2, IB_PMA_SEL_PORT_RCV_PACKETS);
	REQUIRE(r);
	CHECK(pc(*r).port_rcv_packets.get() == 0);
	CHECK(pc(*r).symbol_error_counter.get() == 9); /* not selected */
	CHECK(pc(*r).port_xmit_packets.get() != 0);

	r = pma(IB_MGMT_METHOD_SET, IB_PMA_PORT_COUNTERS, 1, *host2, 0xffff);
	REQUIRE(r);
	CHECK(pc(*r).symbol_error_counter.get() == 0);
	CHECK(pc(*r).link_downed_counter == 0);
	CHECK(pc(*r).port_xmit_packets.get() == 0);
	CHECK(pc(*r).port_rcv_data.get() == 0);
	/* the next Get sees only itself and the Set's response */
	r = pma(IB_MGMT_METHOD_GET, IB_PMA_PORT_COUNTERS, 1, *host2);
	CHECK(pc(*r).port_rcv_packets.get() == 1);
	CHECK(pc(*r).port_xmit_packets.get() == 1);
	/* the 64-bit view is a separate attribute, cleared separately */
	CHECK(host2->counters.extRcvPkts > 2);
	r = pma(IB_MGMT_METHOD_SET, IB_PMA_PORT_COUNTERS_EXT, 1, *host2, 0xff);
	CHECK(pcx(*r).port_rcv_packets.get() == 0);
	CHECK(pcx(*r).port_multicast_xmit_packets.get() == 0);
}

TEST_CASE_METHOD(Fixture, "PortSelect and AllPortSelect", "[pma]")
{
	auto r = pma(IB_MGMT_METHOD_GET, IB_PMA_PORT_COUNTERS, IB_PMA_ALL_PORTS, *host2);
	REQUIRE(r);
	CHECK(madStatus(*r) == IB_MGMT_MAD_STATUS_INVALID_ATTRIB_VALUE); /* CAs: no AllPortSelect */
	r = pma(IB_MGMT_METHOD_GET, IB_PMA_PORT_COUNTERS, 2, *host2);
	CHECK(madStatus(*r) == IB_MGMT_MAD_STATUS_INVALID_ATTRIB_VALUE); /* host2 has one port */

	uint64_t sum = 0;
	for (unsigned p = 0; p <= sw2->numPorts; p++)
		sum += sw2->port(p).counters.rcvPkts;
	r = pma(IB_MGMT_METHOD_GET, IB_PMA_PORT_COUNTERS, IB_PMA_ALL_PORTS, sw2->port(0));
	REQUIRE(r);
	CHECK(madStatus(*r) == 0);
	CHECK(pc(*r).port_select == 0xff);
	CHECK(pc(*r).port_rcv_packets.get() == sum + 1);
	r = pma(IB_MGMT_METHOD_GET, IB_PMA_PORT_COUNTERS, 7, sw2->port(0));
	CHECK(pc(*r).port_rcv_packets.get() == sw2->port(7).counters.rcvPkts);

	r = pma(IB_MGMT_METHOD_GET, IB_PMA_PORT_SAMPLES_CONTROL, 1, *host2);
	CHECK(madStatus(*r) == IB_MGMT_MAD_STATUS_UNSUPPORTED_METHOD_ATTRIB);
}

TEST_CASE_METHOD(Fixture, "32-bit counters saturate, 64-bit ones keep counting", "[pma]")
{
	host2->counters.rcvPkts = 0xfffffffe;
	uint64_t ext = host2->counters.extRcvPkts;
	for (int i = 0; i < 3; i++)
		REQUIRE(pma(IB_MGMT_METHOD_GET, IB_PMA_PORT_COUNTERS, 1, *host2));
	CHECK(host2->counters.rcvPkts == 0xffffffff);
	CHECK(host2->counters.extRcvPkts == ext + 3);
}
