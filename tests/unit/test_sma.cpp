// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// The SMA: Get and Set of every attribute, field by field, status codes,
// M_Key protection and traps. Uses the built-in default fabric:
//   host1[1]-[1]sw1, host3[1]-[2]sw1, host4[2]-[3]sw1, sw1[7,8]-[7,8]sw2,
//   host2[1]-[1]sw2, host3[2]-[2]sw2, host4[1]-[3]sw2
#include "tests/unit/fabric_helpers.h"

#include "fabric/capability.h"
#include "fabric/process_mad.h"
#include "fabric/smp_attrs.h"
#include "fabric/topology.h"

#include <catch2/catch.hpp>

#include <cstring>

using namespace ibemu;
using namespace ibemu::test;

namespace {

struct Fixture {
	Subnet s;
	Port *host1;
	Node *sw1;
	Node *sw2;
	uint64_t tid = 1;

	Fixture()
	{
		load(s, defaultTopology());
		host1 = &s.findNodeByGuid(0x2c90300000100)->port(1);
		sw1 = s.findNodeByGuid(0x2c90200000001);
		sw2 = s.findNodeByGuid(0x2c90200000002);
	}

	std::optional<Mad> get(const std::vector<uint8_t> &path, uint16_t attr, uint32_t am = 0)
	{
		return roundTrip(s, *host1, drSmp(IB_MGMT_METHOD_GET, attr, am, path, ++tid));
	}
	std::optional<Mad> set(const std::vector<uint8_t> &path, uint16_t attr, uint32_t am, const uint8_t *data,
			       uint64_t mkey = 0)
	{
		Packet p = drSmp(IB_MGMT_METHOD_SET, attr, am, path, ++tid);
		memcpy(smp(p.mad)->data, data, 64);
		smp(p.mad)->mkey = mkey;
		return roundTrip(s, *host1, p);
	}
	/* status without the D bit */
	static uint16_t status(const std::optional<Mad> &m) { return madStatus(*m) & 0x7fff; }
};

const std::vector<uint8_t> kLocal{};
const std::vector<uint8_t> kSw1{ 1 };
const std::vector<uint8_t> kSw2{ 1, 7 };
const std::vector<uint8_t> kHost2{ 1, 7, 1 };

} /* namespace */

TEST_CASE_METHOD(Fixture, "NodeInfo of a CA and of a switch", "[sma]")
{
	auto r = get(kLocal, IB_SMP_ATTR_NODE_INFO);
	REQUIRE(r);
	REQUIRE(status(r) == 0);
	auto &ni = *overlay<ib_node_info>(smpData(*r));
	CHECK(ni.base_version == 1);
	CHECK(ni.class_version == 1);
	CHECK(ni.node_type == 1);
	CHECK(ni.num_ports == 1);
	CHECK(ni.sys_guid.get() == 0x2c90300000100);
	CHECK(ni.node_guid.get() == 0x2c90300000100);
	CHECK(ni.port_guid.get() == 0x2c90300000101);
	CHECK(ni.partition_cap.get() == 128);
	CHECK(ni.device_id.get() == 0x1017);
	CHECK(ni.local_port_num == 1);
	CHECK(ni.vendor_id.get() == 0x0002c9);

	r = get(kSw2, IB_SMP_ATTR_NODE_INFO);
	REQUIRE(r);
	auto &sw = *overlay<ib_node_info>(smpData(*r));
	CHECK(sw.node_type == 2);
	CHECK(sw.num_ports == 8);
	CHECK(sw.node_guid.get() == 0x2c90200000002);
	CHECK(sw.port_guid.get() == 0x2c90200000002);
	CHECK(sw.local_port_num == 7);
	CHECK(sw.device_id.get() == 0xbd36);

	/* NodeInfo is read-only */
	uint8_t zero[64] = {};
	CHECK(status(set(kSw1, IB_SMP_ATTR_NODE_INFO, 0, zero)) == IB_MGMT_MAD_STATUS_UNSUPPORTED_METHOD_ATTRIB);
}

TEST_CASE_METHOD(Fixture, "NodeDescription", "[sma]")
{
	auto r = get(kSw1, IB_SMP_ATTR_NODE_DESC);
	REQUIRE(r);
	CHECK(std::string(reinterpret_cast<const char *>(smpData(*r))) == "ibemu-sw1");
	r = get(kHost2, IB_SMP_ATTR_NODE_DESC);
	CHECK(std::string(reinterpret_cast<const char *>(smpData(*r))) == "ibemu-host2 HCA-1");
}

