// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// The SMA's traps (IBA 14.2.5.1, Notice): a Trap() SMP to the master SM's
// LID, from the management port, once the port is Active and knows its SM.
#include "fabric/sma.h"

#include "fabric/capability.h"
#include "fabric/smp_attrs.h"
#include "fabric/subnet.h"

#include <algorithm>
#include <cstring>

namespace ibemu::fabric {

namespace {

void sendTrap(Subnet &subnet, Node &node, Port &from, uint16_t trapNum, uint8_t type, const uint8_t *details,
	      size_t detailsLen)
{
	Port &mgmt = node.mgmtPort(from.num);
	if (node.silent || mgmt.smLid == 0 || mgmt.lid == 0 || mgmt.state != PortState::Active)
		return;
	Packet pkt;
	pkt.slid = mgmt.lid;
	pkt.dlid = mgmt.smLid;
	pkt.sl = mgmt.masterSmSl;
	pkt.srcQp = IB_QP0;
	pkt.dstQp = IB_QP0;
	ib_smp &s = *smp(pkt.mad);
	s.base_version = 1;
	s.mgmt_class = IB_MGMT_CLASS_SUBN_LID_ROUTED;
	s.class_version = 1;
	s.method = IB_MGMT_METHOD_TRAP;
	s.tid = ++node.trapTid;
	s.attr_id = IB_SMP_ATTR_NOTICE;
	ib_notice &n = *overlay<ib_notice>(s.data);
	n.generic_type = IB_NOTICE_GENERIC | type;
	n.producer_type = static_cast<uint32_t>(node.type);
	n.trap_num = trapNum;
	n.issuer_lid = mgmt.lid;
	memcpy(n.data_details, details, std::min(detailsLen, sizeof(n.data_details)));
	subnet.sendFromNode(node.isSwitch() ? node.port(0) : from, pkt);
}

} /* namespace */

void sendTrap128(Subnet &subnet, Node &sw)
{
	uint8_t details[2];
	overlay<be16>(details)->set(sw.port(0).lid);
	sendTrap(subnet, sw, sw.port(0), 128, IB_NOTICE_TYPE_URGENT, details, sizeof(details));
}

void sendTrap144(Subnet &subnet, Port &port, uint32_t oldCapMask)
{
	(void)oldCapMask;
	if (!(port.capMask & IB_PORT_CAP_MASK_NOTICE_SUP))
		return;
	uint8_t details[14] = {};
	overlay<be16>(details + 2)->set(port.lid);
	overlay<be32>(details + 6)->set(port.capMask);
	overlay<be16>(details + 12)->set(port.capMask2);
	sendTrap(subnet, *port.node, port, 144, IB_NOTICE_TYPE_INFO, details, sizeof(details));
}

void sendTrap256(Subnet &subnet, Node &node, Port &arrival, const ib_smp &req)
{
	uint8_t details[54] = {};
	Port &mgmt = node.mgmtPort(arrival.num);
	overlay<be16>(details + 2)->set(mgmt.lid);
	overlay<be16>(details + 4)->set(req.dr_slid.get());
	details[6] = req.method;
	overlay<be16>(details + 8)->set(req.attr_id.get());
	overlay<be32>(details + 10)->set(req.attr_mod.get());
	overlay<be64>(details + 14)->set(req.mkey.get());
	if (req.mgmt_class == IB_MGMT_CLASS_SUBN_DIRECTED_ROUTE) {
		unsigned hops = std::min<unsigned>(req.hop_cnt, 30);
		details[23] = static_cast<uint8_t>(0x80 | (req.hop_cnt > 30 ? 0x40 : 0) | hops);
		memcpy(details + 24, req.return_path, hops);
	}
	sendTrap(subnet, node, arrival, 256, IB_NOTICE_TYPE_SECURITY, details, sizeof(details));
}

} /* namespace ibemu::fabric */
