// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// The fast path: a QP's send and receive queues in memory shared with
// ibemud (the layout is emu/ibemu_user_verbs.h's, the device's side
// emu/qp_ring.cpp). Posting checks a work request as the device's POST_SEND
// and POST_RECV would, with the same errnos, writes it into the next slot
// and publishes the producer index; a send then rings the doorbell, one
// byte on a socket the device watches. A receive rings only when the
// device asked for it (a requester waits on an empty queue, or the QP is in
// Error). No system call otherwise, and none for completions (provider.cpp).
#include "tools/provider/provider.h"

#include "emu/ibemu_user_verbs.h"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

namespace ibemu::provider {

namespace {

constexpr uint32_t kSge = sizeof(ib_uverbs_sge);

uint32_t round16(uint64_t n)
{
	return static_cast<uint32_t>((n + 15) & ~uint64_t(15));
}

ibemu_qp_ring *header(const QpRing &r)
{
	return static_cast<ibemu_qp_ring *>(r.map);
}

uint8_t *sendSlot(const QpRing &r, uint32_t i)
{
	return static_cast<uint8_t *>(r.map) + sizeof(ibemu_qp_ring) + size_t(i & (r.sqEntries - 1)) * r.sqStride;
}

uint8_t *recvSlot(const QpRing &r, uint32_t i)
{
	return static_cast<uint8_t *>(r.map) + sizeof(ibemu_qp_ring) + size_t(r.sqEntries) * r.sqStride +
		size_t(i & (r.rqEntries - 1)) * r.rqStride;
}

void ringDoorbell(const QpRing &r)
{
	static const char one = 1;
	/* a full socket already holds a ring the device has not read */
	(void)send(r.bell, &one, 1, MSG_DONTWAIT | MSG_NOSIGNAL);
}

/* The device's checks of one send (emu/uverbs_post.cpp checkSend); 0 or
 * the errno POST_SEND would give. */
int checkSend(const Qp *qp, const ibv_send_wr *wr, uint32_t outstanding)
{
	const QpRing &r = qp->ring;
	const ibv_qp &q = qp->vqp.qp;
	const bool atomic = wr->opcode == IBV_WR_ATOMIC_CMP_AND_SWP || wr->opcode == IBV_WR_ATOMIC_FETCH_AND_ADD;
	const bool inl = wr->send_flags & IBV_SEND_INLINE;
	switch (wr->opcode) {
	case IBV_WR_SEND:
	case IBV_WR_SEND_WITH_IMM:
		break;
	case IBV_WR_RDMA_WRITE:
	case IBV_WR_RDMA_WRITE_WITH_IMM:
		if (q.qp_type == IBV_QPT_UD)
			return EINVAL;
		break;
	case IBV_WR_SEND_WITH_INV: /* the rkey goes where an immediate would */
		if (q.qp_type != IBV_QPT_RC && q.qp_type != IBV_QPT_UC && q.qp_type != IBV_QPT_XRC_SEND)
			return EINVAL;
		break;
	case IBV_WR_RDMA_READ:
	case IBV_WR_ATOMIC_CMP_AND_SWP:
	case IBV_WR_ATOMIC_FETCH_AND_ADD:
		if ((q.qp_type != IBV_QPT_RC && q.qp_type != IBV_QPT_XRC_SEND) || r.maxRdAtomic == 0 || inl)
			return EINVAL;
		break;
	case IBV_WR_BIND_MW: /* local operations: their checks are the device's, when it executes them */
		if (!wr->bind_mw.mw)
			return EINVAL;
		[[fallthrough]];
	case IBV_WR_LOCAL_INV:
		if (q.qp_type != IBV_QPT_RC && q.qp_type != IBV_QPT_UC)
			return EINVAL;
		return outstanding >= r.maxSendWr ? ENOMEM : 0;
	default:
		return EINVAL;
	}
	if (wr->num_sge < 0 || uint32_t(wr->num_sge) > r.maxSendSge)
		return EINVAL;
	if (atomic && (wr->num_sge < 1 || wr->sg_list[0].length < 8 || (wr->wr.atomic.remote_addr & 7)))
		return EINVAL;
	if (inl) {
		uint64_t total = 0;
		for (int i = 0; i < wr->num_sge; i++)
			total += wr->sg_list[i].length;
		if (total > r.maxInline)
			return EINVAL;
	}
	if (q.qp_type == IBV_QPT_UD && (!wr->wr.ud.ah || wr->wr.ud.ah->pd != q.pd))
		return EINVAL;
	if (outstanding >= r.maxSendWr)
		return ENOMEM;
	return 0;
}

void writeSend(const Qp *qp, const ibv_send_wr *wr, uint8_t *slot)
{
	ibemu_send_wqe h{};
	h.wr_id = wr->wr_id;
	h.opcode = wr->opcode; /* IBV_WR_* and IB_WR_* agree for these */
	h.send_flags = wr->send_flags;
	h.imm_data = wr->imm_data;
	if (qp->vqp.qp.qp_type == IBV_QPT_XRC_SEND)
		h.remote_srqn = wr->qp_type.xrc.remote_srqn;
	if (wr->opcode == IBV_WR_BIND_MW) { /* as emu/ibemu_user_verbs.h lays a bind out */
		const ibv_mw_bind_info &b = wr->bind_mw.bind_info;
		h.ah = wr->bind_mw.mw->handle;
		h.imm_data = wr->bind_mw.mw->rkey;
		h.rkey = wr->bind_mw.rkey;
		h.remote_qpn = b.mr ? b.mr->lkey : 0;
		h.remote_qkey = b.mw_access_flags;
		h.remote_addr = b.addr;
		h.compare_add = b.length;
		h.send_flags &= ~IBV_SEND_INLINE;
		memcpy(slot, &h, sizeof h);
		return;
	}
	if (wr->opcode == IBV_WR_LOCAL_INV) {
		h.send_flags &= ~IBV_SEND_INLINE;
		memcpy(slot, &h, sizeof h);
		return;
	}
	if (qp->vqp.qp.qp_type == IBV_QPT_UD) {
		h.ah = wr->wr.ud.ah->handle;
		h.remote_qpn = wr->wr.ud.remote_qpn;
		h.remote_qkey = wr->wr.ud.remote_qkey;
	} else if (wr->opcode == IBV_WR_ATOMIC_CMP_AND_SWP || wr->opcode == IBV_WR_ATOMIC_FETCH_AND_ADD) {
		h.remote_addr = wr->wr.atomic.remote_addr;
		h.rkey = wr->wr.atomic.rkey;
		h.compare_add = wr->wr.atomic.compare_add;
		h.swap = wr->wr.atomic.swap;
	} else {
		h.remote_addr = wr->wr.rdma.remote_addr;
		h.rkey = wr->wr.rdma.rkey;
	}
	uint8_t *body = slot + sizeof h;
	if (wr->send_flags & IBV_SEND_INLINE) { /* the data now: the program may reuse it */
		for (int i = 0; i < wr->num_sge; i++) {
			memcpy(body + h.inline_len, reinterpret_cast<const void *>(uintptr_t(wr->sg_list[i].addr)),
			       wr->sg_list[i].length);
			h.inline_len += wr->sg_list[i].length;
		}
	} else {
		h.num_sge = uint32_t(wr->num_sge);
		for (int i = 0; i < wr->num_sge; i++) {
			ib_uverbs_sge s{ wr->sg_list[i].addr, wr->sg_list[i].length, wr->sg_list[i].lkey };
			memcpy(body + size_t(i) * kSge, &s, kSge);
		}
	}
	memcpy(slot, &h, sizeof h);
}

} /* namespace */

int attachRing(ibv_context *context, Qp *qp, const ibv_qp_init_attr_ex &granted)
{
	if (granted.qp_type != IBV_QPT_RC && granted.qp_type != IBV_QPT_UC && granted.qp_type != IBV_QPT_UD &&
	    granted.qp_type != IBV_QPT_XRC_SEND)
		return EINVAL;
	QpRing r;
	r.maxSendWr = granted.cap.max_send_wr;
	r.maxSendSge = granted.cap.max_send_sge;
	r.maxInline = granted.cap.max_inline_data;
	r.sqEntries = ibemu_cq_ring_entries(r.maxSendWr); /* what the device checks: 2 for 1 WR */
	r.sqStride = round16(sizeof(ibemu_send_wqe) + std::max<uint64_t>(uint64_t(r.maxSendSge) * kSge, r.maxInline));
	if (!granted.srq && granted.qp_type != IBV_QPT_XRC_SEND) { /* an initiator receives nothing */
		r.maxRecvWr = granted.cap.max_recv_wr;
		r.maxRecvSge = granted.cap.max_recv_sge;
		r.rqEntries = ibemu_cq_ring_entries(r.maxRecvWr);
		r.rqStride = round16(sizeof(ibemu_recv_wqe) + uint64_t(r.maxRecvSge) * kSge);
	}
	if (r.sqEntries > IBEMU_QP_RING_MAX_ENTRIES || r.rqEntries > IBEMU_QP_RING_MAX_ENTRIES ||
	    r.sqStride > IBEMU_QP_RING_MAX_STRIDE || r.rqStride > IBEMU_QP_RING_MAX_STRIDE)
		return EINVAL; /* too big to share: the write() commands serve it */
	r.len = ibemu_qp_ring_bytes(r.sqEntries, r.sqStride, r.rqEntries, r.rqStride);
	RingArea &area = *ctxOf(context)->area;
	uint32_t offset = 0;
	int mem = -1;
	r.map = area.ring(r.len, "ibemu-qp", mem, offset);
	int sv[2] = { -1, -1 };
	bool ok = r.map && socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0;
	if (ok) {
		struct {
			ib_uverbs_cmd_hdr hdr;
			ibemu_attach_qp_ring body;
		} cmd{};
		cmd.hdr = { IBEMU_CMD_ATTACH_QP_RING, sizeof cmd / 4, 0 };
		cmd.body = { qp->vqp.qp.handle, mem, sv[0], r.sqEntries, r.sqStride, r.rqEntries, r.rqStride, offset };
		ok = write(context->cmd_fd, &cmd, sizeof cmd) == ssize_t(sizeof cmd);
	}
	if (mem >= 0)
		close(mem); /* the mapping and the device's copy stay */
	if (sv[0] >= 0)
		close(sv[0]); /* the device has its own copy of the receiving end */
	if (!ok) {
		area.release(r.map, r.len);
		if (sv[1] >= 0)
			close(sv[1]);
		return ENOMEM;
	}
	r.bell = sv[1];
	qp->ring = r;
	return 0;
}

void detachRing(Qp *qp)
{
	if (!qp->ring.map)
		return;
	ctxOf(qp->vqp.qp.context)->area->release(qp->ring.map, qp->ring.len);
	close(qp->ring.bell);
	qp->ring = QpRing{};
}

int modifyRingQp(Qp *qp, ibv_qp_attr *attr, int mask)
{
	struct ibv_modify_qp cmd;
	QpRing &r = qp->ring;
	/* posts wait while the QP changes: one that raced a RESET would be
	 * published after the device dropped the rings' contents */
	std::lock_guard<std::mutex> s(qp->lock), rl(qp->recvLock);
	if (int ret = ibv_cmd_modify_qp(&qp->vqp.qp, attr, mask, &cmd, sizeof cmd))
		return ret;
	if (mask & IBV_QP_MAX_QP_RD_ATOMIC)
		r.maxRdAtomic = attr->max_rd_atomic;
	if (r.map && (mask & IBV_QP_STATE) && attr->qp_state == IBV_QPS_RESET) {
		/* the device dropped what the rings held and took our producers
		 * as its start */
		r.sqProducer = __atomic_load_n(&header(r)->sq_producer, __ATOMIC_RELAXED);
		r.rqProducer = __atomic_load_n(&header(r)->rq_producer, __ATOMIC_RELAXED);
	}
	return 0;
}

int postSendLocked(Qp *qp, ibv_send_wr *wr, ibv_send_wr **bad)
{
	QpRing &r = qp->ring;
	switch (qp->vqp.qp.state) { /* rvt: POST_SEND in RTS, SQD, SQE and Error */
	case IBV_QPS_RTS:
	case IBV_QPS_SQD:
	case IBV_QPS_SQE:
	case IBV_QPS_ERR:
		break;
	default:
		*bad = wr;
		return EINVAL;
	}
	uint32_t consumer = __atomic_load_n(&header(r)->sq_consumer, __ATOMIC_ACQUIRE);
	uint32_t producer = r.sqProducer;
	int ret = 0;
	for (; wr; wr = wr->next) {
		if ((ret = checkSend(qp, wr, producer - consumer))) {
			*bad = wr;
			break;
		}
		writeSend(qp, wr, sendSlot(r, producer));
		producer++;
	}
	if (producer != r.sqProducer) { /* the ones before a bad one are posted */
		r.sqProducer = producer;
		__atomic_store_n(&header(r)->sq_producer, producer, __ATOMIC_RELEASE);
		ringDoorbell(r);
	}
	return ret;
}

int postSend(ibv_qp *ibqp, ibv_send_wr *wr, ibv_send_wr **bad)
{
	Qp *qp = qpOf(ibqp);
	if (!qp->ring.map)
		return ibv_cmd_post_send(ibqp, wr, bad);
	std::lock_guard<std::mutex> guard(qp->lock);
	return postSendLocked(qp, wr, bad);
}

int postRecv(ibv_qp *ibqp, ibv_recv_wr *wr, ibv_recv_wr **bad)
{
	Qp *qp = qpOf(ibqp);
	QpRing &r = qp->ring;
	if (!r.map)
		return ibv_cmd_post_recv(ibqp, wr, bad);
	if (ibqp->srq || ibqp->state == IBV_QPS_RESET) {
		*bad = wr;
		return EINVAL;
	}
	std::lock_guard<std::mutex> guard(qp->recvLock);
	uint32_t consumer = __atomic_load_n(&header(r)->rq_consumer, __ATOMIC_ACQUIRE);
	uint32_t producer = r.rqProducer;
	int ret = 0;
	for (; wr; wr = wr->next) {
		if (wr->num_sge < 0 || uint32_t(wr->num_sge) > r.maxRecvSge)
			ret = EINVAL;
		else if (producer - consumer >= r.maxRecvWr)
			ret = ENOMEM;
		if (ret) {
			*bad = wr;
			break;
		}
		uint8_t *slot = recvSlot(r, producer);
		ibemu_recv_wqe h{ wr->wr_id, uint32_t(wr->num_sge), 0 };
		memcpy(slot, &h, sizeof h);
		for (int i = 0; i < wr->num_sge; i++) {
			ib_uverbs_sge s{ wr->sg_list[i].addr, wr->sg_list[i].length, wr->sg_list[i].lkey };
			memcpy(slot + sizeof h + size_t(i) * kSge, &s, kSge);
		}
		producer++;
	}
	if (producer != r.rqProducer) {
		r.rqProducer = producer;
		__atomic_store_n(&header(r)->rq_producer, producer, __ATOMIC_RELEASE);
		/* against the device's "rq_notify, then our producer" */
		__atomic_thread_fence(__ATOMIC_SEQ_CST);
		if (__atomic_load_n(&header(r)->rq_notify, __ATOMIC_RELAXED))
			ringDoorbell(r);
	}
	return ret;
}

} /* namespace ibemu::provider */