TEST_CASE_METHOD(Fixture, "PortInfo Get", "[sma]")
{
	auto r = get(kLocal, IB_SMP_ATTR_PORT_INFO, 0);
	REQUIRE(r);
	REQUIRE(status(r) == 0);
	auto &pi = *overlay<ib_port_info>(smpData(*r));
	CHECK(pi.gid_prefix.get() == 0xfe80000000000000ULL);
	CHECK(pi.lid.get() == 0);
	CHECK(pi.cap_mask.get() == kCaPortCapMask);
	CHECK(pi.local_port_num == 1);
	CHECK(pi.link_width_enabled == (kWidth1x | kWidth4x));
	CHECK(pi.link_width_supported == (kWidth1x | kWidth4x));
	CHECK(pi.link_width_active == kWidth4x);
	CHECK(hiNibble(pi.linkspeed_portstate) == 0x7); /* SDR|DDR|QDR supported */
	CHECK(loNibble(pi.linkspeed_portstate) == 2); /* Init */
	CHECK(hiNibble(pi.portphysstate_linkdown) == 5); /* LinkUp */
	CHECK(hiNibble(pi.linkspeedactive_enabled) == 0x4); /* LinkSpeedActive: see ext */
	CHECK(hiNibble(pi.link_speed_ext_active_supported) == 0x2); /* EDR */
	CHECK(loNibble(pi.link_speed_ext_active_supported) == 0x3); /* FDR|EDR supported */
	CHECK(loNibble(pi.inittypereply_mtucap) == kMtu4096);
	CHECK(hiNibble(pi.vlcap_inittype) == 4);
	CHECK(pi.guid_cap == 8);

	/* a switch's port N and its port 0 */
	r = get(kSw1, IB_SMP_ATTR_PORT_INFO, 7);
	REQUIRE(status(r) == 0);
	auto &p7 = *overlay<ib_port_info>(smpData(*r));
	CHECK(p7.local_port_num == 1); /* the port the SMP came in on */
	CHECK(loNibble(p7.linkspeed_portstate) == 2);
	CHECK(p7.link_width_active == kWidth4x);
	r = get(kSw1, IB_SMP_ATTR_PORT_INFO, 0);
	auto &p0 = *overlay<ib_port_info>(smpData(*r));
	CHECK(p0.cap_mask.get() == kSwitchPort0CapMask);
	CHECK(loNibble(p0.linkspeed_portstate) == 4); /* switch port 0 is always Active */
	r = get(kSw1, IB_SMP_ATTR_PORT_INFO, 4);
	auto &p4 = *overlay<ib_port_info>(smpData(*r));
	CHECK(loNibble(p4.linkspeed_portstate) == 1); /* no cable: Down/Polling */
	CHECK(hiNibble(p4.portphysstate_linkdown) == 2);

	CHECK(status(get(kSw1, IB_SMP_ATTR_PORT_INFO, 9)) == IB_MGMT_MAD_STATUS_INVALID_ATTRIB_VALUE);
	CHECK(status(get(kLocal, IB_SMP_ATTR_PORT_INFO, 2)) == IB_MGMT_MAD_STATUS_INVALID_ATTRIB_VALUE);
}

