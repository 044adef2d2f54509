// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// The IB CM: connection IDs and the messages between them (cm.c).
#include "emu/ib_cm.h"

#include "emu/mad_port.h"

#include <cerrno>
#include <cstring>
#include <random>

namespace ibemu::emu {

namespace {

constexpr uint32_t kQp1Qkey = 0x80010000;

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

IbCm::IbCm(boost::asio::io_context &io) : io_(io)
{
	std::random_device rd;
	idOperand_ = rd();
	nextId_ = rd() & 0xffff;
}

IbCm::~IbCm()
{
	while (!agents_.empty())
		removePort(*agents_.begin()->first);
}

void IbCm::addPort(MadPort &port)
{
	MadRegistration reg;
	reg.mgmtClass = IB_MGMT_CLASS_CM;
	reg.classVersion = cm::kClassVersion;
	reg.methods.set(IB_MGMT_METHOD_SEND);
	MadAgent *agent = nullptr;
	if (port.registerAgent(1, &reg, 0, 0, this, nullptr, &agent) == 0)
		agents_[&port] = agent;
}

/* the port goes: its IDs can reach no one, and hear nothing more */
void IbCm::removePort(MadPort &port)
{
	auto it = agents_.find(&port);
	if (it == agents_.end())
		return;
	for (auto &[cookie, id] : cookies_)
		if (id->port == &port)
			id->sendCookie = 0;
	std::erase_if(cookies_, [&](const auto &c) { return c.second->port == &port; });
	for (auto &[lid, id] : ids_)
		if (id->port == &port)
			id->port = nullptr;
	port.unregisterAgent(it->second);
	agents_.erase(it);
}

CmId *IbCm::create(CmHandler *handler)
{
	auto id = std::make_unique<CmId>();
	do
		id->localId = (nextId_++) ^ idOperand_;
	while (id->localId == 0 || ids_.count(id->localId));
	id->handler = handler;
	CmId *raw = id.get();
	ids_[raw->localId] = std::move(id);
	return raw;
}

CmId *IbCm::listenerFor(uint64_t serviceId) const
{
	for (auto &[lid, id] : ids_)
		if (id->state == CmState::Listen && ((serviceId ^ id->serviceId) & id->serviceMask) == 0)
			return id.get();
	return nullptr;
}

CmId *IbCm::find(uint32_t localId) const
{
	auto it = ids_.find(localId);
	return it == ids_.end() ? nullptr : it->second.get();
}

/* cm_destroy_id(): the peer hears what the state means; an outstanding
 * send (a DREQ sent here included: no one is left to retry it) is
 * cancelled at the end */
void IbCm::destroy(CmId *id)
{
	switch (id->state) {
	case CmState::ReqSent:
	case CmState::MraReqRcvd:
		sendRej(*id, cm::REJ_TIMEOUT, nullptr, 0);
		break;
	case CmState::ReqRcvd:
	case CmState::MraReqSent:
	case CmState::RepRcvd:
	case CmState::RepSent:
	case CmState::MraRepRcvd:
		sendRej(*id, cm::REJ_CONSUMER_DEFINED, nullptr, 0);
		break;
	case CmState::Established:
		sendDreq(*id);
		break;
	case CmState::DreqRcvd:
		sendDrep(*id);
		break;
	case CmState::SidrReqRcvd: {
		cm::SidrRep rep;
		rep.status = cm::SIDR_REJECT;
		sendSidrRep(*id, rep);
		break;
	}
	default:
		break;
	}
	cancelSend(*id);
	ids_.erase(id->localId);
}

int IbCm::listen(CmId &id, uint64_t serviceId, uint64_t mask)
{
	if (id.state != CmState::Idle)
		return -EINVAL;
	for (auto &[lid, other] : ids_)
		if (other->state == CmState::Listen &&
		    ((serviceId ^ other->serviceId) & mask & other->serviceMask) == 0)
			return -EBUSY;
	id.serviceId = serviceId & mask;
	id.serviceMask = mask;
	id.state = CmState::Listen;
	return 0;
}

int IbCm::send(CmId &id, const ibemu::Mad &mad, bool withTimeout)
{
	if (!id.port)
		return -ENODEV;
	MadAgent *agent = agents_.at(id.port);
	auto s = std::make_shared<MadSend>();
	s->msg.assign(mad.begin(), mad.end());
	s->ah = id.av;
	s->dataLen = kMadSize - 24;
	if (withTimeout) {
		s->cookie = nextCookie_++;
		s->timeoutMs = id.timeoutMs;
		s->retries = id.maxCmRetries;
	}
	if (int rc = id.port->postSend(*agent, s))
		return rc;
	if (withTimeout) {
		id.sendCookie = s->cookie;
		cookies_[s->cookie] = &id;
	}
	return 0;
}

/* an idle ID's MADs go from port to the peer's CM at av */
int IbCm::aim(CmId &id, MadPort &port, const MadAddress &av)
{
	if (id.state != CmState::Idle)
		return -EINVAL;
	if (!agents_.count(&port))
		return -ENODEV;
	id.port = &port;
	id.av = av;
	id.av.remoteQpn = 1;
	id.av.remoteQkey = kQp1Qkey;
	return 0;
}

void IbCm::reply(MadAgent &agent, const MadAddress &src, const ibemu::Mad &mad)
{
	auto s = std::make_shared<MadSend>();
	s->msg.assign(mad.begin(), mad.end());
	s->ah = src;
	s->ah.remoteQpn = 1;
	s->ah.remoteQkey = kQp1Qkey;
	s->dataLen = kMadSize - 24;
	agent.port().postSend(agent, s);
}

void IbCm::cancelSend(CmId &id)
{
	if (!id.sendCookie)
		return;
	cookies_.erase(id.sendCookie);
	auto it = id.port ? agents_.find(id.port) : agents_.end();
	if (it != agents_.end())
		id.port->cancelSend(*it->second, id.sendCookie);
	id.sendCookie = 0;
}

void IbCm::event(CmId &id, CmEvent ev)
{
	if (id.handler)
		id.handler->cmEvent(id, ev);
}

/* cm_enter_timewait(): the QP numbers stay out of use for the path's
 * lifetime; then TimewaitExit */
void IbCm::enterTimewait(CmId &id)
{
	cancelSend(id);
	id.state = CmState::Timewait;
	id.timewait = std::make_unique<Timer>(io_);
	id.timewait->expires_after(std::chrono::milliseconds(cm::timeToMs(uint8_t(id.packetLifeTime + 1))));
	uint32_t lid = id.localId;
	id.timewait->async_wait([this, lid](const boost::system::error_code &ec) {
		CmId *i = ec ? nullptr : find(lid);
		if (!i || i->state != CmState::Timewait)
			return;
		i->state = CmState::Idle;
		event(*i, { CmEventType::TimewaitExit });
	});
}

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
	id->av.remoteQkey = kQp1Qkey;
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
	id->av.remoteQkey = kQp1Qkey;
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
