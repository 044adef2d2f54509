// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// The requester (rxe_req.c): the send queue's progress, one message from
// its local checks to the wire, multicast sends, sending to another
// daemon, and the waits for a retry.
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
#include "emu/host.h"
#include "emu/qp_ring.h"
#include "emu/verbs_path.h"
#include "emu/verbs_qp.h"
#include "fabric/subnet.h"

#include <boost/asio/post.hpp>

namespace ibemu::emu {

namespace {

/* The opcode of a work request's message when it is one packet (the
 * responder looks at the first packet's alone) */
uint8_t requestOpcode(uint32_t wrOpcode)
{
	using namespace fabric;
	switch (wrOpcode) {
	case IB_WR_RDMA_WRITE:
		return IB_OPCODE_RDMA_WRITE_ONLY;
	case IB_WR_RDMA_WRITE_WITH_IMM:
		return IB_OPCODE_RDMA_WRITE_ONLY_WITH_IMMEDIATE;
	case IB_WR_SEND_WITH_IMM:
		return IB_OPCODE_SEND_ONLY_WITH_IMMEDIATE;
	case IB_WR_SEND_WITH_INV:
		return IB_OPCODE_SEND_ONLY_WITH_INVALIDATE;
	case IB_WR_RDMA_READ:
		return IB_OPCODE_RDMA_READ_REQUEST;
	case IB_WR_ATOMIC_CMP_AND_SWP:
		return IB_OPCODE_COMPARE_SWAP;
	case IB_WR_ATOMIC_FETCH_AND_ADD:
		return IB_OPCODE_FETCH_ADD;
	default:
		return IB_OPCODE_SEND_ONLY;
	}
}

} /* namespace */

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
	const bool rc = reliable(qp.qpType);
	const bool xrc = qp.qpType == IB_QPT_XRC_INI;
	const bool ud = qp.qpType == IB_QPT_UD;
	const bool isRead = op == IB_WR_RDMA_READ;
	const bool isAtomic = op == IB_WR_ATOMIC_CMP_AND_SWP || op == IB_WR_ATOMIC_FETCH_AND_ADD;
	const bool isWrite = op == IB_WR_RDMA_WRITE || op == IB_WR_RDMA_WRITE_WITH_IMM;
	const bool hasImm = op == IB_WR_SEND_WITH_IMM || op == IB_WR_RDMA_WRITE_WITH_IMM;
	const bool hasInv = op == IB_WR_SEND_WITH_INV;
	if (w.failStatus != IB_WC_SUCCESS) {
		status = w.failStatus;
		return Outcome::Error;
	}
	/* the local operations (rxe_do_local_ops): done here, nothing sent */
	if (op == IB_WR_BIND_MW || op == IB_WR_LOCAL_INV) {
		status = op == IB_WR_BIND_MW ? bindMw(qp, w) : localInvalidate(w.wr.ex);
		return status == IB_WC_SUCCESS ? Outcome::Done : Outcome::Error;
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
			   : wireBytes(len, reqPackets, (isWrite ? 16 : 0) + (hasImm || hasInv ? 4 : 0), ud ? 8 : 0);
	if (xrc) /* the XRCETH in every packet */
		reqBytes += uint64_t(reqPackets) * fabric::kXrcethBytes;

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
	const uint8_t transport = xrc ? fabric::IB_OPCODE_XRC
		: rc                  ? fabric::IB_OPCODE_RC
		: ud                  ? fabric::IB_OPCODE_UD
				      : fabric::IB_OPCODE_UC;
	const uint16_t slid = static_cast<uint16_t>(src->lid | pathBits);
	fabric::PacketHeaders base; /* for a capture only */
	WirePackets reqWire;
	if (subnet.tappingData()) {
		const uint16_t pkey = pkeyAt(*src, qp.pkeyIndex);
		base = ud ? wireBase(*src, slid, dlid, sl, pkey, dqpn, transport, w.ah.is_global, w.ah.grh)
			  : wireBase(*src, slid, dlid, sl, pkey, dqpn, transport, qp.av.is_global, qp.av);
		reqWire = requestPackets(base, w.wr, sendQkey(qp, w), qp.qpn, w.psn, mtu, len,
					 isRead || isAtomic ? std::vector<uint8_t>() : gather(ua, local, len),
					 w.xrcSrqn);
	}
	fabric::Away away;
	fabric::Port *dst = subnet.routeData(*src, dlid, reqPackets, reqBytes, reqWire, &away);
	if (!dst && away.far && xrc) /* not read back across daemons yet (docs/verbs.md) */
		return lost();
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
	if (!rqp)
		return lost();

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
	/* an atomic ACK carries no payload: AETH and AtomicAckETH */
	constexpr unsigned kAtomicAckBytes = fabric::kAethBytes + fabric::kAtomicAckEthBytes;
	auto asBytes = [](const uint64_t &v) { return std::span(reinterpret_cast<const uint8_t *>(&v), 8); };

	/* --- the responder (verbs_resp.cpp), on the message as it arrives --- */
	Inbound in;
	in.type = xrc ? IB_QPT_XRC_TGT : qp.qpType;
	in.xrcSrqn = w.xrcSrqn & 0xffffff; /* the XRCETH's 24 bits */
	in.op = requestOpcode(op);
	in.hasImm = hasImm;
	in.imm = w.wr.ex;
	in.hasInv = hasInv;
	in.invRkey = w.wr.ex;
	in.solicited = w.wr.send_flags & IB_SEND_SOLICITED;
	in.psn = w.psn;
	in.lastPsn = lastPsn;
	in.pkey = pkeyAt(*src, qp.pkeyIndex);
	in.slid = slid;
	in.dlid = dlid;
	in.sl = sl;
	in.qkey = sendQkey(qp, w);
	in.srcQp = qp.qpn;
	uint8_t grh[fabric::kGrhBytes];
	if (ud && w.ah.is_global) {
		putGrh(grh, *src, w.ah, len);
		in.grh = grh;
	}
	in.va = isAtomic ? w.wr.wr.atomic.remote_addr : w.wr.wr.rdma.remote_addr;
	in.rkey = isAtomic ? w.wr.wr.atomic.rkey : w.wr.wr.rdma.rkey;
	in.len = len;
	in.dmaLen = static_cast<uint32_t>(len);
	if (op == IB_WR_ATOMIC_CMP_AND_SWP) {
		in.compare = w.wr.wr.atomic.compare_add;
		in.swapAdd = w.wr.wr.atomic.swap;
	} else {
		in.swapAdd = w.wr.wr.atomic.compare_add;
	}
	if (isRead)
		in.readTo = local;
	else if (!isAtomic)
		in.data = local;
	const Answer a = rdev->respond(*rqp, *dst, in);

	/* --- its answer, back here, for the completer (verbs_comp.cpp) --- */
	bool arrived = false;
	if (a.reply) {
		switch (a.kind) {
		case WireReply::ReadResponse:
			arrived = back(len, packetsFor(len, mtu) > 1 ? 2 * fabric::kAethBytes : fabric::kAethBytes,
				       WireReply::ReadResponse, 0,
				       subnet.tappingData() ? gather(ua, local, len) : std::vector<uint8_t>());
			break;
		case WireReply::AtomicAck:
			arrived = back(0, kAtomicAckBytes, WireReply::AtomicAck, 0, asBytes(a.atomicOrig));
			break;
		default:
			arrived = back(0, fabric::kAethBytes, a.kind, a.syndrome);
			break;
		}
	}
	if (a.raise)
		rdev->objectEvent(rqp->file, *rqp, a.event);
	if (a.toError) /* after the requester's WQE is done: it may be the same QP */
		responderErrors_.push_back(rqp);
	if (a.requesterFault && !a.reply) { /* our own data */
		status = IB_WC_LOC_PROT_ERR;
		return Outcome::Error;
	}
	if (!a.reply)
		return lost();
	if (!arrived && a.kind != WireReply::RnrNak && a.kind != WireReply::Nak)
		return lost(); /* the ACK or response is lost: the requester retries */
	return applyAnswer(qp, w, a, local, len, rqp, status);
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
	/* each copy as the responder takes it, with its own checks and receive */
	Inbound in;
	in.type = IB_QPT_UD;
	in.op = requestOpcode(w.wr.opcode);
	in.hasImm = w.wr.opcode == IB_WR_SEND_WITH_IMM;
	in.imm = w.wr.ex;
	in.solicited = w.wr.send_flags & IB_SEND_SOLICITED;
	in.psn = in.lastPsn = w.psn;
	in.pkey = pkeyAt(src, qp.pkeyIndex);
	in.slid = static_cast<uint16_t>(src.lid | (w.ah.src_path_bits & ((1u << src.lmc) - 1)));
	in.dlid = w.ah.dlid;
	in.sl = w.ah.sl;
	in.qkey = sendQkey(qp, w);
	in.srcQp = qp.qpn;
	uint8_t grh[fabric::kGrhBytes];
	if (w.ah.is_global) {
		putGrh(grh, src, w.ah, len);
		in.grh = grh;
	}
	in.len = len;
	in.dmaLen = static_cast<uint32_t>(len);
	if (len)
		in.data.push_back({ -1, 0, len, payload.data() });
	for (fabric::Port *dst : reached) {
		VerbsDevice *rdev = host_.verbsAt(*dst);
		if (!rdev)
			continue;
		auto it = rdev->mcast_.find(group);
		if (it == rdev->mcast_.end())
			continue;
		for (Qp *r : it->second) {
			if (r->portNum != dst->num)
				continue;
			if (rdev->respond(*r, *dst, in).toError) /* once the send is done */
				responderErrors_.push_back(r);
		}
	}
	return IB_WC_SUCCESS;
}

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

} /* namespace ibemu::emu */