TEST_CASE_METHOD(Fixture, "PortInfo Set of addresses and parameters", "[sma]")
{
	auto r = get(kHost2, IB_SMP_ATTR_PORT_INFO);
	noStateChange(smpData(*r));
	auto &pi = *overlay<ib_port_info>(smpData(*r));
	pi.lid = 0x42;
	pi.sm_lid = 0x7;
	pi.mkeyprot_resv_lmc = 2; /* LMC 2 */
	pi.gid_prefix = 0xfe80000000001234ULL;
	pi.neighbormtu_mastersmsl = nibbles(kMtu2048, 3);
	pi.clientrereg_resv_subnetto = 0x80 | 18;
	pi.operationalvl_pei_peo_fpi_fpo = nibbles(3, 0);
	r = set(kHost2, IB_SMP_ATTR_PORT_INFO, 0, smpData(*r));
	REQUIRE(r);
	CHECK(status(r) == 0);
	auto &out = *overlay<ib_port_info>(smpData(*r));
	CHECK(out.lid.get() == 0x42);
	CHECK(out.sm_lid.get() == 7);
	CHECK((out.mkeyprot_resv_lmc & 7) == 2);
	CHECK(out.clientrereg_resv_subnetto == (0x80 | 18)); /* ClientReregister echoed */

	Port &p = s.findNodeByGuid(0x2c90300000200)->port(1);
	CHECK(p.lid == 0x42);
	CHECK(p.smLid == 7);
	CHECK(p.lmc == 2);
	CHECK(p.masterSmSl == 3);
	CHECK(p.neighborMtu == kMtu2048);
	CHECK(p.subnetTimeout == 18);
	CHECK(p.operationalVls == 3);
	CHECK(p.gidPrefix == 0xfe80000000001234ULL);

	/* invalid fields: status 0x1c, the valid ones still applied (qib semantics) */
	r = get(kHost2, IB_SMP_ATTR_PORT_INFO);
	noStateChange(smpData(*r));
	auto &bad = *overlay<ib_port_info>(smpData(*r));
	bad.lid = 0; /* not a valid LID */
	bad.sm_lid = 9; /* fine */
	bad.link_width_enabled = kWidth12x; /* not supported */
	r = set(kHost2, IB_SMP_ATTR_PORT_INFO, 0, smpData(*r));
	CHECK(status(r) == IB_MGMT_MAD_STATUS_INVALID_ATTRIB_VALUE);
	CHECK(p.lid == 0x42);
	CHECK(p.smLid == 9);
	CHECK(p.linkWidthEnabled == (kWidth1x | kWidth4x));

	/* LinkWidthEnabled 1x renegotiates the link */
	r = get(kHost2, IB_SMP_ATTR_PORT_INFO);
	noStateChange(smpData(*r));
	overlay<ib_port_info>(smpData(*r))->link_width_enabled = kWidth1x;
	r = set(kHost2, IB_SMP_ATTR_PORT_INFO, 0, smpData(*r));
	CHECK(status(r) == 0);
	CHECK(p.linkWidthActive == kWidth1x);
	CHECK(p.peer->linkWidthActive == kWidth1x);
}

TEST_CASE_METHOD(Fixture, "PortInfo Set of PortState follows IBA transitions", "[sma]")
{
	Port &p = sw1->port(7);
	auto setState = [&](uint8_t state, uint8_t phys) {
		auto r = get(kSw1, IB_SMP_ATTR_PORT_INFO, 7);
		auto &pi = *overlay<ib_port_info>(smpData(*r));
		pi.linkspeed_portstate = nibbles(0, state);
		pi.portphysstate_linkdown = nibbles(phys, 0);
		return status(set(kSw1, IB_SMP_ATTR_PORT_INFO, 7, smpData(*r)));
	};
	REQUIRE(p.state == PortState::Init);
	CHECK(setState(4, 0) == IB_MGMT_MAD_STATUS_INVALID_ATTRIB_VALUE); /* Init -> Active */
	CHECK(setState(2, 0) == IB_MGMT_MAD_STATUS_INVALID_ATTRIB_VALUE); /* Init cannot be set */
	CHECK(setState(5, 0) == IB_MGMT_MAD_STATUS_INVALID_ATTRIB_VALUE);
	CHECK(setState(3, 0) == 0);
	CHECK(p.state == PortState::Armed);
	CHECK(p.peer->state == PortState::Init); /* only this end */
	CHECK(setState(4, 0) == 0);
	CHECK(p.state == PortState::Active);
	CHECK(setState(4, 0) == 0); /* already there */
	CHECK(setState(3, 3) == IB_MGMT_MAD_STATUS_INVALID_ATTRIB_VALUE); /* PhysState only with NOP/Down */

	/* Down: the link retrains, both ends come back in Init */
	CHECK(setState(1, 0) == 0);
	CHECK(p.state == PortState::Init);
	CHECK(p.peer->state == PortState::Init);
	CHECK(p.counters.linkDowned == 0); /* asked for: no lost link */
	CHECK(p.peer->counters.linkDowned == 0);

	/* Disabled: local Disabled/Down, peer Polling/Down; then Polling retrains */
	Port &q = sw1->port(8);
	auto r = get(kSw1, IB_SMP_ATTR_PORT_INFO, 8);
	auto &pi = *overlay<ib_port_info>(smpData(*r));
	pi.linkspeed_portstate = nibbles(0, 0);
	pi.portphysstate_linkdown = nibbles(3, 0);
	CHECK(status(set(kSw1, IB_SMP_ATTR_PORT_INFO, 8, smpData(*r))) == 0);
	CHECK(q.physState == PhysState::Disabled);
	CHECK(q.state == PortState::Down);
	CHECK(q.peer->physState == PhysState::Polling);
	CHECK(q.peer->state == PortState::Down);
	pi.portphysstate_linkdown = nibbles(2, 0);
	CHECK(status(set(kSw1, IB_SMP_ATTR_PORT_INFO, 8, smpData(*r))) == 0);
	CHECK(q.physState == PhysState::LinkUp);
	CHECK(q.state == PortState::Init);
	CHECK(q.peer->state == PortState::Init);
}

