// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// The responder (rxe_resp.c): requests for a QP of this device, from a
// multicast send and from another daemon.
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
		srqConsumed(*this, *rqp.srq);
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
		objectEvent(rqp->file, *rqp, ev);
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
			srqConsumed(*this, *rqp->srq);
	}
	executed();
	reply(WireReply::Ack, 0);
}

} /* namespace ibemu::emu */
