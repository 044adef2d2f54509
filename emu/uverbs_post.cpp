// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// Posting work requests: the POST_SEND, POST_RECV and POST_SRQ_RECV
// commands (uverbs_cmd.c: the WRs and SGEs that follow the command), then
// what a software driver checks before it queues them (rdmavt's
// rvt_post_send, rvt_post_recv, rvt_post_srq_recv). The send queue runs in
// verbs_req.cpp.
#include "emu/uverbs_file.h"

#include "emu/qp_ring.h"
#include "emu/verbs_device.h"
#include "emu/verbs_qp.h"

#include <cerrno>
#include <cstring>
#include <vector>

namespace ibemu::emu {

namespace {

/* uverbs_request_next_ptr(): the WRs, then the SGEs, must lie within the
 * request (-ENOSPC). Division first: the counts come from the caller. */
int checkSlices(size_t inLen, uint32_t wqeSize, uint32_t wrCount, uint32_t sgeCount)
{
	size_t left = inLen - sizeof(ib_uverbs_post_send);
	if (wrCount && (wqeSize == 0 || wrCount > left / wqeSize))
		return wqeSize == 0 ? 0 : -ENOSPC;
	left -= size_t(wqeSize) * wrCount;
	if (sgeCount > left / sizeof(ib_uverbs_sge))
		return -ENOSPC;
	return 0;
}

bool opcodeOk(QpType t, uint32_t op)
{
	switch (op) {
	case IB_WR_SEND:
	case IB_WR_SEND_WITH_IMM:
		return true;
	case IB_WR_RDMA_WRITE:
	case IB_WR_RDMA_WRITE_WITH_IMM:
		return t != IB_QPT_UD;
	case IB_WR_RDMA_READ:
	case IB_WR_ATOMIC_CMP_AND_SWP:
	case IB_WR_ATOMIC_FETCH_AND_ADD:
		return t == IB_QPT_RC || t == IB_QPT_XRC_INI;
	case IB_WR_SEND_WITH_INV:
		return t == IB_QPT_RC || t == IB_QPT_UC || t == IB_QPT_XRC_INI;
	case IB_WR_LOCAL_INV: /* from a ring only: see parseAddress */
	case IB_WR_BIND_MW:
		return t == IB_QPT_RC || t == IB_QPT_UC;
	default:
		return false;
	}
}

/* The recv WRs and SGEs that follow ib_uverbs_post_recv (ib_uverbs_unmarshall_recv). */
int parseRecv(const uint8_t *in, size_t inLen, std::vector<RecvWqe> &list)
{
	ib_uverbs_post_recv cmd;
	memcpy(&cmd, in, sizeof cmd);
	if (int ret = checkSlices(inLen, cmd.wqe_size, cmd.wr_count, cmd.sge_count))
		return ret;
	if (cmd.wqe_size < sizeof(ib_uverbs_recv_wr))
		return -EINVAL;
	const uint8_t *wqes = in + sizeof cmd;
	const uint8_t *sgls = wqes + size_t(cmd.wqe_size) * cmd.wr_count;
	uint32_t sgInd = 0;
	list.resize(cmd.wr_count);
	for (uint32_t i = 0; i < cmd.wr_count; i++) {
		ib_uverbs_recv_wr wr;
		memcpy(&wr, wqes + size_t(i) * cmd.wqe_size, sizeof wr);
		if (uint64_t(wr.num_sge) + sgInd > cmd.sge_count)
			return -EINVAL;
		list[i].wrId = wr.wr_id;
		for (uint32_t s = 0; s < wr.num_sge; s++) {
			ib_uverbs_sge sge;
			memcpy(&sge, sgls + size_t(sgInd + s) * sizeof sge, sizeof sge);
			list[i].sges.push_back({ sge.addr, sge.length, sge.lkey });
		}
		sgInd += wr.num_sge;
	}
	return 0;
}

} /* namespace */

/* A work request's opcode, and UD's address handle (ib_uverbs_post_send()
 * looks the AH up while it copies the WRs in). The local operations
 * (LOCAL_INV, BIND_MW) come from a ring only: ib_uverbs_post_send() has no
 * room for a bind and refuses both, while rxe takes them from its queue. */
int UverbsFile::parseAddress(const Qp &qp, SendWqe &w, bool ring) const
{
	if (qp.qpType == IB_QPT_UD) {
		if (w.wr.opcode != IB_WR_SEND && w.wr.opcode != IB_WR_SEND_WITH_IMM)
			return -EINVAL;
		Ah *ah;
		if (int ret = get(w.wr.wr.ud.ah, ah))
			return ret;
		w.ah = ah->attr;
		w.ahPd = ah->pd;
	} else if (w.wr.opcode > IB_WR_SEND_WITH_INV ||
		   (!ring && (w.wr.opcode == IB_WR_LOCAL_INV || w.wr.opcode == IB_WR_BIND_MW))) {
		return -EINVAL;
	}
	return 0;
}

int UverbsFile::checkSend(const Qp &qp, SendWqe &w) const
{
	uint64_t total = w.isInline ? w.inlineData.size() : 0;
	for (const Sge &s : w.sges)
		total += s.length;
	bool atomic = w.wr.opcode == IB_WR_ATOMIC_CMP_AND_SWP || w.wr.opcode == IB_WR_ATOMIC_FETCH_AND_ADD;
	if (w.sges.size() > qp.maxSendSge || !opcodeOk(qp.qpType, w.wr.opcode) ||
	    ((w.wr.send_flags & IB_SEND_INLINE) && total > qp.maxInline))
		return -EINVAL;
	/* rvt_post_one_wr(): READ and atomics need responder resources;
	 * an atomic an 8-byte aligned target and an 8-byte result buffer */
	if ((atomic || w.wr.opcode == IB_WR_RDMA_READ) && qp.maxRdAtomic == 0)
		return -EINVAL;
	if (atomic && (w.sges.empty() || w.sges[0].length < 8 || (w.wr.wr.atomic.remote_addr & 7)))
		return -EINVAL;
	if (qp.qpType == IB_QPT_UD && w.ahPd != qp.pd) /* an AH of another PD */
		return -EINVAL;
	if ((w.wr.send_flags & IB_SEND_INLINE) && (atomic || w.wr.opcode == IB_WR_RDMA_READ))
		return -EINVAL; /* inline data is only ever sent */
	return 0;
}

/* The ring's sends: what the provider checked, checked again. One that
 * fails (only a program that bypasses the provider writes one) completes
 * in its turn with a local QP operation error, and the QP goes to Error,
 * as a real HCA treats a bad WQE it fetched. */
void UverbsFile::takeSends(Qp &qp)
{
	if (!qp.ring)
		return;
	while (qpStateOps(qp.state) & kPostSendOk) {
		SendWqe w;
		QpRing::Take t = qp.ring->nextSend(w, qp.sq.size());
		if (t == QpRing::Take::Empty)
			break;
		if (t != QpRing::Take::Ok || parseAddress(qp, w, true) || checkSend(qp, w))
			w.failStatus = IB_WC_LOC_QP_OP_ERR;
		w.retriesLeft = qp.retryCnt;
		w.rnrRetriesLeft = qp.rnrRetry;
		qp.sq.push_back(std::move(w));
		if (t == QpRing::Take::Overrun)
			break; /* the indices are garbage: take nothing more */
	}
}

void UverbsFile::doorbell(Qp &qp)
{
	QpRing &ring = *qp.ring;
	takeSends(qp);
	if (ring.recvNotify()) {
		size_t had = qp.rq.size();
		dev_.takeRecvs(qp);
		if (qpStateOps(qp.state) & kFlushRecv) {
			dev_.flush(qp);
		} else if (qp.rq.size() > had) {
			ring.setRecvNotify(false);
			dev_.recvPosted(&qp, nullptr);
		}
	}
	dev_.progress(qp);
}

/* ib_uverbs_post_send(), then the driver's post_send */
int UverbsFile::postSend(Request &r)
{
	auto cmd = r.cmd<ib_uverbs_post_send>();
	if (int ret = checkSlices(r.inLen, cmd.wqe_size, cmd.wr_count, cmd.sge_count))
		return ret;
	if (cmd.wqe_size < sizeof(ib_uverbs_send_wr))
		return -EINVAL;
	Qp *qp;
	if (int ret = get(cmd.qp_handle, qp))
		return ret;
	/* a ring QP's work requests come through the ring; an XRC target
	 * QP has no send queue; an XRC initiator's requests name their SRQ,
	 * which ib_uverbs_send_wr has no field for (only a ring carries it) */
	if (qp->ring || qp->qpType == IB_QPT_XRC_TGT || qp->qpType == IB_QPT_XRC_INI)
		return -EINVAL;
	const uint8_t *wqes = r.in + sizeof cmd;
	const uint8_t *sgls = wqes + size_t(cmd.wqe_size) * cmd.wr_count;

	/* parse everything first: a bad WR fails the command before any posts */
	std::vector<SendWqe> list(cmd.wr_count);
	uint32_t sgInd = 0;
	for (uint32_t i = 0; i < cmd.wr_count; i++) {
		SendWqe &w = list[i];
		memcpy(&w.wr, wqes + size_t(i) * cmd.wqe_size, sizeof w.wr);
		if (uint64_t(w.wr.num_sge) + sgInd > cmd.sge_count)
			return -EINVAL;
		if (int ret = parseAddress(*qp, w, false))
			return ret;
		for (uint32_t s = 0; s < w.wr.num_sge; s++) {
			ib_uverbs_sge sge;
			memcpy(&sge, sgls + size_t(sgInd + s) * sizeof sge, sizeof sge);
			w.sges.push_back({ sge.addr, sge.length, sge.lkey });
		}
		sgInd += w.wr.num_sge;
	}

	ib_uverbs_post_send_resp resp{};
	int ret = 0;
	if (!(qpStateOps(qp->state) & kPostSendOk)) {
		resp.bad_wr = 1;
		ret = -EINVAL;
	}
	for (uint32_t i = 0; i < cmd.wr_count && !ret; i++) {
		SendWqe &w = list[i];
		ret = checkSend(*qp, w);
		if (!ret && qp->sq.size() >= qp->maxSendWr)
			ret = -ENOMEM;
		if (!ret && (w.wr.send_flags & IB_SEND_INLINE)) {
			/* inline data is copied at post time, without lkeys */
			uint64_t total = 0;
			for (const Sge &s : w.sges)
				total += s.length;
			w.isInline = true;
			w.inlineData.resize(total);
			size_t at = 0;
			for (const Sge &s : w.sges) {
				if (s.length && ua_.read(r.tid, s.addr, w.inlineData.data() + at, s.length) != 0) {
					ret = -EFAULT;
					break;
				}
				at += s.length;
			}
		}
		if (ret) {
			resp.bad_wr = i + 1;
			break;
		}
		w.retriesLeft = qp->retryCnt;
		w.rnrRetriesLeft = qp->rnrRetry;
		qp->sq.push_back(std::move(w));
	}
	dev_.progress(*qp);
	if (int r2 = respond(r, &resp, sizeof resp))
		ret = r2;
	return ret;
}

int UverbsFile::postRecv(Request &r)
{
	auto cmd = r.cmd<ib_uverbs_post_recv>();
	std::vector<RecvWqe> list;
	if (int ret = parseRecv(r.in, r.inLen, list))
		return ret;
	Qp *qp;
	if (int ret = get(cmd.qp_handle, qp))
		return ret;
	if (qp->ring)
		return -EINVAL;
	ib_uverbs_post_recv_resp resp{};
	int ret = 0;
	if (qp->srq || qp->qpType == IB_QPT_XRC_INI || qp->qpType == IB_QPT_XRC_TGT ||
	    !(qpStateOps(qp->state) & kPostRecvOk)) { /* XRC: no receive queue */
		resp.bad_wr = 1;
		ret = -EINVAL;
	}
	for (size_t i = 0; i < list.size() && !ret; i++) {
		if (list[i].sges.size() > qp->maxRecvSge)
			ret = -EINVAL;
		else if (qp->rq.size() >= qp->maxRecvWr)
			ret = -ENOMEM;
		if (ret) {
			resp.bad_wr = static_cast<uint32_t>(i + 1);
			break;
		}
		if (qpStateOps(qp->state) & kFlushRecv) { /* flushed at once */
			ib_uverbs_wc wc{};
			wc.wr_id = list[i].wrId;
			wc.status = IB_WC_WR_FLUSH_ERR;
			wc.opcode = IB_WC_RECV;
			wc.qp_num = qp->qpn;
			dev_.complete(*qp->recvCq, wc);
			continue;
		}
		qp->rq.push_back(std::move(list[i]));
	}
	dev_.recvPosted(qp, nullptr);
	if (int r2 = respond(r, &resp, sizeof resp))
		ret = r2;
	return ret;
}

int UverbsFile::postSrqRecv(Request &r)
{
	auto cmd = r.cmd<ib_uverbs_post_recv>();
	std::vector<RecvWqe> list;
	if (int ret = parseRecv(r.in, r.inLen, list))
		return ret;
	Srq *srq;
	if (int ret = get(cmd.qp_handle, srq))
		return ret;
	ib_uverbs_post_recv_resp resp{};
	int ret = 0;
	for (size_t i = 0; i < list.size(); i++) {
		if (list[i].sges.size() > srq->maxSge)
			ret = -EINVAL;
		else if (srq->queue.size() >= srq->maxWr)
			ret = -ENOMEM;
		if (ret) {
			resp.bad_wr = static_cast<uint32_t>(i + 1);
			break;
		}
		srq->queue.push_back(std::move(list[i]));
	}
	dev_.recvPosted(nullptr, srq);
	if (int r2 = respond(r, &resp, sizeof resp))
		ret = r2;
	return ret;
}

} /* namespace ibemu::emu */