/* IBA 14.2.5.6: LinkDownedCounter counts the link error recovery process
 * giving up, so OpenSM's first sweep (PortState=Down on every CA port whose
 * NeighborMTU or OperationalVLs it changes) leaves a clean fabric clean */
TEST_CASE_METHOD(Fixture, "LinkDownedCounter counts lost links, not a PortInfo Set's Down or Disable", "[sma]")
{
	Port &host = s.findNodeByGuid(0x2c90300000300)->port(1); /* sw1 port 2: not on the path to sw1 */
	Port &sw = *host.peer;
	auto setPhys = [&](uint8_t state, uint8_t phys) {
		auto r = get(kSw1, IB_SMP_ATTR_PORT_INFO, sw.num);
		auto &pi = *overlay<ib_port_info>(smpData(*r));
		pi.linkspeed_portstate = nibbles(0, state);
		pi.portphysstate_linkdown = nibbles(phys, 0);
		return status(set(kSw1, IB_SMP_ATTR_PORT_INFO, sw.num, smpData(*r)));
	};
	REQUIRE(host.linkUp());
	CHECK(setPhys(1, 0) == 0); /* PortState Down: retrains */
	CHECK(setPhys(1, 2) == 0); /* Down with PhysState Polling: retrains */
	CHECK(setPhys(0, 3) == 0); /* Disabled */
	CHECK(host.physState == PhysState::Polling);
	CHECK(setPhys(0, 2) == 0); /* enabled again */
	CHECK(host.linkUp());
	CHECK(sw.retrains == 2);
	CHECK(host.counters.linkDowned == 0);
	CHECK(sw.counters.linkDowned == 0);

	/* a cable pulled out, or one that loses its lanes, is a lost link */
	REQUIRE(s.pullCable(host) == 0);
	REQUIRE(s.plugCable(host) == 0);
	CHECK(host.counters.linkDowned == 1);
	CHECK(sw.counters.linkDowned == 1);
	s.degradeLink(host, kWidth1x, std::nullopt);
	CHECK(host.counters.linkDowned == 2);
	CHECK(sw.counters.linkDowned == 2);
}

TEST_CASE_METHOD(Fixture, "P_KeyTable", "[sma]")
{
	auto r = get(kLocal, IB_SMP_ATTR_PKEY_TABLE, 0);
	REQUIRE(status(r) == 0);
	CHECK(overlay<be16>(smpData(*r))->get() == 0xffff);
	CHECK(overlay<be16>(smpData(*r) + 2)->get() == 0);

	uint8_t block[64] = {};
	overlay<be16>(block)->set(0xffff);
	overlay<be16>(block + 2)->set(0x8001);
	overlay<be16>(block + 62)->set(0x7fff);
	r = set(kLocal, IB_SMP_ATTR_PKEY_TABLE, 3, block);
	CHECK(status(r) == 0);
	CHECK(memcmp(smpData(*r), block, 64) == 0);
	CHECK(host1->pkeys.size() == 128);
	CHECK(host1->pkeys[97] == 0x8001);
	CHECK(host1->pkeys[127] == 0x7fff);
	CHECK(status(get(kLocal, IB_SMP_ATTR_PKEY_TABLE, 4)) == IB_MGMT_MAD_STATUS_INVALID_ATTRIB_VALUE);

	/* switch: port in the upper half of the modifier */
	r = set(kSw1, IB_SMP_ATTR_PKEY_TABLE, (7u << 16) | 0, block);
	CHECK(status(r) == 0);
	CHECK(sw1->port(7).pkeys[1] == 0x8001);
	CHECK(sw1->port(8).pkeys.size() == 1);
	CHECK(status(get(kSw1, IB_SMP_ATTR_PKEY_TABLE, (7u << 16) | 1)) == IB_MGMT_MAD_STATUS_INVALID_ATTRIB_VALUE);
	CHECK(status(get(kSw1, IB_SMP_ATTR_PKEY_TABLE, (9u << 16))) == IB_MGMT_MAD_STATUS_INVALID_ATTRIB_VALUE);
}

