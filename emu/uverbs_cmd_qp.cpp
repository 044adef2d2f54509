// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// The uverbs QP commands (the QP handlers of the kernel's uverbs_cmd.c,
// uverbs_std_types_qp.c): CREATE_QP with rdmavt's limits (RC, UC, UD and
// XRC's initiator and target QPs), ibemu's
// ATTACH_QP_RING for a QP whose work requests come through a shared ring
// (emu/qp_ring.h), QUERY_QP, MODIFY_QP (the state machine is in
// verbs_qp.cpp), DESTROY_QP, and ATTACH_MCAST / DETACH_MCAST of a UD QP to
// a multicast group. Posting work requests is in uverbs_post.cpp.
#include "emu/uverbs_file.h"

#include "emu/ibemu_user_verbs.h"
#include "emu/qp_ring.h"
#include "emu/uverbs_cmd.h"
#include "emu/verbs_device.h"
#include "emu/verbs_qp.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <unistd.h>

namespace ibemu::emu {

/* --- QP --- */

int UverbsFile::createQp(Request &r)
{
	auto cmd = r.cmd<ib_uverbs_create_qp>();
	switch (cmd.qp_type) {
	case IB_QPT_RC:
	case IB_QPT_UC:
	case IB_QPT_UD:
	case IB_QPT_XRC_INI:
	case IB_QPT_XRC_TGT:
		break;
	case 8: /* RAW_PACKET: needs CAP_NET_RAW, then the driver lacks it */
	case 0xff: /* DRIVER */
		return -EOPNOTSUPP;
	default:
		return -EINVAL;
	}
	Reservation res = reserve();
	Srq *srq = nullptr;
	Cq *rcq = nullptr, *scq = nullptr;
	Pd *pd = nullptr;
	Xrcd *xrcd = nullptr;
	const bool ini = cmd.qp_type == IB_QPT_XRC_INI, tgt = cmd.qp_type == IB_QPT_XRC_TGT;
	if (tgt) {
		/* the XRCD's handle in pd_handle; no PD, CQs, SRQ or queues: the
		 * QP belongs to the domain, and each request names the XRC SRQ
		 * of that domain that serves it */
		if (get(cmd.pd_handle, xrcd))
			return -EINVAL;
		cmd.max_send_wr = cmd.max_send_sge = cmd.max_inline_data = 0;
	}
	if (tgt || ini) { /* create_qp(): no receive side */
		cmd.max_recv_wr = 0;
		cmd.max_recv_sge = 0;
	} else {
		/* create_qp(): an object the file lacks is EINVAL */
		if (cmd.is_srq) {
			if (get(cmd.srq_handle, srq))
				return -EINVAL;
			if (srq->xrcd) /* an XRC SRQ serves XRC target QPs alone */
				return -EINVAL;
		}
		if (cmd.recv_cq_handle != cmd.send_cq_handle && get(cmd.recv_cq_handle, rcq))
			return -EINVAL;
	}
	if (!tgt) {
		if (get(cmd.send_cq_handle, scq))
			return -EINVAL;
		rcq = rcq ? rcq : scq; /* an initiator's: its send CQ, counted twice as a shared one */
		if (get(cmd.pd_handle, pd))
			return -EINVAL;
	}
	const VerbsLimits &lim = dev_.limits();
	if (cmd.max_send_sge > lim.maxSge || cmd.max_send_wr > lim.maxQpWr || cmd.max_inline_data > lim.maxInline)
		return -EINVAL;
	if (!srq && (cmd.max_recv_sge > lim.maxSge || cmd.max_recv_wr > lim.maxQpWr))
		return -EINVAL;
	if (int rc = room(UType::Qp))
		return rc;

	auto qp = std::make_unique<Qp>(dev_.io());
	qp->file = this;
	qp->dev = &dev_;
	qp->qpType = static_cast<QpType>(cmd.qp_type);
	qp->pd = pd;
	qp->sendCq = scq;
	qp->recvCq = rcq;
	qp->srq = srq;
	if (xrcd) {
		qp->xrcd = xrcd->domain;
		qp->xrcdHandle = xrcd;
	}
	/* the queues hold what rxe's rxe_queue_init() makes of the counts
	 * (ibemu_queue_capacity(); rxe makes 0 of 0, ibemu 1); a send WQE
	 * holds its SGEs or as many bytes inline, whichever is more, and rxe
	 * grants both from that room (rxe_qp_init_req(): 1 SGE with 64 bytes
	 * inline is 4 SGEs) */
	qp->maxSendWr = tgt ? 0 : ibemu_queue_capacity(std::max(cmd.max_send_wr, 1u));
	qp->maxInline = std::min(lim.maxInline, std::max(cmd.max_inline_data, cmd.max_send_sge * 16));
	qp->maxSendSge = std::max(cmd.max_send_sge, qp->maxInline / 16);
	qp->maxRecvWr = srq || ini || tgt ? 0 : ibemu_queue_capacity(std::max(cmd.max_recv_wr, 1u));
	qp->maxRecvSge = srq || ini || tgt ? 0 : cmd.max_recv_sge;
	qp->sqSigAll = cmd.sq_sig_all;
	qp->userHandle = cmd.user_handle;
	uint32_t qpn = dev_.addQp(qp.get());
	ib_uverbs_create_qp_resp resp{ res.handle(),  qpn, qp->maxSendWr, qp->maxRecvWr, qp->maxSendSge, qp->maxRecvSge,
				       qp->maxInline, 0 };
	if (int ret = respond(r, &resp, sizeof resp)) {
		dev_.removeQp(qp.get());
		return ret;
	}
	if (tgt) {
		xrcd->usecnt++;
	} else {
		pd->usecnt++;
		scq->usecnt++;
		rcq->usecnt++;
	}
	if (srq)
		srq->usecnt++;
	commit(res, std::move(qp));
	return 0;
}

/* Each ring QP holds a descriptor (its doorbell) in the daemon. */
constexpr size_t kMaxQpRings = 256;

/* IBEMU_CMD_ATTACH_QP_RING (emu/ibemu_user_verbs.h) */
int UverbsFile::attachQpRing(Request &r)
{
	if (!ibemuProvider_)
		return -EOPNOTSUPP;
	auto cmd = r.cmd<ibemu_attach_qp_ring>();
	Qp *qp;
	if (int ret = get(cmd.qp_handle, qp))
		return ret;
	if (qp->ring || qp->state != IB_QPS_RESET || !qp->sq.empty() || !qp->rq.empty() ||
	    (qp->qpType != IB_QPT_RC && qp->qpType != IB_QPT_UC && qp->qpType != IB_QPT_UD &&
	     qp->qpType != IB_QPT_XRC_INI))
		return -EINVAL;
	size_t rings = 0;
	idr_.forEach([&](const UObject &o) { rings += o.type == UType::Qp && static_cast<const Qp &>(o).ring; });
	if (rings >= kMaxQpRings)
		return -EMFILE;
	RingMemory mem;
	if (int ret = ringMemory(r.tid, cmd.ring_fd, cmd.area_offset, mem))
		return ret;
	int bell = ua_.takeDescriptor(r.tid, cmd.doorbell_fd, FdKind::UnixStream);
	if (bell < 0) {
		if (mem.fd >= 0)
			close(mem.fd);
		return bell;
	}
	QpRing::Geometry g{ cmd.sq_entries, cmd.sq_stride, cmd.rq_entries, cmd.rq_stride };
	int ret = QpRing::adopt(dev_.io(), ua_, mem, bell, g, *qp, qp->ring);
	if (mem.fd >= 0)
		close(mem.fd);
	if (ret) {
		ua_.discardDescriptor(bell); /* it may hold what the program sent on it */
		return ret;
	}
	qp->ring->onDoorbell([this, qp] { doorbell(*qp); });
	return 0;
}

int UverbsFile::queryQp(Request &r)
{
	auto cmd = r.cmd<ib_uverbs_query_qp>();
	Qp *qp;
	if (int ret = get(cmd.qp_handle, qp))
		return ret;
	ib_uverbs_query_qp_resp resp{};
	resp.dest = qp->av;
	resp.alt_dest = qp->altAv;
	resp.max_send_wr = qp->maxSendWr;
	resp.max_recv_wr = qp->maxRecvWr;
	resp.max_send_sge = qp->maxSendSge;
	resp.max_recv_sge = qp->maxRecvSge;
	resp.max_inline_data = qp->maxInline;
	resp.qkey = qp->qkey;
	resp.rq_psn = qp->rqPsn;
	resp.sq_psn = qp->sqPsn;
	resp.dest_qp_num = qp->destQpn;
	resp.qp_access_flags = qp->accessFlags;
	resp.pkey_index = qp->pkeyIndex;
	resp.alt_pkey_index = qp->altPkeyIndex;
	resp.qp_state = qp->state;
	resp.cur_qp_state = qp->state;
	resp.path_mtu = qp->pathMtu;
	resp.path_mig_state = qp->pathMigState;
	resp.sq_draining = 0;
	resp.max_rd_atomic = qp->maxRdAtomic;
	resp.max_dest_rd_atomic = qp->maxDestRdAtomic;
	resp.min_rnr_timer = qp->minRnrTimer;
	resp.port_num = qp->portNum;
	resp.timeout = qp->timeout;
	resp.retry_cnt = qp->retryCnt;
	resp.rnr_retry = qp->rnrRetry;
	resp.alt_port_num = qp->altPortNum;
	resp.alt_timeout = qp->altTimeout;
	resp.sq_sig_all = qp->sqSigAll;
	return respond(r, &resp, sizeof resp);
}

int UverbsFile::modifyQp(Request &r)
{
	auto cmd = r.cmd<ib_uverbs_modify_qp>();
	/* the legacy command knows the attributes up to DEST_QPN */
	if (cmd.attr_mask & ~((IB_QP_DEST_QPN << 1) - 1))
		return -EOPNOTSUPP;
	Qp *qp;
	if (int ret = get(cmd.qp_handle, qp))
		return ret;
	if ((cmd.attr_mask & IB_QP_PORT) && !portValid(dev_, cmd.port_num))
		return -EINVAL;
	if ((cmd.attr_mask & IB_QP_AV) && !portValid(dev_, cmd.dest.port_num))
		return -EINVAL;
	if ((cmd.attr_mask & IB_QP_ALT_PATH) &&
	    (!portValid(dev_, cmd.alt_port_num) || !portValid(dev_, cmd.alt_dest.port_num) ||
	     cmd.alt_port_num != cmd.alt_dest.port_num))
		return -EINVAL;
	if (((cmd.attr_mask & IB_QP_CUR_STATE) && cmd.cur_qp_state > IB_QPS_ERR) ||
	    ((cmd.attr_mask & IB_QP_STATE) && cmd.qp_state > IB_QPS_ERR))
		return -EINVAL;
	takeSends(*qp); /* posted before this command: queued before it acts */
	return applyModifyQp(dev_, *qp, cmd);
}

int UverbsFile::destroyQp(Request &r)
{
	auto cmd = r.cmd<ib_uverbs_destroy_qp>();
	UObject *o;
	if (int ret = lookup(cmd.qp_handle, UType::Qp, o))
		return ret;
	ib_uverbs_destroy_qp_resp resp{ static_cast<Qp *>(o)->eventsReported };
	if (int ret = destroy(*o, false)) /* uverbs_free_qp(): EBUSY while attached to a group */
		return ret;
	return respond(r, &resp, sizeof resp);
}

/* --- multicast --- */

/* ib_uverbs_attach_mcast(), ib_uverbs_detach_mcast(): one command layout */
int UverbsFile::attachMcast(Request &r)
{
	return mcast(r, true);
}

int UverbsFile::detachMcast(Request &r)
{
	return mcast(r, false);
}

int UverbsFile::mcast(Request &r, bool attach)
{
	auto cmd = r.cmd<ib_uverbs_attach_mcast>();
	Qp *qp;
	if (get(cmd.qp_handle, qp))
		return -EINVAL;
	McastGroup g{ cmd.mlid, {} };
	memcpy(g.mgid.data(), cmd.gid, 16);
	return attach ? dev_.attachMcast(*qp, g) : dev_.detachMcast(*qp, g);
}

} /* namespace ibemu::emu */
