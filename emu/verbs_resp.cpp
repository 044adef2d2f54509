// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// The responder (rxe_resp.c): every request for a QP of this device goes
// through respond(), whether a requester of this daemon sent it
// (verbs_req.cpp, as rxe's loopback goes through rxe_rcv), a multicast send
// did, or it came from another daemon as packets (read back here). The
// P_Key and Q_Key checks, duplicates (by the QP's expected PSN), the
// receive and its completion, RNR, and the R_Key and access checks are
// here alone; the caller sends the answer back its own way.
#include "emu/host.h"
#include "emu/qp_ring.h"
#include "emu/verbs_path.h"
#include "emu/verbs_qp.h"
#include "fabric/subnet.h"

#include <boost/asio/post.hpp>

namespace ibemu::emu {

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
	bool hasInv = false;
	uint32_t invRkey = 0; /* IETH */
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
		if (i + 1 == n &&
		    (op == IB_OPCODE_SEND_LAST_WITH_INVALIDATE || op == IB_OPCODE_SEND_ONLY_WITH_INVALIDATE)) {
			r.hasInv = true;
			r.invRkey = be32At(eth + at);
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

/* A receive left an SRQ: below its armed limit, the one-shot event. */
void srqConsumed(VerbsDevice &dev, Srq &srq)
{
	if (srq.limit && srq.queue.size() < srq.limit) {
		dev.objectEvent(srq.file, srq, IB_EVENT_SRQ_LIMIT_REACHED);
		srq.limit = 0;
	}
}

/* The responder (rxe_resp.c): one request for rqp behind port dst, from a
 * requester of this daemon, of another, or a multicast send. Its checks
 * and work are those of IBA 9.6-9.7; what goes back is in the answer, for
 * the caller to send its own way. Duplicates are found here alone, by the
 * QP's expected PSN (IBA 9.7.7.2.4). */
Answer VerbsDevice::respond(Qp &rqp, fabric::Port &dst, const Inbound &in)
{
	using namespace fabric;
	Answer a;
	if (rqp.qpType != in.type || rqp.portNum != dst.num || !(qpStateOps(rqp.state) & kProcessRecvOk))
		return a;
	if (!pkeysMatch(in.pkey, pkeyAt(dst, rqp.pkeyIndex))) {
		if (dst.pkeyViolations < 0xffff)
			dst.pkeyViolations++;
		return a;
	}
	const bool rc = reliable(in.type), ud = in.type == IB_QPT_UD;
	if (ud && in.qkey != rqp.qkey) {
		if (dst.qkeyViolations < 0xffff)
			dst.qkeyViolations++;
		return a;
	}
	UserAccess &ua = host_.access();
	const uint8_t op = in.op;
	const bool isRead = op == IB_OPCODE_RDMA_READ_REQUEST;
	const bool isAtomic = op == IB_OPCODE_COMPARE_SWAP || op == IB_OPCODE_FETCH_ADD;
	const bool isWrite = op >= IB_OPCODE_RDMA_WRITE_FIRST && op <= IB_OPCODE_RDMA_WRITE_ONLY_WITH_IMMEDIATE;
	/* the requests each transport carries (IBA 9.2, table 38) */
	const bool allowed = rc ? isSendOp(op) || isWrite || isRead || isAtomic
		: ud            ? op == IB_OPCODE_SEND_ONLY || op == IB_OPCODE_SEND_ONLY_WITH_IMMEDIATE
				: isSendOp(op) || isWrite;
	if (!allowed)
		return a;
	if (rqp.kernelRecv) { /* a kernel ULP's UD QP: its own buffers, never short */
		std::vector<uint8_t> bytes;
		if (!ud || (in.len && gather(ua, in.data, in.len, bytes) != 0)) {
			a.requesterFault = ud;
			return a;
		}
		rqp.kernelRecv(KernelDatagram{ in.slid, in.dlid, in.sl, in.srcQp, in.grh, bytes });
		return a;
	}
	const bool consumesRecv = isSendOp(op) || (isWrite && in.hasImm);
	const uint64_t len = in.len;
	auto reply = [&](WireReply kind, uint8_t syndrome = 0) {
		if (rc) {
			a.reply = true;
			a.kind = kind;
			a.syndrome = syndrome;
		}
		return a;
	};
	/* a responder error of class C (IBA 9.9.3.1.3): NAK, and the responder
	 * QP to Error once the requester has its answer */
	auto nak = [&](WcStatus requesterStatus, AsyncEvent ev) {
		if (!rc)
			return a;
		reply(WireReply::Nak, nakSyndrome(requesterStatus));
		a.event = ev;
		a.raise = true;
		a.toError = true;
		return a;
	};
	auto executed = [&] {
		rqp.msn = (rqp.msn + 1) & 0xffffff;
		rqp.rqPsn = (in.lastPsn + 1) & 0xffffff;
	};

	/* XRC: the XRCETH names the SRQ that serves the request, with its PD
	 * and CQ; one that is not an XRC SRQ of the target QP's domain is an
	 * invalid request (IBA 9.9.3.1.3, class C) */
	Srq *srq = rqp.srq;
	const Pd *pd = rqp.pd;
	if (in.type == IB_QPT_XRC_TGT) {
		srq = srqByNum(in.xrcSrqn);
		if (!srq || !srq->xrcd || srq->xrcd != rqp.xrcd)
			return nak(IB_WC_REM_INV_REQ_ERR, IB_EVENT_QP_REQ_ERR);
		pd = srq->pd;
	}
	Cq &recvCq = in.type == IB_QPT_XRC_TGT ? *srq->cq : *rqp.recvCq;

	/* a duplicate: executed before, and its answer was lost */
	const bool duplicate = rc && psnDiff(in.lastPsn, rqp.rqPsn) < 0;
	if (duplicate) {
		if (isAtomic) {
			if (rqp.lastAtomicPsn != in.psn)
				return a;
			a.atomicOrig = rqp.lastAtomicOrig;
			return reply(WireReply::AtomicAck);
		}
		if (!isRead)
			return reply(WireReply::Ack);
		/* a READ is read again */
	}

	std::deque<RecvWqe> *rq = srq ? &srq->queue : &rqp.rq;
	if (consumesRecv && rq->empty())
		takeRecvs(rqp);
	if (consumesRecv && rq->empty() && rc && rqp.ring && !rqp.srq) {
		/* the program's next receive is to ring, and wake a requester
		 * waiting here: ask, then look once more (one posted in between
		 * saw no request) */
		rqp.ring->setRecvNotify(true);
		takeRecvs(rqp);
		if (!rq->empty())
			rqp.ring->setRecvNotify(false);
	}
	if (consumesRecv && rq->empty())
		return reply(WireReply::RnrNak, kAethRnrNak | (rqp.minRnrTimer & 0x1f));

	if (isWrite || isRead || isAtomic) {
		const uint32_t need = isWrite ? IB_ACCESS_REMOTE_WRITE
			: isRead              ? IB_ACCESS_REMOTE_READ
					      : IB_ACCESS_REMOTE_ATOMIC;
		if (isAtomic && (in.va & 7))
			return nak(IB_WC_REM_INV_REQ_ERR, IB_EVENT_QP_REQ_ERR);
		if (!(rqp.accessFlags & need))
			return nak(IB_WC_REM_ACCESS_ERR, IB_EVENT_QP_ACCESS_ERR);
		if ((isWrite && in.dmaLen != len) || (isRead && in.dmaLen > limits_.maxMsgSize))
			return nak(IB_WC_REM_INV_REQ_ERR, IB_EVENT_QP_REQ_ERR);
		Seg remote;
		if (len && !resolveRemote(*this, rqp, pd, in.rkey, in.va, len, need, remote))
			return nak(IB_WC_REM_ACCESS_ERR, IB_EVENT_QP_ACCESS_ERR);
		if (isWrite) {
			int c = len ? copySegs(ua, in.data, { remote }, len) : 0;
			if (c == kSourceFault || c == kSourceGone) { /* the requester's own data */
				a.requesterFault = true;
				return a;
			}
			if (c != 0)
				return nak(IB_WC_REM_ACCESS_ERR, IB_EVENT_QP_ACCESS_ERR);
		} else if (isRead) {
			/* read before anything answers: a responder whose process
			 * is gone sends nothing (kSourceGone) */
			int c = 0;
			if (len && !in.readTo.empty()) /* a requester here: into its buffer */
				c = copySegs(ua, { remote }, in.readTo, len);
			else if (len) /* one elsewhere: what the response carries */
				c = gather(ua, { remote }, len, a.readData);
			if (c == kSourceGone)
				return a;
			if (c == kSourceFault)
				return nak(IB_WC_REM_ACCESS_ERR, IB_EVENT_QP_ACCESS_ERR);
			if (!duplicate)
				executed();
			a.requesterFault = c != 0; /* the requester's own buffer */
			return reply(WireReply::ReadResponse);
		} else { /* atomics on the responder's 8 bytes; the original goes back */
			uint64_t orig;
			if (int e = ua.readMemory(remote.mem, remote.addr, &orig, 8); e == -ESRCH)
				return a; /* see kSourceGone */
			else if (e != 0)
				return nak(IB_WC_REM_ACCESS_ERR, IB_EVENT_QP_ACCESS_ERR);
			const uint64_t v = op == IB_OPCODE_COMPARE_SWAP ? (orig == in.compare ? in.swapAdd : orig)
									: orig + in.swapAdd;
			if (dmaWrite(ua, remote.mem, remote.addr, &v, 8) != 0)
				return nak(IB_WC_REM_ACCESS_ERR, IB_EVENT_QP_ACCESS_ERR);
			rqp.lastAtomicPsn = in.psn;
			rqp.lastAtomicOrig = orig;
			executed();
			a.atomicOrig = orig;
			return reply(WireReply::AtomicAck);
		}
	}

	if (consumesRecv) {
		RecvWqe recv = std::move(rq->front());
		rq->pop_front();
		retired(rqp);
		ib_uverbs_wc rwc{};
		rwc.wr_id = recv.wrId;
		rwc.qp_num = rqp.qpn;
		rwc.src_qp = in.srcQp == kQpnOfPath ? rqp.destQpn : in.srcQp;
		rwc.slid = in.slid;
		rwc.sl = in.sl;
		rwc.dlid_path_bits = in.dlid >= IB_MULTICAST_LID_BASE
			? 0
			: static_cast<uint8_t>(in.dlid & ((1u << dst.lmc) - 1));
		rwc.port_num = rqp.portNum;
		rwc.pkey_index = rqp.pkeyIndex;
		rwc.opcode = isWrite ? IB_WC_RECV_RDMA_WITH_IMM : IB_WC_RECV;
		if (in.hasImm) {
			rwc.ex = in.imm;
			rwc.wc_flags |= IB_WC_WITH_IMM;
		}
		rwc.byte_len = static_cast<uint32_t>(len);
		/* the receive fails: the responder QP to Error once the
		 * requester has its answer (it may be the requester itself) */
		auto recvError = [&](WcStatus rs, WcStatus requesterStatus) {
			rwc.status = rs;
			complete(recvCq, rwc);
			a.toError = true;
			if (requesterStatus != IB_WC_SUCCESS)
				reply(WireReply::Nak, nakSyndrome(requesterStatus));
			return a;
		};
		if (recv.bad) /* the responder's own receive is broken */
			return recvError(IB_WC_LOC_QP_OP_ERR, IB_WC_REM_OP_ERR);
		if (!isWrite) {
			const Pd *rpd = srq ? srq->pd : pd;
			std::vector<Seg> dstSegs;
			uint64_t room = 0;
			if (!resolveLocal(*this, rpd, recv.sges, true, dstSegs, room))
				return recvError(IB_WC_LOC_PROT_ERR, IB_WC_REM_OP_ERR);
			/* UD: the GRH as it came, when there was one */
			if (ud && !placeGrh(ua, dstSegs, room, in.grh, rwc))
				return recvError(IB_WC_LOC_LEN_ERR, IB_WC_SUCCESS);
			if (room < len)
				return recvError(IB_WC_LOC_LEN_ERR, IB_WC_REM_INV_REQ_ERR);
			int c = len ? copySegs(ua, in.data, dstSegs, len) : 0;
			if (c == kSourceFault || c == kSourceGone) { /* the requester's own data: the receive stays */
				rq->push_front(std::move(recv));
				retired(rqp);
				a.requesterFault = true;
				return a;
			}
			if (c != 0)
				return recvError(IB_WC_LOC_PROT_ERR, IB_WC_REM_OP_ERR);
		}
		/* SEND with Invalidate (rxe's execute(), then do_complete()): the
		 * rkey of a type 2 window here, else the receive fails (Class J) */
		if (in.hasInv) {
			if (localInvalidate(in.invRkey) != IB_WC_SUCCESS)
				return recvError(IB_WC_REM_INV_REQ_ERR, IB_WC_REM_INV_REQ_ERR);
			rwc.ex = in.invRkey;
			rwc.wc_flags |= IB_WC_WITH_INVALIDATE;
		}
		rwc.status = IB_WC_SUCCESS;
		complete(recvCq, rwc, in.solicited);
		if (srq)
			srqConsumed(*this, *srq);
	}
	executed();
	return reply(WireReply::Ack);
}

/* What the responder's answer does to the responder QP once it is sent */
void VerbsDevice::answered(Qp &rqp, const Answer &a)
{
	if (a.raise)
		objectEvent(rqp.file, rqp, a.event);
	if (a.toError)
		toError(*this, rqp);
}

/* --- the far side: messages to and from other daemons ---
 *
 * A message whose route reaches a node another daemon simulates
 * (Subnet::routeData sets `away`) goes there as its packets, the bytes a
 * capture shows (requestPackets). That daemon's responder runs on the
 * packets (respondRemote, then respond()), and an
 * RC responder's reply comes back as packets (replyPackets) to
 * replyArrived(), which ends the requester's wait. The requester's ACK
 * timer runs meanwhile, so a message or a reply lost with a connection is
 * sent again (retry_cnt), and the responder answers a duplicate again
 * without executing it twice (its expected PSN, IBA 9.7.7.2.4). */

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

/* The request r from another daemon, to rqp behind port dst: read into
 * what the responder takes, and its answer (RC) back as packets */
void VerbsDevice::respondTo(Qp &rqp, fabric::Port &dst, const FarRequest &r)
{
	using namespace fabric;
	if (r.transport != IB_OPCODE_RC && r.transport != IB_OPCODE_UC && r.transport != IB_OPCODE_UD)
		return; /* XRC is not read back from packets yet */
	Inbound in;
	in.type = r.transport == IB_OPCODE_RC ? IB_QPT_RC : r.transport == IB_OPCODE_UC ? IB_QPT_UC : IB_QPT_UD;
	const bool ud = in.type == IB_QPT_UD;
	const bool isRead = r.first == IB_OPCODE_RDMA_READ_REQUEST;
	const bool isAtomic = r.first == IB_OPCODE_COMPARE_SWAP || r.first == IB_OPCODE_FETCH_ADD;
	const unsigned mtu = ud ? mtuBytes(std::min(dst.neighborMtu, dst.mtuCap)) : mtuBytes(rqp.pathMtu);
	in.op = r.first;
	in.hasImm = r.hasImm;
	in.imm = r.imm;
	in.hasInv = r.hasInv;
	in.invRkey = r.invRkey;
	in.solicited = r.solicited;
	in.len = isRead ? r.dmaLen : isAtomic ? 8 : r.payload.size();
	in.psn = r.psn;
	in.lastPsn = (r.psn + (isRead ? packetsFor(in.len, mtu) : r.packets) - 1) & 0xffffff;
	in.pkey = r.pkey;
	in.slid = r.slid;
	in.dlid = r.dlid;
	in.sl = r.sl;
	in.qkey = r.qkey;
	in.srcQp = ud ? r.srcQp : kQpnOfPath;
	in.grh = r.grh ? r.grhBytes.data() : nullptr;
	in.va = r.va;
	in.rkey = r.rkey;
	in.dmaLen = r.dmaLen;
	in.swapAdd = r.swapAdd;
	in.compare = r.compare;
	if (!r.payload.empty())
		in.data.push_back({ -1, 0, r.payload.size(), r.payload.data() });
	const Answer a = respond(rqp, dst, in);
	if (a.reply) { /* the way back: the request's path reversed */
		PacketHeaders h;
		h.sl = r.sl & 0xf;
		h.vl = dst.sl2vl[h.sl] & 0xf;
		h.slid = static_cast<uint16_t>(dst.lid | (r.dlid & ((1u << dst.lmc) - 1)));
		h.dlid = r.slid;
		h.pkey = r.pkey;
		h.destQp = rqp.destQpn;
		h.opcode = IB_OPCODE_RC;
		if (r.grh) {
			h.grh = true;
			std::copy_n(r.grhBytes.begin() + 8, 16, h.dgid.begin());
			std::copy_n(r.grhBytes.begin() + 24, 16, h.sgid.begin());
			h.hopLimit = 0xff;
		}
		std::span<const uint8_t> data;
		if (a.kind == WireReply::ReadResponse)
			data = a.readData;
		else if (a.kind == WireReply::AtomicAck)
			data = std::span(reinterpret_cast<const uint8_t *>(&a.atomicOrig), 8);
		DataPackets out = replyPackets(h, a.kind, a.syndrome, in.psn, in.lastPsn, rqp.msn, mtu, data);
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
	}
	answered(rqp, a);
}

} /* namespace ibemu::emu */