TEST_CASE_METHOD(Fixture, "GUIDInfo", "[sma]")
{
	auto r = get(kLocal, IB_SMP_ATTR_GUID_INFO, 0);
	REQUIRE(status(r) == 0);
	CHECK(overlay<be64>(smpData(*r))->get() == 0x2c90300000101);
	uint8_t block[64] = {};
	overlay<be64>(block)->set(0x1111); /* index 0 is read-only */
	overlay<be64>(block + 8)->set(0xabcd);
	r = set(kLocal, IB_SMP_ATTR_GUID_INFO, 0, block);
	CHECK(status(r) == 0);
	CHECK(overlay<be64>(smpData(*r))->get() == 0x2c90300000101);
	CHECK(overlay<be64>(smpData(*r) + 8)->get() == 0xabcd);
	CHECK(status(get(kLocal, IB_SMP_ATTR_GUID_INFO, 1)) == IB_MGMT_MAD_STATUS_INVALID_ATTRIB_VALUE);
}

TEST_CASE_METHOD(Fixture, "SLtoVLMappingTable", "[sma]")
{
	auto r = get(kLocal, IB_SMP_ATTR_SL_TO_VL_TABLE);
	REQUIRE(status(r) == 0);
	CHECK(smpData(*r)[0] == 0x01);
	CHECK(smpData(*r)[7] == 0x67); /* SL 14 -> VL 6, SL 15 -> VL 7 */
	uint8_t t[64] = { 0x00, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77 };
	r = set(kLocal, IB_SMP_ATTR_SL_TO_VL_TABLE, 0, t);
	CHECK(status(r) == 0);
	CHECK(host1->sl2vl[3] == 1);

	/* switch: one table per (input, output) port pair */
	r = set(kSw1, IB_SMP_ATTR_SL_TO_VL_TABLE, (1u << 8) | 7, t);
	CHECK(status(r) == 0);
	CHECK(smpData(*get(kSw1, IB_SMP_ATTR_SL_TO_VL_TABLE, (1u << 8) | 7))[1] == 0x11);
	CHECK(smpData(*get(kSw1, IB_SMP_ATTR_SL_TO_VL_TABLE, (2u << 8) | 7))[1] == 0x23);
	CHECK(status(get(kSw1, IB_SMP_ATTR_SL_TO_VL_TABLE, (9u << 8) | 7)) == IB_MGMT_MAD_STATUS_INVALID_ATTRIB_VALUE);
}

TEST_CASE_METHOD(Fixture, "VLArbitrationTable", "[sma]")
{
	uint8_t t[64] = {};
	for (int i = 0; i < 8; i++) {
		t[2 * i] = static_cast<uint8_t>(i);
		t[2 * i + 1] = static_cast<uint8_t>(10 + i);
	}
	auto r = set(kLocal, IB_SMP_ATTR_VL_ARB_TABLE, 1u << 16, t);
	REQUIRE(status(r) == 0);
	r = get(kLocal, IB_SMP_ATTR_VL_ARB_TABLE, 1u << 16);
	CHECK(smpData(*r)[2 * 5] == 5);
	CHECK(smpData(*r)[2 * 5 + 1] == 15);
	CHECK(smpData(*r)[2 * 8 + 1] == 0); /* only VLArbitrationLowCap (8) entries */
	CHECK(smpData(*get(kLocal, IB_SMP_ATTR_VL_ARB_TABLE, 3u << 16))[1] == 0);
	CHECK(status(get(kLocal, IB_SMP_ATTR_VL_ARB_TABLE, 2u << 16)) == IB_MGMT_MAD_STATUS_INVALID_ATTRIB_VALUE);
	CHECK(status(get(kLocal, IB_SMP_ATTR_VL_ARB_TABLE, 5u << 16)) == IB_MGMT_MAD_STATUS_INVALID_ATTRIB_VALUE);
	CHECK(status(set(kSw1, IB_SMP_ATTR_VL_ARB_TABLE, (3u << 16) | 7, t)) == 0);
	CHECK((*sw1->port(7).vlArb)[2][1].weight == 11);
}

