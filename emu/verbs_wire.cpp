// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// The data path: executing send work requests across the fabric.
//
// A message is handled whole when its WQE reaches the head of the send
// queue: the fabric routes it (Subnet::routeData, the SM's LFTs), the
// responder QP is found on the VerbsDevice behind the destination port, the
// P_Key, Q_Key, state, key, bounds and access checks of IBA 9.6-9.7 decide
// its fate, and the bytes move between the two processes through
// UserAccess. What the requester sees follows the transport:
//   RC  lost packets are retried every local ACK timeout, retry_cnt times,
//       then RETRY_EXC_ERR; no receive WQE gives an RNR NAK, retried after
//       the responder's RNR timer, rnr_retry times (7: for ever), then
//       RNR_RETRY_EXC_ERR; NAKs give REM_ACCESS_ERR, REM_INV_REQ_ERR,
//       REM_OP_ERR.
//   UC, UD  nothing comes back: a lost or refused message still completes
//       successfully at the requester.
// Any error completion moves the QP to the Error state, which flushes it.
#include "emu/host.h"
#include "emu/qp_ring.h"
#include "emu/uverbs_file.h"
#include "emu/verbs_device.h"
#include "emu/verbs_packets.h"
#include "emu/verbs_qp.h"
#include "fabric/node.h"
#include "fabric/subnet.h"

#include <boost/asio/post.hpp>

#include <algorithm>
#include <cstring>

