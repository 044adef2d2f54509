// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// Seeds of fuzz_mad (tests/fuzz/make_seeds.cpp writes them).
#include "tests/fuzz/fuzz_common.h"
#include "tests/fuzz/seeds.h"

#include "emu/mad_rmpp.h"
#include "emu/uverbs_abi.h"
#include "fabric/pma.h"
#include "fabric/smp_attrs.h"
#include "fabric/topology.h"

#include <cstdio>
#include <map>
#include <sstream>

using namespace ibemu;
using namespace ibemu::fabric;
using namespace ibemu::emu;
using namespace ibemu::fuzz::seeds;

namespace {

std::vector<Port *> allPorts(Subnet &s)
{
	std::vector<Port *> v;
	for (const auto &n : s.nodes())
		for (unsigned p = n->firstPort(); p <= n->numPorts; p++)
			v.push_back(&n->port(p));
	return v;
}

struct MadSeeds {
	Subnet subnet;
	std::vector<Port *> ports;
	Port *h1, *h2, *sw1p0, *sw2p0;

	MadSeeds()
	{
		fuzz::buildDefault(subnet);
		fuzz::bringUp(subnet);
		ports = allPorts(subnet);
		h1 = &subnet.findNodeByGuid(0x2c90300000100)->port(1);
		h2 = &subnet.findNodeByGuid(0x2c90300000200)->port(1);
		sw1p0 = &subnet.findNodeByGuid(0x2c90200000001)->port(0);
		sw2p0 = &subnet.findNodeByGuid(0x2c90200000002)->port(0);
	}

	uint8_t index(const Port *p) const
	{
		for (size_t i = 0; i < ports.size(); i++)
			if (ports[i] == p)
				return uint8_t(i);
		abort();
	}

	/* one packet record of fuzz_mad's input */
	void record(Bytes &b, const Port &entry, uint8_t how, const Packet &pkt)
	{
		b.push_back(index(&entry));
		b.push_back(how);
		le16(b, pkt.dlid);
		le16(b, pkt.slid);
		uint8_t qp = [](uint32_t q) -> uint8_t { return q == 0 ? 0 : q == 1 ? 1 : q == 2 ? 2 : 3; }(pkt.dstQp);
		uint8_t sq = [](uint32_t q) -> uint8_t { return q == 0 ? 0 : q == 1 ? 1 : q == 2 ? 2 : 3; }(pkt.srcQp);
		b.push_back(uint8_t(qp | sq << 2 | (pkt.qkey ? 0x10 : 0)));
		b.push_back(pkt.sl);
		le16(b, pkt.pkey);
		b.insert(b.end(), pkt.mad.begin(), pkt.mad.end());
	}

	/* the data area a Get returns, for a Set that writes it back */
	Bytes getData(const Packet &get)
	{
		auto r = test::roundTrip(subnet, *h1, get);
		if (!r)
			return Bytes(64, 0);
		return Bytes(r->begin() + kSmpDataOffset, r->begin() + kSmpDataOffset + 64);
	}

	void smaSeed(const char *name, uint16_t attr, uint32_t am, bool set)
	{
		Bytes b{ 1 }; /* bring the subnet up */
		/* DR Get from host1 to sw1, and to sw2 over an inter-switch link */
		Packet toSw1 = test::drSmp(IB_MGMT_METHOD_GET, attr, am, { 1 });
		record(b, *h1, 0, toSw1);
		record(b, *h1, 0, test::drSmp(IB_MGMT_METHOD_GET, attr, am, { 1, 7 }));
		/* hop count 0: host1's own SMA */
		record(b, *h1, 0, test::drSmp(IB_MGMT_METHOD_GET, attr, am, {}));
		/* LID-routed to host2 and to sw2 */
		Packet toH2 = test::lidSmp(IB_MGMT_METHOD_GET, attr, am, h2->lid);
		toH2.slid = h1->lid;
		record(b, *h1, 0, toH2);
		Packet toSw2 = test::lidSmp(IB_MGMT_METHOD_GET, attr, am, sw2p0->lid);
		toSw2.slid = h1->lid;
		record(b, *h1, 1, toSw2);
		if (set) {
			Bytes data = getData(toSw1);
			if (attr == IB_SMP_ATTR_PORT_INFO)
				test::noStateChange(data.data());
			Packet s = test::drSmp(IB_MGMT_METHOD_SET, attr, am, { 1 });
			memcpy(smp(s.mad)->data, data.data(), 64);
			record(b, *h1, 0, s);
			record(b, *h1, 0, toSw1); /* and read it again */
		}
		put("mad", name, b);
	}