TEST_CASE_METHOD(Fixture, "SwitchInfo", "[sma]")
{
	auto r = get(kSw1, IB_SMP_ATTR_SWITCH_INFO);
	REQUIRE(status(r) == 0);
	auto &si = *overlay<ib_switch_info>(smpData(*r));
	CHECK(si.linear_fdb_cap.get() == 49152);
	CHECK(si.mcast_fdb_cap.get() == 1024);
	CHECK(si.linear_fdb_top.get() == 0);
	CHECK((si.lifetime_psc_optsl2vl & IB_SWITCH_PSC) != 0); /* links came up */
	CHECK(si.partition_enforcement_cap.get() == 32);
	CHECK((si.enforcement_caps_port0 & IB_SWITCH_ENHANCED_PORT0) == 0);

	si.linear_fdb_top = 100;
	si.lifetime_psc_optsl2vl = static_cast<uint8_t>((18 << 3) | IB_SWITCH_PSC);
	si.default_port = 3;
	r = set(kSw1, IB_SMP_ATTR_SWITCH_INFO, 0, smpData(*r));
	REQUIRE(status(r) == 0);
	auto &o = *overlay<ib_switch_info>(smpData(*r));
	CHECK(o.linear_fdb_top.get() == 100);
	CHECK(o.lifetime_psc_optsl2vl == (18 << 3)); /* PSC cleared by writing 1 */
	CHECK(o.default_port == 3);
	CHECK(o.linear_fdb_cap.get() == 49152); /* capabilities are read-only */

	CHECK(status(get(kLocal, IB_SMP_ATTR_SWITCH_INFO)) == IB_MGMT_MAD_STATUS_UNSUPPORTED_METHOD_ATTRIB);
}

TEST_CASE_METHOD(Fixture, "LinearForwardingTable and MulticastForwardingTable", "[sma]")
{
	auto r = get(kSw1, IB_SMP_ATTR_LINEAR_FORWARD_TABLE, 5);
	REQUIRE(status(r) == 0);
	for (int i = 0; i < 64; i++)
		CHECK(smpData(*r)[i] == 0xff);
	uint8_t block[64];
	for (int i = 0; i < 64; i++)
		block[i] = static_cast<uint8_t>(i % 9);
	r = set(kSw1, IB_SMP_ATTR_LINEAR_FORWARD_TABLE, 5, block);
	CHECK(status(r) == 0);
	CHECK(memcmp(smpData(*r), block, 64) == 0);
	CHECK(sw1->sw->lftEntry(5 * 64 + 10) == 1);
	CHECK(sw1->sw->lftEntry(4 * 64 + 10) == 0xff);
	CHECK(status(get(kSw1, IB_SMP_ATTR_LINEAR_FORWARD_TABLE, 768)) == IB_MGMT_MAD_STATUS_INVALID_ATTRIB_VALUE);
	CHECK(status(get(kLocal, IB_SMP_ATTR_LINEAR_FORWARD_TABLE, 0)) == IB_MGMT_MAD_STATUS_UNSUPPORTED_METHOD_ATTRIB);

	uint8_t masks[64] = {};
	overlay<be16>(masks + 2)->set(0x0186); /* MLID 0xc001: ports 1, 2, 7, 8 */
	r = set(kSw1, IB_SMP_ATTR_MCAST_FORWARD_TABLE, 0, masks);
	CHECK(status(r) == 0);
	r = get(kSw1, IB_SMP_ATTR_MCAST_FORWARD_TABLE, 0);
	CHECK(overlay<be16>(smpData(*r) + 2)->get() == 0x0186);
	CHECK(status(get(kSw1, IB_SMP_ATTR_MCAST_FORWARD_TABLE, 1u << 28)) == IB_MGMT_MAD_STATUS_INVALID_ATTRIB_VALUE);
	CHECK(status(get(kSw1, IB_SMP_ATTR_MCAST_FORWARD_TABLE, 32)) == IB_MGMT_MAD_STATUS_INVALID_ATTRIB_VALUE);
}

TEST_CASE_METHOD(Fixture, "SMInfo goes to the SM only where IsSM is set", "[sma]")
{
	CHECK(status(get(kLocal, IB_SMP_ATTR_SM_INFO)) == IB_MGMT_MAD_STATUS_UNSUPPORTED_METHOD_ATTRIB);
	s.setCapMask(*host1, host1->capMask | IB_PORT_SM);
	Mad reply;
	Packet p = drSmp(IB_MGMT_METHOD_GET, IB_SMP_ATTR_SM_INFO, 0, {});
	CHECK(processMad(s, *host1, p, reply) == MadResult::PassUp);
	s.setCapMask(*host1, (host1->capMask & ~IB_PORT_SM) | IB_PORT_SM_DISABLED);
	CHECK(processMad(s, *host1, p, reply) == MadResult::Consumed);
}

