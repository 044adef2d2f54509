// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// Dispatch of incoming MADs to the node's SMA and PMA, and the receive path
// of nodes with no host MAD stack attached.
#include "fabric/process_mad.h"

#include "fabric/pma.h"
#include "fabric/sma.h"
#include "fabric/subnet.h"

namespace ibemu::fabric {

MadResult processMad(Subnet &subnet, Port &port, const Packet &in, Mad &reply, bool pmaClaimedByHost)
{
	const ib_mad_hdr &h = *madHdr(in.mad);
	if (isSmpClass(h.mgmt_class)) {
		if (in.dstQp != IB_QP0)
			return MadResult::Consumed; /* validate_mad: SMPs only on QP0 */
		return smaProcess(subnet, port, in, reply);
	}
	if (in.dstQp == IB_QP0)
		return MadResult::Consumed; /* and nothing else on QP0 */
	if (h.mgmt_class == IB_MGMT_CLASS_PERF_MGMT && !pmaClaimedByHost)
		return pmaProcess(subnet, port, in, reply);
	return MadResult::PassUp;
}

bool unmatchedResponse(const Mad &in, Mad &reply)
{
	const ib_mad_hdr &h = *madHdr(in);
	if (h.method != IB_MGMT_METHOD_GET && h.method != IB_MGMT_METHOD_SET)
		return false;
	reply = in;
	ib_mad_hdr &r = *madHdr(reply);
	r.method = IB_MGMT_METHOD_GET_RESP;
	uint16_t status = IB_MGMT_MAD_STATUS_UNSUPPORTED_METHOD_ATTRIB;
	if (h.mgmt_class == IB_MGMT_CLASS_SUBN_DIRECTED_ROUTE)
		status |= IB_SMP_DIRECTION;
	r.status = status;
	return true;
}

void idleHostReceive(Subnet &subnet, Port &port, const Packet &pkt)
{
	if (pkt.mad[0] != 1)
		return; /* validate_mad: base version 1 only */
	Mad reply;
	switch (processMad(subnet, port, pkt, reply)) {
	case MadResult::Reply:
		subnet.respond(port, pkt, reply);
		break;
	case MadResult::PassUp:
		if (!isResponseMad(*madHdr(pkt.mad)) && unmatchedResponse(pkt.mad, reply))
			subnet.respond(port, pkt, reply);
		break;
	case MadResult::Consumed:
		break;
	}
}

} /* namespace ibemu::fabric */
