// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// Writes the seed corpora of the fuzz targets: well-formed inputs built the
// way the unit tests build their MADs and commands, in each target's input
// format (see the comment at the top of each tests/fuzz/fuzz_*.cpp).
//
//   build-fuzz/tests/fuzz/fuzz_make_seeds tests/fuzz/seeds
//
// Each seed is written as <dir>/<target>/<name>. LIDs, P_Keys and the
// attributes a Set writes back come from the same brought-up default
// subnet the targets use (fuzz::Fixture), so the seeds reach deep paths:
// responses that match, RMPP windows that open, QPs that reach RTS. Run a
// target on one seed with IBEMU_FUZZ_TRACE=1 to see what each step did.
#include "tests/fuzz/fuzz_common.h"

#include "emu/mad_rmpp.h"
#include "emu/uverbs_abi.h"
#include "fabric/pma.h"
#include "fabric/smp_attrs.h"
#include "fabric/topology.h"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

using namespace ibemu;
using namespace ibemu::fabric;
using namespace ibemu::emu;
namespace fs = std::filesystem;

namespace {

using Bytes = std::vector<uint8_t>;

fs::path outDir;
unsigned written = 0;

void put(const std::string &target, const std::string &name, const Bytes &b)
{
	fs::path dir = outDir / target;
	fs::create_directories(dir);
	std::ofstream f(dir / name, std::ios::binary | std::ios::trunc);
	f.write(reinterpret_cast<const char *>(b.data()), std::streamsize(b.size()));
	if (!f) {
		fprintf(stderr, "cannot write %s\n", (dir / name).c_str());
		exit(1);
	}
	written++;
}

template <typename T> void append(Bytes &b, const T &v)
{
	const auto *p = reinterpret_cast<const uint8_t *>(&v);
	b.insert(b.end(), p, p + sizeof v);
}
void append(Bytes &b, const Bytes &v)
{
	b.insert(b.end(), v.begin(), v.end());
}
void le16(Bytes &b, uint16_t v)
{
	b.push_back(uint8_t(v));
	b.push_back(uint8_t(v >> 8));
}
void le32(Bytes &b, uint32_t v)
{
	le16(b, uint16_t(v));
	le16(b, uint16_t(v >> 16));
}
void be32(Bytes &b, uint32_t v)
{
	for (int i = 3; i >= 0; i--)
		b.push_back(uint8_t(v >> (8 * i)));
}

/* ------------------------------------------------------------ topology */

void topologySeeds()
{
	for (const auto &e : fs::directory_iterator(fs::path(IBEMU_TEST_DATA) / "topology")) {
		if (e.path().extension() == ".md")
			continue;
		std::ifstream f(e.path(), std::ios::binary);
		std::stringstream ss;
		ss << f.rdbuf();
		std::string s = ss.str();
		put("topology", e.path().filename().string(), Bytes(s.begin(), s.end()));
	}
	auto text = [](const std::string &name, std::string_view s) {
		put("topology", name, Bytes(s.begin(), s.end()));
	};
	text("default", defaultTopology());
	/* the fixtures are copied next to the target (tests/fuzz/run.sh) */
	text("include", "include \"net.1\"\n\nCa 1 \"Extra\"\n[1] \"Switch1\"[8]\n");
	text("module-alias",
	     "module=\"left\"\nSwitch 4 \"S\"\n@[4] \"@uplink\"\n[1] \"H\"[1]\n\n"
	     "Ca 1 \"H\"\n[1] \"S\"[1]\n\nmodule=\"\"\nSwitch 4 \"Core\"\n[1] \"left#@uplink\"\n");
	text("masks",
	     "width=3\nspeed=7\nextspeed=15\nSwitch 8 \"S1\" # \"sw\" enhanced port 0 lid 5 lmc 1\n"
	     "[1] \"H1\"[1] w=1 s=1 e=0 # \"h\" lid 9 12xHDR\n[2] \"R1\"[1] # 1xFDR10\n\n"
	     "caguid=0x1234\nsysimgguid=0x99\nCa 2 \"H1\" # \"host one\"\n"
	     "[1](1235) \"S1\"[1] # lid 9 lmc 2 \"sw\" lid 5 4xNDR\n\n"
	     "rtguid=0x0\nRt 1 \"R1\"\n[1] \"S1\"[2]\n");
	text("ibnetdiscover-g",
	     "#\n# Topology file: generated\n#\nNon-Chassis Nodes\n\nHostname: x\n"
	     "vendid=0x2c9\ndevid=0xb924\nsysimgguid=0x2c90200000001\nswitchguid=0x2c90200000001(2c90200000001)\n"
	     "Switch\t2 \"S-0002c90200000001\"\t\t# \"sw\" base port 0 lid 1 lmc 0\n"
	     "[1]\t\"H-0002c90300000100\"[1](2c90300000101) \t\t# \"h\" lid 2 4xQDR\n\n"
	     "caguid=0x2c90300000100\nCa\t1 \"H-0002c90300000100\"\t\t# \"h\"\n"
	     "[1](2c90300000101) \t\"S-0002c90200000001\"[1]\t\t# lid 2 lmc 0 \"sw\" lid 1 4xQDR\n");
	text("ibsim-commands",
	     "do link Switch1 1\npdebug=1\nSwitch 2 \"A\"\n[1] \"B\"[1]\nSwitch 2 \"B\"\n[1] \"A\"[1]\n[2] \"A\"\n");
}

/* ------------------------------------------------------------ mad */

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

/* ------------------------------------------------------------ umad */

struct Ops {
	Bytes b;
	void op(uint8_t kind, int file, const Bytes &payload)
	{
		b.push_back(uint8_t(kind | (file << 7)));
		le16(b, uint16_t(payload.size()));
		append(b, payload);
	}
};

Bytes regReq(uint8_t qpn, uint8_t cls, uint8_t version, std::initializer_list<unsigned> methods, uint8_t rmpp = 0,
	     uint32_t oui = 0)
{
	ib_user_mad_reg_req r{};
	r.qpn = qpn;
	r.mgmt_class = cls;
	r.mgmt_class_version = version;
	r.rmpp_version = rmpp;
	r.oui[0] = uint8_t(oui >> 16);
	r.oui[1] = uint8_t(oui >> 8);
	r.oui[2] = uint8_t(oui);
	for (unsigned m : methods)
		reinterpret_cast<uint8_t *>(r.method_mask)[m / 8] |= uint8_t(1u << (m % 8));
	Bytes b{ 0 };
	append(b, r);
	return b;
}

Bytes regReq2(uint8_t qpn, uint8_t cls, uint8_t version, std::initializer_list<unsigned> methods, uint8_t rmpp = 0,
	      uint32_t oui = 0, uint32_t flags = 0)
{
	ib_user_mad_reg_req2 r{};
	r.qpn = qpn;
	r.mgmt_class = cls;
	r.mgmt_class_version = version;
	r.rmpp_version = rmpp;
	r.oui = oui;
	r.flags = flags;
	for (unsigned m : methods)
		reinterpret_cast<uint8_t *>(r.method_mask)[m / 8] |= uint8_t(1u << (m % 8));
	Bytes b{ 1 };
	append(b, r);
	return b;
}

Bytes unreg(uint32_t id)
{
	Bytes b{ 2 };
	le32(b, id);
	return b;
}

const Bytes enablePkey{ 3 };

Bytes count(uint32_t n)
{
	Bytes b;
	le32(b, n);
	return b;
}

/* hdr (56 or 64 bytes) and the MAD */
Bytes umadWrite(size_t hs, const test::UmadMsg &m, size_t madLen = kMadSize)
{
	return m.bytes(hs, madLen);
}

void umadSeeds()
{
	fuzz::Fixture fx;
	uint16_t lid1 = fx.lid1(), lid2 = fx.lid2();
	/* hi_tids: two kernel agents per port (host1: 1, 2; host2: 3, 4), then
	 * the agents in the order the seed registers them */
	{
		Ops o;
		o.op(1, 0, regReq(1, IB_MGMT_CLASS_PERF_MGMT, 1, {}));
		test::UmadMsg m(0, IB_MGMT_CLASS_PERF_MGMT, IB_MGMT_METHOD_GET, IB_PMA_PORT_COUNTERS, 1);
		m.to(lid2, 1).timeout(100, 1);
		m.mad[kPmaDataOffset + 1] = 1;
		o.op(0, 0, umadWrite(56, m));
		o.op(3, 0, {});
		o.op(2, 0, count(56 + 256));
		o.op(2, 0, count(56 + 256));
		put("umad", "pma-get", o.b);
	}
	{
		Ops o;
		o.op(1, 0, regReq(0, IB_MGMT_CLASS_SUBN_DIRECTED_ROUTE, 1, {}));
		/* answers are delivered only to sends that wait for them */
		o.op(0, 0, umadWrite(56, test::drSmpMsg(0, IB_SMP_ATTR_NODE_INFO, { 1 }, 7).timeout(100, 1)));
		o.op(0, 0, umadWrite(56, test::drSmpMsg(0, IB_SMP_ATTR_PORT_INFO, {}, 8).timeout(100, 1)));
		o.op(0, 0, umadWrite(56, test::drSmpMsg(0, IB_SMP_ATTR_NODE_DESC, { 1, 7, 1 }, 9).timeout(100, 1)));
		test::UmadMsg lr(0, IB_MGMT_CLASS_SUBN_LID_ROUTED, IB_MGMT_METHOD_GET, IB_SMP_ATTR_NODE_INFO, 10);
		lr.to(lid2, 0).timeout(100, 1);
		o.op(1, 0, regReq(0, IB_MGMT_CLASS_SUBN_LID_ROUTED, 1, {}));
		lr.hdr.id = 1;
		o.op(0, 0, umadWrite(56, lr));
		o.op(3, 0, {});
		for (int i = 0; i < 4; i++)
			o.op(2, 0, count(56 + 256));
		put("umad", "smi-dr-and-lid", o.b);
	}
	{ /* SA GetTable across the fabric, answered with a 3-segment RMPP response */
		Ops o;
		o.op(1, 1, enablePkey);
		o.op(1, 1, regReq2(1, IB_MGMT_CLASS_SUBN_ADM, 2, { IB_MGMT_METHOD_GET, IB_SA_METHOD_GET_TABLE }, 1));
		o.op(1, 0, enablePkey);
		o.op(1, 0, regReq2(1, IB_MGMT_CLASS_SUBN_ADM, 2, {}, 1));
		test::UmadMsg q(0, IB_MGMT_CLASS_SUBN_ADM, IB_SA_METHOD_GET_TABLE, 0x11, 0x30);
		q.to(lid2, 1).timeout(1000, 1);
		o.op(0, 0, umadWrite(64, q));
		o.op(3, 0, {});
		o.op(2, 1, count(64 + 256));
		/* file 0's agent is the 6th hi_tid: the request arrives with TID 6:0x30 */
		test::UmadMsg r(0, IB_MGMT_CLASS_SUBN_ADM, IB_SA_METHOD_GET_TABLE_RESP, 0x11,
				(uint64_t(6) << 32) | 0x30);
		r.to(lid1, 1);
		r.mad[26] = emu::IB_MGMT_RMPP_FLAG_ACTIVE;
		r.mad[36 + 8 + 1] = 6; /* AttributeOffset */
		Bytes w = umadWrite(64, r, 56 + 500);
		for (size_t i = 64 + 56; i < w.size(); i++)
			w[i] = uint8_t(i);
		o.op(0, 1, w);
		o.op(3, 0, {});
		o.op(2, 0, count(64 + 256)); /* ENOSPC first */
		o.op(2, 0, count(1 << 16));
		o.op(2, 1, count(1 << 16));
		put("umad", "sa-rmpp-response", o.b);
	}
	{ /* a request nobody answers: resent, then a timeout report */
		Ops o;
		o.op(1, 0, regReq(1, IB_MGMT_CLASS_PERF_MGMT, 1, {}));
		test::UmadMsg m(0, IB_MGMT_CLASS_PERF_MGMT, IB_MGMT_METHOD_GET, IB_PMA_PORT_COUNTERS, 2);
		m.to(0x0bad, 1).timeout(10, 2);
		o.op(0, 0, umadWrite(56, m));
		o.op(0, 0, umadWrite(56, m)); /* a duplicate TID: EINVAL */
		for (int i = 0; i < 3; i++) /* the first try and two retries */
			o.op(4, 0, count(10));
		o.op(2, 0, count(56 + 256));
		put("umad", "timeout-report", o.b);
	}
	{ /* registration errors, unregister, unknown ioctls, close */
		Ops o;
		o.op(1, 0, enablePkey);
		o.op(1, 0, regReq2(1, IB_MGMT_CLASS_SUBN_ADM, 2, {}, 1, 0, 2)); /* unknown flag */
		o.op(1, 0, regReq2(1, IB_MGMT_CLASS_SUBN_ADM, 2, { IB_MGMT_METHOD_GET }, 1, 0, IB_USER_MAD_USER_RMPP));
		o.op(1, 0, regReq2(1, IB_MGMT_CLASS_SUBN_ADM, 2, { IB_MGMT_METHOD_GET }, 1)); /* method in use */
		o.op(1, 0, regReq2(2, IB_MGMT_CLASS_SUBN_ADM, 2, {})); /* QP 2 */
		o.op(1, 0, regReq(1, IB_MGMT_CLASS_SUBN_DIRECTED_ROUTE, 1, {})); /* SMP class on QP1 */
		o.op(1, 0, regReq(1, 0x30, 1, { IB_MGMT_METHOD_GET }, 0, 0)); /* vendor class without OUI */
		o.op(1, 0, enablePkey); /* too late */
		o.op(1, 0, unreg(0));
		o.op(1, 0, unreg(0));
		Bytes other{ 9 };
		le32(other, 0xc0101b05);
		other.resize(other.size() + 16, 0xaa);
		o.op(1, 0, other);
		o.op(5, 0, {});
		o.op(1, 0, regReq(1, IB_MGMT_CLASS_CM, 2, { IB_MGMT_METHOD_SEND }));
		put("umad", "ioctl-errors", o.b);
	}
	{ /* a vendor range-2 class with OUI, request and response between the files */
		Ops o;
		constexpr uint32_t oui = 0x001405;
		o.op(1, 1, regReq(1, 0x30, 1, { IB_MGMT_METHOD_GET }, 0, oui));
		o.op(1, 0, regReq(1, 0x30, 1, {}, 0, oui));
		test::UmadMsg q(0, 0x30, IB_MGMT_METHOD_GET, 0x10, 0x41);
		q.to(lid2, 1).timeout(500, 0);
		q.mad[37] = uint8_t(oui >> 16);
		q.mad[38] = uint8_t(oui >> 8);
		q.mad[39] = uint8_t(oui);
		o.op(0, 0, umadWrite(56, q));
		o.op(3, 0, {});
		o.op(2, 1, count(56 + 256));
		test::UmadMsg r = q;
		r.hdr.id = 0;
		r.to(lid1, 1).timeout(0, 0);
		r.mad[3] = IB_MGMT_METHOD_GET_RESP;
		overlay<ib_mad_hdr>(r.mad.data())->tid = (uint64_t(6) << 32) | 0x41;
		o.op(0, 1, umadWrite(56, r));
		o.op(3, 0, {});
		o.op(2, 0, count(56 + 256));
		/* and a Get of a class nobody registered: the MAD layer answers 0x000c */
		test::UmadMsg u(0, IB_MGMT_CLASS_DEVICE_MGMT, IB_MGMT_METHOD_GET, 0x10, 0x42);
		u.to(lid2, 1).timeout(500, 0);
		o.op(1, 0, regReq(1, IB_MGMT_CLASS_DEVICE_MGMT, 1, {}));
		u.hdr.id = 1;
		o.op(0, 0, umadWrite(56, u, 64 + 16));
		o.op(3, 0, {});
		o.op(2, 0, count(56 + 256));
		put("umad", "vendor-oui-and-unmatched", o.b);
	}
	{ /* issm, then the port dies under open files */
		Ops o;
		o.op(1, 1, regReq(0, IB_MGMT_CLASS_SUBN_LID_ROUTED, 1, { IB_MGMT_METHOD_TRAP }));
		o.op(7, 1, {});
		o.op(3, 1, {});
		o.op(2, 1, count(56 + 256));
		o.op(7, 1, {});
		o.op(6, 1, {});
		o.op(2, 1, count(56 + 256));
		o.op(0, 1, umadWrite(56, test::drSmpMsg(0, IB_SMP_ATTR_NODE_INFO, { 1 }, 7)));
		o.op(1, 1, regReq(1, IB_MGMT_CLASS_PERF_MGMT, 1, {}));
		o.op(5, 1, {});
		put("umad", "issm-and-kill", o.b);
	}
	{ /* a GRH-addressed send and a P_Key index */
		Ops o;
		o.op(1, 0, enablePkey);
		o.op(1, 0, regReq2(1, IB_MGMT_CLASS_PERF_MGMT, 1, {}));
		test::UmadMsg m(0, IB_MGMT_CLASS_PERF_MGMT, IB_MGMT_METHOD_GET, IB_PMA_CLASS_PORT_INFO, 3);
		m.to(lid2, 1).timeout(100, 0);
		m.hdr.grh_present = 1;
		m.hdr.gid_index = 0;
		m.hdr.hop_limit = 64;
		m.hdr.gid[0] = 0xfe;
		m.hdr.gid[1] = 0x80;
		for (int i = 0; i < 8; i++)
			m.hdr.gid[8 + i] = uint8_t(fx.p2->guid >> (56 - 8 * i));
		m.hdr.pkey_index = 0;
		o.op(0, 0, umadWrite(64, m));
		m.hdr.gid_index = 5;
		o.op(0, 0, umadWrite(64, m));
		o.op(3, 0, {});
		o.op(2, 0, count(64 + 256));
		put("umad", "grh", o.b);
	}
}

/* ------------------------------------------------------------ rmpp */

struct RmppOps {
	Bytes b;
	explicit RmppOps(uint8_t setup) { b.push_back(setup); }
	void seg(uint8_t method, uint8_t tid, uint8_t type, uint8_t flags, uint32_t segNum, uint32_t paylen,
		 uint8_t status = 0, uint8_t version = 1)
	{
		b.insert(b.end(), { 0, method, tid, version, type, flags, status });
		be32(b, segNum);
		be32(b, paylen);
		b.push_back(uint8_t(segNum * 13));
	}
	void advance(uint16_t ms)
	{
		b.push_back(2);
		le16(b, ms);
	}
	void read(uint32_t n)
	{
		b.push_back(3);
		le32(b, n);
	}
	void send(uint8_t method, uint16_t len, uint16_t timeout, uint8_t retries, uint8_t flags, uint8_t tid)
	{
		b.push_back(4);
		b.push_back(method);
		le16(b, len);
		le16(b, timeout);
		b.push_back(retries);
		b.push_back(flags);
		b.push_back(tid);
	}
	void drop(uint32_t mask)
	{
		b.push_back(5);
		le32(b, mask);
	}
	void drain() { b.push_back(6); }
	void reopen() { b.push_back(7); }
};

constexpr uint8_t kActive = emu::IB_MGMT_RMPP_FLAG_ACTIVE;
constexpr uint8_t kFirst = emu::IB_MGMT_RMPP_FLAG_FIRST;
constexpr uint8_t kLast = emu::IB_MGMT_RMPP_FLAG_LAST;
constexpr uint8_t kData = emu::IB_MGMT_RMPP_TYPE_DATA;
constexpr uint8_t kAck = emu::IB_MGMT_RMPP_TYPE_ACK;

void rmppSeeds()
{
	for (uint8_t setup : { uint8_t(0), uint8_t(1) }) {
		std::string cls = setup ? "vendor" : "sa";
		uint32_t seg = setup ? 216 : 200; /* data bytes a segment */
		{
			RmppOps o(setup);
			o.seg(IB_SA_METHOD_GET_TABLE, 1, kData, kActive | kFirst, 1, 3 * seg - 10);
			o.seg(IB_SA_METHOD_GET_TABLE, 1, kData, kActive, 2, 0);
			o.seg(IB_SA_METHOD_GET_TABLE, 1, kData, kActive | kLast, 3, seg - 10);
			o.drain();
			o.read(64 + 256);
			o.read(1 << 16);
			o.seg(IB_SA_METHOD_GET_TABLE, 1, kData, kActive | kLast, 3, seg - 10); /* a late duplicate */
			o.advance(10000);
			put("rmpp", cls + "-recv-3-segments", o.b);
		}
		{
			RmppOps o(setup);
			o.seg(IB_MGMT_METHOD_SET, 2, kData, kActive | kFirst, 1, 4 * seg);
			o.seg(IB_MGMT_METHOD_SET, 2, kData, kActive, 3, 0);
			o.seg(IB_MGMT_METHOD_SET, 2, kData, kActive, 2, 0);
			o.seg(IB_MGMT_METHOD_SET, 2, kData, kActive, 2, 0);
			o.seg(IB_MGMT_METHOD_SET, 3, kData, kActive | kFirst, 1, 2 * seg);
			o.seg(IB_MGMT_METHOD_SET, 2, kData, kActive | kLast, 4, seg);
			o.read(1 << 16);
			o.advance(40000); /* record 3 never finishes: ABORT T2L */
			o.advance(10000);
			put("rmpp", cls + "-recv-out-of-order", o.b);
		}
	}
	{ /* the file sends a 5-segment GetTableResp; the input ACKs it */
		RmppOps o(0);
		o.send(0, 1000, 0, 3, 1, 5);
		o.drain();
		o.seg(0, 0x80, kAck, kActive, 1, 5);
		o.seg(0, 0x80, kAck, kActive, 5, 5);
		o.drain();
		o.read(64 + 256);
		put("rmpp", "sa-send-acked", o.b);
	}
	{ /* segment 3 is lost; the ACK timeout resends from last_ack + 1 */
		RmppOps o(0);
		o.drop(1u << 3);
		o.send(1, 1000, 5000, 3, 1, 6);
		o.seg(0, 0x80, kAck, kActive, 1, 5);
		o.seg(0, 0x80, kAck, kActive, 2, 5);
		o.advance(2000);
		o.seg(0, 0x80, kAck, kActive, 5, 5);
		o.advance(5000);
		o.read(64 + 256);
		put("rmpp", "sa-send-lost-segment", o.b);
	}
	{ /* nobody ACKs: retries, then a timeout; STOP and ABORT end others */
		RmppOps o(0);
		o.send(0, 2000, 100, 1, 1, 7);
		o.advance(100);
		o.advance(100);
		o.read(64 + 256);
		o.send(0, 2000, 0, 1, 1, 8);
		o.seg(0, 0x80, emu::IB_MGMT_RMPP_TYPE_STOP, kActive, 0, 0, emu::IB_MGMT_RMPP_STATUS_RESX);
		o.send(0, 2000, 0, 1, 1, 9);
		o.seg(0, 0x80, emu::IB_MGMT_RMPP_TYPE_ABORT, kActive, 0, 0, emu::IB_MGMT_RMPP_STATUS_T2L);
		o.send(0, 2000, 0, 1, 1, 10);
		o.seg(0, 0x80, kAck, kActive, 9, 3); /* window too small */
		o.seg(0, 0x80, 9, kActive, 1, 1); /* bad type */
		o.drain();
		o.read(64 + 256);
		put("rmpp", "sa-send-timeout-stop-abort", o.b);
	}
	{ /* an agent that does RMPP itself gets raw segments */
		RmppOps o(0x80);
		o.seg(IB_SA_METHOD_GET_TABLE, 4, kData, kActive | kFirst, 1, 400);
		o.read(64 + 256);
		o.send(0, 100, 0, 0, 1, 11); /* one segment: the agent's own */
		o.drain();
		put("rmpp", "user-rmpp", o.b);
	}
	{ /* close and reopen in the middle of a transfer, and a raw MAD */
		RmppOps o(0);
		o.seg(IB_MGMT_METHOD_SEND, 5, kData, kActive | kFirst, 1, 700);
		o.send(0, 700, 1000, 2, 1, 12);
		o.reopen();
		o.seg(IB_MGMT_METHOD_SEND, 5, kData, kActive | kLast, 2, 100);
		o.b.push_back(1);
		Mad raw{};
		ib_mad_hdr &h = *madHdr(raw);
		h.base_version = 1;
		h.mgmt_class = IB_MGMT_CLASS_SUBN_ADM;
		h.class_version = 2;
		h.method = IB_MGMT_METHOD_GET;
		h.tid = 0x99;
		raw[24] = 1;
		raw[25] = kData;
		raw[26] = kActive | kFirst | kLast;
		raw[31] = 1;
		raw[35] = 100;
		o.b.insert(o.b.end(), raw.begin(), raw.end());
		o.drain();
		o.read(1 << 16);
		put("rmpp", "reopen-and-raw", o.b);
	}
}

/* ------------------------------------------------------------ uverbs */

constexpr uint64_t kBufA = 0x10000;
constexpr uint32_t kFirstKey = 0x1101; /* VerbsDevice: the first MR of a device */
constexpr uint32_t kFirstQpn = 0x11;

struct Verbs {
	Bytes b;
	uint16_t lid[2];

