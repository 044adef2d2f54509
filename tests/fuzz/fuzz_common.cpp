// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
#include "tests/fuzz/fuzz_common.h"

#include "fabric/pma.h"
#include "fabric/process_mad.h"
#include "fabric/smp_attrs.h"
#include "fabric/topology.h"

#include <catch2/catch.hpp> /* tests/fuzz/catch_shim */

#include <cstdio>
#include <cstdlib>

namespace ibemu::fuzz {

using namespace ibemu::fabric;

[[noreturn]] void requireFailed(const char *expr, const char *file, int line)
{
	fprintf(stderr, "fuzz harness: REQUIRE(%s) failed at %s:%d\n", expr, file, line);
	abort();
}

namespace {

[[noreturn]] void setupFailed(const std::string &why)
{
	fprintf(stderr, "fuzz harness: %s\n", why.c_str());
	abort();
}

constexpr uint64_t kSmNodeGuid = 0x2c90300000300; /* host3: where EmuFixture's MiniSm runs */

/* The default topology parsed once, and a subnet MiniSm brought up. */
struct Template {
	Topology topo;
	Subnet up;
};

Template &tmpl()
{
	static Template *t = [] {
		auto *n = new Template; /* lives as long as the process */
		TopologyError err;
		if (parseTopology(defaultTopology(), "<built-in default>", n->topo, err) ||
		    buildSubnet(n->topo, n->up, err))
			setupFailed("the default topology does not build: " + err.str());
		test::MiniSm sm(n->up, n->up.findNodeByGuid(kSmNodeGuid)->port(1));
		sm.run();
		return n;
	}();
	return *t;
}

void copyPortState(Port &d, const Port &s)
{
	d.guid = s.guid;
	d.mkey = s.mkey;
	d.gidPrefix = s.gidPrefix;
	d.lid = s.lid;
	d.smLid = s.smLid;
	d.capMask = s.capMask;
	d.capMask2 = s.capMask2;
	d.diagCode = s.diagCode;
	d.mkeyLeasePeriod = s.mkeyLeasePeriod;
	d.linkWidthEnabled = s.linkWidthEnabled;
	d.linkWidthSupported = s.linkWidthSupported;
	d.linkWidthActive = s.linkWidthActive;
	d.speedSupported = s.speedSupported;
	d.speedActive = s.speedActive;
	d.linkSpeedEnabled = s.linkSpeedEnabled;
	d.linkSpeedExtEnabled = s.linkSpeedExtEnabled;
	d.state = s.state;
	d.physState = s.physState;
	d.linkDownDefault = s.linkDownDefault;
	d.mkeyProtect = s.mkeyProtect;
	d.lmc = s.lmc;
	d.neighborMtu = s.neighborMtu;
	d.masterSmSl = s.masterSmSl;
	d.vlCap = s.vlCap;
	d.initType = s.initType;
	d.vlHighLimit = s.vlHighLimit;
	d.vlArbHighCap = s.vlArbHighCap;
	d.vlArbLowCap = s.vlArbLowCap;
	d.initTypeReply = s.initTypeReply;
	d.mtuCap = s.mtuCap;
	d.vlStallCount = s.vlStallCount;
	d.hoqLife = s.hoqLife;
	d.operationalVls = s.operationalVls;
	d.enforcementBits = s.enforcementBits;
	d.mkeyViolations = s.mkeyViolations;
	d.pkeyViolations = s.pkeyViolations;
	d.qkeyViolations = s.qkeyViolations;
	d.guidCap = s.guidCap;
	d.clientReregister = s.clientReregister;
	d.subnetTimeout = s.subnetTimeout;
	d.respTimeValue = s.respTimeValue;
	d.localPhyErrors = s.localPhyErrors;
	d.overrunErrors = s.overrunErrors;
	d.maxCreditHint = s.maxCreditHint;
	d.linkRoundTripLatency = s.linkRoundTripLatency;
	d.mlnxStateChangeEnable = s.mlnxStateChangeEnable;
	d.pkeys = s.pkeys;
	d.aliasGuids = s.aliasGuids;
	d.sl2vl = s.sl2vl;
	d.vlArb = s.vlArb ? std::make_unique<VlArbTables>(*s.vlArb) : nullptr;
	d.counters = s.counters;
}

/* One Get of every attribute the SMA and PMA know, as a probe list. */
struct Probe {
	uint8_t mgmtClass;
	uint16_t attr;
	uint32_t am;
	uint8_t portSelect; /* PMA */
};

std::vector<Probe> probesFor(const Node &n)
{
	std::vector<Probe> v;
	auto smp = [&](uint16_t attr, uint32_t am) { v.push_back({ IB_MGMT_CLASS_SUBN_LID_ROUTED, attr, am, 0 }); };
	auto pma = [&](uint16_t attr, uint8_t sel) { v.push_back({ IB_MGMT_CLASS_PERF_MGMT, attr, 0, sel }); };
	smp(IB_SMP_ATTR_NODE_DESC, 0);
	smp(IB_SMP_ATTR_NODE_INFO, 0);
	smp(IB_SMP_ATTR_SWITCH_INFO, 0);
	smp(IB_SMP_ATTR_SM_INFO, 0);
	for (uint32_t b = 0; b < 2; b++)
		smp(IB_SMP_ATTR_GUID_INFO, b);
	for (unsigned p = 0; p <= n.numPorts; p++) {
		smp(IB_SMP_ATTR_PORT_INFO, p);
		smp(IB_SMP_ATTR_MLNX_EXT_PORT_INFO, p);
		smp(IB_SMP_ATTR_PKEY_TABLE, p << 16);
		smp(IB_SMP_ATTR_SL_TO_VL_TABLE, p);
		smp(IB_SMP_ATTR_SL_TO_VL_TABLE, p << 8);
		for (uint32_t blk = 1; blk <= 4; blk++)
			smp(IB_SMP_ATTR_VL_ARB_TABLE, blk << 16 | p);
	}
	for (uint32_t b = 0; b < 4; b++)
		smp(IB_SMP_ATTR_LINEAR_FORWARD_TABLE, b);
	smp(IB_SMP_ATTR_MCAST_FORWARD_TABLE, 0);
	pma(IB_PMA_CLASS_PORT_INFO, 0);
	for (unsigned p = 0; p <= n.numPorts; p++) {
		pma(IB_PMA_PORT_COUNTERS, static_cast<uint8_t>(p));
		pma(IB_PMA_PORT_COUNTERS_EXT, static_cast<uint8_t>(p));
	}
	pma(IB_PMA_PORT_COUNTERS, IB_PMA_ALL_PORTS);
	pma(IB_PMA_PORT_COUNTERS_EXT, IB_PMA_ALL_PORTS);
	return v;
}

} /* namespace */

void buildDefault(Subnet &subnet)
{
	TopologyError err;
	if (buildSubnet(tmpl().topo, subnet, err))
		setupFailed("the default topology does not build: " + err.str());
}

void bringUp(Subnet &subnet)
{
	const Subnet &up = tmpl().up;
	const auto &from = up.nodes();
	const auto &to = subnet.nodes();
	if (from.size() != to.size())
		setupFailed("bringUp: not a fresh default subnet");
	for (size_t i = 0; i < from.size(); i++) {
		const Node &s = *from[i];
		Node &d = *to[i];
		if (s.name != d.name || s.numPorts != d.numPorts || s.type != d.type)
			setupFailed("bringUp: not a fresh default subnet");
		d.desc = s.desc;
		d.sysImageGuid = s.sysImageGuid;
		d.vendorId = s.vendorId;
		d.deviceId = s.deviceId;
		d.revision = s.revision;
		d.partitionCap = s.partitionCap;
		d.trapTid = s.trapTid;
		if (s.sw)
			*d.sw = *s.sw;
		for (unsigned n = s.firstPort(); n <= s.numPorts; n++)
			copyPortState(d.port(n), s.port(n));
	}
}

void checkBringUp()
{
	Subnet &ref = tmpl().up;
	Subnet fast;
	buildDefault(fast);
	bringUp(fast);
	size_t compared = 0;
	for (size_t i = 0; i < ref.nodes().size(); i++) {
		Node &a = *ref.nodes()[i];
		Node &b = *fast.nodes()[i];
		for (unsigned in = a.firstPort(); in <= a.numPorts; in++) {
			Port &pa = a.port(in);
			Port &pb = b.port(in);
			if (pa.lid != pb.lid || pa.state != pb.state || pa.physState != pb.physState ||
			    (pa.peer == nullptr) != (pb.peer == nullptr) ||
			    (pa.peer && (pa.peer->node->index != pb.peer->node->index || pa.peer->num != pb.peer->num)))
				setupFailed("checkBringUp: " + a.name + " port " + std::to_string(in) + " differs");
			for (const Probe &pr : probesFor(a)) {
				Packet pkt;
				bool isSmp = pr.mgmtClass == IB_MGMT_CLASS_SUBN_LID_ROUTED;
				pkt.srcQp = pkt.dstQp = isSmp ? IB_QP0 : IB_QP1;
				pkt.slid = 1;
				pkt.dlid = pa.lid ? pa.lid : 1;
				ib_mad_hdr &h = *madHdr(pkt.mad);
				h.base_version = 1;
				h.mgmt_class = pr.mgmtClass;
				h.class_version = 1;
				h.method = IB_MGMT_METHOD_GET;
				h.tid = 0x77;
				h.attr_id = pr.attr;
				h.attr_mod = pr.am;
				if (!isSmp)
					pkt.mad[kPmaDataOffset + 1] = pr.portSelect;
				Mad ra{}, rb{};
				MadResult xa = processMad(ref, pa, pkt, ra);
				MadResult xb = processMad(fast, pb, pkt, rb);
				if (xa != xb || (xa == MadResult::Reply && ra != rb))
					setupFailed("checkBringUp: " + a.name + " attribute " +
						    std::to_string(pr.attr) + " modifier " + std::to_string(pr.am) +
						    " asked on port " + std::to_string(in) +
						    " differs from MiniSm's subnet");
				compared++;
			}
		}
	}
	if (compared < 100)
		setupFailed("checkBringUp: compared too little");
}

ClockRewind::ClockRewind()
{
	start = emu::Clock::now();
}

ClockRewind::~ClockRewind()
{
	test::ManualClock::advance(start - emu::Clock::now());
}

void buildAndBringUp(fabric::Subnet &subnet)
{
	buildDefault(subnet);
	bringUp(subnet);
}

bool tracing()
{
	static const bool on = [] {
		const char *t = getenv("IBEMU_FUZZ_TRACE");
		return t && *t == '1';
	}();
	return on;
}

void initOnce()
{
	static bool done = false;
	if (done)
		return;
	done = true;
	tmpl();
	checkBringUp();
}

} /* namespace ibemu::fuzz */
