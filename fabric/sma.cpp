// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// Subnet management agent: SubnGet/SubnSet of every node's attributes.
//
// Set semantics follow the soft SMA of the kernel's qib driver and IBA
// 14.2.5: every valid field is applied, every invalid one sets status 0x001c
// (invalid attribute value) and is left alone, and the response is a fresh
// Get of the attribute.
#include "fabric/sma.h"

#include "fabric/capability.h"
#include "fabric/smp_attrs.h"
#include "fabric/subnet.h"

#include <algorithm>
#include <cstring>

namespace ibemu::fabric {

namespace {

constexpr uint16_t kInvalid = IB_MGMT_MAD_STATUS_INVALID_ATTRIB_VALUE;
constexpr uint16_t kUnsupported = IB_MGMT_MAD_STATUS_UNSUPPORTED_METHOD_ATTRIB;

/* One SMP being answered. */
struct SmpCall {
	Subnet &subnet;
	Node &node;
	Port &arrival;
	const ib_smp &req;
	ib_smp &resp;
	bool isSet;
	bool hideMkey = false; /* M_Key protect bits 1 and a wrong key: Get shows 0 */

	uint32_t am() const { return req.attr_mod.get(); }
	uint8_t *data() { return resp.data; }
	const uint8_t *in() const { return req.data; }
};

/* IBA 14.2.4: returns false for a violation (the SMP then gets no answer). */
bool checkMkey(SmpCall &c)
{
	Port &mgmt = c.node.mgmtPort(c.arrival.num);
	if (mgmt.mkey == 0 || c.req.mkey.get() == mgmt.mkey)
		return true;
	if (!c.isSet && mgmt.mkeyProtect < 2) {
		c.hideMkey = mgmt.mkeyProtect == 1;
		return true;
	}
	if (mgmt.mkeyViolations != 0xffff)
		mgmt.mkeyViolations++;
	return false;
}

/* ---------------- NodeDescription, NodeInfo ---------------- */

uint16_t nodeDescription(SmpCall &c)
{
	if (c.isSet)
		return kUnsupported;
	memcpy(c.data(), c.node.desc.data(), std::min<size_t>(c.node.desc.size(), 64));
	return 0;
}

uint16_t nodeInfo(SmpCall &c)
{
	if (c.isSet)
		return kUnsupported;
	ib_node_info &ni = *overlay<ib_node_info>(c.data());
	ni.base_version = 1;
	ni.class_version = 1;
	ni.node_type = static_cast<uint8_t>(c.node.type);
	ni.num_ports = c.node.numPorts;
	ni.sys_guid = c.node.sysImageGuid;
	ni.node_guid = c.node.nodeGuid;
	ni.port_guid = c.arrival.guid;
	ni.partition_cap = c.node.partitionCap;
	ni.device_id = c.node.deviceId;
	ni.revision = c.node.revision;
	ni.local_port_num = c.arrival.num;
	ni.vendor_id = c.node.vendorId;
	return 0;
}

/* ---------------- PortInfo ---------------- */

/* PortInfo:LinkSpeedSupported, LinkSpeedExtSupported */
uint8_t speedSupportedBits(const Port &p)
{
	return linkSpeedMaskUpTo(p.speedSupported);
}
uint8_t extSpeedSupportedBits(const Port &p)
{
	return linkSpeedExtMaskUpTo(p.speedSupported);
}

void encodePortInfo(const Node &node, const Port &p, uint8_t localPortNum, bool hideMkey, ib_port_info &pi)
{
	bool ext = node.mgmtPort(p.num).capMask & IB_PORT_EXTENDED_SPEEDS_SUP;

	pi.mkey = hideMkey ? 0 : p.mkey;
	pi.gid_prefix = p.gidPrefix;
	pi.lid = p.lid;
	pi.sm_lid = p.smLid;
	pi.cap_mask = p.capMask;
	pi.diag_code = p.diagCode;
	pi.mkey_lease_period = p.mkeyLeasePeriod;
	pi.local_port_num = localPortNum;
	pi.link_width_enabled = p.linkWidthEnabled;
	pi.link_width_supported = p.linkWidthSupported;
	pi.link_width_active = p.linkWidthActive; /* the last trained width, even when down */
	pi.linkspeed_portstate = nibbles(speedSupportedBits(p), static_cast<uint8_t>(p.state));
	pi.portphysstate_linkdown = nibbles(static_cast<uint8_t>(p.physState), p.linkDownDefault);
	pi.mkeyprot_resv_lmc = static_cast<uint8_t>((p.mkeyProtect << 6) | (p.lmc & 7));
	pi.linkspeedactive_enabled = nibbles(linkSpeedBits(p.speedActive), p.linkSpeedEnabled);
	pi.neighbormtu_mastersmsl = nibbles(p.neighborMtu, p.masterSmSl);
	pi.vlcap_inittype = nibbles(p.vlCap, p.initType);
	pi.vl_high_limit = p.vlHighLimit;
	pi.vl_arb_high_cap = p.vlArbHighCap;
	pi.vl_arb_low_cap = p.vlArbLowCap;
	pi.inittypereply_mtucap = nibbles(p.initTypeReply, p.mtuCap);
	pi.vlstallcnt_hoqlife = static_cast<uint8_t>((p.vlStallCount << 5) | (p.hoqLife & 0x1f));
	pi.operationalvl_pei_peo_fpi_fpo = nibbles(p.operationalVls, p.enforcementBits);
	pi.mkey_violations = p.mkeyViolations;
	pi.pkey_violations = p.pkeyViolations;
	pi.qkey_violations = p.qkeyViolations;
	pi.guid_cap = p.guidCap;
	pi.clientrereg_resv_subnetto = p.subnetTimeout & 0x1f;
	pi.resv_resptimevalue = p.respTimeValue & 0x1f;
	pi.localphyerrors_overrunerrors = nibbles(p.localPhyErrors, p.overrunErrors);
	pi.max_credit_hint = p.maxCreditHint;
	pi.link_roundtrip_latency = p.linkRoundTripLatency;
	pi.cap_mask2 = p.capMask2;
	if (ext) {
		pi.link_speed_ext_active_supported = nibbles(linkSpeedExtBits(p.speedActive), extSpeedSupportedBits(p));
		pi.link_speed_ext_enabled = p.linkSpeedExtEnabled & 0x1f;
	}
}

/* PortInfo:PortState and PortPhysicalState of a Set (IBA 14.2.5.6, qib). */
uint16_t setPortStates(SmpCall &c, Port &p, PortState ps, uint8_t phys)
{
	bool port0 = c.node.isSwitch() && p.num == 0;
	if (static_cast<uint8_t>(ps) > 4)
		return kInvalid;
	if (phys && ps != PortState::NoChange && ps != PortState::Down)
		return kInvalid;
	if (phys > 3)
		return kInvalid;
	if (port0) /* the switch management port is always up */
		return ps == PortState::Init ? kInvalid : 0;

	switch (ps) {
	case PortState::NoChange:
		break;
	case PortState::Down:
		if (phys == 0)
			c.subnet.bounceLink(p);
		break;
	case PortState::Init:
		return kInvalid;
	case PortState::Armed:
		if (p.state == PortState::Armed)
			break;
		if (p.state != PortState::Init)
			return kInvalid;
		c.subnet.setLogicalState(p, PortState::Armed);
		break;
	case PortState::Active:
		if (p.state == PortState::Active)
			break;
		if (p.state != PortState::Armed)
			return kInvalid;
		c.subnet.setLogicalState(p, PortState::Active);
		break;
	}
	if (phys == static_cast<uint8_t>(PhysState::Disabled))
		c.subnet.setDisabled(p, true);
	else if (phys == static_cast<uint8_t>(PhysState::Polling) || phys == static_cast<uint8_t>(PhysState::Sleep)) {
		if (p.physState == PhysState::Disabled)
			c.subnet.setDisabled(p, false);
		else if (ps == PortState::Down)
			c.subnet.bounceLink(p);
	}
	return 0;
}

uint16_t setPortInfo(SmpCall &c, Port &p)
{
	const ib_port_info &pi = *overlay<ib_port_info>(c.in());
	bool lidPort = !c.node.isSwitch() || p.num == 0;
	uint16_t status = 0;

	p.mkey = pi.mkey;
	p.gidPrefix = pi.gid_prefix;
	p.mkeyLeasePeriod = pi.mkey_lease_period;
	if (lidPort) {
		uint16_t lid = pi.lid;
		if (lid == 0 || lid >= IB_MULTICAST_LID_BASE) {
			status |= kInvalid;
		} else {
			p.lid = lid;
			p.lmc = pi.mkeyprot_resv_lmc & 7;
			if (c.node.isSwitch() && !c.node.sw->enhancedPort0)
				p.lmc = 0; /* base port 0 has no LMC (IBA 14.2.5.6) */
		}
		uint16_t smLid = pi.sm_lid;
		if (smLid == 0 || smLid >= IB_MULTICAST_LID_BASE) {
			status |= kInvalid;
		} else {
			p.smLid = smLid;
			p.masterSmSl = loNibble(pi.neighbormtu_mastersmsl);
		}
		p.subnetTimeout = pi.clientrereg_resv_subnetto & 0x1f;
	}

	bool renegotiate = false;
	uint8_t we = pi.link_width_enabled;
	if (we == 0xff) {
		renegotiate |= p.linkWidthEnabled != p.linkWidthSupported;
		p.linkWidthEnabled = p.linkWidthSupported;
	} else if (we) {
		if (we & ~p.linkWidthSupported) {
			status |= kInvalid;
		} else {
			renegotiate |= p.linkWidthEnabled != we;
			p.linkWidthEnabled = we;
		}
	}
	uint8_t se = loNibble(pi.linkspeedactive_enabled);
	if (se == 0xf) {
		renegotiate |= p.linkSpeedEnabled != speedSupportedBits(p);
		p.linkSpeedEnabled = speedSupportedBits(p);
	} else if (se) {
		if (se & ~speedSupportedBits(p)) {
			status |= kInvalid;
		} else {
			renegotiate |= p.linkSpeedEnabled != se;
			p.linkSpeedEnabled = se;
		}
	}
	if (c.node.mgmtPort(p.num).capMask & IB_PORT_EXTENDED_SPEEDS_SUP) {
		uint8_t ee = pi.link_speed_ext_enabled & 0x1f;
		uint8_t want = ee == 0x1f ? extSpeedSupportedBits(p) : ee == 0x1e ? 0 : ee;
		if (ee && (want & ~extSpeedSupportedBits(p))) {
			status |= kInvalid;
		} else if (ee) {
			renegotiate |= p.linkSpeedExtEnabled != want;
			p.linkSpeedExtEnabled = want;
		}
	}

	uint8_t ldd = loNibble(pi.portphysstate_linkdown);
	if (ldd == 1 || ldd == 2)
		p.linkDownDefault = ldd;
	else if (ldd)
		status |= kInvalid;

	p.mkeyProtect = pi.mkeyprot_resv_lmc >> 6;
	p.vlHighLimit = pi.vl_high_limit;

	uint8_t mtu = hiNibble(pi.neighbormtu_mastersmsl);
	if (mtu < kMtu256 || mtu > p.mtuCap)
		status |= kInvalid;
	else
		p.neighborMtu = mtu;

	uint8_t ovls = hiNibble(pi.operationalvl_pei_peo_fpi_fpo);
	if (ovls > p.vlCap)
		status |= kInvalid;
	else if (ovls)
		p.operationalVls = ovls;
	if (c.node.isSwitch() && p.num != 0) {
		p.enforcementBits = loNibble(pi.operationalvl_pei_peo_fpi_fpo);
		p.hoqLife = pi.vlstallcnt_hoqlife & 0x1f;
		p.vlStallCount = pi.vlstallcnt_hoqlife >> 5;
	}

	if (pi.mkey_violations.get() == 0)
		p.mkeyViolations = 0;
	if (pi.pkey_violations.get() == 0)
		p.pkeyViolations = 0;
	if (pi.qkey_violations.get() == 0)
		p.qkeyViolations = 0;
	p.localPhyErrors = hiNibble(pi.localphyerrors_overrunerrors);
	p.overrunErrors = loNibble(pi.localphyerrors_overrunerrors);

	if (renegotiate)
		c.subnet.enabledChanged(p);

	status |= setPortStates(c, p, static_cast<PortState>(loNibble(pi.linkspeed_portstate)),
				hiNibble(pi.portphysstate_linkdown));
	return status;
}

uint16_t portInfo(SmpCall &c)
{
	uint32_t am = c.am() & 0x7fffffff; /* bit 31: SM supports extended speeds */
	Port *p;
	if (c.node.isSwitch()) {
		if (am > c.node.numPorts)
			return kInvalid;
		p = &c.node.port(am);
	} else {
		if (am == 0)
			p = &c.arrival;
		else if (am <= c.node.numPorts)
			p = &c.node.port(am);
		else
			return kInvalid;
	}
	uint16_t status = 0;
	if (c.isSet)
		status = setPortInfo(c, *p);
	ib_port_info &out = *overlay<ib_port_info>(c.data());
	encodePortInfo(c.node, *p, c.arrival.num, c.hideMkey, out);
	if (c.isSet && (c.req.data[51] & 0x80)) /* echo ClientReregister, o14-12.2.1 */
		out.clientrereg_resv_subnetto |= 0x80;
	if (c.isSet)
		c.subnet.portChanged(*p, c.req.data[51] & 0x80);
	return status;
}

/* ---------------- SwitchInfo and the forwarding tables ---------------- */

uint16_t switchInfo(SmpCall &c)
{
	if (!c.node.isSwitch())
		return kUnsupported;
	SwitchState &st = *c.node.sw;
	if (c.isSet) {
		const ib_switch_info &si = *overlay<ib_switch_info>(c.in());
		st.linearFdbTop = std::min<uint16_t>(si.linear_fdb_top, st.linearFdbCap - 1);
		st.defaultPort = si.default_port;
		st.defaultMcastPrimaryPort = si.default_mcast_primary_port;
		st.defaultMcastNotPrimaryPort = si.default_mcast_not_primary_port;
		st.lifeTimeValue = si.lifetime_psc_optsl2vl >> 3;
		if (si.lifetime_psc_optsl2vl & IB_SWITCH_PSC) /* write 1 to clear */
			st.portStateChange = false;
		st.mcastFdbTop = si.mcast_fdb_top;
	}
	ib_switch_info &si = *overlay<ib_switch_info>(c.data());
	si.linear_fdb_cap = st.linearFdbCap;
	si.random_fdb_cap = st.randomFdbCap;
	si.mcast_fdb_cap = st.mcastFdbCap;
	si.linear_fdb_top = st.linearFdbTop;
	si.default_port = st.defaultPort;
	si.default_mcast_primary_port = st.defaultMcastPrimaryPort;
	si.default_mcast_not_primary_port = st.defaultMcastNotPrimaryPort;
	si.lifetime_psc_optsl2vl = static_cast<uint8_t>(
		(st.lifeTimeValue << 3) | (st.portStateChange ? IB_SWITCH_PSC : 0) | (st.optimizedSl2Vl & 3));
	si.lids_per_port = st.lidsPerPort;
	si.partition_enforcement_cap = st.partitionEnforcementCap;
	si.enforcement_caps_port0 = static_cast<uint8_t>((st.enforcementCaps << 4) |
							 (st.enhancedPort0 ? IB_SWITCH_ENHANCED_PORT0 : 0));
	si.mcast_fdb_top = st.mcastFdbTop;
	return 0;
}

uint16_t linearForwardingTable(SmpCall &c)
{
	if (!c.node.isSwitch())
		return kUnsupported;
	SwitchState &st = *c.node.sw;
	uint32_t block = c.am();
	if (block >= (st.linearFdbCap + kLftEntriesPerBlock - 1) / kLftEntriesPerBlock)
		return kInvalid;
	size_t base = size_t(block) * kLftEntriesPerBlock;
	if (c.isSet) {
		if (st.lft.size() < base + kLftEntriesPerBlock)
			st.lft.resize(base + kLftEntriesPerBlock, 0xff);
		memcpy(&st.lft[base], c.in(), kLftEntriesPerBlock);
	}
	for (unsigned i = 0; i < kLftEntriesPerBlock; i++)
		c.data()[i] = st.lftEntry(static_cast<uint16_t>(base + i));
	return 0;
}

uint16_t multicastForwardingTable(SmpCall &c)
{
	if (!c.node.isSwitch())
		return kUnsupported;
	SwitchState &st = *c.node.sw;
	unsigned positions = (c.node.numPorts + 16) / 16;
	uint32_t position = c.am() >> 28;
	uint32_t block = c.am() & 0x1ff;
	if (block >= st.mcastFdbCap / kMftEntriesPerBlock || position >= positions)
		return kInvalid;
	if (c.isSet) {
		size_t need = size_t(block + 1) * kMftEntriesPerBlock * positions;
		if (st.mft.size() < need)
			st.mft.resize(need, 0);
	}
	for (unsigned i = 0; i < kMftEntriesPerBlock; i++) {
		size_t idx = (size_t(block) * kMftEntriesPerBlock + i) * positions + position;
		be16 *entry = overlay<be16>(c.data() + 2 * i);
		if (c.isSet)
			st.mft[idx] = overlay<be16>(c.in() + 2 * i)->get();
		*entry = idx < st.mft.size() ? st.mft[idx] : 0;
	}
	return 0;
}

/* ---------------- P_Key, GUID, SL2VL, VLArb tables ---------------- */

uint16_t pkeyTable(SmpCall &c)
{
	Port *p = &c.arrival;
	uint32_t block = c.am() & 0xffff;
	if (c.node.isSwitch()) {
		uint32_t portNum = c.am() >> 16;
		if (portNum > c.node.numPorts)
			return kInvalid;
		p = &c.node.port(portNum);
	}
	unsigned size = p->pkeyCap();
	if (block * kPkeysPerBlock >= size)
		return kInvalid;
	unsigned base = block * kPkeysPerBlock;
	unsigned n = std::min(kPkeysPerBlock, size - base);
	if (c.isSet) {
		if (p->pkeys.size() < base + n)
			p->pkeys.resize(base + n, 0);
		for (unsigned i = 0; i < n; i++)
			p->pkeys[base + i] = overlay<be16>(c.in() + 2 * i)->get();
		while (p->pkeys.size() > 1 && p->pkeys.back() == 0)
			p->pkeys.pop_back();
		c.subnet.portChanged(*p);
	}
	for (unsigned i = 0; i < n; i++) {
		unsigned idx = base + i;
		*overlay<be16>(c.data() + 2 * i) = idx < p->pkeys.size() ? p->pkeys[idx] : 0;
	}
	return 0;
}

uint16_t guidInfo(SmpCall &c)
{
	Port &p = c.node.mgmtPort(c.arrival.num);
	uint32_t block = c.am();
	if (block * kGuidsPerBlock >= p.guidCap)
		return kInvalid;
	unsigned base = block * kGuidsPerBlock;
	unsigned n = std::min<unsigned>(kGuidsPerBlock, p.guidCap - base);
	if (c.isSet) {
		if (p.aliasGuids.size() < base + n)
			p.aliasGuids.resize(base + n, 0);
		for (unsigned i = 0; i < n; i++)
			if (base + i != 0) /* index 0 is the port GUID, read-only */
				p.aliasGuids[base + i] = overlay<be64>(c.in() + 8 * i)->get();
	}
	for (unsigned i = 0; i < n; i++) {
		unsigned idx = base + i;
		uint64_t g = idx == 0 ? p.guid : idx < p.aliasGuids.size() ? p.aliasGuids[idx] : 0;
		*overlay<be64>(c.data() + 8 * i) = g;
	}
	return 0;
}

uint16_t slToVlTable(SmpCall &c)
{
	Sl2Vl *table;
	if (c.node.isSwitch()) {
		uint32_t in = (c.am() >> 8) & 0xff, out = c.am() & 0xff;
		if (in > c.node.numPorts || out > c.node.numPorts)
			return kInvalid;
		uint16_t key = static_cast<uint16_t>(in << 8 | out);
		auto it = c.node.sw->sl2vl.find(key);
		if (it == c.node.sw->sl2vl.end()) {
			if (!c.isSet) {
				const Sl2Vl &def = c.node.port(out).sl2vl;
				for (unsigned i = 0; i < 8; i++)
					c.data()[i] = nibbles(def[2 * i], def[2 * i + 1]);
				return 0;
			}
			it = c.node.sw->sl2vl.emplace(key, c.node.port(out).sl2vl).first;
		}
		table = &it->second;
	} else {
		if (!(c.arrival.capMask & IB_PORT_SL_MAP_SUP))
			return IB_MGMT_MAD_STATUS_UNSUPPORTED_METHOD;
		table = &c.arrival.sl2vl;
	}
	if (c.isSet)
		for (unsigned i = 0; i < 8; i++) {
			(*table)[2 * i] = hiNibble(c.in()[i]);
			(*table)[2 * i + 1] = loNibble(c.in()[i]);
		}
	for (unsigned i = 0; i < 8; i++)
		c.data()[i] = nibbles((*table)[2 * i], (*table)[2 * i + 1]);
	return 0;
}

uint16_t vlArbitrationTable(SmpCall &c)
{
	Port *p = &c.arrival;
	if (c.node.isSwitch()) {
		uint32_t portNum = c.am() & 0xffff;
		if (portNum > c.node.numPorts)
			return kInvalid;
		p = &c.node.port(portNum);
	}
	uint32_t sel = c.am() >> 16; /* 1 low 0-31, 2 low 32-63, 3 high 0-31, 4 high 32-63 */
	if (sel < 1 || sel > 4)
		return kInvalid;
	unsigned cap = sel <= 2 ? p->vlArbLowCap : p->vlArbHighCap;
	unsigned first = (sel == 2 || sel == 4) ? kVlArbEntriesPerBlock : 0;
	if (cap <= first)
		return kInvalid;
	unsigned n = std::min(kVlArbEntriesPerBlock, cap - first);
	if (c.isSet) {
		if (!p->vlArb)
			p->vlArb = std::make_unique<VlArbTables>();
		auto &blk = (*p->vlArb)[sel - 1];
		for (unsigned i = 0; i < n; i++) {
			blk[i].vl = c.in()[2 * i] & 0xf;
			blk[i].weight = c.in()[2 * i + 1];
		}
	}
	for (unsigned i = 0; i < n; i++) {
		VlArbEntry e;
		if (p->vlArb)
			e = (*p->vlArb)[sel - 1][i];
		c.data()[2 * i] = e.vl;
		c.data()[2 * i + 1] = e.weight;
	}
	return 0;
}

/* Mellanox ExtendedPortInfo: what an SM reads to decide on FDR10. Devices
 * with Mellanox's vendor id answer it; the model has no FDR10 unless a
 * link trained at FDR10, and a Set only changes StateChangeEnable. */
uint16_t mlnxExtPortInfo(SmpCall &c)
{
	if (c.node.vendorId != kDefaultVendorId)
		return kUnsupported;
	uint32_t am = c.am();
	Port *p = &c.arrival;
	if (c.node.isSwitch()) {
		if (am > c.node.numPorts)
			return kInvalid;
		p = &c.node.port(am);
	} else if (am && am <= c.node.numPorts) {
		p = &c.node.port(am);
	} else if (am) {
		return kInvalid;
	}
	if (c.isSet)
		p->mlnxStateChangeEnable = overlay<ib_mlnx_ext_port_info>(c.in())->state_change_enable & 1;
	ib_mlnx_ext_port_info &x = *overlay<ib_mlnx_ext_port_info>(c.data());
	bool fdr10 = p->speedSupported == Speed::FDR10;
	x.state_change_enable = p->mlnxStateChangeEnable;
	x.link_speed_supported = fdr10 ? 1 : 0;
	x.link_speed_enabled = fdr10 ? 1 : 0;
	x.link_speed_active = p->speedActive == Speed::FDR10 && p->linkUp() ? 1 : 0;
	return 0;
}

} /* namespace */

MadResult smaProcess(Subnet &subnet, Port &port, const Packet &in, Mad &reply)
{
	const ib_smp &req = *smp(in.mad);
	Node &node = *port.node;

	switch (req.method) {
	case IB_MGMT_METHOD_GET:
	case IB_MGMT_METHOD_SET:
		break;
	case IB_MGMT_METHOD_TRAP_REPRESS:
		if (req.attr_id.get() == IB_SMP_ATTR_NOTICE)
			return MadResult::Consumed;
		[[fallthrough]];
	default:
		if (req.method & IB_MGMT_METHOD_RESP || req.method == IB_MGMT_METHOD_TRAP ||
		    req.method == IB_MGMT_METHOD_REPORT)
			return MadResult::PassUp; /* for an SM or tool on this node */
		break;
	}
	if (req.base_version != 1)
		return MadResult::Consumed;

	reply = in.mad;
	ib_smp &resp = *smp(reply);
	resp.method = IB_MGMT_METHOD_GET_RESP;
	uint16_t dir = req.mgmt_class == IB_MGMT_CLASS_SUBN_DIRECTED_ROUTE ? IB_SMP_DIRECTION : 0;
	SmpCall c{ subnet, node, port, req, resp, req.method == IB_MGMT_METHOD_SET };

	uint16_t status = 0;
	if (req.class_version != 1) {
		status = IB_MGMT_MAD_STATUS_BAD_VERSION;
	} else if (req.method != IB_MGMT_METHOD_GET && req.method != IB_MGMT_METHOD_SET) {
		status = IB_MGMT_MAD_STATUS_UNSUPPORTED_METHOD;
	} else {
		if (!checkMkey(c)) {
			sendTrap256(subnet, node, port, req);
			return MadResult::Consumed;
		}
		memset(resp.data, 0, sizeof(resp.data));
		switch (req.attr_id.get()) {
		case IB_SMP_ATTR_NODE_DESC:
			status = nodeDescription(c);
			break;
		case IB_SMP_ATTR_NODE_INFO:
			status = nodeInfo(c);
			break;
		case IB_SMP_ATTR_SWITCH_INFO:
			status = switchInfo(c);
			break;
		case IB_SMP_ATTR_GUID_INFO:
			status = guidInfo(c);
			break;
		case IB_SMP_ATTR_PORT_INFO:
			status = portInfo(c);
			break;
		case IB_SMP_ATTR_PKEY_TABLE:
			status = pkeyTable(c);
			break;
		case IB_SMP_ATTR_SL_TO_VL_TABLE:
			status = slToVlTable(c);
			break;
		case IB_SMP_ATTR_VL_ARB_TABLE:
			status = vlArbitrationTable(c);
			break;
		case IB_SMP_ATTR_LINEAR_FORWARD_TABLE:
			status = linearForwardingTable(c);
			break;
		case IB_SMP_ATTR_MCAST_FORWARD_TABLE:
			status = multicastForwardingTable(c);
			break;
		case IB_SMP_ATTR_MLNX_EXT_PORT_INFO:
			status = mlnxExtPortInfo(c);
			break;
		case IB_SMP_ATTR_SM_INFO: {
			Port &mgmt = node.mgmtPort(port.num);
			if (mgmt.capMask & IB_PORT_SM)
				return MadResult::PassUp;
			if (mgmt.capMask & IB_PORT_SM_DISABLED)
				return MadResult::Consumed;
			status = kUnsupported;
			break;
		}
		default:
			status = kUnsupported;
			break;
		}
	}
	if (status == kUnsupported && req.attr_id.get() != IB_SMP_ATTR_SM_INFO)
		memcpy(resp.data, req.data, sizeof(resp.data));
	resp.status = static_cast<uint16_t>(status | dir);
	return MadResult::Reply;
}

} /* namespace ibemu::fabric */
