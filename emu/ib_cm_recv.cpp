// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// What arrives at the IB CM (cm_recv_handler() and the cm_*_handler()
// functions of the kernel's drivers/infiniband/core/cm.c): a send that
// timed out after its retries, and each CM message from QP1 routed by its
// attribute to the handler that finds its ID (or a listener), moves it on
// in the IBA 12.9 state machine and tells its handler; a message for no
// known connection gets the answer cm.c gives.
#include "emu/ib_cm.h"

#include "emu/mad_port.h"
#include "fabric/mad.h"

#include <cerrno>
#include <cstring>

namespace ibemu::emu {

namespace {

uint16_t attrOf(const uint8_t *mad)
{
	return uint16_t(mad[16] << 8 | mad[17]);
}

uint64_t tidOf(const uint8_t *mad)
{
	uint64_t t = 0;
	for (int i = 0; i < 8; i++)
		t = t << 8 | mad[8 + i];
	return t;
}

/* the CM's own answer to a MAD about a connection it does not know */
ibemu::Mad answerTo(const uint8_t *mad, uint16_t attr)
{
	ibemu::Mad m;
	cm::header(m, attr, tidOf(mad));
	return m;
}

} /* namespace */

/* ---------------- receiving ---------------- */

void IbCm::madSendDone(MadAgent &, uint64_t cookie, SendStatus status)
{
	auto it = cookies_.find(cookie);
	if (it == cookies_.end())
		return; /* cancelled, or a send without an answer to wait for */
	CmId &id = *it->second;
	cookies_.erase(it);
	id.sendCookie = 0;
	if (status != SendStatus::ResponseTimeout)
		return;
	switch (id.state) {
	case CmState::ReqSent:
	case CmState::MraReqRcvd:
		id.state = CmState::Idle;
		return event(id, { CmEventType::ReqError });
	case CmState::RepSent:
	case CmState::MraRepRcvd:
		id.state = CmState::Idle;
		return event(id, { CmEventType::RepError });
	case CmState::DreqSent:
		enterTimewait(id);
		return event(id, { CmEventType::DreqError });
	case CmState::SidrReqSent:
		id.state = CmState::Idle;
		return event(id, { CmEventType::SidrReqError });
	default:
		return;
	}
}

void IbCm::madReceived(MadAgent &agent, MadRecv &&recv)
{
	if (recv.mad.size() < kMadSize)
		return;
	const uint8_t *mad = recv.mad.data();
	switch (attrOf(mad)) {
	case cm::ATTR_REQ:
		return onReq(agent, recv);
	case cm::ATTR_MRA:
		return onMra(mad);
	case cm::ATTR_REJ:
		return onRej(mad);
	case cm::ATTR_REP:
		return onRep(mad);
	case cm::ATTR_RTU:
		return onRtu(mad);
	case cm::ATTR_DREQ:
		return onDreq(agent, recv);
	case cm::ATTR_DREP:
		return onDrep(mad);
	case cm::ATTR_SIDR_REQ:
		return onSidrReq(agent, recv);
	case cm::ATTR_SIDR_REP:
		return onSidrRep(mad);
	default:
		return; /* LAP, APR: not modelled, dropped as unknown */
	}
}

/* cm_req_handler() */
void IbCm::onReq(MadAgent &agent, const MadRecv &recv)
{
	const uint8_t *mad = recv.mad.data();
	cm::Req req = cm::decodeReq(mad);
	/* a REQ seen before (same peer, same ID): cm_dup_req_handler() */
	for (auto &[lid, id] : ids_) {
		if (id->remoteId != req.localCommId || id->remoteCaGuid != req.localCaGuid ||
		    id->state == CmState::Listen)
			continue;
		if (id->state == CmState::MraReqSent && id->lastAttr == cm::ATTR_MRA)
			send(*id, id->lastMad, false);
		return;
	}
	CmId *listener = listenerFor(req.serviceId);
	if (!listener) {
		cm::Rej rej;
		rej.remoteCommId = req.localCommId;
		rej.messageRejected = cm::MSG_REQ;
		rej.reason = cm::REJ_INVALID_SERVICE_ID;
		ibemu::Mad m = answerTo(mad, cm::ATTR_REJ);
		cm::encode(rej, m);
		return reply(agent, recv.src, m);
	}
	CmId *id = create(nullptr);
	id->state = CmState::ReqRcvd;
	id->port = &agent.port();
	id->remoteId = req.localCommId;
	id->remoteCaGuid = req.localCaGuid;
	id->remoteQpn = req.localQpn;
	id->serviceId = req.serviceId;
	id->tid = tidOf(mad);
	id->maxCmRetries = req.maxCmRetries;
	id->packetLifeTime = uint8_t(req.primary.localAckTimeout ? req.primary.localAckTimeout - 1 : 0);
	id->timeoutMs = 2 * cm::timeToMs(id->packetLifeTime) + cm::timeToMs(req.localCmResponseTimeout);
	id->av = recv.src;
	id->av.lid = req.primary.localLid ? req.primary.localLid : recv.src.lid;
	id->av.sl = req.primary.sl;
	id->av.remoteQpn = 1;
	id->av.remoteQkey = IB_QP1_QKEY;
	CmEvent ev{ CmEventType::ReqReceived };
	ev.newId = id;
	ev.req = req;
	event(*listener, ev);
}

void IbCm::onMra(const uint8_t *mad)
{
	cm::Mra m = cm::decodeMra(mad);
	CmId *id = find(m.remoteCommId);
	if (!id)
		return;
	uint32_t ms = 2 * cm::timeToMs(id->packetLifeTime) + cm::timeToMs(m.serviceTimeout);
	MadAgent *agent = id->port ? agents_.at(id->port) : nullptr;
	if (m.messageMraed == cm::MSG_REQ && id->state == CmState::ReqSent) {
		id->state = CmState::MraReqRcvd;
		id->remoteId = m.localCommId;
	} else if (m.messageMraed == cm::MSG_REP && id->state == CmState::RepSent) {
		id->state = CmState::MraRepRcvd;
	} else {
		return;
	}
	if (agent && id->sendCookie)
		id->port->modifySend(*agent, id->sendCookie, ms);
}

/* cm_rej_handler(): a REJ names our ID as its remote one, unless its
 * sender never learnt it (a requester giving up): then its own ID is the
 * one we know as remote */
void IbCm::onRej(const uint8_t *mad)
{
	cm::Rej rej = cm::decodeRej(mad);
	CmId *id = rej.remoteCommId ? find(rej.remoteCommId) : nullptr;
	if (!rej.remoteCommId)
		for (auto &[lid, i] : ids_)
			if (i->remoteId == rej.localCommId && i->state != CmState::Listen)
				id = i.get();
	if (!id)
		return;
	switch (id->state) {
	case CmState::ReqSent:
	case CmState::MraReqRcvd:
	case CmState::RepSent:
	case CmState::MraRepRcvd:
	case CmState::RepRcvd:
	case CmState::ReqRcvd:
	case CmState::MraReqSent:
	case CmState::Established:
		break;
	default:
		return;
	}
	cancelSend(*id);
	id->state = CmState::Idle;
	CmEvent ev{ CmEventType::RejReceived };
	ev.rej = rej;
	event(*id, ev);
}

void IbCm::onRep(const uint8_t *mad)
{
	cm::Rep rep = cm::decodeRep(mad);
	CmId *id = find(rep.remoteCommId);
	if (!id)
		return;
	if (id->state == CmState::Established && id->lastAttr == cm::ATTR_RTU) {
		send(*id, id->lastMad, false); /* our RTU was lost: again */
		return;
	}
	if (id->state != CmState::ReqSent && id->state != CmState::MraReqRcvd)
		return;
	cancelSend(*id);
	id->remoteId = rep.localCommId;
	id->remoteQpn = rep.localQpn;
	id->remoteCaGuid = rep.localCaGuid;
	id->state = CmState::RepRcvd;
	CmEvent ev{ CmEventType::RepReceived };
	ev.rep = rep;
	event(*id, ev);
}

void IbCm::onRtu(const uint8_t *mad)
{
	cm::Short m = cm::decodeShort(mad, cm::ATTR_RTU);
	CmId *id = find(m.remoteCommId);
	if (!id || id->remoteId != m.localCommId)
		return;
	if (id->state != CmState::RepSent && id->state != CmState::MraRepRcvd)
		return;
	cancelSend(*id);
	id->state = CmState::Established;
	event(*id, { CmEventType::RtuReceived });
}

/* cm_dreq_handler(): a DREQ for no connection still gets its DREP */
void IbCm::onDreq(MadAgent &agent, const MadRecv &recv)
{
	const uint8_t *mad = recv.mad.data();
	cm::Short m = cm::decodeShort(mad, cm::ATTR_DREQ);
	CmId *id = find(m.remoteCommId);
	if (!id || id->remoteId != m.localCommId) {
		cm::Short r;
		r.localCommId = m.remoteCommId;
		r.remoteCommId = m.localCommId;
		ibemu::Mad rm = answerTo(mad, cm::ATTR_DREP);
		cm::encode(r, cm::ATTR_DREP, rm);
		return reply(agent, recv.src, rm);
	}
	switch (id->state) {
	case CmState::RepSent:
	case CmState::MraRepRcvd:
	case CmState::Established:
		cancelSend(*id);
		id->state = CmState::DreqRcvd;
		return event(*id, { CmEventType::DreqReceived });
	case CmState::DreqSent: /* both ends at once: each answers the other */
		cancelSend(*id);
		id->state = CmState::DreqRcvd;
		sendDrep(*id);
		return event(*id, { CmEventType::DrepReceived });
	case CmState::Timewait:
		if (id->lastAttr == cm::ATTR_DREP)
			send(*id, id->lastMad, false);
		return;
	default:
		return;
	}
}

void IbCm::onDrep(const uint8_t *mad)
{
	cm::Short m = cm::decodeShort(mad, cm::ATTR_DREP);
	CmId *id = find(m.remoteCommId);
	if (!id || id->state != CmState::DreqSent)
		return;
	enterTimewait(*id);
	event(*id, { CmEventType::DrepReceived });
}

/* cm_sidr_req_handler(): a listener's new ID answers it; with none, the
 * CM answers "unsupported" itself */
void IbCm::onSidrReq(MadAgent &agent, const MadRecv &recv)
{
	const uint8_t *mad = recv.mad.data();
	cm::SidrReq req = cm::decodeSidrReq(mad);
	for (auto &[lid, id] : ids_) /* one seen before, still being answered */
		if (id->state == CmState::SidrReqRcvd && id->remoteId == req.requestId && id->av.lid == recv.src.lid)
			return;
	CmId *listener = listenerFor(req.serviceId);
	if (!listener) {
		cm::SidrRep rep;
		rep.requestId = req.requestId;
		rep.status = cm::SIDR_UNSUPPORTED;
		rep.serviceId = req.serviceId;
		ibemu::Mad m = answerTo(mad, cm::ATTR_SIDR_REP);
		cm::encode(rep, m);
		return reply(agent, recv.src, m);
	}
	CmId *id = create(nullptr);
	id->state = CmState::SidrReqRcvd;
	id->port = &agent.port();
	id->remoteId = req.requestId;
	id->serviceId = req.serviceId;
	id->tid = tidOf(mad);
	id->av = recv.src;
	id->av.remoteQpn = 1;
	id->av.remoteQkey = IB_QP1_QKEY;
	CmEvent ev{ CmEventType::SidrReqReceived };
	ev.newId = id;
	ev.sidrReq = req;
	event(*listener, ev);
}

void IbCm::onSidrRep(const uint8_t *mad)
{
	cm::SidrRep rep = cm::decodeSidrRep(mad);
	CmId *id = find(rep.requestId);
	if (!id || id->state != CmState::SidrReqSent)
		return;
	cancelSend(*id);
	id->state = CmState::Idle;
	CmEvent ev{ CmEventType::SidrRepReceived };
	ev.sidrRep = rep;
	event(*id, ev);
}

} /* namespace ibemu::emu */

