// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// The MAD layer of a local HCA port: where a MAD written by a client leaves
// for the fabric (postSend), and where one from the fabric is dispatched to
// an agent (receive -> process -> dispatch).
#include "emu/mad_port.h"

#include "emu/mad_rmpp.h"
#include "emu/work_queue.h"
#include "fabric/process_mad.h"
#include "fabric/smi.h"
#include "fabric/subnet.h"

#include <boost/asio/post.hpp>

#include <cerrno>
#include <cstring>

namespace ibemu::emu {

using fabric::Packet;

namespace {

constexpr uint32_t kMaxHiTid = (1u << 24) - 1;
constexpr uint8_t kMaxMgmtVersion = 0x83;
constexpr uint8_t kMaxMgmtClass = 0x50;

bool isVendorRange2(uint8_t c)
{
	return c >= IB_MGMT_CLASS_VENDOR_RANGE2_START && c <= IB_MGMT_CLASS_VENDOR_RANGE2_END;
}

uint32_t ouiOf(const std::array<uint8_t, 3> &o)
{
	return uint32_t(o[0]) << 16 | uint32_t(o[1]) << 8 | o[2];
}

uint64_t tidOf(const uint8_t *mad)
{
	return overlay<ib_mad_hdr>(mad)->tid.get();
}

} /* namespace */

/* ---------------- hi_tid table ---------------- */

uint32_t MadClients::alloc(MadAgent *agent)
{
	if (agents_.size() >= kMaxHiTid)
		return 0;
	while (agents_.count(next_))
		next_ = next_ == kMaxHiTid ? 1 : next_ + 1;
	uint32_t id = next_;
	agents_.emplace(id, agent);
	next_ = next_ == kMaxHiTid ? 1 : next_ + 1;
	return id;
}

void MadClients::free(uint32_t hiTid)
{
	agents_.erase(hiTid);
}

MadAgent *MadClients::find(uint32_t hiTid) const
{
	auto it = agents_.find(hiTid);
	return it == agents_.end() ? nullptr : it->second;
}

size_t madDataOffset(uint8_t mgmtClass)
{
	switch (mgmtClass) {
	case IB_MGMT_CLASS_SUBN_ADM:
		return 56;
	case IB_MGMT_CLASS_DEVICE_MGMT:
	case IB_MGMT_CLASS_DEVICE_ADM:
	case IB_MGMT_CLASS_BIS:
		return 64;
	default:
		return isVendorRange2(mgmtClass) ? 40 : 24;
	}
}

bool isRmppClass(uint8_t mgmtClass)
{
	return mgmtClass == IB_MGMT_CLASS_SUBN_ADM || mgmtClass == IB_MGMT_CLASS_DEVICE_MGMT ||
		mgmtClass == IB_MGMT_CLASS_DEVICE_ADM || mgmtClass == IB_MGMT_CLASS_BIS || isVendorRange2(mgmtClass);
}

/* ---------------- agents ---------------- */

MadSend::~MadSend() = default;

MadAgent::MadAgent(MadPort &port, uint8_t qpn, uint32_t hiTid, AgentClient *client, MemoryBudget *budget)
	: port_(port), qpn_(qpn), hiTid_(hiTid), client_(client), budget_(budget)
{}

MadAgent::~MadAgent() = default;

MadPort::MadPort(boost::asio::io_context &io, fabric::Subnet &subnet, fabric::Port &port, MadClients &clients)
	: io_(io), subnet_(subnet), port_(port), clients_(clients), alive_(std::make_shared<bool>(true)),
	  timeoutTimer_(io)
{
	/* the kernel's own SMI and GSI agents (agent.c) take two hi_tids per port */
	kernelAgentTids_[0] = clients_.alloc(nullptr);
	kernelAgentTids_[1] = clients_.alloc(nullptr);
	port_.host = this;
}

MadPort::~MadPort()
{
	*alive_ = false;
	if (port_.host == this)
		port_.host = nullptr;
	for (auto &[p, a] : agents_)
		clients_.free(a->hiTid_);
	clients_.free(kernelAgentTids_[0]);
	clients_.free(kernelAgentTids_[1]);
}

int MadPort::registerAgent(uint8_t qpn, const MadRegistration *reg, uint8_t rmppVersion, uint32_t flags,
			   AgentClient *client, MemoryBudget *budget, MadAgent **out)
{
	constexpr uint32_t kUserRmpp = 1;
	if (qpn > 1)
		return -EINVAL;
	if (rmppVersion && rmppVersion != IB_MGMT_RMPP_VERSION)
		return -EINVAL;
	if (reg) {
		uint8_t c = reg->mgmtClass;
		if (reg->classVersion >= kMaxMgmtVersion)
			return -EINVAL;
		if (c >= kMaxMgmtClass && c != IB_MGMT_CLASS_SUBN_DIRECTED_ROUTE)
			return -EINVAL;
		if (c == 0)
			return -EINVAL;
		if (isVendorRange2(c) && ouiOf(reg->oui) == 0)
			return -EINVAL;
		if (rmppVersion && !isRmppClass(c))
			return -EINVAL;
		if ((qpn == 0) != isSmpClass(c))
			return -EINVAL;
	} else if (flags & kUserRmpp) {
		return -EINVAL;
	}

	auto agent = std::make_unique<MadAgent>(*this, qpn, 0, client, budget);
	agent->rmppVersion_ = rmppVersion;
	agent->userRmpp_ = flags & kUserRmpp;
	uint32_t hiTid = clients_.alloc(agent.get());
	if (!hiTid)
		return -ENOMEM;
	agent->hiTid_ = hiTid;

	if (reg) {
		TableKey key{ reg->classVersion, reg->mgmtClass, isVendorRange2(reg->mgmtClass) ? ouiOf(reg->oui) : 0 };
		auto it = table_.find(key);
		if (it == table_.end() && isVendorRange2(reg->mgmtClass)) {
			unsigned ouis = 0;
			for (const auto &[k, m] : table_)
				if (k.classVersion == key.classVersion && k.mgmtClass == key.mgmtClass)
					ouis++;
			if (ouis >= 8) { /* "All OUI slots in use" */
				clients_.free(hiTid);
				return -ENOMEM;
			}
		}
		if (it != table_.end())
			for (unsigned m = 0; m < 128; m++)
				if (reg->methods[m] && it->second[m]) { /* "Method %d already in use" */
					clients_.free(hiTid);
					return -EINVAL;
				}
		MethodTable &t = table_.try_emplace(key, MethodTable{}).first->second;
		for (unsigned m = 0; m < 128; m++)
			if (reg->methods[m])
				t[m] = agent.get();
		agent->hasReg_ = true;
		agent->reg_ = *reg;
	}
	*out = agent.get();
	agents_.emplace(agent.get(), std::move(agent));
	return 0;
}

void MadPort::unregisterAgent(MadAgent *agent)
{
	if (agent->hasReg_) { /* only the table its registration went into */
		const MadRegistration &reg = agent->reg_;
		auto it = table_.find(
			{ reg.classVersion, reg.mgmtClass, isVendorRange2(reg.mgmtClass) ? ouiOf(reg.oui) : 0 });
		if (it != table_.end()) {
			for (auto &slot : it->second)
				if (slot == agent)
					slot = nullptr;
			if (std::all_of(it->second.begin(), it->second.end(), [](MadAgent *a) { return !a; }))
				table_.erase(it);
		}
	}
	clients_.free(agent->hiTid_);
	/* its sends are flushed: they and their timers die with the agent */
	agents_.erase(agent);
}

MadAgent *MadPort::findRequestAgent(const uint8_t *mad) const
{
	const ib_mad_hdr &h = *overlay<ib_mad_hdr>(mad);
	uint32_t oui = 0;
	if (isVendorRange2(h.mgmt_class))
		oui = uint32_t(mad[37]) << 16 | uint32_t(mad[38]) << 8 | mad[39];
	auto it = table_.find({ h.class_version, h.mgmt_class, oui });
	if (it == table_.end())
		return nullptr;
	return it->second[h.method & 0x7f];
}

/* ---------------- GIDs and addresses ---------------- */

unsigned MadPort::gidTableLen() const
{
	return port_.guidCap;
}

bool MadPort::gid(unsigned index, fabric::Gid &out) const
{
	if (index >= gidTableLen())
		return false;
	uint64_t guid = index == 0 ? port_.guid : index < port_.aliasGuids.size() ? port_.aliasGuids[index] : 0;
	if (!guid)
		return false;
	overlay<be64>(out.data())->set(port_.gidPrefix);
	overlay<be64>(out.data() + 8)->set(guid);
	return true;
}

Packet MadPort::packetFor(const MadAgent &agent, const MadAddress &ah, const uint8_t *mad) const
{
	Packet pkt;
	memcpy(pkt.mad.data(), mad, kMadSize);
	const ib_smp &s = *overlay<ib_smp>(mad);
	bool drStart = s.mgmt_class == IB_MGMT_CLASS_SUBN_DIRECTED_ROUTE &&
		(smpIsResponse(s) ? s.dr_dlid.get() : s.dr_slid.get()) == IB_LID_PERMISSIVE;
	if (drStart) {
		pkt.slid = pkt.dlid = IB_LID_PERMISSIVE;
	} else {
		pkt.dlid = ah.lid;
		uint16_t mask = static_cast<uint16_t>((1u << port_.lmc) - 1);
		pkt.slid = port_.lid ? static_cast<uint16_t>(port_.lid | (ah.pathBits & mask)) : IB_LID_PERMISSIVE;
	}
	pkt.sl = ah.sl;
	pkt.srcQp = agent.qpn();
	pkt.dstQp = ah.remoteQpn;
	pkt.qkey = pkt.dstQp == IB_QP0 ? 0 : IB_QP1_QKEY;
	pkt.pkey = ah.pkeyIndex < port_.pkeys.size() ? port_.pkeys[ah.pkeyIndex] : 0xffff;
	if (ah.grh) {
		pkt.grh = true;
		gid(ah.gidIndex, pkt.sgid);
		pkt.dgid = ah.gid;
		pkt.hopLimit = ah.hopLimit;
		pkt.trafficClass = ah.trafficClass;
		pkt.flowLabel = ah.flowLabel;
	}
	return pkt;
}

MadAddress MadPort::sourceOf(const Packet &pkt) const
{
	MadAddress a;
	a.lid = pkt.slid;
	a.sl = pkt.sl;
	if (pkt.dlid != IB_LID_PERMISSIVE)
		a.pathBits = static_cast<uint8_t>(pkt.dlid & ((1u << port_.lmc) - 1));
	a.remoteQpn = pkt.srcQp;
	a.remoteQkey = pkt.qkey;
	a.pkeyIndex = 0;
	for (size_t i = 0; i < port_.pkeys.size(); i++)
		if (port_.pkeys[i] == pkt.pkey) {
			a.pkeyIndex = static_cast<uint16_t>(i);
			break;
		}
	if (pkt.grh) {
		a.grh = true;
		for (unsigned i = 0; i < gidTableLen(); i++) {
			fabric::Gid g;
			if (gid(i, g) && g == pkt.dgid) {
				a.gidIndex = static_cast<uint8_t>(i);
				break;
			}
		}
		a.hopLimit = pkt.hopLimit;
		a.trafficClass = pkt.trafficClass;
		a.gid = pkt.sgid;
		a.flowLabel = pkt.flowLabel;
	}
	return a;
}

/* ---------------- sending ---------------- */

void MadPort::transmit(MadAgent &agent, const MadAddress &ah, const uint8_t *mad)
{
	subnet_.send(port_, packetFor(agent, ah, mad));
}

void MadPort::armTimer(const std::shared_ptr<MadSend> &send, uint32_t ms)
{
	disarmTimer(*send);
	send->deadline = Clock::now() + std::chrono::milliseconds(ms);
	send->waiting = true;
	waiting_.emplace(send->deadline, send);
	scheduleTimeouts();
}

void MadPort::disarmTimer(MadSend &send)
{
	if (!send.waiting)
		return;
	send.waiting = false;
	auto [from, to] = waiting_.equal_range(send.deadline);
	for (auto it = from; it != to;) {
		auto s = it->second.lock();
		if (s && s.get() != &send) {
			++it;
			continue;
		}
		it = waiting_.erase(it); /* ours, or one whose agent went away */
		if (s)
			return;
	}
}

/* The timer goes off for the earliest deadline; an earlier arming that is
 * still pending is left alone (it finds nothing due, and re-arms). */
void MadPort::scheduleTimeouts()
{
	if (waiting_.empty())
		return;
	Clock::time_point first = waiting_.begin()->first;
	if (timeoutArmed_ && timeoutTimer_.expiry() <= first)
		return;
	timeoutArmed_ = true;
	timeoutTimer_.expires_at(first);
	timeoutTimer_.async_wait([this, alive = std::weak_ptr<bool>(alive_)](const boost::system::error_code &ec) {
		auto a = alive.lock();
		if (ec || !a || !*a)
			return; /* re-armed (the new wait is pending), or the port is gone */
		timeoutArmed_ = false;
		timeoutsDue();
	});
}

void MadPort::timeoutsDue()
{
	Clock::time_point now = Clock::now();
	while (!waiting_.empty() && waiting_.begin()->first <= now) {
		std::shared_ptr<MadSend> s = waiting_.begin()->second.lock();
		waiting_.erase(waiting_.begin());
		if (!s) /* its agent went away */
			continue;
		s->waiting = false;
		if (!s->done)
			timeout(*s->agent, s);
	}
	scheduleTimeouts();
}

void MadPort::completeLater(const std::shared_ptr<MadSend> &send, SendStatus status)
{
	std::weak_ptr<MadSend> weak = send;
	send->done = true;
	queueWork(io_, [this, weak, status] {
		if (auto s = weak.lock())
			completeSend(*s->agent, s.get(), status);
	});
}

void MadPort::completeSend(MadAgent &agent, MadSend *send, SendStatus status)
{
	auto [from, to] = agent.sends_.equal_range(send->tid);
	for (auto it = from; it != to; ++it) {
		if (it->second.get() != send)
			continue;
		std::shared_ptr<MadSend> keep = it->second;
		agent.sends_.erase(it);
		keep->done = true;
		disarmTimer(*keep);
		if (agent.client_)
			agent.client_->madSendDone(agent, keep->cookie, status);
		return;
	}
}

void MadPort::deliver(MadAgent &agent, MadRecv &&recv)
{
	if (agent.client_)
		agent.client_->madReceived(agent, std::move(recv));
}

void MadPort::timeout(MadAgent &agent, const std::shared_ptr<MadSend> &send)
{
	if (send->rmppActive)
		return rmpp::sendTimeout(*this, agent, send);
	if (send->retriesLeft == 0)
		return completeSend(agent, send.get(), SendStatus::ResponseTimeout);
	send->retriesLeft--;
	transmit(agent, send->ah, send->msg.data());
	armTimer(send, send->timeoutMs);
}

/*
 * kernel handle_outgoing_dr_smp(): an SMP that starts with a directed
 * segment gets the SMI send step here; if its route ends at this very node
 * (hop count 0, or a response that is home) the local SMA answers it and
 * nothing reaches the wire.
 */
int MadPort::outgoingDrSmp(MadAgent &agent, const std::shared_ptr<MadSend> &send, bool &handled)
{
	handled = false;
	ib_smp &s = *overlay<ib_smp>(send->msg.data());
	bool response = smpIsResponse(s);
	if ((response ? s.dr_dlid.get() : s.dr_slid.get()) != IB_LID_PERMISSIVE)
		return 0;
	if (!fabric::smi::prepareSend(s, false, port_.num))
		return -EINVAL;
	bool local = response ? s.hop_ptr == 0 : s.hop_ptr == s.hop_cnt + 1;
	if (!local)
		return 0;

	Packet pkt;
	memcpy(pkt.mad.data(), send->msg.data(), kMadSize);
	pkt.srcQp = pkt.dstQp = IB_QP0;
	Mad reply;
	fabric::MadResult r = fabric::processMad(subnet_, port_, pkt, reply);
	MadRecv recv;
	recv.src.lid = IB_LID_PERMISSIVE;
	recv.src.pkeyIndex = send->ah.pkeyIndex;
	bool toSender = r == fabric::MadResult::Reply;
	if (toSender)
		recv.mad.assign(reply.begin(), reply.end());
	else if (r == fabric::MadResult::PassUp)
		recv.mad.assign(pkt.mad.begin(), pkt.mad.end());

	handled = true;
	agent.sends_.emplace(send->tid, send);
	std::weak_ptr<MadSend> weak = send;
	send->done = true;
	queueWork(io_, [this, weak, toSender, recv = std::move(recv)]() mutable {
		auto sent = weak.lock();
		if (!sent)
			return;
		MadAgent &a = *sent->agent;
		if (toSender)
			deliver(a, std::move(recv));
		else if (!recv.mad.empty())
			dispatch(nullptr, std::move(recv));
		completeSend(a, sent.get(), SendStatus::Success);
	});
	return 0;
}

int MadPort::postSend(MadAgent &agent, std::shared_ptr<MadSend> send)
{
	const uint8_t *mad = send->msg.data();
	uint8_t cls = mad[1];
	if (agent.rmppVersion_ && !isRmppClass(cls))
		return -EINVAL;
	send->agent = &agent;
	send->tid = tidOf(mad);
	send->mgmtClass = cls;
	send->retriesLeft = send->retries;

	if (cls == IB_MGMT_CLASS_SUBN_DIRECTED_ROUTE) {
		bool handled;
		if (int rc = outgoingDrSmp(agent, send, handled))
			return rc;
		if (handled)
			return 0;
	}
	agent.sends_.emplace(send->tid, send);
	if (send->rmppActive) {
		rmpp::startSend(*this, agent, send);
		return 0;
	}
	transmit(agent, send->ah, mad);
	if (send->timeoutMs) {
		send->awaitingResponse = true;
		armTimer(send, send->timeoutMs);
	} else {
		completeLater(send, SendStatus::Success);
	}
	return 0;
}

void MadPort::cancelSend(MadAgent &agent, uint64_t cookie)
{
	for (auto &[tid, s] : agent.sends_)
		if (s->cookie == cookie && !s->done) {
			disarmTimer(*s);
			return completeLater(s, SendStatus::Flushed);
		}
}

void MadPort::modifySend(MadAgent &agent, uint64_t cookie, uint32_t timeoutMs)
{
	for (auto &[tid, s] : agent.sends_)
		if (s->cookie == cookie && !s->done && s->awaitingResponse && !s->rmppActive) {
			s->timeoutMs = timeoutMs;
			return armTimer(s, timeoutMs);
		}
}

/* ---------------- receiving ---------------- */

void MadPort::receive(fabric::Port &, const Packet &pkt)
{
	/* like the kernel's receive completion: handled later, from the loop */
	std::weak_ptr<bool> alive = alive_;
	queueWork(io_, [this, alive, pkt] {
		auto a = alive.lock();
		if (a && *a)
			process(pkt);
	});
}

void MadPort::process(const Packet &pkt)
{
	const ib_mad_hdr &h = *madHdr(pkt.mad);
	/* validate_mad() */
	if (h.base_version != 1)
		return;
	if (isSmpClass(h.mgmt_class) != (pkt.dstQp == IB_QP0))
		return;
	if (h.mgmt_class == IB_MGMT_CLASS_CM && h.attr_id.get() != IB_PMA_CLASS_PORT_INFO &&
	    h.method != IB_MGMT_METHOD_SEND)
		return;

	/* The HCA's own agents first (the driver's process_mad). PerfMgt requests
	 * go to a user agent instead when one registered for them. */
	bool pmaClaimed = h.mgmt_class == IB_MGMT_CLASS_PERF_MGMT && !isResponseMad(h) &&
		findRequestAgent(pkt.mad.data());
	Mad reply;
	switch (fabric::processMad(subnet_, port_, pkt, reply, pmaClaimed)) {
	case fabric::MadResult::Consumed:
		return;
	case fabric::MadResult::Reply:
		subnet_.respond(port_, pkt, reply);
		return;
	case fabric::MadResult::PassUp:
		break;
	}
	MadRecv recv;
	recv.src = sourceOf(pkt);
	recv.mad.assign(pkt.mad.begin(), pkt.mad.end());
	dispatch(&pkt, std::move(recv));
}

/* rcv_has_same_gid(): does a received MAD come from where a send went?
 * A response to our request matches on the path bits it arrived on (LMC)
 * or on our own GID; anything else matches on the remote LID or GID. */
bool MadPort::sameRemote(const MadSend &s, const uint8_t *mad, const MadAddress &src) const
{
	bool sendResp = isResponseMad(*overlay<ib_mad_hdr>(s.msg.data()));
	bool recvResp = isResponseMad(*overlay<ib_mad_hdr>(mad));
	if (sendResp == recvResp || s.ah.grh != src.grh)
		return false;
	if (!sendResp) {
		if (!s.ah.grh) {
			unsigned mask = (1u << port_.lmc) - 1;
			return ((s.ah.pathBits ^ src.pathBits) & mask) == 0;
		}
		fabric::Gid ours, arrived;
		return gid(s.ah.gidIndex, ours) && gid(src.gidIndex, arrived) && ours == arrived;
	}
	return s.ah.grh ? s.ah.gid == src.gid : s.ah.lid == src.lid;
}

MadSend *MadPort::findSend(MadAgent &agent, const uint8_t *mad, const MadAddress &src, bool anyState)
{
	uint64_t tid = tidOf(mad);
	uint8_t cls = mad[1];
	auto [from, to] = agent.sends_.equal_range(tid);
	for (auto it = from; it != to; ++it) {
		const std::shared_ptr<MadSend> &s = it->second;
		if (s->tid != tid || s->mgmtClass != cls || (s->done && !anyState))
			continue;
		if (!anyState && !s->awaitingResponse)
			continue;
		/* directed-route MADs may carry permissive LIDs: no address check */
		if (cls != IB_MGMT_CLASS_SUBN_DIRECTED_ROUTE && !sameRemote(*s, mad, src))
			continue;
		return s.get();
	}
	return nullptr;
}

void MadPort::dispatch(const Packet *pkt, MadRecv &&recv)
{
	const uint8_t *mad = recv.mad.data();
	const ib_mad_hdr &h = *overlay<ib_mad_hdr>(mad);
	bool response = isResponseMad(h);

	/* find_mad_agent(): responses by hi_tid, requests by registration */
	MadAgent *agent;
	if (response) {
		agent = clients_.find(static_cast<uint32_t>(h.tid.get() >> 32));
		if (agent && &agent->port() != this)
			agent = nullptr;
	} else {
		agent = findRequestAgent(mad);
	}
	if (!agent) {
		Mad reply;
		Mad in;
		memcpy(in.data(), mad, kMadSize);
		if (pkt && !response && fabric::unmatchedResponse(in, reply))
			subnet_.respond(port_, *pkt, reply);
		return;
	}

	bool rmppMad = isRmppClass(h.mgmt_class) && rmpp::active(mad);
	if (agent->kernelRmpp() && rmppMad) {
		switch (rmpp::receive(*this, *agent, recv)) {
		case rmpp::RecvResult::Consumed:
			return;
		case rmpp::RecvResult::PassThrough:
		case rmpp::RecvResult::Completed:
			break;
		}
		mad = recv.mad.data();
	}

	if (!response)
		return deliver(*agent, std::move(recv));

	/* ib_mad_complete_recv(): a response must answer an outstanding request */
	MadSend *send = findSend(*agent, mad, recv.src, false);
	if (!send) {
		if (!agent->kernelRmpp() && rmppMad) /* the agent does RMPP itself */
			deliver(*agent, std::move(recv));
		return;
	}
	send->done = true;
	disarmTimer(*send);
	deliver(*agent, std::move(recv));
	completeSend(*agent, send, SendStatus::Success);
}

} /* namespace ibemu::emu */
