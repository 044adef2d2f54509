// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// The uverbs SRQ commands (the SRQ handlers of the kernel's uverbs_cmd.c,
// uverbs_std_types_srq.c): CREATE_SRQ and CREATE_XSRQ (XRC SRQs too),
// MODIFY_SRQ (its limit),
// QUERY_SRQ and DESTROY_SRQ. Posting receives to an SRQ is in
// uverbs_post.cpp.
#include "emu/uverbs_file.h"

#include "emu/ibemu_user_verbs.h"
#include "emu/verbs_device.h"

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace ibemu::emu {

/* --- SRQ --- */

int UverbsFile::createSrq(Request &r)
{
	auto c = r.cmd<ib_uverbs_create_srq>();
	return newSrq(
		r,
		{ c.response, c.user_handle, IB_SRQT_BASIC, c.pd_handle, c.max_wr, c.max_sge, c.srq_limit, 0, 0, 0 });
}

/* CREATE_XSRQ: a basic SRQ as CREATE_SRQ makes, or an XRC one, of an XRC
 * domain, with the CQ its receives complete on (__uverbs_create_xsrq();
 * a handle that names nothing of its type is EINVAL there). A tag
 * matching SRQ is what rxe has not either. */
int UverbsFile::createXsrq(Request &r)
{
	auto cmd = r.cmd<ib_uverbs_create_xsrq>();
	if (cmd.srq_type != IB_SRQT_BASIC && cmd.srq_type != IB_SRQT_XRC)
		return -EOPNOTSUPP;
	return newSrq(r, cmd);
}

int UverbsFile::newSrq(Request &r, const ib_uverbs_create_xsrq &cmd)
{
	Reservation res = reserve();
	Xrcd *xrcd = nullptr;
	Cq *cq = nullptr;
	Pd *pd;
	if (cmd.srq_type == IB_SRQT_XRC && (get(cmd.xrcd_handle, xrcd) || get(cmd.cq_handle, cq)))
		return -EINVAL;
	if (get(cmd.pd_handle, pd)) /* __uverbs_create_xsrq(): any type */
		return -EINVAL;
	const VerbsLimits &lim = dev_.limits();
	/* rxe_srq_chk_init(): max_wr 0 (zeroed attributes) is EINVAL, max_sge 0
	 * is 1, and the limit is not checked; the queue is rounded as a QP's */
	if (cmd.max_wr == 0 || cmd.max_wr > lim.maxSrqWr || cmd.max_sge > lim.maxSrqSge)
		return -EINVAL;
	if (int rc = room(UType::Srq))
		return rc;
	auto srq = std::make_unique<Srq>();
	srq->file = this;
	srq->pd = pd;
	srq->maxWr = ibemu_queue_capacity(cmd.max_wr);
	srq->maxSge = std::max(cmd.max_sge, 1u);
	srq->limit = cmd.srq_limit;
	srq->userHandle = cmd.user_handle;
	srq->srqn = dev_.nextSrqn();
	if (xrcd) {
		srq->xrcd = xrcd->domain;
		srq->xrcdHandle = xrcd;
		srq->cq = cq;
	}
	ib_uverbs_create_srq_resp resp{ res.handle(), srq->maxWr, srq->maxSge, srq->srqn };
	if (int ret = respond(r, &resp, sizeof resp))
		return ret;
	pd->usecnt++;
	if (xrcd) {
		xrcd->usecnt++;
		cq->usecnt++;
	}
	dev_.addSrq(srq.get());
	commit(res, std::move(srq));
	return 0;
}

int UverbsFile::modifySrq(Request &r)
{
	auto cmd = r.cmd<ib_uverbs_modify_srq>();
	Srq *srq;
	if (int ret = get(cmd.srq_handle, srq))
		return ret;
	if (cmd.attr_mask & ~(IB_SRQ_MAX_WR | IB_SRQ_LIMIT))
		return -EINVAL;
	uint32_t maxWr = (cmd.attr_mask & IB_SRQ_MAX_WR) ? cmd.max_wr : srq->maxWr;
	if ((cmd.attr_mask & IB_SRQ_MAX_WR) &&
	    (maxWr == 0 || maxWr > dev_.limits().maxSrqWr || maxWr < srq->queue.size()))
		return -EINVAL;
	if ((cmd.attr_mask & IB_SRQ_LIMIT) && cmd.srq_limit >= maxWr)
		return -EINVAL;
	srq->maxWr = (cmd.attr_mask & IB_SRQ_MAX_WR) ? ibemu_queue_capacity(maxWr) : maxWr;
	if (cmd.attr_mask & IB_SRQ_LIMIT)
		srq->limit = cmd.srq_limit;
	return 0;
}

int UverbsFile::querySrq(Request &r)
{
	auto cmd = r.cmd<ib_uverbs_query_srq>();
	Srq *srq;
	if (int ret = get(cmd.srq_handle, srq))
		return ret;
	ib_uverbs_query_srq_resp resp{ srq->maxWr, srq->maxSge, srq->limit, 0 };
	return respond(r, &resp, sizeof resp);
}

int UverbsFile::destroySrq(Request &r)
{
	auto cmd = r.cmd<ib_uverbs_destroy_srq>();
	UObject *o;
	if (int ret = lookup(cmd.srq_handle, UType::Srq, o))
		return ret;
	if (o->usecnt)
		return -EBUSY;
	ib_uverbs_destroy_srq_resp resp{ static_cast<Srq *>(o)->eventsReported };
	destroy(*o, false);
	return respond(r, &resp, sizeof resp);
}

} /* namespace ibemu::emu */