	/* one command record: c, f, then the body in 4-byte words */
	void raw(uint8_t c, uint8_t f, Bytes body)
	{
		body.resize((body.size() + 3) & ~size_t(3), 0);
		b.push_back(c);
		b.push_back(f);
		b.push_back(uint8_t(body.size() / 4));
		append(b, body);
	}
	template <typename T> void cmd(uint32_t command, int client, const T &req, uint8_t extra = 0)
	{
		Bytes body;
		append(body, req);
		raw(uint8_t(command), uint8_t(client | extra), body);
	}
	void special(uint8_t op, int client, uint32_t arg = 0)
	{
		Bytes body;
		le32(body, arg);
		raw(uint8_t(0x80 | op), uint8_t(client), body);
	}

	/* GET_CONTEXT, PD 0, MR 1 (8 KiB at kBufA, all access), CQ 2 */
	void basics(int c, uint32_t access = 0xf)
	{
		cmd(CMD_GET_CONTEXT, c, ib_uverbs_get_context{});
		cmd(CMD_ALLOC_PD, c, ib_uverbs_alloc_pd{});
		ib_uverbs_reg_mr mr{};
		mr.start = mr.hca_va = kBufA;
		mr.length = 0x2000;
		mr.access_flags = access;
		cmd(CMD_REG_MR, c, mr);
		ib_uverbs_create_cq cq{};
		cq.cqe = 64;
		cq.comp_channel = -1;
		cmd(CMD_CREATE_CQ, c, cq);
	}
	/* QP 3 (or `handle`) on PD 0 and CQ 2 */
	void createQp(int c, uint8_t type, int srq = -1)
	{
		ib_uverbs_create_qp q{};
		q.pd_handle = 0;
		q.send_cq_handle = q.recv_cq_handle = 2;
		q.max_send_wr = q.max_recv_wr = 16;
		q.max_send_sge = q.max_recv_sge = 2;
		q.max_inline_data = 64;
		q.qp_type = type;
		if (srq >= 0) {
			q.is_srq = 1;
			q.srq_handle = uint32_t(srq);
			q.max_recv_wr = q.max_recv_sge = 0;
		}
		cmd(CMD_CREATE_QP, c, q);
	}
	void modify(int c, uint32_t qp, uint32_t mask, ib_uverbs_modify_qp a)
	{
		a.qp_handle = qp;
		a.attr_mask = mask;
		cmd(CMD_MODIFY_QP, c, a);
	}
	/* RESET -> INIT -> RTR -> RTS, as test::Client::connect */
	void connect(int c, uint32_t qp, uint8_t type, uint16_t dlid, uint32_t dqpn)
	{
		ib_uverbs_modify_qp a{};
		a.qp_state = IB_QPS_INIT;
		a.port_num = 1;
		a.qp_access_flags = IB_ACCESS_REMOTE_WRITE | IB_ACCESS_REMOTE_READ | IB_ACCESS_REMOTE_ATOMIC;
		a.qkey = 0x11111111;
		if (type == IB_QPT_UD) {
			modify(c, qp, IB_QP_STATE | IB_QP_PKEY_INDEX | IB_QP_PORT | IB_QP_QKEY, a);
			a.qp_state = IB_QPS_RTR;
			modify(c, qp, IB_QP_STATE, a);
			a.qp_state = IB_QPS_RTS;
			modify(c, qp, IB_QP_STATE | IB_QP_SQ_PSN, a);
			return;
		}
		modify(c, qp, IB_QP_STATE | IB_QP_PKEY_INDEX | IB_QP_PORT | IB_QP_ACCESS_FLAGS, a);
		a.qp_state = IB_QPS_RTR;
		a.dest.dlid = dlid;
		a.dest.port_num = 1;
		a.path_mtu = kMtu1024;
		a.dest_qp_num = dqpn;
		a.max_dest_rd_atomic = 1;
		a.min_rnr_timer = 12;
		uint32_t rtr = IB_QP_STATE | IB_QP_AV | IB_QP_PATH_MTU | IB_QP_DEST_QPN | IB_QP_RQ_PSN;
		if (type == IB_QPT_RC)
			rtr |= IB_QP_MAX_DEST_RD_ATOMIC | IB_QP_MIN_RNR_TIMER;
		modify(c, qp, rtr, a);
		a.qp_state = IB_QPS_RTS;
		a.timeout = 14;
		a.retry_cnt = 7;
		a.rnr_retry = 7;
		a.max_rd_atomic = 1;
		uint32_t rts = IB_QP_STATE | IB_QP_SQ_PSN;
		if (type == IB_QPT_RC)
			rts |= IB_QP_TIMEOUT | IB_QP_RETRY_CNT | IB_QP_RNR_RETRY | IB_QP_MAX_QP_RD_ATOMIC;
		modify(c, qp, rts, a);
	}
	/* both sides: basics, a QP, connected to each other */
	void pair(uint8_t type)
	{
		for (int c : { 0, 1 }) {
			basics(c);
			createQp(c, type);
		}
		for (int c : { 0, 1 })
			connect(c, 3, type, lid[1 - c], kFirstQpn);
	}
	void postSend(int c, uint32_t qp, ib_uverbs_send_wr wr, std::vector<ib_uverbs_sge> sges)
	{
		wr.num_sge = uint32_t(sges.size());
		ib_uverbs_post_send req{};
		req.qp_handle = qp;
		req.wr_count = 1;
		req.sge_count = uint32_t(sges.size());
		req.wqe_size = sizeof wr;
		Bytes body;
		append(body, req);
		append(body, wr);
		for (const auto &s : sges)
			append(body, s);
		raw(CMD_POST_SEND, uint8_t(c), body);
	}
	void postRecv(int c, uint32_t handle, uint64_t wrId, std::vector<ib_uverbs_sge> sges, bool srq = false)
	{
		ib_uverbs_recv_wr wr{ wrId, uint32_t(sges.size()), 0 };
		ib_uverbs_post_recv req{};
		req.qp_handle = handle;
		req.wr_count = 1;
		req.sge_count = uint32_t(sges.size());
		req.wqe_size = sizeof wr;
		Bytes body;
		append(body, req);
		append(body, wr);
		for (const auto &s : sges)
			append(body, s);
		raw(srq ? CMD_POST_SRQ_RECV : CMD_POST_RECV, uint8_t(c), body);
	}
	void poll(int c, uint32_t cq = 2, uint32_t ne = 8)
	{
		ib_uverbs_poll_cq p{};
		p.cq_handle = cq;
		p.ne = ne;
		cmd(CMD_POLL_CQ, c, p, 0x60); /* out_words: room for ne completions */
	}
	static ib_uverbs_send_wr wr(uint32_t opcode, uint64_t id = 1, uint32_t flags = IB_SEND_SIGNALED)
	{
		ib_uverbs_send_wr w{};
		w.wr_id = id;
		w.opcode = opcode;
		w.send_flags = flags;
		return w;
	}
};

void uverbsSeeds()
{
	fuzz::Fixture fx;
	const uint16_t lids[2] = { fx.lid1(), fx.lid2() };
	auto make = [&] {
		Verbs v;
		v.lid[0] = lids[0];
		v.lid[1] = lids[1];
		return v;
	};
	const ib_uverbs_sge sgeA{ kBufA, 128, kFirstKey };

	{
		Verbs v = make();
		v.pair(IB_QPT_RC);
		v.postRecv(1, 3, 11, { { kBufA + 0x100, 256, kFirstKey } });
		v.postSend(0, 3, Verbs::wr(IB_WR_SEND, 21), { sgeA });
		auto imm = Verbs::wr(IB_WR_SEND_WITH_IMM, 22);
		imm.ex = 0x12345678;
		v.postRecv(1, 3, 12, { { kBufA + 0x200, 256, kFirstKey } });
		v.postSend(0, 3, imm, { sgeA });
		v.poll(0);
		v.poll(1);
		put("uverbs", "rc-send-recv", v.b);
	}
	{
		Verbs v = make();
		v.pair(IB_QPT_RC);
		auto w = Verbs::wr(IB_WR_RDMA_WRITE, 31);
		w.wr.rdma.remote_addr = kBufA + 0x400;
		w.wr.rdma.rkey = kFirstKey;
		v.postSend(0, 3, w, { sgeA });
		auto r = Verbs::wr(IB_WR_RDMA_READ, 32);
		r.wr.rdma.remote_addr = kBufA + 0x400;
		r.wr.rdma.rkey = kFirstKey;
		v.postSend(0, 3, r, { { kBufA + 0x800, 128, kFirstKey } });
		auto fa = Verbs::wr(IB_WR_ATOMIC_FETCH_AND_ADD, 33);
		fa.wr.atomic.remote_addr = kBufA + 0x1000;
		fa.wr.atomic.rkey = kFirstKey;
		fa.wr.atomic.compare_add = 5;
		v.postSend(0, 3, fa, { { kBufA + 0x1008, 8, kFirstKey } });
		auto cs = Verbs::wr(IB_WR_ATOMIC_CMP_AND_SWP, 34);
		cs.wr.atomic.remote_addr = kBufA + 0x1000;
		cs.wr.atomic.rkey = kFirstKey;
		cs.wr.atomic.compare_add = 5;
		cs.wr.atomic.swap = 9;
		v.postSend(0, 3, cs, { { kBufA + 0x1010, 8, kFirstKey } });
		auto wi = Verbs::wr(IB_WR_RDMA_WRITE_WITH_IMM, 35);
		wi.wr.rdma.remote_addr = kBufA;
		wi.wr.rdma.rkey = kFirstKey;
		v.postRecv(1, 3, 13, {});
		v.postSend(0, 3, wi, { sgeA });
		auto in = Verbs::wr(IB_WR_SEND, 36, IB_SEND_SIGNALED | IB_SEND_INLINE);
		v.postRecv(1, 3, 14, { { kBufA, 64, kFirstKey } });
		v.postSend(0, 3, in, { { kBufA, 32, 0 } });
		v.poll(0);
		v.poll(1);
		put("uverbs", "rc-write-read-atomic-inline", v.b);
	}
	{
		Verbs v = make();
		for (int c : { 0, 1 }) {
			v.basics(c);
			v.createQp(c, IB_QPT_UD);
			v.connect(c, 3, IB_QPT_UD, 0, 0);
		}
		ib_uverbs_create_ah ah{};
		ah.attr.dlid = lids[1];
		ah.attr.port_num = 1;
		v.cmd(CMD_CREATE_AH, 0, ah); /* handle 4 */
		ah.attr.is_global = 1;
		ah.attr.grh.hop_limit = 1;
		v.cmd(CMD_CREATE_AH, 0, ah); /* handle 5 */
		v.postRecv(1, 3, 41, { { kBufA, 40 + 256, kFirstKey } });
		v.postRecv(1, 3, 42, { { kBufA + 0x400, 40 + 256, kFirstKey } });
		for (uint32_t h : { 4u, 5u }) {
			auto w = Verbs::wr(IB_WR_SEND, 40 + h);
			w.wr.ud.ah = h;
			w.wr.ud.remote_qpn = kFirstQpn;
			w.wr.ud.remote_qkey = 0x11111111;
			v.postSend(0, 3, w, { sgeA });
		}
		v.poll(0);
		v.poll(1);
		v.cmd(CMD_DESTROY_AH, 0, ib_uverbs_destroy_ah{ 4 });
		put("uverbs", "ud-send-ah", v.b);
	}
	{
		Verbs v = make();
		for (int c : { 0, 1 })
			v.basics(c);
		ib_uverbs_create_srq s{};
		s.max_wr = 8;
		s.max_sge = 1;
		s.srq_limit = 2;
		v.cmd(CMD_CREATE_SRQ, 1, s); /* B: handle 3 */
		v.createQp(0, IB_QPT_RC); /* A: handle 3 */
		v.createQp(1, IB_QPT_RC, 3); /* B: handle 4 */
		v.connect(0, 3, IB_QPT_RC, lids[1], kFirstQpn);
		v.connect(1, 4, IB_QPT_RC, lids[0], kFirstQpn);
		v.postRecv(1, 3, 51, { { kBufA, 256, kFirstKey } }, true);
		v.postRecv(1, 3, 52, { { kBufA + 0x100, 256, kFirstKey } }, true);
		v.postRecv(1, 3, 53, { { kBufA + 0x200, 256, kFirstKey } }, true);
		v.postSend(0, 3, Verbs::wr(IB_WR_SEND, 54), { sgeA });
		v.postSend(0, 3, Verbs::wr(IB_WR_SEND, 55), { sgeA });
		ib_uverbs_modify_srq m{ 3, IB_SRQ_LIMIT, 0, 1 };
		v.cmd(CMD_MODIFY_SRQ, 1, m);
		v.cmd(CMD_QUERY_SRQ, 1, ib_uverbs_query_srq{ 0, 3, 0 });
		v.cmd(CMD_DESTROY_SRQ, 1, ib_uverbs_destroy_srq{ 0, 3, 0 }); /* busy */
		v.special(2, 1, 16);
		v.poll(0);
		v.poll(1);
		put("uverbs", "srq", v.b);
	}
	{
		Verbs v = make();
		v.basics(0);
		v.cmd(CMD_QUERY_DEVICE, 0, ib_uverbs_query_device{});
		ib_uverbs_query_port qp{};
		qp.port_num = 1;
		v.cmd(CMD_QUERY_PORT, 0, qp);
		qp.port_num = 2;
		v.cmd(CMD_QUERY_PORT, 0, qp);
		{ /* extended QUERY_DEVICE */
			Bytes body(8, 0);
			v.raw(0x40 | EX_CMD_QUERY_DEVICE, 0, body);
		}
		v.createQp(0, IB_QPT_RC);
		v.cmd(CMD_QUERY_QP, 0, ib_uverbs_query_qp{ 0, 3, 0xffffffff });
		v.cmd(CMD_RESIZE_CQ, 0, ib_uverbs_resize_cq{ 0, 2, 128 });
		v.cmd(CMD_REQ_NOTIFY_CQ, 0, ib_uverbs_req_notify_cq{ 2, 0 });
		v.cmd(CMD_CREATE_COMP_CHANNEL, 0, ib_uverbs_create_comp_channel{});
		v.raw(CMD_MODIFY_AH, 0, Bytes(16, 0));
		v.raw(45, 0, Bytes(16, 0)); /* beyond the legacy commands */
		v.raw(0x40 | 3, 0, Bytes(16, 0)); /* an extended command the device lacks */
		v.cmd(CMD_GET_CONTEXT, 0, ib_uverbs_get_context{}); /* twice */
		/* teardown in the wrong order: busy */
		v.cmd(CMD_DEALLOC_PD, 0, ib_uverbs_dealloc_pd{ 0 });
		v.cmd(CMD_DESTROY_CQ, 0, ib_uverbs_destroy_cq{ 0, 2, 0 });
		v.cmd(CMD_DESTROY_QP, 0, ib_uverbs_destroy_qp{ 0, 3, 0 });
		v.cmd(CMD_DEREG_MR, 0, ib_uverbs_dereg_mr{ 1 });
		v.cmd(CMD_DESTROY_CQ, 0, ib_uverbs_destroy_cq{ 0, 2, 0 });
		v.cmd(CMD_DEALLOC_PD, 0, ib_uverbs_dealloc_pd{ 0 });
		v.cmd(CMD_DEALLOC_PD, 0, ib_uverbs_dealloc_pd{ 0 }); /* gone */
		put("uverbs", "query-and-destroy", v.b);
	}
	{
		Verbs v = make();
		v.basics(0);
		/* a command before GET_CONTEXT; other tids of the processes */
		v.cmd(CMD_ALLOC_PD, 1, ib_uverbs_alloc_pd{});
		ib_uverbs_reg_mr mr{};
		mr.start = mr.hca_va = 0x40000;
		mr.length = 0x40000; /* 256 KiB: process 100 is at its limit */
		mr.access_flags = IB_ACCESS_LOCAL_WRITE;
		v.cmd(CMD_REG_MR, 0, mr);
		v.cmd(CMD_REG_MR, 0, mr, 2); /* thread 101: the same process */
		v.cmd(CMD_REG_MR, 0, mr, 4); /* tid 150: limit 0, EPERM */
		v.cmd(CMD_REG_MR, 0, mr, 6); /* tid 170: CAP_IPC_LOCK */
		mr.start = mr.hca_va = 0xf8000; /* read-only memory, writable MR: EFAULT */
		mr.length = 0x1000;
		v.cmd(CMD_REG_MR, 0, mr);
		mr.access_flags = 0;
		v.cmd(CMD_REG_MR, 0, mr);
		mr.start = mr.hca_va = 0x200000; /* beyond the arena */
		v.cmd(CMD_REG_MR, 0, mr);
		v.cmd(CMD_ALLOC_PD, 0, ib_uverbs_alloc_pd{}, 0x10); /* response into read-only memory */
		v.cmd(CMD_ALLOC_PD, 0, ib_uverbs_alloc_pd{}, 0x20); /* out_words one short */
		v.special(4, 0); /* process 100 execs */
		v.special(3, 0); /* close and reopen A */
		v.special(1, 0);
		put("uverbs", "pinning-and-processes", v.b);
	}
	{
		Verbs v = make();
		v.pair(IB_QPT_RC);
		/* no receive posted: RNR NAKs, retried by the RNR timer, then a
		 * receive wakes it */
		v.postSend(0, 3, Verbs::wr(IB_WR_SEND, 61), { sgeA });
		v.special(0, 0, 1);
		v.special(0, 0, 200);
		v.postRecv(1, 3, 62, { { kBufA, 256, kFirstKey } });
		v.special(1, 0);
		/* the link goes down: the send is lost and retried, then it comes back */
		v.special(8, 1);
		v.postRecv(1, 3, 63, { { kBufA, 256, kFirstKey } });
		v.postSend(0, 3, Verbs::wr(IB_WR_SEND, 64), { sgeA });
		v.special(0, 0, 100);
		v.special(9, 1);
		v.special(0, 0, 200);
		v.poll(0);
		v.poll(1);
		v.special(2, 1, 16);
		v.special(2, 1, 16);
		v.special(5, 1);
		put("uverbs", "rnr-and-link-down", v.b);
	}
	{
		Verbs v = make();
		v.pair(IB_QPT_UC);
		v.postRecv(1, 3, 71, { { kBufA, 64, kFirstKey } });
		v.postSend(0, 3, Verbs::wr(IB_WR_SEND, 72), { sgeA }); /* too long: LOC_LEN_ERR */
		auto w = Verbs::wr(IB_WR_RDMA_WRITE, 73);
		w.wr.rdma.remote_addr = kBufA;
		w.wr.rdma.rkey = 0xdead;
		v.postSend(0, 3, w, { sgeA });
		v.postSend(0, 3, Verbs::wr(IB_WR_SEND, 74), { { kBufA, 16, 0xbeef } });
		v.poll(0);
		v.poll(1);
		v.special(7, 1); /* host2's device goes away */
		v.postSend(0, 3, Verbs::wr(IB_WR_SEND, 75), { sgeA });
		v.poll(1);
		put("uverbs", "uc-errors-and-device-removal", v.b);
	}
	{ /* headers the harness does not make: written as they are */
		Verbs v = make();
		Bytes h;
		le32(h, CMD_GET_CONTEXT);
		le16(h, 4);
		le16(h, 2);
		le32(h, 0x80000);
		le32(h, 0);
		v.raw(0x86, 0, h);
		Bytes ex;
		le32(ex, IB_USER_VERBS_CMD_FLAG_EXTENDED | EX_CMD_QUERY_DEVICE);
		le16(ex, 1);
		le16(ex, 24);
		for (uint64_t x : { uint64_t(0x80000), uint64_t(0) })
			for (int i = 0; i < 8; i++)
				ex.push_back(uint8_t(x >> (8 * i)));
		ex.resize(ex.size() + 8, 0);
		v.raw(0x86, 0, ex);
		v.raw(0x86, 0, Bytes{ 0xff, 0xff, 0xff, 0x7f, 1, 0, 0, 0 });
		put("uverbs", "raw-headers", v.b);
	}
}

} /* namespace */

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: %s SEEDS_DIR (tests/fuzz/seeds)\n", argv[0]);
		return 2;
	}
	outDir = argv[1];
	fuzz::initOnce();
	topologySeeds();
	MadSeeds().all();
	umadSeeds();
	rmppSeeds();
	uverbsSeeds();
	printf("%u seeds written under %s\n", written, outDir.c_str());
	return 0;
}