	void pmaSeed(const char *name, uint16_t attr, bool set)
	{
		Bytes b{ 1 };
		for (const Port *to : { sw1p0, h2 }) {
			uint8_t sel = to == sw1p0 ? 1 : 1;
			Packet g = test::pmaMad(IB_MGMT_METHOD_GET, attr, sel, to->lid);
			g.slid = h1->lid;
			record(b, *h1, 0, g);
		}
		Packet all = test::pmaMad(IB_MGMT_METHOD_GET, attr, IB_PMA_ALL_PORTS, sw2p0->lid);
		all.slid = h1->lid;
		record(b, *h1, 1, all);
		if (set) {
			Packet s = test::pmaMad(IB_MGMT_METHOD_SET, attr, 1, sw1p0->lid);
			s.slid = h1->lid;
			s.mad[kPmaDataOffset + 2] = 0xff; /* CounterSelect: all */
			s.mad[kPmaDataOffset + 3] = 0xff;
			record(b, *h1, 0, s);
		}
		put("mad", name, b);
	}

	void all()
	{
		struct A {
			const char *name;
			uint16_t attr;
			uint32_t am;
			bool set;
		};
		static const A sma[] = {
			{ "smp-node-desc", IB_SMP_ATTR_NODE_DESC, 0, true },
			{ "smp-node-info", IB_SMP_ATTR_NODE_INFO, 0, false },
			{ "smp-switch-info", IB_SMP_ATTR_SWITCH_INFO, 0, true },
			{ "smp-guid-info", IB_SMP_ATTR_GUID_INFO, 0, true },
			{ "smp-port-info", IB_SMP_ATTR_PORT_INFO, 1, true },
			{ "smp-port-info-port0", IB_SMP_ATTR_PORT_INFO, 0, true },
			{ "smp-pkey-table", IB_SMP_ATTR_PKEY_TABLE, 1u << 16, true },
			{ "smp-sl2vl", IB_SMP_ATTR_SL_TO_VL_TABLE, 0x0107, true },
			{ "smp-vlarb", IB_SMP_ATTR_VL_ARB_TABLE, 1u << 16 | 1, true },
			{ "smp-lft", IB_SMP_ATTR_LINEAR_FORWARD_TABLE, 0, true },
			{ "smp-rft", IB_SMP_ATTR_RANDOM_FORWARD_TABLE, 0, false },
			{ "smp-mft", IB_SMP_ATTR_MCAST_FORWARD_TABLE, 0, true },
			{ "smp-sm-info", IB_SMP_ATTR_SM_INFO, 0, false },
			{ "smp-vendor-diag", IB_SMP_ATTR_VENDOR_DIAG, 0, false },
			{ "smp-led-info", IB_SMP_ATTR_LED_INFO, 0, false },
			{ "smp-mlnx-ext-port-info", IB_SMP_ATTR_MLNX_EXT_PORT_INFO, 1, true },
			{ "smp-notice", IB_SMP_ATTR_NOTICE, 0, false },
		};
		for (const A &a : sma)
			smaSeed(a.name, a.attr, a.am, a.set);
		pmaSeed("pma-class-port-info", IB_PMA_CLASS_PORT_INFO, true);
		pmaSeed("pma-port-counters", IB_PMA_PORT_COUNTERS, true);
		pmaSeed("pma-port-counters-ext", IB_PMA_PORT_COUNTERS_EXT, true);
		pmaSeed("pma-port-samples-control", IB_PMA_PORT_SAMPLES_CONTROL, false);
		pmaSeed("pma-port-samples-result", IB_PMA_PORT_SAMPLES_RESULT, false);

		{ /* a TrapRepress to a switch, and a Trap 128 a switch would send */
			Bytes b{ 1 };
			Packet r = test::lidSmp(IB_MGMT_METHOD_TRAP_REPRESS, IB_SMP_ATTR_NOTICE, 0, sw1p0->lid);
			r.slid = h1->lid;
			record(b, *h1, 0, r);
			Packet t = test::lidSmp(IB_MGMT_METHOD_TRAP, IB_SMP_ATTR_NOTICE, 0, h2->lid);
			t.slid = sw1p0->lid;
			record(b, *sw1p0, 1, t);
			put("mad", "trap-and-repress", b);
		}
		{ /* DR SMPs with a LID-routed segment before the directed one
		   * (host1 to sw2 by LID, then sw2 port 1 to host2), and after it
		   * (then sw2 port 7 to sw1, then by LID to host2) */
			Bytes b{ 1 };
			Packet p = test::drSmp(IB_MGMT_METHOD_GET, IB_SMP_ATTR_NODE_INFO, 0, { 1 });
			smp(p.mad)->dr_slid = h1->lid;
			p.dlid = sw2p0->lid;
			p.slid = h1->lid;
			record(b, *h1, 1, p);
			Packet q = test::drSmp(IB_MGMT_METHOD_GET, IB_SMP_ATTR_NODE_INFO, 0, { 7 });
			smp(q.mad)->dr_slid = h1->lid;
			smp(q.mad)->dr_dlid = h2->lid;
			q.dlid = sw2p0->lid;
			q.slid = h1->lid;
			record(b, *h1, 1, q);
			put("mad", "dr-lid-segments", b);
		}
		{ /* discovery of a subnet nobody brought up */
			Bytes b{ 0 };
			record(b, *h1, 0, test::drSmp(IB_MGMT_METHOD_GET, IB_SMP_ATTR_NODE_INFO, 0, { 1 }));
			record(b, *h1, 0, test::drSmp(IB_MGMT_METHOD_GET, IB_SMP_ATTR_PORT_INFO, 7, { 1 }));
			record(b, *h1, 0, test::drSmp(IB_MGMT_METHOD_GET, IB_SMP_ATTR_NODE_INFO, 0, { 1, 7, 2 }));
			put("mad", "unconfigured-discovery", b);
		}
		{ /* a port goes down and comes back through PortInfo Sets */
			Bytes b{ 1 };
			Packet g = test::drSmp(IB_MGMT_METHOD_GET, IB_SMP_ATTR_PORT_INFO, 8, { 1 });
			Bytes data = getData(g);
			test::noStateChange(data.data());
			ib_port_info &pi = *overlay<ib_port_info>(data.data());
			pi.linkspeed_portstate = static_cast<uint8_t>((pi.linkspeed_portstate & 0xf0) | 1); /* Down */
			Packet s = test::drSmp(IB_MGMT_METHOD_SET, IB_SMP_ATTR_PORT_INFO, 8, { 1 });
			memcpy(smp(s.mad)->data, data.data(), 64);
			record(b, *h1, 0, s);
			pi.linkspeed_portstate &= 0xf0;
			pi.portphysstate_linkdown = static_cast<uint8_t>(3 << 4 | 2); /* Disabled */
			memcpy(smp(s.mad)->data, data.data(), 64);
			record(b, *h1, 0, s);
			pi.portphysstate_linkdown = static_cast<uint8_t>(2 << 4 | 2); /* Polling */
			memcpy(smp(s.mad)->data, data.data(), 64);
			record(b, *h1, 0, s);
			put("mad", "port-down-up", b);
		}
		{ /* M_Key set, then a Get and a Set with the wrong key (Trap 256) */
			Bytes b{ 1 };
			Packet g = test::drSmp(IB_MGMT_METHOD_GET, IB_SMP_ATTR_PORT_INFO, 0, { 1 });
			Bytes data = getData(g);
			test::noStateChange(data.data());
			ib_port_info &pi = *overlay<ib_port_info>(data.data());
			pi.mkey = 0x1122334455667788ULL;
			pi.mkeyprot_resv_lmc = static_cast<uint8_t>(2 << 6);
			Packet s = test::drSmp(IB_MGMT_METHOD_SET, IB_SMP_ATTR_PORT_INFO, 0, { 1 });
			memcpy(smp(s.mad)->data, data.data(), 64);
			record(b, *h1, 0, s);
			record(b, *h1, 0, g);
			record(b, *h1, 0, s);
			put("mad", "mkey-violation", b);
		}
	}
};

} /* namespace */

void ibemu::fuzz::seeds::madSeeds()
{
	MadSeeds().all();
}