namespace ibemu::emu {

/* A piece of process memory (or of our own buffer when local is set). */
struct Seg {
	int mem = -1; /* UserAccess::openMemory handle */
	uint64_t addr = 0;
	uint64_t len = 0;
	const uint8_t *local = nullptr;
};

namespace {

/* Writes into a memory region: the pages are pinned (ib_umem) until the MR
 * is deregistered, and a dying process's files, its MRs with them, are
 * released only after its address space is gone (do_exit: exit_mm, then
 * exit_files). In between, a hardware HCA still writes into those pages,
 * for nobody: so a write to a process that is gone succeeds here too, its
 * bytes dropped. (Reads cannot be served so: ibemu has no copy of what
 * the pages last held. See kSourceGone.) */
int dmaWrite(UserAccess &ua, int mem, uint64_t addr, const void *buf, size_t len)
{
	int e = ua.writeMemory(mem, addr, buf, len);
	return e == -ESRCH ? 0 : e;
}

/* What copySegs says besides 0 */
constexpr int kSourceFault = -1; /* a source piece could not be read */
constexpr int kDestFault = -2; /* nor a destination piece written */
constexpr int kSourceGone = -3; /* the source's process has no address space any more */

/* Copies len bytes from the src pieces to the dst pieces through a bounce
 * buffer: 0 or one of the above. A responder whose source is gone answers
 * nothing, as if its response were lost: the requester retries, and gives
 * up after retry_cnt timeouts (docs/verbs.md). */
int copySegs(UserAccess &ua, const std::vector<Seg> &src, const std::vector<Seg> &dst, uint64_t len)
{
	constexpr size_t kChunk = 256 * 1024;
	std::vector<uint8_t> buf(std::min<uint64_t>(len, kChunk));
	size_t si = 0, di = 0;
	uint64_t so = 0, dOff = 0;
	while (len) {
		while (si < src.size() && so == src[si].len) {
			si++;
			so = 0;
		}
		while (di < dst.size() && dOff == dst[di].len) {
			di++;
			dOff = 0;
		}
		if (si == src.size() || di == dst.size())
			return kDestFault;
		uint64_t n = std::min({ len, uint64_t(buf.size()), src[si].len - so, dst[di].len - dOff });
		const Seg &s = src[si];
		if (s.local) {
			memcpy(buf.data(), s.local + s.addr + so, n);
		} else if (int e = ua.readMemory(s.mem, s.addr + so, buf.data(), n); e != 0) {
			return e == -ESRCH ? kSourceGone : kSourceFault;
		}
		if (dmaWrite(ua, dst[di].mem, dst[di].addr + dOff, buf.data(), n) != 0)
			return kDestFault;
		so += n;
		dOff += n;
		len -= n;
	}
	return 0;
}

/* Local SGEs: lkey, PD, bounds and (for writes) IB_ACCESS_LOCAL_WRITE. */
bool resolveLocal(const VerbsDevice &dev, const Pd *pd, const std::vector<Sge> &sges, bool write, std::vector<Seg> &out,
		  uint64_t &total)
{
	total = 0;
	for (const Sge &s : sges) {
		if (!s.length)
			continue;
		const Mr *mr = dev.mrByKey(s.lkey);
		if (!mr || mr->pd != pd || mr->lkey != s.lkey || s.addr < mr->iova ||
		    s.addr + s.length > mr->iova + mr->length || s.addr + s.length < s.addr)
			return false;
		if (write && !(mr->access & IB_ACCESS_LOCAL_WRITE))
			return false;
		out.push_back({ *mr->mem, mr->start + (s.addr - mr->iova), s.length, nullptr });
		total += s.length;
	}
	return true;
}

/* A remote address: rkey, PD, bounds and the access the operation needs. */
bool resolveRemote(const VerbsDevice &dev, const Pd *pd, uint32_t rkey, uint64_t va, uint64_t len, uint32_t access,
		   Seg &out)
{
	const Mr *mr = dev.mrByKey(rkey);
	if (!mr || mr->pd != pd || mr->rkey != rkey || !(mr->access & access))
		return false;
	if (va < mr->iova || va + len > mr->iova + mr->length || va + len < va)
		return false;
	out = { *mr->mem, mr->start + (va - mr->iova), len, nullptr };
	return true;
}

uint16_t pkeyAt(const fabric::Port &p, uint16_t index)
{
	return index < p.pkeys.size() ? p.pkeys[index] : 0;
}

/* IBA 10.9.3: same partition, and not both limited members. */
bool pkeysMatch(uint16_t a, uint16_t b)
{
	return (a & 0x7fff) && (a & 0x7fff) == (b & 0x7fff) && ((a | b) & 0x8000);
}

/* The first len bytes the pieces hold, into out: 0, or kSourceFault or
 * kSourceGone when a piece cannot be read (what was read stays, the rest
 * reads as zeros) */
int gather(UserAccess &ua, const std::vector<Seg> &segs, uint64_t len, std::vector<uint8_t> &out)
{
	out.assign(len, 0);
	uint64_t off = 0;
	for (const Seg &s : segs) {
		if (off == len)
			break;
		uint64_t n = std::min(s.len, len - off);
		if (s.local)
			memcpy(out.data() + off, s.local + s.addr, n);
		else if (int e = ua.readMemory(s.mem, s.addr, out.data() + off, n); e != 0)
			return e == -ESRCH ? kSourceGone : kSourceFault;
		off += n;
	}
	return 0;
}

/* The same, for a capture: an unreadable piece reads as zeros (the
 * message fails anyway) */
std::vector<uint8_t> gather(UserAccess &ua, const std::vector<Seg> &segs, uint64_t len)
{
	std::vector<uint8_t> out;
	(void)gather(ua, segs, len, out);
	return out;
}

/* The Q_Key a UD send carries: the QP's own when the work request's has
 * its high bit set (IBA 10.2.5) */
uint32_t sendQkey(const Qp &qp, const SendWqe &w)
{
	return (w.wr.wr.ud.remote_qkey & 0x80000000u) ? qp.qkey : w.wr.wr.ud.remote_qkey;
}

/* The LRH, GRH and BTH fields of a message's packets, for a capture.
 * Route is the GRH part of an address vector: the AH's (UD) or the QP's
 * (connected), which name the same fields. */
template <typename Route>
fabric::PacketHeaders wireBase(const fabric::Port &src, uint16_t slid, uint16_t dlid, uint8_t sl, uint16_t pkey,
			       uint32_t destQp, uint8_t transport, bool global, const Route &grh)
{
	fabric::PacketHeaders h;
	h.sl = sl & 0xf;
	h.vl = src.sl2vl[h.sl] & 0xf;
	h.slid = slid;
	h.dlid = dlid;
	h.pkey = pkey;
	h.destQp = destQp;
	h.opcode = transport;
	h.grh = global;
	if (global) {
		for (int i = 0; i < 8; i++) {
			h.sgid[i] = static_cast<uint8_t>(src.gidPrefix >> (56 - 8 * i));
			h.sgid[8 + i] = static_cast<uint8_t>(src.guid >> (56 - 8 * i));
		}
		memcpy(h.dgid.data(), grh.dgid, 16);
		h.hopLimit = grh.hop_limit;
		h.trafficClass = grh.traffic_class;
		h.flowLabel = grh.flow_label;
	}
	return h;
}

/* The same headers for the way back */
fabric::PacketHeaders reversed(fabric::PacketHeaders h, uint32_t destQp)
{
	std::swap(h.slid, h.dlid);
	std::swap(h.sgid, h.dgid);
	h.destQp = destQp;
	h.eth.clear();
	return h;
}

uint8_t nakSyndrome(WcStatus requesterStatus)
{
	return requesterStatus == IB_WC_REM_ACCESS_ERR     ? kAethNakRemoteAccess
		: requesterStatus == IB_WC_REM_INV_REQ_ERR ? kAethNakInvalidRequest
							   : kAethNakRemoteOperational;
}

unsigned mtuBytes(uint8_t mtu)
{
	return 128u << std::clamp<uint8_t>(mtu, 1, 5);
}

/* The local ACK timeout: 4.096 us * 2^timeout (0: none, wait for ever). */
std::chrono::nanoseconds ackTimeout(uint8_t timeout)
{
	return std::chrono::nanoseconds(uint64_t(4096) << std::min<uint8_t>(timeout, 31));
}

/* The RNR NAK timer field (IBA table 45), in microseconds. */
std::chrono::microseconds rnrDelay(uint8_t code)
{
	static const uint32_t us[32] = { 655360, 10,    20,    30,     40,     60,     80,     120,
					 160,    240,   320,   480,    640,    960,    1280,   1920,
					 2560,   3840,  5120,  7680,   10240,  15360,  20480,  30720,
					 40960,  61440, 81920, 122880, 163840, 245760, 327680, 491520 };
	return std::chrono::microseconds(us[code & 31]);
}

WcOpcode wcOpcode(uint32_t wrOpcode)
{
	switch (wrOpcode) {
	case IB_WR_RDMA_WRITE:
	case IB_WR_RDMA_WRITE_WITH_IMM:
		return IB_WC_RDMA_WRITE;
	case IB_WR_RDMA_READ:
		return IB_WC_RDMA_READ;
	case IB_WR_ATOMIC_CMP_AND_SWP:
		return IB_WC_COMP_SWAP;
	case IB_WR_ATOMIC_FETCH_AND_ADD:
		return IB_WC_FETCH_ADD;
	default:
		return IB_WC_SEND;
	}
}

/* Octets a message puts on the wire: per packet LRH 8, BTH 12, ICRC 4,
 * VCRC 2, plus the extension headers of its opcode. */
uint64_t wireBytes(uint64_t payload, uint32_t packets, unsigned extPerMsg, unsigned extPerPacket)
{
	return payload + uint64_t(packets) * (26 + extPerPacket) + extPerMsg;
}

uint32_t packetsFor(uint64_t len, unsigned mtu)
{
	return len ? static_cast<uint32_t>((len + mtu - 1) / mtu) : 1;
}

void putGrh(uint8_t grh[40], const fabric::Port &src, const ib_uverbs_ah_attr &ah, uint64_t payload)
{
	memset(grh, 0, 40);
	uint32_t w0 = (6u << 28) | (uint32_t(ah.grh.traffic_class) << 20) | (ah.grh.flow_label & 0xfffff);
	grh[0] = w0 >> 24;
	grh[1] = w0 >> 16;
	grh[2] = w0 >> 8;
	grh[3] = w0;
	uint16_t paylen = static_cast<uint16_t>(payload + 12 + 8 + 4); /* BTH, DETH, ICRC */
	grh[4] = paylen >> 8;
	grh[5] = paylen;
	grh[6] = 0x1b; /* next header: IBA transport */
	grh[7] = ah.grh.hop_limit;
	for (int i = 0; i < 8; i++) {
		grh[8 + i] = static_cast<uint8_t>(src.gidPrefix >> (56 - 8 * i));
		grh[16 + i] = static_cast<uint8_t>(src.guid >> (56 - 8 * i));
	}
	memcpy(grh + 24, ah.grh.dgid, 16);
}

/* The first 40 bytes of a UD receive buffer hold the GRH, written when the
 * message had one (`grh`, null: none): dst and room move past them. false
 * when the buffer is smaller than that. */
bool placeGrh(UserAccess &ua, std::vector<Seg> &dst, uint64_t &room, const uint8_t *grh, ib_uverbs_wc &wc)
{
	if (room < 40)
		return false;
	if (grh) {
		Seg g{ -1, 0, 40, grh };
		copySegs(ua, { g }, dst, 40);
		wc.wc_flags |= IB_WC_GRH;
	}
	uint64_t skip = 40;
	while (skip && !dst.empty()) {
		uint64_t n = std::min(skip, dst.front().len);
		dst.front().addr += n;
		dst.front().len -= n;
		skip -= n;
		if (!dst.front().len)
			dst.erase(dst.begin());
	}
	room -= 40;
	wc.byte_len += 40;
	return true;
}

/* The same for a message from this daemon: the GRH its sender's address
 * vector implies */
bool placeGrh(UserAccess &ua, std::vector<Seg> &dst, uint64_t &room, const fabric::Port &src,
	      const ib_uverbs_ah_attr &ah, uint64_t len, ib_uverbs_wc &wc)
{
	uint8_t grh[40];
	if (ah.is_global)
		putGrh(grh, src, ah, len);
	return placeGrh(ua, dst, room, ah.is_global ? grh : nullptr, wc);
}

/* A receive left an SRQ: below its armed limit, the one-shot event. */
void srqConsumed(Srq &srq)
{
	if (srq.limit && srq.queue.size() < srq.limit) {
		if (srq.file)
			srq.file->asyncEvent(srq.userHandle, IB_EVENT_SRQ_LIMIT_REACHED, &srq);
		srq.limit = 0;
	}
}

} /* namespace */

void VerbsDevice::complete(Cq &cq, const ib_uverbs_wc &wc, bool solicited)
{
	if ((cq.ring ? cq.ring->used() : cq.queue.size()) >= cq.cqe) { /* overrun: IBA 11.4.2.1 */
		if (!cq.overflowed && cq.file)
			cq.file->asyncEvent(cq.userHandle, IB_EVENT_CQ_ERR, &cq);
		cq.overflowed = true;
		return;
	}
	if (cq.ring)
		cq.ring->push(wc);
	else
		cq.queue.push_back(wc);
	/* rvt_cq_enter(): an armed CQ sends one event and disarms */
	if (cq.notify == IB_CQ_NEXT_COMP ||
	    (cq.notify == IB_CQ_SOLICITED && (solicited || wc.status != IB_WC_SUCCESS))) {
		cq.notify = 0;
		if (cq.channel)
			cq.channel->notify(cq);
	}
}

namespace {

/* A ring QP's work requests left its queues: its program may reuse their
 * slots. Before the completion is written, or the program could see the
 * completion, post again and find the ring still full. */
void retired(Qp &qp)
{
	if (qp.ring)
		qp.ring->publish(qp.sq.size(), qp.rq.size());
}

} /* namespace */

void VerbsDevice::takeRecvs(Qp &qp)
{
	if (!qp.ring || qp.srq)
		return;
	for (;;) {
		RecvWqe w;
		QpRing::Take t = qp.ring->nextRecv(w, qp.rq.size());
		if (t == QpRing::Take::Empty)
			break;
		w.bad = t != QpRing::Take::Ok || w.sges.size() > qp.maxRecvSge;
		qp.rq.push_back(std::move(w));
		if (t == QpRing::Take::Overrun)
			break; /* the indices are garbage: take nothing more */
	}
}

void VerbsDevice::waitForRetry(Qp &qp, std::chrono::nanoseconds d)
{
	qp.waiting = true;
	uint64_t seq = ++qp.waitSeq;
	Liveness::Weak alive = qp.alive.weak();
	qp.timer.expires_after(d);
	qp.timer.async_wait([this, &qp, seq, alive](const boost::system::error_code &ec) {
		/* a handler that fired just before a cancel still runs: only the
		 * live QP's current wait may touch it */
		if (ec || alive.expired() || qp.waitSeq != seq)
			return;
		qp.waiting = false;
		rnrWaiting_.erase(&qp);
		progress(qp);
	});
}

void VerbsDevice::forget(Qp &qp)
{
	qp.waitSeq++;
	qp.timer.cancel();
	qp.waiting = false;
	qp.awaitingReply = false;
	qp.rnrTarget = nullptr;
	rnrWaiting_.erase(&qp);
}

void VerbsDevice::recvPosted(const Qp *qp, const Srq *srq)
{
	for (const auto &hca : host_.hcas()) {
		VerbsDevice &d = *hca->verbs;
		std::vector<Qp *> waiting;
		for (Qp *w : d.rnrWaiting_) /* those whose responder just got a receive */
			if (w->rnrTarget && (w->rnrTarget == qp || (srq && w->rnrTarget->srq == srq)))
				waiting.push_back(w);
		for (Qp *w : waiting) {
			if (!d.rnrWaiting_.count(w))
				continue;
			d.forget(*w);
			if (!w->sq.empty() && w->sq.front().rnrRetriesLeft != 7)
				w->sq.front().rnrRetriesLeft++; /* woken early: that was no retry */
			/* in a turn of its own, with its own budget, not inside this post */
			Liveness::Weak alive = w->alive.weak();
			VerbsDevice *dp = &d;
			boost::asio::post(io_, [dp, w, alive] {
				if (!alive.expired())
					dp->progress(*w);
			});
		}
	}
}

void VerbsDevice::responderGone(const Qp &qp)
{
	for (const auto &hca : host_.hcas())
		for (Qp *w : hca->verbs->rnrWaiting_)
			if (w->rnrTarget == &qp)
				w->rnrTarget = nullptr;
}

void VerbsDevice::flush(Qp &qp)
{
	forget(qp);
	if (qp.ring) /* receives posted from now on flush at once too: ask
		      * for the doorbell, then look (in that order) */
		qp.ring->setRecvNotify(true);
	takeRecvs(qp);
	auto flushWc = [&](uint64_t wrId, uint32_t opcode) {
		ib_uverbs_wc wc{};
		wc.wr_id = wrId;
		wc.status = IB_WC_WR_FLUSH_ERR;
		wc.opcode = opcode;
		wc.qp_num = qp.qpn;
		wc.port_num = qp.portNum;
		return wc;
	};
	while (!qp.sq.empty()) {
		ib_uverbs_wc wc = flushWc(qp.sq.front().wr.wr_id, wcOpcode(qp.sq.front().wr.opcode));
		qp.sq.pop_front();
		retired(qp);
		complete(*qp.sendCq, wc);
	}
	while (!qp.rq.empty()) {
		ib_uverbs_wc wc = flushWc(qp.rq.front().wrId, IB_WC_RECV);
		qp.rq.pop_front();
		retired(qp);
		complete(*qp.recvCq, wc);
	}
}

void VerbsDevice::enterError(Qp &qp)
{
	qp.state = IB_QPS_ERR;
	flush(qp);
	if (qp.srq && qp.file) /* IBA 11.5.2.1: the last WQE of an SRQ QP */
		qp.file->asyncEvent(qp.userHandle, IB_EVENT_QP_LAST_WQE_REACHED, &qp);
}

namespace {

void toError(VerbsDevice &dev, Qp &qp)
{
	if (qp.state != IB_QPS_ERR)
		dev.enterError(qp);
}

} /* namespace */

void VerbsDevice::finishHead(Qp &qp, WcStatus status, uint32_t byteLen)
{
	SendWqe w = std::move(qp.sq.front());
	qp.sq.pop_front();
	retired(qp);
	if (status != IB_WC_SUCCESS || qp.sqSigAll || (w.wr.send_flags & IB_SEND_SIGNALED)) {
		ib_uverbs_wc wc{};
		wc.wr_id = w.wr.wr_id;
		wc.status = status;
		wc.opcode = wcOpcode(w.wr.opcode);
		wc.byte_len = byteLen;
		wc.qp_num = qp.qpn;
		wc.port_num = qp.portNum;
		complete(*qp.sendCq, wc);
	}
	if (status != IB_WC_SUCCESS)
		toError(*this, qp);
}

void VerbsDevice::progress(Qp &qp)
{
	/* A long send queue must not hold up everything else the io_context
	 * serves (MADs, other clients): after this many bytes, the rest goes
	 * on in a later turn. */
	constexpr uint64_t kBudget = 4 << 20;
	uint64_t spent = 0;
	while (!qp.sq.empty() && !qp.waiting && !dead_) {
		const unsigned ops = qpStateOps(qp.state);
		if (ops & kFlushSend) {
			flush(qp);
			return;
		}
		if (!(ops & kProcessNextSendOk))
			return; /* SQD, SQE: hold */
		if (spent >= kBudget) {
			Liveness::Weak alive = qp.alive.weak();
			boost::asio::post(io_, [this, &qp, alive] {
				if (!alive.expired())
					progress(qp);
			});
			return;
		}
		WcStatus status = IB_WC_SUCCESS;
		uint32_t byteLen = 0;
		responderErrors_.clear();
		Outcome o = execute(qp, qp.sq.front(), status, byteLen);
		if (o == Outcome::Wait)
			return;
		spent += byteLen + 64;
		finishHead(qp, status, byteLen);
		/* responders that broke down too (IBA 9.9.3.1.3) */
		std::vector<Qp *> broken = std::move(responderErrors_);
		responderErrors_.clear();
		for (Qp *r : broken)
			toError(*r->dev, *r);
	}
}

/* One message, requester to responder and back. */
VerbsDevice::Outcome VerbsDevice::execute(Qp &qp, SendWqe &w, WcStatus &status, uint32_t &byteLen)
{
	UserAccess &ua = host_.access();
	const uint32_t op = w.wr.opcode;
	const bool rc = qp.qpType == IB_QPT_RC;
	const bool ud = qp.qpType == IB_QPT_UD;
	const bool isRead = op == IB_WR_RDMA_READ;
	const bool isAtomic = op == IB_WR_ATOMIC_CMP_AND_SWP || op == IB_WR_ATOMIC_FETCH_AND_ADD;
	const bool isWrite = op == IB_WR_RDMA_WRITE || op == IB_WR_RDMA_WRITE_WITH_IMM;
	const bool hasImm = op == IB_WR_SEND_WITH_IMM || op == IB_WR_RDMA_WRITE_WITH_IMM;
	if (w.failStatus != IB_WC_SUCCESS) {
		status = w.failStatus;
		return Outcome::Error;
	}
	fabric::Port *src = port(qp.portNum);
	if (!src) {
		status = IB_WC_GENERAL_ERR;
		return Outcome::Error;
	}

	/* --- requester: the local data (IBA 10.7.2.2 local checks) --- */
	std::vector<Seg> local;
	uint64_t len = 0;
	if (w.isInline) {
		len = w.inlineData.size();
		if (len)
			local.push_back({ -1, 0, len, w.inlineData.data() });
	} else if (!resolveLocal(*this, qp.pd, w.sges, isRead || isAtomic, local, len)) {
		status = IB_WC_LOC_PROT_ERR;
		return Outcome::Error;
	}
	if (len > limits_.maxMsgSize) {
		status = IB_WC_LOC_LEN_ERR;
		return Outcome::Error;
	}
	if (isAtomic)
		len = 8;
	unsigned mtu = ud ? mtuBytes(std::min(src->neighborMtu, src->mtuCap)) : mtuBytes(qp.pathMtu);
	if (ud && len > mtu) {
		status = IB_WC_LOC_LEN_ERR;
		return Outcome::Error;
	}
	byteLen = static_cast<uint32_t>(len);

	/* --- the wire: requester to responder --- */
	const uint16_t dlid = ud ? w.ah.dlid : qp.av.dlid;
	const uint8_t pathBits = (ud ? w.ah.src_path_bits : qp.av.src_path_bits) & ((1u << src->lmc) - 1);
	const uint8_t sl = ud ? w.ah.sl : qp.av.sl;
	const uint32_t dqpn = ud ? w.wr.wr.ud.remote_qpn : qp.destQpn;
	uint32_t reqPackets = (isRead || isAtomic) ? 1 : packetsFor(len, mtu);
	uint64_t reqBytes = isRead ? wireBytes(0, 1, 16, 0)
		: isAtomic         ? wireBytes(0, 1, 28, 0)
				   : wireBytes(len, reqPackets, (isWrite ? 16 : 0) + (hasImm ? 4 : 0), ud ? 8 : 0);

	/* RC: the local ACK timer runs out after every lost try; after the
	 * retry_cnt-th retry has timed out too, the WQE fails. */
	if (rc && w.timedOut) {
		w.timedOut = false;
		if (w.retriesLeft == 0) {
			status = IB_WC_RETRY_EXC_ERR;
			return Outcome::Error;
		}
		w.retriesLeft--;
	}
	auto lost = [&]() -> Outcome {
		if (!rc)
			return Outcome::Done; /* unreliable: the requester never knows */
		if (qp.timeout == 0) { /* no ACK timer: wait for ever */
			qp.waiting = true;
			return Outcome::Wait;
		}
		w.timedOut = true;
		waitForRetry(qp, ackTimeout(qp.timeout));
		return Outcome::Wait;
	};

	/* A message takes its PSNs when first sent; a retry uses them again. */
	const uint32_t psns = psnsFor(op, len, mtu);
	if (!w.psnSet) {
		w.psn = qp.sqPsn;
		w.psnSet = true;
		qp.sqPsn = (qp.sqPsn + psns) & 0xffffff;
	}
	const uint32_t lastPsn = (w.psn + psns - 1) & 0xffffff;

	if (ud && dlid >= IB_MULTICAST_LID_BASE && dlid != IB_LID_PERMISSIVE) {
		status = sendMulticast(qp, w, *src, local, len, reqPackets, reqBytes);
		return status == IB_WC_SUCCESS ? Outcome::Done : Outcome::Error;
	}

	fabric::Subnet &subnet = host_.subnet();
	const uint8_t transport = rc ? fabric::IB_OPCODE_RC : ud ? fabric::IB_OPCODE_UD : fabric::IB_OPCODE_UC;
	const uint16_t slid = static_cast<uint16_t>(src->lid | pathBits);
	fabric::PacketHeaders base; /* for a capture only */
	WirePackets reqWire;
	if (subnet.tappingData()) {
		const uint16_t pkey = pkeyAt(*src, qp.pkeyIndex);
		base = ud ? wireBase(*src, slid, dlid, sl, pkey, dqpn, transport, w.ah.is_global, w.ah.grh)
			  : wireBase(*src, slid, dlid, sl, pkey, dqpn, transport, qp.av.is_global, qp.av);
		reqWire = requestPackets(base, w.wr, sendQkey(qp, w), qp.qpn, w.psn, mtu, len,
					 isRead || isAtomic ? std::vector<uint8_t>() : gather(ua, local, len));
	}
	fabric::Away away;
	fabric::Port *dst = subnet.routeData(*src, dlid, reqPackets, reqBytes, reqWire, &away);
	if (!dst && away.far) { /* to a node another daemon simulates: as packets */
		if (!subnet.tappingData()) {
			const uint16_t pkey = pkeyAt(*src, qp.pkeyIndex);
			base = ud ? wireBase(*src, slid, dlid, sl, pkey, dqpn, transport, w.ah.is_global, w.ah.grh)
				  : wireBase(*src, slid, dlid, sl, pkey, dqpn, transport, qp.av.is_global, qp.av);
		}
		if (WcStatus s = sendAway(qp, w, away, base, local, len, mtu); s != IB_WC_SUCCESS) {
			status = s;
			return Outcome::Error;
		}
		return rc ? Outcome::Wait : Outcome::Done; /* RC: for the reply */
	}
	if (!dst)
		return lost();
	VerbsDevice *rdev = host_.verbsAt(*dst);
	Qp *rqp = rdev ? rdev->qp(dqpn) : nullptr;
	if (!rqp || rqp->qpType != qp.qpType || rqp->portNum != dst->num || !(qpStateOps(rqp->state) & kProcessRecvOk))
		return lost();
	if (!pkeysMatch(pkeyAt(*src, qp.pkeyIndex), pkeyAt(*dst, rqp->pkeyIndex))) {
		if (dst->pkeyViolations < 0xffff)
			dst->pkeyViolations++;
		return lost();
	}
	if (ud) {
		if (sendQkey(qp, w) != rqp->qkey) {
			if (dst->qkeyViolations < 0xffff)
				dst->qkeyViolations++;
			return Outcome::Done;
		}
	}

	/* The way back (ACK, NAK, read response, atomic response). RC only.
	 * `data`: what a read response or atomic ACK carries, for a capture. */
	auto back = [&](uint64_t payload, unsigned ext, WireReply kind, uint8_t syndrome = 0,
			std::span<const uint8_t> data = {}) {
		uint32_t n = packetsFor(payload, mtu);
		WirePackets wire;
		if (subnet.tappingData())
			wire = replyPackets(reversed(base, qp.qpn), kind, syndrome, w.psn, lastPsn, rqp->msn, mtu,
					    data);
		return subnet.routeData(*dst, slid, n, wireBytes(payload, n, ext, 0), wire) != nullptr;
	};
	/* The responder has executed the message: its MSN and expected PSN
	 * move, once, however often the requester retries (IBA 9.7.7.2.4:
	 * a duplicate does not advance them) */
	auto responderDone = [&] {
		if (w.responderCounted)
			return;
		w.responderCounted = true;
		rqp->msn = (rqp->msn + 1) & 0xffffff;
		rqp->rqPsn = (lastPsn + 1) & 0xffffff;
	};
	/* an atomic ACK carries no payload: AETH and AtomicAckETH */
	constexpr unsigned kAtomicAckBytes = fabric::kAethBytes + fabric::kAtomicAckEthBytes;
	auto asBytes = [](const uint64_t &v) { return std::span(reinterpret_cast<const uint8_t *>(&v), 8); };
	if (w.delivered) { /* a retry of what the responder already executed (never a read) */
		if (!back(0, isAtomic ? kAtomicAckBytes : fabric::kAethBytes,
			  isAtomic ? WireReply::AtomicAck : WireReply::Ack, 0, asBytes(w.atomicOrig)))
			return lost();
		if (isRead || isAtomic) {
			w.delivered = false; /* re-read below; atomics answer from w.atomicOrig */
			if (isAtomic) {
				Seg orig8{ -1, 0, 8, reinterpret_cast<const uint8_t *>(&w.atomicOrig) };
				if (copySegs(ua, { orig8 }, local, 8) != 0) {
					status = IB_WC_LOC_PROT_ERR;
					return Outcome::Error;
				}
				return Outcome::Done;
			}
		} else {
			return Outcome::Done;
		}
	}
	/* A responder error of class C (IBA 9.9.3.1.3): NAK, responder to Error. */
	auto nak = [&](WcStatus requesterStatus, AsyncEvent responderEvent) -> Outcome {
		if (rc) {
			back(0, 4, WireReply::Nak, nakSyndrome(requesterStatus));
			if (rqp->file)
				rqp->file->asyncEvent(rqp->userHandle, responderEvent, rqp);
			responderErrors_.push_back(rqp);
			status = requesterStatus;
			return Outcome::Error;
		}
		return Outcome::Done; /* UC/UD: silently dropped */
	};

	/* --- responder --- */
	const bool consumesRecv = op == IB_WR_SEND || op == IB_WR_SEND_WITH_IMM || op == IB_WR_RDMA_WRITE_WITH_IMM;
	RecvWqe recv;
	std::deque<RecvWqe> *rq = rqp->srq ? &rqp->srq->queue : &rqp->rq;
	if (consumesRecv && rq->empty())
		takeRecvs(*rqp);
	if (consumesRecv && rq->empty() && rc && rqp->ring && !rqp->srq) {
		/* the program's next receive is to ring, and wake us: ask, then
		 * look once more (one posted in between saw no request) */
		rqp->ring->setRecvNotify(true);
		takeRecvs(*rqp);
		if (!rq->empty())
			rqp->ring->setRecvNotify(false);
	}
	if (consumesRecv && rq->empty()) {
		if (!rc)
			return Outcome::Done;
		back(0, 4, WireReply::RnrNak, kAethRnrNak | (rqp->minRnrTimer & 0x1f)); /* RNR NAK */
		if (w.rnrRetriesLeft == 0) {
			status = IB_WC_RNR_RETRY_EXC_ERR;
			return Outcome::Error;
		}
		if (w.rnrRetriesLeft != 7)
			w.rnrRetriesLeft--;
		/* wait for the RNR timer, or until the responder gets a receive;
		 * retrying for ever needs no fast timer, the receive wakes us */
		auto delay = std::chrono::duration_cast<std::chrono::nanoseconds>(rnrDelay(rqp->minRnrTimer));
		if (w.rnrRetriesLeft == 7)
			delay = std::max<std::chrono::nanoseconds>(delay, std::chrono::milliseconds(100));
		qp.rnrTarget = rqp;
		rnrWaiting_.insert(&qp);
		waitForRetry(qp, delay);
		return Outcome::Wait;
	}

	if (isWrite || isRead || isAtomic) {
		uint64_t va = isAtomic ? w.wr.wr.atomic.remote_addr : w.wr.wr.rdma.remote_addr;
		uint32_t rkey = isAtomic ? w.wr.wr.atomic.rkey : w.wr.wr.rdma.rkey;
		uint32_t need = isWrite ? IB_ACCESS_REMOTE_WRITE
			: isRead        ? IB_ACCESS_REMOTE_READ
					: IB_ACCESS_REMOTE_ATOMIC;
		if (isAtomic && (va & 7))
			return nak(IB_WC_REM_INV_REQ_ERR, IB_EVENT_QP_REQ_ERR);
		if (isWrite && !(rqp->accessFlags & IB_ACCESS_REMOTE_WRITE))
			return nak(IB_WC_REM_ACCESS_ERR, IB_EVENT_QP_ACCESS_ERR);
		if (isRead && !(rqp->accessFlags & IB_ACCESS_REMOTE_READ))
			return nak(IB_WC_REM_ACCESS_ERR, IB_EVENT_QP_ACCESS_ERR);
		if (isAtomic && !(rqp->accessFlags & IB_ACCESS_REMOTE_ATOMIC))
			return nak(IB_WC_REM_ACCESS_ERR, IB_EVENT_QP_ACCESS_ERR);
		Seg remote;
		if (len && !resolveRemote(*rdev, rqp->pd, rkey, va, len, need, remote))
			return nak(IB_WC_REM_ACCESS_ERR, IB_EVENT_QP_ACCESS_ERR);

		if (isWrite) {
			int c = len ? copySegs(ua, local, { remote }, len) : 0;
			if (c == kSourceFault || c == kSourceGone) { /* our own data */
				status = IB_WC_LOC_PROT_ERR;
				return Outcome::Error;
			}
			if (c != 0)
				return nak(IB_WC_REM_ACCESS_ERR, IB_EVENT_QP_ACCESS_ERR);
		} else if (isRead) {
			/* read before anything answers: a responder whose process
			 * is gone sends nothing (kSourceGone) */
			int c = len ? copySegs(ua, { remote }, local, len) : 0;
			if (c == kSourceGone)
				return lost();
			responderDone();
			if (rc &&
			    !back(len, packetsFor(len, mtu) > 1 ? 2 * fabric::kAethBytes : fabric::kAethBytes,
				  WireReply::ReadResponse, 0,
				  subnet.tappingData() ? gather(ua, { remote }, len) : std::vector<uint8_t>()))
				return lost();
			if (c != 0) {
				status = IB_WC_LOC_PROT_ERR;
				return Outcome::Error;
			}
			return Outcome::Done;
		} else { /* atomics on the responder's 8 bytes; the original goes back */
			uint64_t orig;
			if (int e = ua.readMemory(remote.mem, remote.addr, &orig, 8); e == -ESRCH)
				return lost(); /* see kSourceGone */
			else if (e != 0)
				return nak(IB_WC_REM_ACCESS_ERR, IB_EVENT_QP_ACCESS_ERR);
			uint64_t v = op == IB_WR_ATOMIC_CMP_AND_SWP
				? (orig == w.wr.wr.atomic.compare_add ? w.wr.wr.atomic.swap : orig)
				: orig + w.wr.wr.atomic.compare_add;
			if (dmaWrite(ua, remote.mem, remote.addr, &v, 8) != 0)
				return nak(IB_WC_REM_ACCESS_ERR, IB_EVENT_QP_ACCESS_ERR);
			w.delivered = true;
			w.atomicOrig = orig;
			responderDone();
			if (!back(0, kAtomicAckBytes, WireReply::AtomicAck, 0, asBytes(orig)))
				return lost();
			Seg orig8{ -1, 0, 8, reinterpret_cast<const uint8_t *>(&orig) };
			if (copySegs(ua, { orig8 }, local, 8) != 0) {
				status = IB_WC_LOC_PROT_ERR;
				return Outcome::Error;
			}
			return Outcome::Done;
		}
	}

	ib_uverbs_wc rwc{};
	if (consumesRecv) {
		recv = std::move(rq->front());
		rq->pop_front();
		retired(*rqp);
		rwc.wr_id = recv.wrId;
		rwc.qp_num = rqp->qpn;
		rwc.src_qp = qp.qpn;
		rwc.slid = static_cast<uint16_t>(src->lid | pathBits);
		rwc.sl = sl;
		rwc.dlid_path_bits = static_cast<uint8_t>(dlid & ((1u << dst->lmc) - 1));
		rwc.port_num = rqp->portNum;
		rwc.pkey_index = rqp->pkeyIndex;
		rwc.opcode = op == IB_WR_RDMA_WRITE_WITH_IMM ? IB_WC_RECV_RDMA_WITH_IMM : IB_WC_RECV;
		if (hasImm) {
			rwc.ex = w.wr.ex;
			rwc.wc_flags |= IB_WC_WITH_IMM;
		}
		rwc.byte_len = static_cast<uint32_t>(len);
		Pd *rpd = rqp->srq ? rqp->srq->pd : rqp->pd;
		auto recvError = [&](WcStatus rs, WcStatus requesterStatus) -> Outcome {
			rwc.status = rs;
			complete(*rqp->recvCq, rwc);
			responderErrors_.push_back(rqp); /* after the requester's WQE is done: it may be the same QP */
			if (rc) {
				back(0, 4, WireReply::Nak, nakSyndrome(requesterStatus));
				status = requesterStatus;
				return Outcome::Error;
			}
			return Outcome::Done;
		};
		if (recv.bad) /* the responder's own receive is broken */
			return recvError(IB_WC_LOC_QP_OP_ERR, IB_WC_REM_OP_ERR);
		if (op != IB_WR_RDMA_WRITE_WITH_IMM) {
			std::vector<Seg> dstSegs;
			uint64_t room = 0;
			if (!resolveLocal(*rdev, rpd, recv.sges, true, dstSegs, room))
				return recvError(IB_WC_LOC_PROT_ERR, IB_WC_REM_OP_ERR);
			if (ud && !placeGrh(ua, dstSegs, room, *src, w.ah, len, rwc))
				return recvError(IB_WC_LOC_LEN_ERR, IB_WC_SUCCESS);
			if (room < len)
				return recvError(IB_WC_LOC_LEN_ERR, IB_WC_REM_INV_REQ_ERR);
			int c = len ? copySegs(ua, local, dstSegs, len) : 0;
			if (c == kSourceFault || c == kSourceGone) { /* our own data: the receive stays */
				rq->push_front(std::move(recv));
				retired(*rqp);
				status = IB_WC_LOC_PROT_ERR;
				return Outcome::Error;
			}
			if (c != 0)
				return recvError(IB_WC_LOC_PROT_ERR, IB_WC_REM_OP_ERR);
		}
		rwc.status = IB_WC_SUCCESS;
		complete(*rqp->recvCq, rwc, w.wr.send_flags & IB_SEND_SOLICITED);
		if (rqp->srq)
			srqConsumed(*rqp->srq);
	}
	w.delivered = true;
	responderDone();
	if (rc && !back(0, 4, WireReply::Ack)) /* the ACK is lost: the requester retries */
		return lost();
	return Outcome::Done;
}

/* IBA 10.5.2.3: a multicast message goes to every QP attached to the group
 * on every port it reaches, each taking it with its own P_Key and Q_Key
 * checks and its own receive. Nothing comes back: an error at one receiver
 * is that receiver's. */
WcStatus VerbsDevice::sendMulticast(Qp &qp, const SendWqe &w, fabric::Port &src, const std::vector<Seg> &local,
				    uint64_t len, uint32_t packets, uint64_t wireBytes)
{
	/* the payload once, so that every copy is the same and a sender whose
	 * own buffer is bad fails before anything moves */
	std::vector<uint8_t> payload;
	if (gather(host_.access(), local, len, payload) != 0)
		return IB_WC_LOC_PROT_ERR;
	std::vector<fabric::Port *> reached;
	std::vector<fabric::Away> away;
	WirePackets wire; /* for a capture, and for other daemons' copies */
	if (host_.subnet().tappingData() || host_.subnet().split()) {
		const uint16_t slid = static_cast<uint16_t>(src.lid | (w.ah.src_path_bits & ((1u << src.lmc) - 1)));
		fabric::PacketHeaders base = wireBase(src, slid, w.ah.dlid, w.ah.sl, pkeyAt(src, qp.pkeyIndex),
						      w.wr.wr.ud.remote_qpn, fabric::IB_OPCODE_UD, w.ah.is_global,
						      w.ah.grh);
		const unsigned mtu = mtuBytes(std::min(src.neighborMtu, src.mtuCap)); /* UD: one packet */
		wire = requestPackets(base, w.wr, sendQkey(qp, w), qp.qpn, w.psn, mtu, len, payload);
	}
	host_.subnet().routeMulticast(src, w.ah.dlid, packets, wireBytes, reached, wire, &away);
	for (const fabric::Away &a : away)
		host_.subnet().sendAway(a, wire);
	if (w.wr.wr.ud.remote_qpn != kMulticastQpn)
		return IB_WC_SUCCESS; /* receivers drop a multicast packet for any other QP (IBA 9.6.1.1) */
	reached.push_back(&src); /* the HCA's own QPs on the port hear it too (loopback) */
	McastGroup group{ w.ah.dlid, {} };
	memcpy(group.mgid.data(), w.ah.grh.dgid, 16);
	const Seg data{ -1, 0, len, payload.data() };
	for (fabric::Port *dst : reached) {
		VerbsDevice *rdev = host_.verbsAt(*dst);
		if (!rdev)
			continue;
		auto it = rdev->mcast_.find(group);
		if (it == rdev->mcast_.end())
			continue;
		for (Qp *r : it->second) {
			if (r->portNum == dst->num && rdev->receiveDatagram(*r, *dst, qp, w, src, data))
				responderErrors_.push_back(r);
		}
	}
	return IB_WC_SUCCESS;
}

/* One datagram into rqp's next receive. Returns true when the receive
 * failed and rqp must go to the Error state once the send is done. */
bool VerbsDevice::receiveDatagram(Qp &rqp, fabric::Port &dst, const Qp &sender, const SendWqe &w, fabric::Port &src,
				  const Seg &data)
{
	if (rqp.qpType != IB_QPT_UD || !(qpStateOps(rqp.state) & kProcessRecvOk))
		return false;
	if (!pkeysMatch(pkeyAt(src, sender.pkeyIndex), pkeyAt(dst, rqp.pkeyIndex))) {
		if (dst.pkeyViolations < 0xffff)
			dst.pkeyViolations++;
		return false;
	}
	if (sendQkey(sender, w) != rqp.qkey) {
		if (dst.qkeyViolations < 0xffff)
			dst.qkeyViolations++;
		return false;
	}
	std::deque<RecvWqe> &rq = rqp.srq ? rqp.srq->queue : rqp.rq;
	if (rq.empty())
		takeRecvs(rqp);
	if (rq.empty())
		return false; /* unreliable: dropped */
	RecvWqe recv = std::move(rq.front());
	rq.pop_front();
	retired(rqp);
	const bool hasImm = w.wr.opcode == IB_WR_SEND_WITH_IMM;
	ib_uverbs_wc wc{};
	wc.wr_id = recv.wrId;
	wc.qp_num = rqp.qpn;
	wc.src_qp = sender.qpn;
	wc.slid = static_cast<uint16_t>(src.lid | (w.ah.src_path_bits & ((1u << src.lmc) - 1)));
	wc.sl = w.ah.sl;
	wc.port_num = rqp.portNum;
	wc.pkey_index = rqp.pkeyIndex;
	wc.opcode = IB_WC_RECV;
	if (hasImm) {
		wc.ex = w.wr.ex;
		wc.wc_flags |= IB_WC_WITH_IMM;
	}
	wc.byte_len = static_cast<uint32_t>(data.len);
	auto fail = [&](WcStatus st) {
		wc.status = st;
		complete(*rqp.recvCq, wc);
		return true;
	};
	if (recv.bad)
		return fail(IB_WC_LOC_QP_OP_ERR);
	UserAccess &ua = host_.access();
	std::vector<Seg> dstSegs;
	uint64_t room = 0;
	if (!resolveLocal(*this, rqp.srq ? rqp.srq->pd : rqp.pd, recv.sges, true, dstSegs, room))
		return fail(IB_WC_LOC_PROT_ERR);
	if (!placeGrh(ua, dstSegs, room, src, w.ah, data.len, wc) || room < data.len)
		return fail(IB_WC_LOC_LEN_ERR);
	if (data.len && copySegs(ua, { data }, dstSegs, data.len) != 0)
		return fail(IB_WC_LOC_PROT_ERR);
	wc.status = IB_WC_SUCCESS;
	complete(*rqp.recvCq, wc, w.wr.send_flags & IB_SEND_SOLICITED);
	if (rqp.srq)
		srqConsumed(*rqp.srq);
	return false;
}

/* --- the far side: messages to and from other daemons ---
 *
 * A message whose route reaches a node another daemon simulates
 * (Subnet::routeData sets `away`) goes there as its packets, the bytes a
 * capture shows (requestPackets). That daemon's responder runs on the
 * packets (respondRemote) with the checks of the responder above, and an
 * RC responder's reply comes back as packets (replyPackets) to
 * replyArrived(), which ends the requester's wait. The requester's ACK
 * timer runs meanwhile, so a message or a reply lost with a connection is
 * sent again (retry_cnt), and the responder answers a duplicate again
 * without executing it twice (its expected PSN, IBA 9.7.7.2.4). */

namespace {

/* a - b in 24-bit PSN arithmetic, as a signed distance */
int32_t psnDiff(uint32_t a, uint32_t b)
{
	const auto d = static_cast<int32_t>((a - b) & 0xffffff);
	return d >= 0x800000 ? d - 0x1000000 : d;
}

uint32_t be32At(const uint8_t *p)
{
	return uint32_t(p[0]) << 24 | uint32_t(p[1]) << 16 | uint32_t(p[2]) << 8 | p[3];
}

uint64_t be64At(const uint8_t *p)
{
	return uint64_t(be32At(p)) << 32 | be32At(p + 4);
}

} /* namespace */

/* A request read back from its packets */
struct FarRequest {
	uint8_t transport = 0; /* IB_OPCODE_RC, _UC or _UD */
	uint8_t first = 0, last = 0; /* the first and last packet's opcode, transport bits off */
	uint32_t packets = 0, psn = 0, destQp = 0;
	uint16_t pkey = 0, slid = 0, dlid = 0;
	uint8_t sl = 0;
	bool solicited = false;
	bool grh = false;
	std::array<uint8_t, fabric::kGrhBytes> grhBytes{}; /* the first packet's GRH, as it came */
	uint32_t qkey = 0, srcQp = 0; /* DETH */
	uint64_t va = 0; /* RETH or AtomicETH */
	uint32_t rkey = 0, dmaLen = 0;
	uint64_t swapAdd = 0, compare = 0;
	bool hasImm = false;
	uint32_t imm = 0; /* ImmDt as it came: network order */
	std::vector<uint8_t> payload;
};

namespace {

bool isSendOp(uint8_t op)
{
	return op <= fabric::IB_OPCODE_SEND_ONLY_WITH_IMMEDIATE || op == fabric::IB_OPCODE_SEND_LAST_WITH_INVALIDATE ||
		op == fabric::IB_OPCODE_SEND_ONLY_WITH_INVALIDATE;
}

/* The packets of one message, in order: FIRST, MIDDLEs, LAST, or one
 * ONLY (a READ request or an atomic is one packet). false for anything
 * else: a receiver drops what it cannot sequence. */
bool readFarRequest(const fabric::DataPackets &packets, FarRequest &r)
{
	using namespace fabric;
	const uint32_t n = static_cast<uint32_t>(packets.size());
	for (uint32_t i = 0; i < n; i++) {
		const std::vector<uint8_t> &b = packets[i];
		PacketView v;
		if (!parsePacket(b, v))
			return false;
		const uint8_t op = v.opcode & 0x1f;
		if (i == 0) {
			r.transport = v.opcode & 0xe0;
			r.first = op;
			r.psn = v.psn;
			r.destQp = v.destQp;
			r.pkey = v.pkey;
			r.slid = v.slid;
			r.dlid = v.dlid;
			r.sl = v.sl;
			r.grh = v.grh;
			if (v.grh)
				std::copy_n(b.begin() + kLrhBytes, kGrhBytes, r.grhBytes.begin());
		} else if ((v.opcode & 0xe0) != r.transport || v.destQp != r.destQp ||
			   v.psn != ((r.psn + i) & 0xffffff)) {
			return false;
		}
		const bool only = n == 1;
		const bool sendFam = isSendOp(r.first);
		const uint8_t famFirst = sendFam ? IB_OPCODE_SEND_FIRST : IB_OPCODE_RDMA_WRITE_FIRST;
		if (only) {
			if (op == IB_OPCODE_SEND_FIRST || op == IB_OPCODE_RDMA_WRITE_FIRST ||
			    op == IB_OPCODE_SEND_MIDDLE || op == IB_OPCODE_RDMA_WRITE_MIDDLE ||
			    op == IB_OPCODE_SEND_LAST || op == IB_OPCODE_SEND_LAST_WITH_IMMEDIATE ||
			    op == IB_OPCODE_RDMA_WRITE_LAST || op == IB_OPCODE_RDMA_WRITE_LAST_WITH_IMMEDIATE ||
			    op == IB_OPCODE_SEND_LAST_WITH_INVALIDATE)
				return false;
		} else if (i == 0              ? op != famFirst
				   : i + 1 < n ? op != famFirst + 1
					       : !(op == famFirst + 2 || op == famFirst + 3 ||
						   (sendFam && op == IB_OPCODE_SEND_LAST_WITH_INVALIDATE))) {
			return false;
		}
		if (r.transport == IB_OPCODE_UD && !only)
			return false;
		const uint8_t *eth = b.data() + v.eth;
		size_t at = 0;
		if (r.transport == IB_OPCODE_UD) {
			r.qkey = v.qkey;
			r.srcQp = v.srcQp;
			at += kDethBytes;
		}
		if (i == 0 &&
		    (op == IB_OPCODE_RDMA_WRITE_FIRST || op == IB_OPCODE_RDMA_WRITE_ONLY ||
		     op == IB_OPCODE_RDMA_WRITE_ONLY_WITH_IMMEDIATE || op == IB_OPCODE_RDMA_READ_REQUEST)) {
			r.va = be64At(eth + at);
			r.rkey = be32At(eth + at + 8);
			r.dmaLen = be32At(eth + at + 12);
			at += kRethBytes;
		}
		if (op == IB_OPCODE_COMPARE_SWAP || op == IB_OPCODE_FETCH_ADD) {
			r.va = be64At(eth + at);
			r.rkey = be32At(eth + at + 8);
			r.swapAdd = be64At(eth + at + 12);
			r.compare = be64At(eth + at + 20);
		}
		if (i + 1 == n &&
		    (op == IB_OPCODE_SEND_LAST_WITH_IMMEDIATE || op == IB_OPCODE_SEND_ONLY_WITH_IMMEDIATE ||
		     op == IB_OPCODE_RDMA_WRITE_LAST_WITH_IMMEDIATE ||
		     op == IB_OPCODE_RDMA_WRITE_ONLY_WITH_IMMEDIATE)) {
			r.hasImm = true;
			memcpy(&r.imm, eth + at, 4);
		}
		if (i + 1 == n) {
			r.last = op;
			r.solicited = v.solicited;
		}
		r.payload.insert(r.payload.end(), b.begin() + v.payload, b.begin() + v.payload + v.payloadLen);
	}
	r.packets = n;
	return n > 0;
}

/* The requester's view of an AETH syndrome (IBA 9.7.5.1.1) */
WcStatus nakStatus(uint8_t syndrome)
{
	switch (syndrome) {
	case kAethNakInvalidRequest:
		return IB_WC_REM_INV_REQ_ERR;
	case kAethNakRemoteAccess:
		return IB_WC_REM_ACCESS_ERR;
	default:
		return IB_WC_REM_OP_ERR;
	}
}

} /* namespace */

WcStatus VerbsDevice::sendAway(Qp &qp, const SendWqe &w, const fabric::Away &away, const fabric::PacketHeaders &base,
			       const std::vector<Seg> &local, uint64_t len, unsigned mtu)
{
	const uint32_t op = w.wr.opcode;
	const bool carries = op != IB_WR_RDMA_READ && op != IB_WR_ATOMIC_CMP_AND_SWP &&
		op != IB_WR_ATOMIC_FETCH_AND_ADD;
	std::vector<uint8_t> payload;
	if (carries && gather(host_.access(), local, len, payload) != 0)
		return IB_WC_LOC_PROT_ERR;
	fabric::OnWire onWire;
	if (qp.qpType == IB_QPT_RC) {
		/* the WQE waits for its reply; its ACK timer starts once the
		 * packets have left this daemon, as an HCA's does once the last
		 * one is on the wire (a large message may take long to leave) */
		qp.awaitingReply = true;
		qp.waiting = true;
		const uint64_t seq = ++qp.waitSeq;
		onWire = [this, &qp, seq, alive = qp.alive.weak()](bool) {
			if (alive.expired() || qp.waitSeq != seq || !qp.awaitingReply || qp.sq.empty())
				return; /* the reply came first, or the QP moved on */
			if (qp.timeout == 0)
				return; /* no ACK timer: it waits for ever */
			qp.sq.front().timedOut = true;
			waitForRetry(qp, ackTimeout(qp.timeout));
		};
	}
	host_.subnet().sendAway(away, requestPackets(base, w.wr, sendQkey(qp, w), qp.qpn, w.psn, mtu, len, payload),
				std::move(onWire));
	return IB_WC_SUCCESS;
}

void VerbsDevice::receiveRemote(fabric::Port &port, fabric::DataPackets &&packets)
{
	fabric::PacketView v;
	if (dead_ || packets.empty() || !fabric::parsePacket(packets.front(), v))
		return;
	const uint8_t op = v.opcode & 0x1f;
	if ((v.opcode & 0xe0) == fabric::IB_OPCODE_RC &&
	    (op == fabric::IB_OPCODE_ACKNOWLEDGE || op == fabric::IB_OPCODE_ATOMIC_ACKNOWLEDGE ||
	     (op >= fabric::IB_OPCODE_RDMA_READ_RESPONSE_FIRST && op <= fabric::IB_OPCODE_RDMA_READ_RESPONSE_ONLY)))
		replyArrived(port, v, packets);
	else
		respondRemote(port, packets);
}

/* The reply to the head WQE of a QP of ours, from a responder in another
 * daemon: anything else (a late reply to a try given up, a stray) is
 * dropped, as a requester drops a reply it does not expect. */
void VerbsDevice::replyArrived(fabric::Port &port, const fabric::PacketView &v, const fabric::DataPackets &packets)
{
	using namespace fabric;
	Qp *q = qp(v.destQp);
	if (!q || q->qpType != IB_QPT_RC || q->portNum != port.num || !q->awaitingReply || q->sq.empty())
		return;
	SendWqe &w = q->sq.front();
	const uint32_t op = w.wr.opcode;
	const bool isRead = op == IB_WR_RDMA_READ;
	const bool isAtomic = op == IB_WR_ATOMIC_CMP_AND_SWP || op == IB_WR_ATOMIC_FETCH_AND_ADD;
	const uint8_t code = v.opcode & 0x1f;
	if (v.eth + kAethBytes > packets.front().size())
		return;
	const uint8_t syndrome = packets.front()[v.eth];
	const bool ack = (syndrome >> 5) == 0;
	/* an ACK names the last PSN, anything else the first */
	std::vector<Seg> local;
	uint64_t len = 0;
	if (w.isInline)
		len = w.inlineData.size();
	else if (!resolveLocal(*this, q->pd, w.sges, isRead || isAtomic, local, len))
		return;
	const unsigned mtu = mtuBytes(q->pathMtu);
	const uint32_t lastPsn = (w.psn + psnsFor(op, isAtomic ? 8 : len, mtu) - 1) & 0xffffff;
	const uint32_t want = code == IB_OPCODE_ACKNOWLEDGE && ack ? lastPsn : w.psn;
	if (v.psn != want)
		return;
	if (ack && isRead && code != IB_OPCODE_RDMA_READ_RESPONSE_FIRST && code != IB_OPCODE_RDMA_READ_RESPONSE_ONLY)
		return;
	if (ack && isAtomic && code != IB_OPCODE_ATOMIC_ACKNOWLEDGE)
		return;
	/* a READ's responses are the PSNs it took, one per packet: others
	 * (a responder cutting at another MTU) are not its own */
	if (ack && isRead && packets.size() != psnsFor(op, len, mtu))
		return;

	forget(*q); /* its ACK timer */
	q->awaitingReply = false;
	w.timedOut = false;
	WcStatus status = IB_WC_SUCCESS;
	if ((syndrome >> 5) == 1) { /* RNR NAK: wait for its timer, and send again */
		if (w.rnrRetriesLeft == 0) {
			status = IB_WC_RNR_RETRY_EXC_ERR;
		} else {
			if (w.rnrRetriesLeft != 7)
				w.rnrRetriesLeft--;
			auto delay = std::chrono::duration_cast<std::chrono::nanoseconds>(rnrDelay(syndrome & 0x1f));
			if (w.rnrRetriesLeft == 7) /* for ever: not faster than the local path's retries */
				delay = std::max<std::chrono::nanoseconds>(delay, std::chrono::milliseconds(100));
			waitForRetry(*q, delay);
			return;
		}
	} else if (!ack) {
		status = nakStatus(syndrome);
	} else if (isRead) {
		std::vector<uint8_t> data;
		for (const auto &b : packets) {
			PacketView p;
			if (!parsePacket(b, p))
				return;
			data.insert(data.end(), b.begin() + p.payload, b.begin() + p.payload + p.payloadLen);
		}
		Seg in{ -1, 0, std::min<uint64_t>(data.size(), len), data.data() };
		if (data.size() != len || (len && copySegs(host_.access(), { in }, local, len) != 0))
			status = IB_WC_LOC_PROT_ERR;
	} else if (isAtomic) {
		if (v.eth + kAethBytes + kAtomicAckEthBytes > packets.front().size())
			return;
		w.atomicOrig = be64At(packets.front().data() + v.eth + kAethBytes);
		Seg orig8{ -1, 0, 8, reinterpret_cast<const uint8_t *>(&w.atomicOrig) };
		if (copySegs(host_.access(), { orig8 }, local, 8) != 0)
			status = IB_WC_LOC_PROT_ERR;
	}
	finishHead(*q, status, status == IB_WC_SUCCESS ? static_cast<uint32_t>(isAtomic ? 8 : len) : 0);
	progress(*q);
}

/* A request from a requester in another daemon, for a QP of ours: the
 * responder's checks and work as in execute(), then the reply (RC) goes
 * back as packets. A request that fails a check that loses it locally
 * (no such QP, a P_Key or Q_Key violation) is dropped here too. */
void VerbsDevice::respondRemote(fabric::Port &dst, const fabric::DataPackets &packets)
{
	using namespace fabric;
	FarRequest r;
	if (!readFarRequest(packets, r))
		return;
	if (r.dlid >= IB_MULTICAST_LID_BASE) {
		/* every QP attached to the group on this port takes a copy
		 * (IBA 10.5.2.3); a multicast packet for any other QP, or
		 * without its GRH, is dropped (IBA 9.6.1.1) */
		if (r.destQp != kMulticastQpn || !r.grh || r.transport != IB_OPCODE_UD)
			return;
		McastGroup group{ r.dlid, {} };
		std::copy_n(r.grhBytes.begin() + 24, 16, group.mgid.begin());
		auto it = mcast_.find(group);
		if (it == mcast_.end())
			return;
		for (Qp *q : it->second) /* each with its own checks and receive */
			respondTo(*q, dst, r);
		return;
	}
	if (Qp *rqp = qp(r.destQp))
		respondTo(*rqp, dst, r);
}

/* The request r from another daemon, to q behind port dst */
void VerbsDevice::respondTo(Qp &q, fabric::Port &dst, const FarRequest &r)
{
	using namespace fabric;
	UserAccess &ua = host_.access();
	const QpType type = r.transport == IB_OPCODE_RC ? IB_QPT_RC
		: r.transport == IB_OPCODE_UC           ? IB_QPT_UC
							: IB_QPT_UD;
	Qp *rqp = &q;
	if (rqp->qpType != type || rqp->portNum != dst.num || !(qpStateOps(rqp->state) & kProcessRecvOk))
		return;
	if (!pkeysMatch(r.pkey, pkeyAt(dst, rqp->pkeyIndex))) {
		if (dst.pkeyViolations < 0xffff)
			dst.pkeyViolations++;
		return;
	}
	const bool rc = type == IB_QPT_RC, ud = type == IB_QPT_UD;
	if (ud && r.qkey != rqp->qkey) {
		if (dst.qkeyViolations < 0xffff)
			dst.qkeyViolations++;
		return;
	}
	const uint8_t op = r.first;
	const bool isRead = op == IB_OPCODE_RDMA_READ_REQUEST;
	const bool isAtomic = op == IB_OPCODE_COMPARE_SWAP || op == IB_OPCODE_FETCH_ADD;
	const bool isWrite = op >= IB_OPCODE_RDMA_WRITE_FIRST && op <= IB_OPCODE_RDMA_WRITE_ONLY_WITH_IMMEDIATE;
	/* the requests each transport carries (IBA 9.2, table 38) */
	const bool allowed = rc ? isSendOp(op) || isWrite || isRead || isAtomic
		: ud            ? op == IB_OPCODE_SEND_ONLY || op == IB_OPCODE_SEND_ONLY_WITH_IMMEDIATE
				: isSendOp(op) || isWrite;
	if (!allowed)
		return;
	const bool consumesRecv = isSendOp(op) || (isWrite && r.hasImm);
	const unsigned mtu = ud ? mtuBytes(std::min(dst.neighborMtu, dst.mtuCap)) : mtuBytes(rqp->pathMtu);
	const uint64_t len = isRead ? r.dmaLen : isAtomic ? 8 : r.payload.size();
	const uint32_t lastPsn = (r.psn + (isRead ? packetsFor(len, mtu) : r.packets) - 1) & 0xffffff;

	/* the way back: the request's path reversed */
	auto reply = [&](WireReply kind, uint8_t syndrome, std::span<const uint8_t> data = {}) {
		if (!rc)
			return;
		PacketHeaders h;
		h.sl = r.sl & 0xf;
		h.vl = dst.sl2vl[h.sl] & 0xf;
		h.slid = static_cast<uint16_t>(dst.lid | (r.dlid & ((1u << dst.lmc) - 1)));
		h.dlid = r.slid;
		h.pkey = r.pkey;
		h.destQp = rqp->destQpn;
		h.opcode = IB_OPCODE_RC;
		if (r.grh) {
			h.grh = true;
			std::copy_n(r.grhBytes.begin() + 8, 16, h.dgid.begin());
			std::copy_n(r.grhBytes.begin() + 24, 16, h.sgid.begin());
			h.hopLimit = 0xff;
		}
		DataPackets out = replyPackets(h, kind, syndrome, r.psn, lastPsn, rqp->msn, mtu, data);
		uint64_t bytes = 0;
		for (const auto &b : out)
			bytes += b.size() - kVcrcBytes;
		Subnet &subnet = host_.subnet();
		Away away;
		Port *to = subnet.routeData(dst, h.dlid, static_cast<uint32_t>(out.size()), bytes, out, &away);
		if (!to && away.far) {
			subnet.sendAway(away, std::move(out));
		} else if (to) {
			/* a requester of this daemon after all: in a turn of its own,
			 * finding its port again then */
			boost::asio::post(io_,
					  [host = &host_, guid = to->node->nodeGuid, num = to->num,
					   out = std::move(out)]() mutable {
						  fabric::Node *n = host->subnet().findNodeByGuid(guid);
						  VerbsDevice *d = n ? host->verbsAt(n->port(num)) : nullptr;
						  if (d)
							  d->receiveRemote(n->port(num), std::move(out));
					  });
		}
	};
	auto asBytes = [](const uint64_t &v) { return std::span(reinterpret_cast<const uint8_t *>(&v), 8); };
	/* a responder error of class C: NAK, and the responder QP to Error */
	auto nak = [&](WcStatus requesterStatus, AsyncEvent ev) {
		reply(WireReply::Nak, nakSyndrome(requesterStatus));
		if (!rc)
			return;
		if (rqp->file)
			rqp->file->asyncEvent(rqp->userHandle, ev, rqp);
		toError(*this, *rqp);
	};
	auto executed = [&] {
		rqp->msn = (rqp->msn + 1) & 0xffffff;
		rqp->rqPsn = (lastPsn + 1) & 0xffffff;
	};

	/* a duplicate: executed before, and its reply was lost */
	if (rc && psnDiff(lastPsn, rqp->rqPsn) < 0) {
		if (isAtomic) {
			if (rqp->lastAtomicPsn == r.psn)
				reply(WireReply::AtomicAck, 0, asBytes(rqp->lastAtomicOrig));
			return;
		}
		if (!isRead) {
			reply(WireReply::Ack, 0);
			return;
		}
		/* a READ is read again */
	}

	RecvWqe recv;
	std::deque<RecvWqe> *rq = rqp->srq ? &rqp->srq->queue : &rqp->rq;
	if (consumesRecv && rq->empty())
		takeRecvs(*rqp);
	if (consumesRecv && rq->empty()) {
		reply(WireReply::RnrNak, kAethRnrNak | (rqp->minRnrTimer & 0x1f));
		return;
	}

	if (isWrite || isRead || isAtomic) {
		const uint32_t need = isWrite ? IB_ACCESS_REMOTE_WRITE
			: isRead              ? IB_ACCESS_REMOTE_READ
					      : IB_ACCESS_REMOTE_ATOMIC;
		if (isAtomic && (r.va & 7))
			return nak(IB_WC_REM_INV_REQ_ERR, IB_EVENT_QP_REQ_ERR);
		if (!(rqp->accessFlags & need))
			return nak(IB_WC_REM_ACCESS_ERR, IB_EVENT_QP_ACCESS_ERR);
		if ((isWrite && r.dmaLen != r.payload.size()) || (isRead && r.dmaLen > limits_.maxMsgSize))
			return nak(IB_WC_REM_INV_REQ_ERR, IB_EVENT_QP_REQ_ERR);
		Seg remote;
		if (len && !resolveRemote(*this, rqp->pd, r.rkey, r.va, len, need, remote))
			return nak(IB_WC_REM_ACCESS_ERR, IB_EVENT_QP_ACCESS_ERR);
		if (isWrite) {
			Seg data{ -1, 0, len, r.payload.data() };
			if (len && copySegs(ua, { data }, { remote }, len) != 0)
				return nak(IB_WC_REM_ACCESS_ERR, IB_EVENT_QP_ACCESS_ERR);
		} else if (isRead) {
			std::vector<uint8_t> data;
			if (int e = gather(ua, { remote }, len, data); e == kSourceGone)
				return; /* no answer: see kSourceGone */
			else if (e != 0)
				return nak(IB_WC_REM_ACCESS_ERR, IB_EVENT_QP_ACCESS_ERR);
			if (psnDiff(lastPsn, rqp->rqPsn) >= 0)
				executed();
			reply(WireReply::ReadResponse, 0, data);
			return;
		} else {
			uint64_t orig;
			if (int e = ua.readMemory(remote.mem, remote.addr, &orig, 8); e == -ESRCH)
				return; /* no answer: see kSourceGone */
			else if (e != 0)
				return nak(IB_WC_REM_ACCESS_ERR, IB_EVENT_QP_ACCESS_ERR);
			const uint64_t v = op == IB_OPCODE_COMPARE_SWAP ? (orig == r.compare ? r.swapAdd : orig)
									: orig + r.swapAdd;
			if (dmaWrite(ua, remote.mem, remote.addr, &v, 8) != 0)
				return nak(IB_WC_REM_ACCESS_ERR, IB_EVENT_QP_ACCESS_ERR);
			rqp->lastAtomicPsn = r.psn;
			rqp->lastAtomicOrig = orig;
			executed();
			reply(WireReply::AtomicAck, 0, asBytes(orig));
			return;
		}
	}

	if (consumesRecv) {
		recv = std::move(rq->front());
		rq->pop_front();
		retired(*rqp);
		ib_uverbs_wc rwc{};
		rwc.wr_id = recv.wrId;
		rwc.qp_num = rqp->qpn;
		rwc.src_qp = ud ? r.srcQp : rqp->destQpn;
		rwc.slid = r.slid;
		rwc.sl = r.sl;
		rwc.dlid_path_bits = static_cast<uint8_t>(r.dlid & ((1u << dst.lmc) - 1));
		rwc.port_num = rqp->portNum;
		rwc.pkey_index = rqp->pkeyIndex;
		rwc.opcode = isWrite ? IB_WC_RECV_RDMA_WITH_IMM : IB_WC_RECV;
		if (r.hasImm) {
			rwc.ex = r.imm;
			rwc.wc_flags |= IB_WC_WITH_IMM;
		}
		rwc.byte_len = static_cast<uint32_t>(len);
		auto recvError = [&](WcStatus rs, WcStatus requesterStatus) {
			rwc.status = rs;
			complete(*rqp->recvCq, rwc);
			if (rc && requesterStatus != IB_WC_SUCCESS)
				reply(WireReply::Nak, nakSyndrome(requesterStatus));
			toError(*this, *rqp);
		};
		if (recv.bad)
			return recvError(IB_WC_LOC_QP_OP_ERR, IB_WC_REM_OP_ERR);
		if (!isWrite) {
			Pd *rpd = rqp->srq ? rqp->srq->pd : rqp->pd;
			std::vector<Seg> dstSegs;
			uint64_t room = 0;
			if (!resolveLocal(*this, rpd, recv.sges, true, dstSegs, room))
				return recvError(IB_WC_LOC_PROT_ERR, IB_WC_REM_OP_ERR);
			/* UD: the GRH as it came, when there was one */
			if (ud && !placeGrh(ua, dstSegs, room, r.grh ? r.grhBytes.data() : nullptr, rwc))
				return recvError(IB_WC_LOC_LEN_ERR, IB_WC_SUCCESS);
			if (room < len)
				return recvError(IB_WC_LOC_LEN_ERR, IB_WC_REM_INV_REQ_ERR);
			Seg data{ -1, 0, len, r.payload.data() };
			if (len && copySegs(ua, { data }, dstSegs, len) != 0)
				return recvError(IB_WC_LOC_PROT_ERR, IB_WC_REM_OP_ERR);
		}
		rwc.status = IB_WC_SUCCESS;
		complete(*rqp->recvCq, rwc, r.solicited);
		if (rqp->srq)
			srqConsumed(*rqp->srq);
	}
	executed();
	reply(WireReply::Ack, 0);
}

} /* namespace ibemu::emu */
