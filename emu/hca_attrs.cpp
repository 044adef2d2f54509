// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// Attributes and counters of a local HCA, read from the fabric.
#include "emu/hca_attrs.h"

#include "emu/host.h"
#include "emu/mad_port.h"
#include "fabric/mad.h"
#include "fabric/node.h"
#include "fabric/pma.h"
#include "fabric/process_mad.h"

#include <cerrno>
#include <iterator>

namespace ibemu::emu {

DeviceAttr queryDevice(const Hca &hca)
{
	const fabric::Node &n = *hca.node;
	DeviceAttr a;
	a.nodeType = n.type;
	a.nodeGuid = n.nodeGuid;
	a.sysImageGuid = n.sysImageGuid;
	a.vendorPartId = n.deviceId;
	a.nodeDesc = n.desc;
	return a;
}

void modifyNodeDesc(Hca &hca, const std::string &desc)
{
	hca.node->desc = desc;
}

PortAttr queryPort(const MadPort &port)
{
	const fabric::Port &p = port.port();
	PortAttr a;
	a.state = p.state;
	a.physState = p.physState;
	a.lid = p.lid;
	a.smLid = p.smLid;
	a.lmc = p.lmc;
	a.smSl = p.masterSmSl;
	a.capMask = p.capMask;
	a.activeWidth = p.linkWidthActive;
	a.activeSpeed = p.speedActive;
	a.gidTblLen = port.gidTableLen();
	a.pkeyTblLen = p.pkeyCap();
	return a;
}

uint16_t queryPkey(const MadPort &port, unsigned index)
{
	const fabric::Port &p = port.port();
	return index < p.pkeys.size() ? p.pkeys[index] : 0;
}

namespace {

/* Where a counter sits in its attribute: sysfs.c's PORT_PMA_ATTR table. */
struct CounterField {
	uint16_t attr;
	uint16_t bitOffset;
	uint8_t width;
};

constexpr uint16_t kPc = IB_PMA_PORT_COUNTERS, kPx = IB_PMA_PORT_COUNTERS_EXT;

/* in PortCounter order */
constexpr CounterField kCounterFields[] = {
	{ kPc, 32, 16 }, /* SymbolError */
	{ kPc, 48, 8 }, /* LinkErrorRecovery */
	{ kPc, 56, 8 }, /* LinkDowned */
	{ kPc, 64, 16 }, /* RcvErrors */
	{ kPc, 80, 16 }, /* RcvRemotePhysicalErrors */
	{ kPc, 96, 16 }, /* RcvSwitchRelayErrors */
	{ kPc, 112, 16 }, /* XmitDiscards */
	{ kPc, 128, 8 }, /* XmitConstraintErrors */
	{ kPc, 136, 8 }, /* RcvConstraintErrors */
	{ kPc, 152, 4 }, /* LocalLinkIntegrityErrors */
	{ kPc, 156, 4 }, /* ExcessiveBufferOverrunErrors */
	{ kPc, 176, 16 }, /* Vl15Dropped */
	{ kPc, 320, 32 }, /* XmitWait */
	{ kPx, 64, 64 }, /* XmitData */
	{ kPx, 128, 64 }, /* RcvData */
	{ kPx, 192, 64 }, /* XmitPackets */
	{ kPx, 256, 64 }, /* RcvPackets */
	{ kPx, 320, 64 }, /* UnicastXmitPackets */
	{ kPx, 384, 64 }, /* UnicastRcvPackets */
	{ kPx, 448, 64 }, /* MulticastXmitPackets */
	{ kPx, 512, 64 }, /* MulticastRcvPackets */
};
static_assert(std::size(kCounterFields) == size_t(PortCounter::MulticastRcvPackets) + 1);

/* sysfs.c get_perf_mad(): a PMA Get with PortSelect = the port, handed to
 * the node's process_mad; the attribute of the reply, or null. */
const uint8_t *perfGet(MadPort &port, uint16_t attr, Mad &reply)
{
	fabric::Port &p = port.port();
	fabric::Packet pkt;
	pkt.srcQp = pkt.dstQp = IB_QP1;
	pkt.slid = pkt.dlid = p.lid;
	ib_mad_hdr &h = *madHdr(pkt.mad);
	h.base_version = 1;
	h.mgmt_class = IB_MGMT_CLASS_PERF_MGMT;
	h.class_version = 1;
	h.method = IB_MGMT_METHOD_GET;
	h.attr_id = attr;
	pkt.mad[kPmaDataOffset + 1] = p.num;
	if (fabric::processMad(port.subnet(), p, pkt, reply) != fabric::MadResult::Reply)
		return nullptr;
	return reply.data() + kPmaDataOffset;
}

} /* namespace */

int queryCounter(MadPort &port, PortCounter counter, uint64_t &value)
{
	const CounterField &f = kCounterFields[static_cast<size_t>(counter)];
	Mad reply;
	const uint8_t *a = perfGet(port, f.attr, reply);
	if (!a)
		return -EINVAL;
	const uint8_t *p = a + f.bitOffset / 8;
	switch (f.width) {
	case 4: /* big-endian bit order: offset 0 is the high nibble */
		value = (*p >> (4 - f.bitOffset % 8)) & 0xf;
		break;
	case 8:
		value = *p;
		break;
	case 16:
		value = overlay<be16>(p)->get();
		break;
	case 32:
		value = overlay<be32>(p)->get();
		break;
	default:
		value = overlay<be64>(p)->get();
	}
	return 0;
}

} /* namespace ibemu::emu */
