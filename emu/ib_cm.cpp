// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// The IB CM's connection IDs (the core of the kernel's
// drivers/infiniband/core/cm.c): its MAD agent on every port, creating,
// finding and destroying IDs (cm_destroy_id() and what the peer hears),
// listening on a service ID, sending a MAD with or without the CM's
// timeout and retries, and timewait (cm_enter_timewait()). The messages
// an ID sends are in ib_cm_send.cpp (ib_send_cm_*()), what arrives in
// ib_cm_recv.cpp (cm_*_handler()).
#include "emu/ib_cm.h"

#include "emu/mad_port.h"
#include "fabric/mad.h"

#include <cerrno>
#include <cstring>
#include <random>

namespace ibemu::emu {

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
	id.av.remoteQkey = IB_QP1_QKEY;
	return 0;
}

void IbCm::reply(MadAgent &agent, const MadAddress &src, const ibemu::Mad &mad)
{
	auto s = std::make_shared<MadSend>();
	s->msg.assign(mad.begin(), mad.end());
	s->ah = src;
	s->ah.remoteQpn = 1;
	s->ah.remoteQkey = IB_QP1_QKEY;
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

} /* namespace ibemu::emu */
