// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// An open umad file: the checks, errnos and byte layouts of the kernel's
// user_mad.c (ib_umad_read, ib_umad_write, ib_umad_ioctl, ib_umad_poll,
// ib_umad_close), on top of the MAD layer in mad_port.cpp.
#include "emu/umad_file.h"

#include "emu/mad_port.h"
#include "emu/mad_rmpp.h"
#include "emu/memory_budget.h"
#include "emu/umad_port.h"
#include "fabric/subnet.h"

#include <boost/asio/io_context.hpp>

#include <cerrno>
#include <cstring>
#include <poll.h>

namespace ibemu::emu {

UmadFile::UmadFile(UmadPort &port, MemoryBudget *budget) : port_(port), budget_(budget)
{
	portLink_ = port_.files_.insert(port_.files_.end(), this);
}

UmadFile::~UmadFile()
{
	/* ib_umad_close(): mark dead, drop the queue, unregister every agent
	 * (which flushes its sends without reports) */
	agentsDead_ = true;
	recv_.clear();
	release(recvBytes_ + sendBytes_);
	for (MadAgent *&a : agents_) {
		if (a)
			port_.mad().unregisterAgent(a);
		a = nullptr;
	}
	sends_.clear();
	sendTids_.clear();
	port_.files_.erase(portLink_);
}

void UmadFile::killed()
{
	/* ib_umad_kill_port(): the device went away under an open file */
	agentsDead_ = true;
	for (MadAgent *&a : agents_) {
		if (a)
			port_.mad().unregisterAgent(a);
		a = nullptr;
	}
	sends_.clear();
	sendTids_.clear();
	release(sendBytes_);
	sendBytes_ = 0;
	if (wakeup_)
		wakeup_();
}

int UmadFile::slotOf(const MadAgent *agent) const
{
	for (unsigned i = 0; i < agents_.size(); i++)
		if (agents_[i] == agent)
			return static_cast<int>(i);
	return -1;
}

/* What a queued packet counts against the bounds. A timeout report counts
 * nothing and is never dropped (the kernel's queue_packet() only limits
 * received MADs): there is at most one per outstanding send, and dropping
 * it would leave its sender waiting forever. */
size_t UmadFile::costOf(const RecvPacket &p)
{
	return p.timeoutReport ? 0 : sizeof(RecvPacket) + p.data.size();
}

void UmadFile::queue(RecvPacket &&p)
{
	size_t cost = costOf(p);
	if (cost && (recv_.size() > MAX_UMAD_RECV_LIST_SIZE || recvBytes_ + cost > kMaxQueuedBytes || !charge(cost)))
		return; /* dropped, as the kernel drops on a full receive list */
	recvBytes_ += cost;
	recv_.push_back(std::move(p));
	if (wakeup_)
		wakeup_();
}

/* ---------------- read ---------------- */

ssize_t UmadFile::read(size_t count, std::vector<uint8_t> &out) const
{
	size_t hs = hdrSize();
	if (count < hs)
		return -EINVAL;
	if (agentsDead_)
		return -EIO;
	if (recv_.empty())
		return -EAGAIN;

	const RecvPacket &p = recv_.front();
	size_t len = p.data.size();
	auto copy = [&](size_t dataLen) {
		out.resize(hs + dataLen);
		memcpy(out.data(), &p.hdr, hs);
		memcpy(out.data() + hs, p.data.data(), dataLen);
	};
	if (len <= kMadSize) {
		if (count < hs + len)
			return -EINVAL; /* stays at the head: no partial reads */
		copy(len);
	} else {
		/* a reassembled RMPP message: header and first segment always,
		 * the rest only if it all fits (copy_recv_mad) */
		if (count < hs + kMadSize)
			return -EINVAL;
		if (count < hs + len) {
			copy(kMadSize);
			return -ENOSPC; /* hdr.length says how much is needed */
		}
		copy(len);
	}
	return static_cast<ssize_t>(hs + len);
}

size_t UmadFile::nextLength() const
{
	return recv_.empty() ? 0 : hdrSize() + recv_.front().data.size();
}

void UmadFile::consume()
{
	if (recv_.empty())
		return;
	size_t cost = costOf(recv_.front());
	recvBytes_ -= cost;
	release(cost);
	recv_.pop_front();
}

void UmadFile::forgetSend(uint64_t cookie)
{
	auto it = sends_.find(cookie);
	if (it == sends_.end())
		return;
	uint64_t tid = overlay<ib_mad_hdr>(it->second.madHdr)->tid.get();
	auto [from, to] = sendTids_.equal_range(tid);
	for (auto t = from; t != to; ++t)
		if (t->second == cookie) {
			sendTids_.erase(t);
			break;
		}
	sendBytes_ -= it->second.bytes;
	release(it->second.bytes);
	sends_.erase(it);
}

bool UmadFile::charge(size_t n)
{
	return !budget_ || budget_->charge(n);
}

void UmadFile::release(size_t n)
{
	if (budget_)
		budget_->release(n);
}

/* ---------------- write ---------------- */

bool UmadFile::isDuplicate(const ib_user_mad_hdr &hdr, const uint8_t *mad) const
{
	/* is_duplicate(): deliberately simple, like the kernel's */
	const ib_mad_hdr &h = *overlay<ib_mad_hdr>(mad);
	bool response = isResponseMad(h);
	auto [from, to] = sendTids_.equal_range(h.tid.get());
	for (auto t = from; t != to; ++t) {
		const Outstanding &o = sends_.at(t->second);
		const ib_mad_hdr &oh = *overlay<ib_mad_hdr>(o.madHdr);
		if (oh.mgmt_class != h.mgmt_class)
			continue;
		bool oldResponse = isResponseMad(oh);
		if (!response && !oldResponse)
			return true;
		if (response && oldResponse) { /* same_destination() */
			if (hdr.grh_present != o.hdr.grh_present)
				continue;
			if (hdr.grh_present ? memcmp(hdr.gid, o.hdr.gid, 16) == 0 : hdr.lid.get() == o.hdr.lid.get())
				return true;
		}
	}
	return false;
}

ssize_t UmadFile::write(const uint8_t *buf, size_t count)
{
	size_t hs = hdrSize();
	if (count < hs + IB_MGMT_RMPP_HDR)
		return -EINVAL;
	ib_user_mad_hdr hdr{};
	memcpy(&hdr, buf, hs);
	if (hdr.id >= IB_UMAD_MAX_AGENTS)
		return -EINVAL;
	const uint8_t *mad = buf + hs;
	MadAgent *agent = agents_[hdr.id];
	if (agentsDead_ || !agent)
		return -EIO;
	MadPort &mp = port_.mad();

	/* the address handle */
	MadAddress ah;
	ah.lid = hdr.lid.get();
	ah.sl = hdr.sl;
	ah.pathBits = hdr.path_bits;
	ah.remoteQpn = hdr.qpn.get();
	ah.pkeyIndex = usePkeyIndex_ ? hdr.pkey_index : 0;
	if (hdr.grh_present) {
		if (hdr.gid_index >= mp.gidTableLen())
			return -EINVAL;
		fabric::Gid unused;
		if (!mp.gid(hdr.gid_index, unused))
			return -ENODATA;
		ah.grh = true;
		ah.gidIndex = hdr.gid_index;
		ah.hopLimit = hdr.hop_limit;
		ah.trafficClass = hdr.traffic_class;
		memcpy(ah.gid.data(), hdr.gid, 16);
		ah.flowLabel = hdr.flow_label.get();
	}

	/* ib_create_send_mad(): sizes */
	uint8_t cls = mad[1];
	size_t hdrLen = madDataOffset(cls);
	if (count < hs + hdrLen)
		return -EINVAL;
	size_t dataLen = count - hs - hdrLen;
	bool rmppActive = false;
	size_t copyFrom = 24;
	if (isRmppClass(cls) && agent->kernelRmpp()) {
		rmppActive = rmpp::active(mad);
		copyFrom = IB_MGMT_RMPP_HDR; /* the MAD layer owns the RMPP header */
	}
	size_t segData = kMadSize - hdrLen;
	size_t pad = dataLen == 0 ? segData : (segData - dataLen % segData) % segData;
	size_t msgSize = hdrLen + dataLen + pad;
	if (!rmppActive && msgSize > kMadSize)
		return -EINVAL;
	if (sends_.size() >= kMaxOutstandingSends || sendBytes_ + msgSize > kMaxOutstandingBytes)
		return -ENOMEM;

	auto send = std::make_shared<MadSend>();
	send->msg.assign(msgSize, 0);
	memcpy(send->msg.data(), mad, 24);
	memcpy(send->msg.data() + copyFrom, mad + copyFrom, count - hs - copyFrom);
	send->ah = ah;
	send->hdrLen = hdrLen;
	send->dataLen = dataLen;
	send->timeoutMs = hdr.timeout_ms;
	send->retries = hdr.retries;
	send->rmppActive = rmppActive;

	/* requests carry the agent's hi_tid in the upper 32 bits of the TID */
	ib_mad_hdr &mh = *overlay<ib_mad_hdr>(send->msg.data());
	if (!isResponseMad(mh))
		mh.tid = (uint64_t(agent->hiTid()) << 32) | (mh.tid.get() & 0xffffffffULL);

	bool userRmppActive = !agent->kernelRmpp() && isRmppClass(cls) && rmpp::active(mad);
	if (!userRmppActive && isDuplicate(hdr, send->msg.data()))
		return -EINVAL;

	if (!charge(msgSize))
		return -ENOMEM; /* its user holds too much already */
	Outstanding o{ agent, hdr, {}, msgSize };
	memcpy(o.madHdr, send->msg.data(), 24);
	uint64_t cookie = nextCookie_++;
	send->cookie = cookie;
	sends_.emplace(cookie, o);
	sendTids_.emplace(mh.tid.get(), cookie);
	sendBytes_ += msgSize;
	if (int rc = mp.postSend(*agent, send)) {
		forgetSend(cookie);
		return rc;
	}
	return static_cast<ssize_t>(count);
}

/* ---------------- completions from the MAD layer ---------------- */

void UmadFile::madSendDone(MadAgent &agent, uint64_t cookie, SendStatus status)
{
	auto it = sends_.find(cookie);
	if (it == sends_.end())
		return;
	if (status != SendStatus::ResponseTimeout)
		return forgetSend(cookie);
	/* send_handler(): the header as written, status ETIMEDOUT, and the
	 * MAD header as sent */
	RecvPacket p;
	p.hdr = it->second.hdr;
	if (!usePkeyIndex_)
		p.hdr.pkey_index = 0;
	p.hdr.status = ETIMEDOUT;
	p.hdr.id = static_cast<uint32_t>(slotOf(&agent));
	p.data.assign(it->second.madHdr, it->second.madHdr + 24);
	p.timeoutReport = true;
	forgetSend(cookie);
	queue(std::move(p));
}

void UmadFile::madReceived(MadAgent &agent, MadRecv &&recv)
{
	int slot = slotOf(&agent);
	if (slot < 0)
		return;
	RecvPacket p;
	ib_user_mad_hdr &h = p.hdr;
	memset(&h, 0, sizeof(h));
	h.id = static_cast<uint32_t>(slot);
	h.length = static_cast<uint32_t>(hdrSize() + recv.mad.size());
	h.qpn = recv.src.remoteQpn;
	h.lid = recv.src.lid;
	h.sl = recv.src.sl;
	h.path_bits = recv.src.pathBits;
	h.pkey_index = usePkeyIndex_ ? recv.src.pkeyIndex : 0;
	if (recv.src.grh) {
		h.grh_present = 1;
		h.gid_index = recv.src.gidIndex;
		h.hop_limit = recv.src.hopLimit;
		h.traffic_class = recv.src.trafficClass;
		memcpy(h.gid, recv.src.gid.data(), 16);
		h.flow_label = recv.src.flowLabel;
	}
	p.data = std::move(recv.mad);
	queue(std::move(p));
}

/* ---------------- ioctl ---------------- */

int UmadFile::registerAgent(const ib_user_mad_reg_req &req, bool v2, uint32_t flags, uint32_t oui,
			    const uint8_t *methodMask, uint32_t &id)
{
	int slot = -1;
	for (unsigned i = 0; i < agents_.size(); i++)
		if (!agents_[i]) {
			slot = static_cast<int>(i);
			break;
		}
	if (slot < 0)
		return -ENOMEM; /* "Max Agents reached" */

	MadRegistration reg;
	bool withReg = req.mgmt_class != 0;
	if (withReg) {
		if (v2 && (oui & 0xff000000))
			return -EINVAL;
		reg.mgmtClass = req.mgmt_class;
		reg.classVersion = req.mgmt_class_version;
		reg.oui = { static_cast<uint8_t>(oui >> 16), static_cast<uint8_t>(oui >> 8),
			    static_cast<uint8_t>(oui) };
		for (unsigned m = 0; m < 128; m++)
			reg.methods[m] = (methodMask[m / 8] >> (m % 8)) & 1;
	}
	MadAgent *agent = nullptr;
	int rc = port_.mad().registerAgent(req.qpn, withReg ? &reg : nullptr, req.rmpp_version, flags, this, budget_,
					   &agent);
	if (rc)
		return rc;
	agents_[slot] = agent;
	id = static_cast<uint32_t>(slot);
	if (!alreadyUsed_) {
		alreadyUsed_ = true;
		if (v2)
			usePkeyIndex_ = true;
	}
	return 0;
}

int UmadFile::ioctl(unsigned cmd, uint8_t *arg, size_t argLen)
{
	if (cmd == IB_USER_MAD_REGISTER_AGENT) {
		if (port_.dead())
			return -EPIPE;
		if (argLen < sizeof(ib_user_mad_reg_req))
			return -EFAULT;
		ib_user_mad_reg_req req;
		memcpy(&req, arg, sizeof(req));
		if (req.qpn != 0 && req.qpn != 1)
			return -EINVAL;
		uint32_t oui = uint32_t(req.oui[0]) << 16 | uint32_t(req.oui[1]) << 8 | req.oui[2];
		uint32_t id;
		int rc = registerAgent(req, false, 0, oui, reinterpret_cast<const uint8_t *>(req.method_mask), id);
		if (rc)
			return rc;
		memcpy(arg + offsetof(ib_user_mad_reg_req, id), &id, sizeof(id));
		return 0;
	}
	if (cmd == IB_USER_MAD_REGISTER_AGENT2) {
		if (port_.dead())
			return -EPIPE;
		if (argLen < sizeof(ib_user_mad_reg_req2))
			return -EFAULT;
		ib_user_mad_reg_req2 req2;
		memcpy(&req2, arg, sizeof(req2));
		if (req2.qpn != 0 && req2.qpn != 1)
			return -EINVAL;
		if (req2.flags & ~IB_USER_MAD_REG_FLAGS_CAP) {
			uint32_t supported = IB_USER_MAD_REG_FLAGS_CAP;
			memcpy(arg + offsetof(ib_user_mad_reg_req2, flags), &supported, sizeof(supported));
			return -EINVAL;
		}
		ib_user_mad_reg_req req{};
		req.qpn = static_cast<uint8_t>(req2.qpn);
		req.mgmt_class = req2.mgmt_class;
		req.mgmt_class_version = req2.mgmt_class_version;
		req.rmpp_version = req2.rmpp_version;
		uint32_t id;
		int rc = registerAgent(req, true, req2.flags, req2.oui,
				       reinterpret_cast<const uint8_t *>(req2.method_mask), id);
		if (rc)
			return rc;
		memcpy(arg + offsetof(ib_user_mad_reg_req2, id), &id, sizeof(id));
		return 0;
	}
	if (cmd == IB_USER_MAD_UNREGISTER_AGENT) {
		if (argLen < sizeof(uint32_t))
			return -EFAULT;
		uint32_t id;
		memcpy(&id, arg, sizeof(id));
		if (id >= IB_UMAD_MAX_AGENTS || agentsDead_ || !agents_[id])
			return -EINVAL;
		MadAgent *agent = agents_[id];
		agents_[id] = nullptr;
		std::vector<uint64_t> gone;
		for (const auto &[cookie, o] : sends_)
			if (o.agent == agent)
				gone.push_back(cookie);
		for (uint64_t cookie : gone)
			forgetSend(cookie);
		port_.mad().unregisterAgent(agent);
		return 0;
	}
	if (cmd == IB_USER_MAD_ENABLE_PKEY) {
		if (alreadyUsed_)
			return -EINVAL;
		usePkeyIndex_ = true;
		return 0;
	}
	return -ENOTTY;
}

unsigned UmadFile::poll() const
{
	if (agentsDead_)
		return POLLERR;
	unsigned mask = POLLOUT | POLLWRNORM;
	if (!recv_.empty())
		mask |= POLLIN | POLLRDNORM;
	return mask;
}

} /* namespace ibemu::emu */