TEST_CASE_METHOD(Fixture, "Mellanox ExtendedPortInfo: no FDR10", "[sma]")
{
	auto r = get(kLocal, IB_SMP_ATTR_MLNX_EXT_PORT_INFO, 1);
	REQUIRE(r);
	CHECK(status(r) == 0);
	auto &x = *overlay<ib_mlnx_ext_port_info>(smpData(*r));
	CHECK(x.link_speed_supported == 0);
	CHECK(x.link_speed_active == 0);
	uint8_t in[64] = {};
	overlay<ib_mlnx_ext_port_info>(in)->state_change_enable = 1;
	r = set(kSw1, IB_SMP_ATTR_MLNX_EXT_PORT_INFO, 7, in);
	CHECK(status(r) == 0);
	CHECK(overlay<ib_mlnx_ext_port_info>(smpData(*r))->state_change_enable == 1);
	sw1->vendorId = 0x8f1; /* not Mellanox: not answered */
	CHECK(status(get(kSw1, IB_SMP_ATTR_MLNX_EXT_PORT_INFO, 1)) == IB_MGMT_MAD_STATUS_UNSUPPORTED_METHOD_ATTRIB);
}

TEST_CASE_METHOD(Fixture, "unsupported attributes, methods and versions", "[sma]")
{
	CHECK(status(get(kSw1, 0x0033)) == IB_MGMT_MAD_STATUS_UNSUPPORTED_METHOD_ATTRIB);
	CHECK(status(get(kSw1, 0xff99)) == IB_MGMT_MAD_STATUS_UNSUPPORTED_METHOD_ATTRIB);

	Packet p = drSmp(IB_MGMT_METHOD_SEND, IB_SMP_ATTR_NODE_INFO, 0, kSw1, 77);
	auto r = roundTrip(s, *host1, p);
	REQUIRE(r);
	CHECK((madStatus(*r) & 0x7fff) == IB_MGMT_MAD_STATUS_UNSUPPORTED_METHOD);

	p = drSmp(IB_MGMT_METHOD_GET, IB_SMP_ATTR_NODE_INFO, 0, kSw1, 78);
	smp(p.mad)->class_version = 2;
	r = roundTrip(s, *host1, p);
	REQUIRE(r);
	CHECK((madStatus(*r) & 0x7fff) == IB_MGMT_MAD_STATUS_BAD_VERSION);

	p = drSmp(IB_MGMT_METHOD_GET, IB_SMP_ATTR_NODE_INFO, 0, kSw1, 79);
	smp(p.mad)->base_version = 2;
	CHECK_FALSE(roundTrip(s, *host1, p));

	p = drSmp(IB_MGMT_METHOD_TRAP_REPRESS, IB_SMP_ATTR_NOTICE, 0, kSw1, 80);
	CHECK_FALSE(roundTrip(s, *host1, p));
}

TEST_CASE_METHOD(Fixture, "M_Key protection (IBA 14.2.4)", "[sma]")
{
	Port &p = s.findNodeByGuid(0x2c90300000200)->port(1);
	auto r = get(kHost2, IB_SMP_ATTR_PORT_INFO);
	noStateChange(smpData(*r));
	auto &pi = *overlay<ib_port_info>(smpData(*r));
	pi.mkey = 0x1234;
	pi.mkeyprot_resv_lmc = 1 << 6;
	pi.lid = 0x20;
	pi.sm_lid = 1;
	REQUIRE(status(set(kHost2, IB_SMP_ATTR_PORT_INFO, 0, smpData(*r))) == 0);
	REQUIRE(p.mkey == 0x1234);

	/* protect bits 1: a Get with the wrong key works but hides the key */
	r = get(kHost2, IB_SMP_ATTR_PORT_INFO);
	REQUIRE(r);
	CHECK(overlay<ib_port_info>(smpData(*r))->mkey.get() == 0);
	/* a Set with the wrong key is a violation: no answer at all */
	uint8_t data[64];
	memcpy(data, smpData(*r), 64);
	noStateChange(data);
	overlay<ib_port_info>(data)->lid = 0x55;
	CHECK_FALSE(set(kHost2, IB_SMP_ATTR_PORT_INFO, 0, data, 0x9999));
	CHECK(p.mkeyViolations == 1);
	CHECK(p.lid == 0x20);
	/* the right key */
	overlay<ib_port_info>(data)->mkey = 0x1234;
	overlay<ib_port_info>(data)->sm_lid = 1;
	overlay<ib_port_info>(data)->mkeyprot_resv_lmc = 2 << 6;
	r = set(kHost2, IB_SMP_ATTR_PORT_INFO, 0, data, 0x1234);
	REQUIRE(r);
	CHECK(p.lid == 0x55);
	CHECK(overlay<ib_port_info>(smpData(*r))->mkey.get() == 0x1234);
	/* the Set wrote M_KeyViolations = 0, which resets the counter */
	CHECK(p.mkeyViolations == 0);
	/* protect bits 2: even a Get needs the key */
	CHECK_FALSE(get(kHost2, IB_SMP_ATTR_PORT_INFO));
	CHECK(p.mkeyViolations == 1);
	Packet g = drSmp(IB_MGMT_METHOD_GET, IB_SMP_ATTR_PORT_INFO, 0, kHost2, 999);
	smp(g.mad)->mkey = 0x1234;
	CHECK(roundTrip(s, *host1, g));
}

