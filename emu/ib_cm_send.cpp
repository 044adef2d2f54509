// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// The messages an IB CM ID sends (ib_send_cm_req(), _mra(), _rep(), _rtu(),
// _rej(), _dreq(), _drep(), ib_send_cm_sidr_req() and _sidr_rep() in the
// kernel's drivers/infiniband/core/cm.c): each checks the ID's state in
// the IBA 12.9 state machine, encodes its message (emu/cm_msgs.h), moves
// the ID on and sends it through IbCm::send().
#include "emu/ib_cm.h"

#include "emu/mad_port.h"

#include <cerrno>
#include <cstring>

namespace ibemu::emu {

/* ---------------- sending ---------------- */

int IbCm::sendReq(CmId &id, MadPort &port, const MadAddress &av, cm::Req req)
{
	if (int rc = aim(id, port, av))
		return rc;
	id.serviceId = req.serviceId;
	id.maxCmRetries = req.maxCmRetries;
	id.packetLifeTime = uint8_t(req.primary.localAckTimeout ? req.primary.localAckTimeout - 1 : 0);
	/* cm_send_req: the path's round trip and the peer's answer time */
	id.timeoutMs = 2 * cm::timeToMs(id.packetLifeTime) + cm::timeToMs(req.remoteCmResponseTimeout);
	id.tid = uint64_t(agents_.at(&port)->hiTid()) << 32 | id.localId;
	req.localCommId = id.localId;
	ibemu::Mad mad;
	cm::header(mad, cm::ATTR_REQ, id.tid);
	cm::encode(req, mad);
	if (int rc = send(id, mad, true))
		return rc;
	id.state = CmState::ReqSent;
	return 0;
}

int IbCm::sendMra(CmId &id, uint8_t serviceTimeout)
{
	cm::Mra m;
	m.localCommId = id.localId;
	m.remoteCommId = id.remoteId;
	if (id.state == CmState::ReqRcvd) {
		m.messageMraed = cm::MSG_REQ;
		id.state = CmState::MraReqSent;
	} else if (id.state == CmState::RepRcvd) {
		m.messageMraed = cm::MSG_REP;
	} else {
		return -EINVAL;
	}
	m.serviceTimeout = serviceTimeout;
	cm::header(id.lastMad, cm::ATTR_MRA, id.tid);
	cm::encode(m, id.lastMad);
	id.lastAttr = cm::ATTR_MRA;
	return send(id, id.lastMad, false);
}

int IbCm::sendRep(CmId &id, cm::Rep rep)
{
	if (id.state != CmState::ReqRcvd && id.state != CmState::MraReqSent)
		return -EINVAL;
	rep.localCommId = id.localId;
	rep.remoteCommId = id.remoteId;
	ibemu::Mad mad;
	cm::header(mad, cm::ATTR_REP, id.tid);
	cm::encode(rep, mad);
	if (int rc = send(id, mad, true))
		return rc;
	id.state = CmState::RepSent;
	return 0;
}

int IbCm::sendRtu(CmId &id)
{
	if (id.state != CmState::RepRcvd)
		return -EINVAL;
	cm::Short m;
	m.localCommId = id.localId;
	m.remoteCommId = id.remoteId;
	cm::header(id.lastMad, cm::ATTR_RTU, id.tid);
	cm::encode(m, cm::ATTR_RTU, id.lastMad);
	id.lastAttr = cm::ATTR_RTU;
	if (int rc = send(id, id.lastMad, false))
		return rc;
	id.state = CmState::Established;
	return 0;
}

int IbCm::sendRej(CmId &id, uint16_t reason, const uint8_t *priv, size_t len)
{
	cm::Rej m;
	m.localCommId = id.localId;
	m.remoteCommId = id.remoteId;
	switch (id.state) {
	case CmState::ReqSent:
	case CmState::MraReqRcvd:
	case CmState::ReqRcvd:
	case CmState::MraReqSent:
	case CmState::RepRcvd:
		m.messageRejected = (id.state == CmState::RepRcvd) ? cm::MSG_REP : cm::MSG_REQ;
		break;
	case CmState::RepSent:
	case CmState::MraRepRcvd:
		m.messageRejected = cm::MSG_REQ;
		break;
	default:
		return -EINVAL;
	}
	if (id.state == CmState::ReqSent || id.state == CmState::MraReqRcvd)
		m.remoteCommId = 0;
	if (len > cm::kRejPrivate)
		return -EINVAL;
	if (len)
		memcpy(m.privateData.data(), priv, len);
	m.reason = reason;
	ibemu::Mad mad;
	cm::header(mad, cm::ATTR_REJ, id.tid);
	cm::encode(m, mad);
	cancelSend(id);
	int rc = send(id, mad, false);
	id.state = CmState::Idle;
	return rc;
}

int IbCm::sendDreq(CmId &id)
{
	if (id.state != CmState::Established)
		return -EINVAL;
	cm::Short m;
	m.localCommId = id.localId;
	m.remoteCommId = id.remoteId;
	m.remoteQpn = id.remoteQpn;
	ibemu::Mad mad;
	cm::header(mad, cm::ATTR_DREQ, id.tid);
	cm::encode(m, cm::ATTR_DREQ, mad);
	cancelSend(id);
	int rc = send(id, mad, true);
	id.state = CmState::DreqSent;
	return rc;
}

int IbCm::sendDrep(CmId &id)
{
	if (id.state != CmState::DreqRcvd)
		return -EINVAL;
	cm::Short m;
	m.localCommId = id.localId;
	m.remoteCommId = id.remoteId;
	cm::header(id.lastMad, cm::ATTR_DREP, id.tid);
	cm::encode(m, cm::ATTR_DREP, id.lastMad);
	id.lastAttr = cm::ATTR_DREP;
	int rc = send(id, id.lastMad, false);
	enterTimewait(id);
	return rc;
}

int IbCm::sendSidrReq(CmId &id, MadPort &port, const MadAddress &av, cm::SidrReq req, uint32_t timeoutMs,
		      uint8_t retries)
{
	if (int rc = aim(id, port, av))
		return rc;
	id.serviceId = req.serviceId;
	id.timeoutMs = timeoutMs;
	id.maxCmRetries = retries;
	id.tid = uint64_t(agents_.at(&port)->hiTid()) << 32 | id.localId;
	req.requestId = id.localId;
	ibemu::Mad mad;
	cm::header(mad, cm::ATTR_SIDR_REQ, id.tid);
	cm::encode(req, mad);
	if (int rc = send(id, mad, true))
		return rc;
	id.state = CmState::SidrReqSent;
	return 0;
}

int IbCm::sendSidrRep(CmId &id, cm::SidrRep rep)
{
	if (id.state != CmState::SidrReqRcvd)
		return -EINVAL;
	rep.requestId = id.remoteId;
	rep.serviceId = id.serviceId;
	ibemu::Mad mad;
	cm::header(mad, cm::ATTR_SIDR_REP, id.tid);
	cm::encode(rep, mad);
	id.state = CmState::Idle;
	return send(id, mad, false);
}

} /* namespace ibemu::emu */
