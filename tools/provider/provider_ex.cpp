// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// The extended verbs: ibv_create_qp_ex with the ibv_wr_* builders, which
// collect work requests between wr_start() and wr_complete() and post them
// together (to the ring, or as one POST_SEND); and ibv_create_cq_ex
// with ibv_start_poll(), which reads completions from a batch polled from
// the device.
#include "tools/provider/provider.h"

#include <cerrno>
#include <cstring>
#include <new>

namespace ibemu::provider {

namespace {

/* --- ibv_wr_* --- */

Qp *qpxOf(ibv_qp_ex *qpx)
{
	return reinterpret_cast<Qp *>(qpx);
}

ibv_send_wr *newWr(ibv_qp_ex *qpx, ibv_wr_opcode opcode)
{
	Qp *qp = qpxOf(qpx);
	ibv_send_wr wr{};
	wr.wr_id = qpx->wr_id;
	wr.send_flags = qpx->wr_flags;
	wr.opcode = opcode;
	qp->wrs.push_back(wr);
	qp->sges.emplace_back();
	return &qp->wrs.back();
}

/* the WR a setter completes; nullptr (and EINVAL latched) before any */
ibv_send_wr *lastWr(ibv_qp_ex *qpx)
{
	Qp *qp = qpxOf(qpx);
	if (qp->wrs.empty()) {
		qp->err = EINVAL;
		return nullptr;
	}
	return &qp->wrs.back();
}

void wrSend(ibv_qp_ex *qpx)
{
	newWr(qpx, IBV_WR_SEND);
}

void wrSendImm(ibv_qp_ex *qpx, __be32 imm)
{
	newWr(qpx, IBV_WR_SEND_WITH_IMM)->imm_data = imm;
}

void wrRdmaWrite(ibv_qp_ex *qpx, uint32_t rkey, uint64_t raddr)
{
	ibv_send_wr *wr = newWr(qpx, IBV_WR_RDMA_WRITE);
	wr->wr.rdma = { raddr, rkey };
}

void wrRdmaWriteImm(ibv_qp_ex *qpx, uint32_t rkey, uint64_t raddr, __be32 imm)
{
	ibv_send_wr *wr = newWr(qpx, IBV_WR_RDMA_WRITE_WITH_IMM);
	wr->wr.rdma = { raddr, rkey };
	wr->imm_data = imm;
}

void wrRdmaRead(ibv_qp_ex *qpx, uint32_t rkey, uint64_t raddr)
{
	ibv_send_wr *wr = newWr(qpx, IBV_WR_RDMA_READ);
	wr->wr.rdma = { raddr, rkey };
}

void wrCmpSwp(ibv_qp_ex *qpx, uint32_t rkey, uint64_t raddr, uint64_t compare, uint64_t swap)
{
	ibv_send_wr *wr = newWr(qpx, IBV_WR_ATOMIC_CMP_AND_SWP);
	wr->wr.atomic = { raddr, compare, swap, rkey };
}

void wrFetchAdd(ibv_qp_ex *qpx, uint32_t rkey, uint64_t raddr, uint64_t add)
{
	ibv_send_wr *wr = newWr(qpx, IBV_WR_ATOMIC_FETCH_AND_ADD);
	wr->wr.atomic = { raddr, add, 0, rkey };
}

void setUdAddr(ibv_qp_ex *qpx, ibv_ah *ah, uint32_t qpn, uint32_t qkey)
{
	if (ibv_send_wr *wr = lastWr(qpx))
		wr->wr.ud = { ah, qpn, qkey };
}

void setXrcSrqn(ibv_qp_ex *qpx, uint32_t srqn)
{
	if (ibv_send_wr *wr = lastWr(qpx))
		wr->qp_type.xrc.remote_srqn = srqn;
}

void setSgeList(ibv_qp_ex *qpx, size_t n, const ibv_sge *list)
{
	ibv_send_wr *wr = lastWr(qpx);
	if (!wr)
		return;
	auto &sges = qpxOf(qpx)->sges.back();
	sges.assign(list, list + n);
	wr->num_sge = static_cast<int>(n);
}

void setSge(ibv_qp_ex *qpx, uint32_t lkey, uint64_t addr, uint32_t length)
{
	ibv_sge sge{ addr, length, lkey };
	setSgeList(qpx, 1, &sge);
}

/* Inline data is the program's to reuse once the setter returns: copy it;
 * the device copies it from here when wr_complete() posts. */
void setInlineDataList(ibv_qp_ex *qpx, size_t n, const ibv_data_buf *bufs)
{
	ibv_send_wr *wr = lastWr(qpx);
	if (!wr)
		return;
	Qp *qp = qpxOf(qpx);
	auto &data = qp->inlineData.emplace_back();
	for (size_t i = 0; i < n; i++) {
		auto *p = static_cast<const uint8_t *>(bufs[i].addr);
		data.insert(data.end(), p, p + bufs[i].length);
	}
	qp->sges.back() = { { reinterpret_cast<uintptr_t>(data.data()), static_cast<uint32_t>(data.size()), 0 } };
	wr->num_sge = 1;
	wr->send_flags |= IBV_SEND_INLINE;
}

void setInlineData(ibv_qp_ex *qpx, void *addr, size_t length)
{
	ibv_data_buf buf{ addr, length };
	setInlineDataList(qpx, 1, &buf);
}

void clearWrs(Qp *qp)
{
	qp->wrs.clear();
	qp->sges.clear();
	qp->inlineData.clear();
	qp->err = 0;
}

void wrStart(ibv_qp_ex *qpx)
{
	Qp *qp = qpxOf(qpx);
	qp->lock.lock();
	clearWrs(qp);
}

int wrComplete(ibv_qp_ex *qpx)
{
	Qp *qp = qpxOf(qpx);
	int ret = qp->err;
	if (!ret && !qp->wrs.empty()) {
		for (size_t i = 0; i < qp->wrs.size(); i++) {
			qp->wrs[i].sg_list = qp->sges[i].data();
			qp->wrs[i].next = i + 1 < qp->wrs.size() ? &qp->wrs[i + 1] : nullptr;
		}
		ibv_send_wr *bad = nullptr;
		ret = qp->ring.map ? postSendLocked(qp, qp->wrs.data(), &bad)
				   : ibv_cmd_post_send(&qp->vqp.qp, qp->wrs.data(), &bad);
	}
	clearWrs(qp);
	qp->lock.unlock();
	return ret;
}

void wrAbort(ibv_qp_ex *qpx)
{
	Qp *qp = qpxOf(qpx);
	clearWrs(qp);
	qp->lock.unlock();
}

/* Memory windows and invalidation: LOCAL_INV and BIND_MW go to the ring
 * (POST_SEND refuses them, as the kernel's does), SEND_WITH_INV to either. */
void wrSendInv(ibv_qp_ex *qpx, uint32_t rkey)
{
	newWr(qpx, IBV_WR_SEND_WITH_INV)->invalidate_rkey = rkey;
}

void wrLocalInv(ibv_qp_ex *qpx, uint32_t rkey)
{
	newWr(qpx, IBV_WR_LOCAL_INV)->invalidate_rkey = rkey;
}

void wrBindMw(ibv_qp_ex *qpx, ibv_mw *mw, uint32_t rkey, const ibv_mw_bind_info *info)
{
	ibv_send_wr *wr = newWr(qpx, IBV_WR_BIND_MW);
	wr->bind_mw.mw = mw;
	wr->bind_mw.rkey = rkey;
	wr->bind_mw.bind_info = *info;
}

/* The send_ops_flags rxe's provider takes per QP type (rdma-core's
 * providers/rxe/rxe.c, check_qp_init_attr()); others are EOPNOTSUPP. */
constexpr uint64_t kUdOps = IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM;
constexpr uint64_t kUcOps = kUdOps | IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM |
	IBV_QP_EX_WITH_BIND_MW | IBV_QP_EX_WITH_SEND_WITH_INV;
constexpr uint64_t kRcOps = kUcOps | IBV_QP_EX_WITH_RDMA_READ | IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP |
	IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD | IBV_QP_EX_WITH_LOCAL_INV;

/* rxe's provider's checks of ibv_create_qp_ex(), before any command:
 * comp_mask bits beyond PD, CREATE_FLAGS and SEND_OPS_FLAGS, any create
 * flag (rxe takes none), send_ops_flags beyond the type's or on another
 * type: EOPNOTSUPP. */
int checkQpInit(const ibv_qp_init_attr_ex &a)
{
	const uint32_t known = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_XRCD | IBV_QP_INIT_ATTR_CREATE_FLAGS |
		IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
	if (a.comp_mask & ~known)
		return EOPNOTSUPP;
	if ((a.comp_mask & IBV_QP_INIT_ATTR_CREATE_FLAGS) && a.create_flags)
		return EOPNOTSUPP;
	if (!(a.comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS))
		return 0;
	uint64_t ops = a.qp_type == IBV_QPT_RC || a.qp_type == IBV_QPT_XRC_SEND ? kRcOps
		: a.qp_type == IBV_QPT_UC                                       ? kUcOps
		: a.qp_type == IBV_QPT_UD                                       ? kUdOps
										: 0;
	return ops && !(a.send_ops_flags & ~ops) ? 0 : EOPNOTSUPP;
}

/* --- ibv_cq_ex polling --- */

/* the next completion into cq's current one: 0, ENOENT or an errno */
int advance(Cq *cq)
{
	if (cq->next >= cq->count) {
		int n = fetch(cq, static_cast<int>(std::size(cq->batch)), cq->batch);
		if (n < 0) /* ibv_cmd_poll_cq: -1 and errno */
			return errno ? errno : EIO;
		cq->count = n;
		cq->next = 0;
		if (n == 0)
			return ENOENT;
	}
	const ibv_wc &wc = cq->batch[cq->next++];
	cq->vcq.cq_ex.status = wc.status;
	cq->vcq.cq_ex.wr_id = wc.wr_id;
	return 0;
}

Cq *cqxOf(ibv_cq_ex *cqx)
{
	return reinterpret_cast<Cq *>(cqx);
}

const ibv_wc &current(ibv_cq_ex *cqx)
{
	Cq *cq = cqxOf(cqx);
	return cq->batch[cq->next - 1];
}

int startPoll(ibv_cq_ex *cqx, ibv_poll_cq_attr *attr)
{
	if (attr->comp_mask)
		return EINVAL;
	Cq *cq = cqxOf(cqx);
	cq->lock.lock();
	int ret = advance(cq);
	if (ret) /* the program calls ibv_end_poll() only after a success */
		cq->lock.unlock();
	return ret;
}

int nextPoll(ibv_cq_ex *cqx)
{
	return advance(cqxOf(cqx));
}

void endPoll(ibv_cq_ex *cqx)
{
	cqxOf(cqx)->lock.unlock();
}

ibv_wc_opcode readOpcode(ibv_cq_ex *c)
{
	return current(c).opcode;
}
uint32_t readVendorErr(ibv_cq_ex *c)
{
	return current(c).vendor_err;
}
uint32_t readByteLen(ibv_cq_ex *c)
{
	return current(c).byte_len;
}
__be32 readImmData(ibv_cq_ex *c)
{
	return current(c).imm_data;
}
uint32_t readQpNum(ibv_cq_ex *c)
{
	return current(c).qp_num;
}
uint32_t readSrcQp(ibv_cq_ex *c)
{
	return current(c).src_qp;
}
unsigned readWcFlags(ibv_cq_ex *c)
{
	return current(c).wc_flags;
}
uint32_t readSlid(ibv_cq_ex *c)
{
	return current(c).slid;
}
uint8_t readSl(ibv_cq_ex *c)
{
	return current(c).sl;
}
uint8_t readDlidPathBits(ibv_cq_ex *c)
{
	return current(c).dlid_path_bits;
}

} /* namespace */

/* The batch first: a program may mix ibv_poll_cq() with ibv_start_poll(). */
int pollCq(ibv_cq *ibcq, int n, ibv_wc *wc)
{
	Cq *cq = cqOf(ibcq);
	std::lock_guard<std::mutex> guard(cq->lock);
	int got = 0;
	while (got < n && cq->next < cq->count)
		wc[got++] = cq->batch[cq->next++];
	if (got == n)
		return got;
	int more = fetch(cq, n - got, wc + got);
	return more < 0 ? (got ? got : more) : got + more;
}

ibv_qp *createQpEx(ibv_context *context, ibv_qp_init_attr_ex *attr)
{
	if (int ret = checkQpInit(*attr)) {
		errno = ret;
		return nullptr;
	}
	bool withOps = attr->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
	auto *qp = new (std::nothrow) Qp{};
	if (!qp) {
		errno = ENOMEM;
		return nullptr;
	}
	/* no create flag is set: the legacy CREATE_QP carries the rest
	 * (libibverbs would send the extended command for the mask alone) */
	ibv_qp_init_attr_ex core = *attr;
	core.comp_mask &= ~uint32_t(IBV_QP_INIT_ATTR_CREATE_FLAGS);
	struct ibv_create_qp cmd;
	ib_uverbs_create_qp_resp resp;
	if (int ret = ibv_cmd_create_qp_ex(context, &qp->vqp, &core, &cmd, sizeof cmd, &resp, sizeof resp)) {
		delete qp;
		errno = ret;
		return nullptr;
	}
	attr->cap = core.cap; /* what was granted */
	/* an XRC send QP's requests name their SRQ, and only a ring's work
	 * requests carry it: no ring, no QP (POST_SEND refuses an initiator) */
	if (int ret = attachRing(context, qp, *attr); ret && attr->qp_type == IBV_QPT_XRC_SEND) {
		ibv_cmd_destroy_qp(&qp->vqp.qp);
		delete qp;
		errno = ret;
		return nullptr;
	}
	ibv_qp_ex &x = qp->vqp.qp_ex;
	uint64_t ops = withOps ? attr->send_ops_flags : 0;
	if (ops & IBV_QP_EX_WITH_SEND)
		x.wr_send = wrSend;
	if (ops & IBV_QP_EX_WITH_SEND_WITH_IMM)
		x.wr_send_imm = wrSendImm;
	if (ops & IBV_QP_EX_WITH_RDMA_WRITE)
		x.wr_rdma_write = wrRdmaWrite;
	if (ops & IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM)
		x.wr_rdma_write_imm = wrRdmaWriteImm;
	if (ops & IBV_QP_EX_WITH_RDMA_READ)
		x.wr_rdma_read = wrRdmaRead;
	if (ops & IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP)
		x.wr_atomic_cmp_swp = wrCmpSwp;
	if (ops & IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD)
		x.wr_atomic_fetch_add = wrFetchAdd;
	x.wr_send_inv = wrSendInv; /* these three: the post refuses them */
	x.wr_local_inv = wrLocalInv;
	x.wr_bind_mw = wrBindMw;
	x.wr_set_ud_addr = setUdAddr;
	x.wr_set_xrc_srqn = setXrcSrqn;
	x.wr_set_sge = setSge;
	x.wr_set_sge_list = setSgeList;
	x.wr_set_inline_data = setInlineData;
	x.wr_set_inline_data_list = setInlineDataList;
	x.wr_start = wrStart;
	x.wr_complete = wrComplete;
	x.wr_abort = wrAbort;
	qp->vqp.comp_mask |= VERBS_QP_EX; /* after create: it zeroes comp_mask */
	return &qp->vqp.qp;
}

ibv_cq_ex *createCqEx(ibv_context *context, ibv_cq_init_attr_ex *attr)
{
	bool badFlags = (attr->comp_mask & IBV_CQ_INIT_ATTR_MASK_FLAGS) &&
		(attr->flags & ~uint32_t(IBV_CREATE_CQ_ATTR_SINGLE_THREADED));
	if ((attr->wc_flags & ~uint64_t(IBV_WC_STANDARD_FLAGS)) || (attr->comp_mask & ~IBV_CQ_INIT_ATTR_MASK_FLAGS) ||
	    badFlags) {
		errno = EOPNOTSUPP;
		return nullptr;
	}
	Cq *cq = newCq(context, static_cast<int>(attr->cqe), attr->channel, static_cast<int>(attr->comp_vector));
	if (!cq)
		return nullptr;
	ibv_cq_ex &x = cq->vcq.cq_ex;
	x.start_poll = startPoll;
	x.next_poll = nextPoll;
	x.end_poll = endPoll;
	x.read_opcode = readOpcode;
	x.read_vendor_err = readVendorErr;
	x.read_wc_flags = readWcFlags;
	x.read_byte_len = readByteLen;
	x.read_imm_data = readImmData;
	x.read_qp_num = readQpNum;
	x.read_src_qp = readSrcQp;
	x.read_slid = readSlid;
	x.read_sl = readSl;
	x.read_dlid_path_bits = readDlidPathBits;
	return &x;
}

} /* namespace ibemu::provider */