TEST_CASE("traps reach the SM: 128, 144 and 256", "[sma][trap]")
{
	Subnet s;
	load(s, defaultTopology());
	Port &smPort = s.findNodeByGuid(0x2c90300000100)->port(1);
	MiniSm sm(s, smPort);
	sm.run();
	Capture cap(s);
	smPort.host = &cap;

	auto trapNums = [&] {
		std::vector<uint16_t> nums;
		for (const Packet &p : cap.got) {
			const ib_smp &t = *smp(p.mad);
			REQUIRE(t.method == IB_MGMT_METHOD_TRAP);
			REQUIRE(t.mgmt_class == IB_MGMT_CLASS_SUBN_LID_ROUTED);
			REQUIRE(t.attr_id.get() == IB_SMP_ATTR_NOTICE);
			nums.push_back(overlay<ib_notice>(t.data)->trap_num.get());
		}
		return nums;
	};

	SECTION("128 when a switch port goes down")
	{
		Node &sw2 = *s.findNodeByGuid(0x2c90200000002);
		s.setDisabled(sw2.port(3), true); /* host4's port 1 */
		REQUIRE(trapNums() == std::vector<uint16_t>{ 128 });
		const ib_notice &n = *overlay<ib_notice>(smp(cap.got[0].mad)->data);
		CHECK(n.generic_type == (IB_NOTICE_GENERIC | IB_NOTICE_TYPE_URGENT));
		CHECK(n.producer_type.get() == 2);
		CHECK(n.issuer_lid.get() == sm.lidOf(sw2.port(0)));
		CHECK(overlay<be16>(n.data_details)->get() == sm.lidOf(sw2.port(0)));
		CHECK(cap.got[0].slid == sm.lidOf(sw2.port(0)));
		CHECK(sw2.sw->portStateChange);
	}
	SECTION("144 when a CA's capability mask changes")
	{
		Port &h2 = s.findNodeByGuid(0x2c90300000200)->port(1);
		s.setCapMask(h2, h2.capMask | IB_PORT_SM);
		REQUIRE(trapNums() == std::vector<uint16_t>{ 144 });
		const ib_notice &n = *overlay<ib_notice>(smp(cap.got[0].mad)->data);
		CHECK(n.producer_type.get() == 1);
		CHECK(overlay<be16>(n.data_details + 2)->get() == sm.lidOf(h2));
		CHECK(overlay<be32>(n.data_details + 6)->get() == (kCaPortCapMask | IB_PORT_SM));
	}
	SECTION("256 on an M_Key violation")
	{
		Port &h2 = s.findNodeByGuid(0x2c90300000200)->port(1);
		h2.mkey = 0x77;
		h2.mkeyProtect = 2;
		auto path = sm.pathTo(*h2.peer->node);
		path.push_back(h2.peer->num);
		CHECK_FALSE(roundTrip(s, smPort, drSmp(IB_MGMT_METHOD_GET, IB_SMP_ATTR_PORT_INFO, 0, path)));
		smPort.host = &cap;
		REQUIRE(trapNums() == std::vector<uint16_t>{ 256 });
		const ib_notice &n = *overlay<ib_notice>(smp(cap.got[0].mad)->data);
		CHECK(n.generic_type == (IB_NOTICE_GENERIC | IB_NOTICE_TYPE_SECURITY));
		CHECK(overlay<be16>(n.data_details + 8)->get() == IB_SMP_ATTR_PORT_INFO);
		CHECK((n.data_details[23] & 0x80) != 0); /* DR notice */
		CHECK((n.data_details[23] & 0x3f) == path.size());
	}
	smPort.host = nullptr;
}
