// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// Performance management agent: ClassPortInfo, PortCounters and
// PortCountersExtended of every port, moved by routing.cpp as packets pass.
#include "fabric/pma.h"

#include "fabric/subnet.h"

#include <algorithm>
#include <cstring>

namespace ibemu::fabric {

namespace {

constexpr uint8_t kPmaRespTimeValue = 18;

template <typename T> T saturatingSum(uint64_t a, uint64_t b)
{
	uint64_t max = static_cast<T>(~T{ 0 });
	uint64_t s = a + b;
	if (s < a || s > max)
		return static_cast<T>(max);
	return static_cast<T>(s);
}

/* Sum of two counter sets, each field saturating at its width (AllPortSelect). */
void accumulate(PortCounters &sum, const PortCounters &c)
{
	sum.symbolErrors = saturatingSum<uint16_t>(sum.symbolErrors, c.symbolErrors);
	sum.linkErrorRecovery = saturatingSum<uint8_t>(sum.linkErrorRecovery, c.linkErrorRecovery);
	sum.linkDowned = saturatingSum<uint8_t>(sum.linkDowned, c.linkDowned);
	sum.rcvErrors = saturatingSum<uint16_t>(sum.rcvErrors, c.rcvErrors);
	sum.rcvRemotePhysErrors = saturatingSum<uint16_t>(sum.rcvRemotePhysErrors, c.rcvRemotePhysErrors);
	sum.rcvSwitchRelayErrors = saturatingSum<uint16_t>(sum.rcvSwitchRelayErrors, c.rcvSwitchRelayErrors);
	sum.xmitDiscards = saturatingSum<uint16_t>(sum.xmitDiscards, c.xmitDiscards);
	sum.xmitConstraintErrors = saturatingSum<uint8_t>(sum.xmitConstraintErrors, c.xmitConstraintErrors);
	sum.rcvConstraintErrors = saturatingSum<uint8_t>(sum.rcvConstraintErrors, c.rcvConstraintErrors);
	sum.localLinkIntegrityErrors = std::min<unsigned>(0xf,
							  sum.localLinkIntegrityErrors + c.localLinkIntegrityErrors);
	sum.excessiveBufferOverruns = std::min<unsigned>(0xf, sum.excessiveBufferOverruns + c.excessiveBufferOverruns);
	sum.vl15Dropped = saturatingSum<uint16_t>(sum.vl15Dropped, c.vl15Dropped);
	sum.xmitData = saturatingSum<uint32_t>(sum.xmitData, c.xmitData);
	sum.rcvData = saturatingSum<uint32_t>(sum.rcvData, c.rcvData);
	sum.xmitPkts = saturatingSum<uint32_t>(sum.xmitPkts, c.xmitPkts);
	sum.rcvPkts = saturatingSum<uint32_t>(sum.rcvPkts, c.rcvPkts);
	sum.xmitWait = saturatingSum<uint32_t>(sum.xmitWait, c.xmitWait);
	sum.extXmitData = saturatingSum<uint64_t>(sum.extXmitData, c.extXmitData);
	sum.extRcvData = saturatingSum<uint64_t>(sum.extRcvData, c.extRcvData);
	sum.extXmitPkts = saturatingSum<uint64_t>(sum.extXmitPkts, c.extXmitPkts);
	sum.extRcvPkts = saturatingSum<uint64_t>(sum.extRcvPkts, c.extRcvPkts);
	sum.extUnicastXmitPkts = saturatingSum<uint64_t>(sum.extUnicastXmitPkts, c.extUnicastXmitPkts);
	sum.extUnicastRcvPkts = saturatingSum<uint64_t>(sum.extUnicastRcvPkts, c.extUnicastRcvPkts);
	sum.extMulticastXmitPkts = saturatingSum<uint64_t>(sum.extMulticastXmitPkts, c.extMulticastXmitPkts);
	sum.extMulticastRcvPkts = saturatingSum<uint64_t>(sum.extMulticastRcvPkts, c.extMulticastRcvPkts);
}

void clearCounters(PortCounters &c, uint16_t sel, uint8_t sel2)
{
	if (sel & IB_PMA_SEL_SYMBOL_ERROR)
		c.symbolErrors = 0;
	if (sel & IB_PMA_SEL_LINK_ERROR_RECOVERY)
		c.linkErrorRecovery = 0;
	if (sel & IB_PMA_SEL_LINK_DOWNED)
		c.linkDowned = 0;
	if (sel & IB_PMA_SEL_PORT_RCV_ERRORS)
		c.rcvErrors = 0;
	if (sel & IB_PMA_SEL_PORT_RCV_REMPHYS_ERRORS)
		c.rcvRemotePhysErrors = 0;
	if (sel & IB_PMA_SEL_PORT_RCV_SWITCH_RELAY_ERRORS)
		c.rcvSwitchRelayErrors = 0;
	if (sel & IB_PMA_SEL_PORT_XMIT_DISCARDS)
		c.xmitDiscards = 0;
	if (sel & IB_PMA_SEL_PORT_XMIT_CONSTRAINT_ERRORS)
		c.xmitConstraintErrors = 0;
	if (sel & IB_PMA_SEL_PORT_RCV_CONSTRAINT_ERRORS)
		c.rcvConstraintErrors = 0;
	if (sel & IB_PMA_SEL_LOCAL_LINK_INTEGRITY_ERRORS)
		c.localLinkIntegrityErrors = 0;
	if (sel & IB_PMA_SEL_EXCESSIVE_BUFFER_OVERRUNS)
		c.excessiveBufferOverruns = 0;
	if (sel & IB_PMA_SEL_PORT_VL15_DROPPED)
		c.vl15Dropped = 0;
	if (sel & IB_PMA_SEL_PORT_XMIT_DATA)
		c.xmitData = 0;
	if (sel & IB_PMA_SEL_PORT_RCV_DATA)
		c.rcvData = 0;
	if (sel & IB_PMA_SEL_PORT_XMIT_PACKETS)
		c.xmitPkts = 0;
	if (sel & IB_PMA_SEL_PORT_RCV_PACKETS)
		c.rcvPkts = 0;
	if (sel2 & IB_PMA_SEL2_PORT_XMIT_WAIT)
		c.xmitWait = 0;
}

void clearExtCounters(PortCounters &c, uint16_t sel)
{
	if (sel & IB_PMA_SELX_PORT_XMIT_DATA)
		c.extXmitData = 0;
	if (sel & IB_PMA_SELX_PORT_RCV_DATA)
		c.extRcvData = 0;
	if (sel & IB_PMA_SELX_PORT_XMIT_PACKETS)
		c.extXmitPkts = 0;
	if (sel & IB_PMA_SELX_PORT_RCV_PACKETS)
		c.extRcvPkts = 0;
	if (sel & IB_PMA_SELX_PORT_UNI_XMIT_PACKETS)
		c.extUnicastXmitPkts = 0;
	if (sel & IB_PMA_SELX_PORT_UNI_RCV_PACKETS)
		c.extUnicastRcvPkts = 0;
	if (sel & IB_PMA_SELX_PORT_MULTI_XMIT_PACKETS)
		c.extMulticastXmitPkts = 0;
	if (sel & IB_PMA_SELX_PORT_MULTI_RCV_PACKETS)
		c.extMulticastRcvPkts = 0;
}

void encodeCounters(const PortCounters &c, ib_pma_portcounters &pc)
{
	pc.symbol_error_counter = c.symbolErrors;
	pc.link_error_recovery_counter = c.linkErrorRecovery;
	pc.link_downed_counter = c.linkDowned;
	pc.port_rcv_errors = c.rcvErrors;
	pc.port_rcv_remphys_errors = c.rcvRemotePhysErrors;
	pc.port_rcv_switch_relay_errors = c.rcvSwitchRelayErrors;
	pc.port_xmit_discards = c.xmitDiscards;
	pc.port_xmit_constraint_errors = c.xmitConstraintErrors;
	pc.port_rcv_constraint_errors = c.rcvConstraintErrors;
	pc.link_overrun_errors = nibbles(c.localLinkIntegrityErrors, c.excessiveBufferOverruns);
	pc.vl15_dropped = c.vl15Dropped;
	pc.port_xmit_data = c.xmitData;
	pc.port_rcv_data = c.rcvData;
	pc.port_xmit_packets = c.xmitPkts;
	pc.port_rcv_packets = c.rcvPkts;
	pc.port_xmit_wait = c.xmitWait;
}

void encodeExtCounters(const PortCounters &c, ib_pma_portcounters_ext &pc)
{
	pc.port_xmit_data = c.extXmitData;
	pc.port_rcv_data = c.extRcvData;
	pc.port_xmit_packets = c.extXmitPkts;
	pc.port_rcv_packets = c.extRcvPkts;
	pc.port_unicast_xmit_packets = c.extUnicastXmitPkts;
	pc.port_unicast_rcv_packets = c.extUnicastRcvPkts;
	pc.port_multicast_xmit_packets = c.extMulticastXmitPkts;
	pc.port_multicast_rcv_packets = c.extMulticastRcvPkts;
}

} /* namespace */

uint16_t pmaCapabilityMask(const Node &node)
{
	uint16_t mask = IB_PMA_CLASS_CAP_EXT_WIDTH | IB_PMA_CLASS_CAP_XMIT_WAIT;
	if (node.isSwitch())
		mask |= IB_PMA_CLASS_CAP_ALLPORTSELECT;
	return mask;
}

MadResult pmaProcess(Subnet &, Port &port, const Packet &in, Mad &reply)
{
	const ib_mad_hdr &h = *madHdr(in.mad);
	Node &node = *port.node;

	if (isResponseMad(h) || h.method == IB_MGMT_METHOD_TRAP || h.method == IB_MGMT_METHOD_REPORT)
		return MadResult::PassUp;
	if (h.base_version != 1)
		return MadResult::Consumed;

	reply = in.mad;
	ib_mad_hdr &r = *madHdr(reply);
	r.method = IB_MGMT_METHOD_GET_RESP;
	uint8_t *out = reply.data() + kPmaDataOffset;
	const uint8_t *req = in.mad.data() + kPmaDataOffset;
	bool isSet = h.method == IB_MGMT_METHOD_SET;
	uint16_t status = 0;

	if (h.class_version != 1) {
		r.status = IB_MGMT_MAD_STATUS_BAD_VERSION;
		return MadResult::Reply;
	}
	if (h.method != IB_MGMT_METHOD_GET && !isSet) {
		r.status = IB_MGMT_MAD_STATUS_UNSUPPORTED_METHOD;
		return MadResult::Reply;
	}

	switch (h.attr_id.get()) {
	case IB_PMA_CLASS_PORT_INFO: {
		if (isSet) {
			status = IB_MGMT_MAD_STATUS_UNSUPPORTED_METHOD_ATTRIB;
			break;
		}
		memset(out, 0, kMadSize - kPmaDataOffset);
		ib_class_port_info &cpi = *overlay<ib_class_port_info>(out);
		cpi.base_version = 1;
		cpi.class_version = 1;
		cpi.capability_mask = pmaCapabilityMask(node);
		cpi.cap_mask2_resp_time = kPmaRespTimeValue;
		break;
	}
	case IB_PMA_PORT_COUNTERS:
	case IB_PMA_PORT_COUNTERS_EXT: {
		bool ext = h.attr_id.get() == IB_PMA_PORT_COUNTERS_EXT;
		uint8_t sel = req[1];
		bool all = sel == IB_PMA_ALL_PORTS;
		if (all ? !node.isSwitch() : !node.hasPort(sel)) {
			status = IB_MGMT_MAD_STATUS_INVALID_ATTRIB_VALUE;
			break;
		}
		uint16_t counterSelect = overlay<be16>(req + 2)->get();
		uint8_t counterSelect2 = ext ? 0 : req[18];
		unsigned first = all ? node.firstPort() : sel;
		unsigned last = all ? node.numPorts : sel;
		PortCounters sum;
		for (unsigned n = first; n <= last; n++) {
			PortCounters &c = node.port(n).counters;
			if (isSet) {
				if (ext)
					clearExtCounters(c, counterSelect);
				else
					clearCounters(c, counterSelect, counterSelect2);
			}
			accumulate(sum, c);
		}
		memset(out, 0, kMadSize - kPmaDataOffset);
		out[1] = sel;
		if (ext) {
			ib_pma_portcounters_ext &pc = *overlay<ib_pma_portcounters_ext>(out);
			pc.counter_select = counterSelect;
			encodeExtCounters(sum, pc);
		} else {
			ib_pma_portcounters &pc = *overlay<ib_pma_portcounters>(out);
			pc.counter_select = counterSelect;
			pc.counter_select2 = counterSelect2;
			encodeCounters(sum, pc);
		}
		break;
	}
	default:
		status = IB_MGMT_MAD_STATUS_UNSUPPORTED_METHOD_ATTRIB;
		break;
	}
	r.status = status;
	return MadResult::Reply;
}

} /* namespace ibemu::fabric */
