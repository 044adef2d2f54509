// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// The uverbs commands, one handler each as uverbs_cmd.c has them, with the
// driver's checks where a software driver (rdmavt) makes them. write()
// (uverbs_file.cpp) has checked the header and the sizes.
#include "emu/uverbs_file.h"

#include "emu/qp_ring.h"
#include "emu/verbs_device.h"
#include "emu/verbs_qp.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <unistd.h>
#include <vector>

namespace ibemu::emu {

namespace {

constexpr uint32_t kNumCompVectors = 1;

bool portValid(const VerbsDevice &dev, unsigned num)
{
	return num >= 1 && num <= dev.numPorts();
}

} /* namespace */

/* rdma_lookup_get_uobject(): a handle not in this file's table is ENOENT,
 * one of another type EINVAL; 6.1 returns both as they are (measured
 * against rdma_rxe, tests/e2e/verbs_tools.sh) */
int UverbsFile::lookup(uint32_t handle, UType type, UObject *&out) const
{
	UObject *o = idr_.get(handle);
	if (!o)
		return -ENOENT;
	if (o->type != type)
		return -EINVAL;
	out = o;
	return 0;
}

/* uobj_alloc_commit(): the object takes its reserved handle */
void UverbsFile::commit(Reservation &res, std::unique_ptr<UObject> obj)
{
	obj->handle = res.handle();
	obj->created = nextSeq_++;
	dev_.counted(obj->type, +1);
	idr_.commit(res, std::move(obj));
}

/* uverbs_response(): copy what fits, zero the rest of the user's buffer */
int UverbsFile::respond(Request &r, const void *resp, size_t len)
{
	if (!r.response)
		return r.outLen ? -EFAULT : 0;
	size_t n = std::min(len, r.outLen);
	std::vector<uint8_t> out(r.outLen, 0);
	memcpy(out.data(), resp, n);
	return ua_.write(r.tid, r.response, out.data(), out.size());
}

/* --- device and context --- */

int UverbsFile::getContext(Request &r)
{
	if (hasContext_)
		return -EINVAL;
	/* The async event file: a CUSE server cannot create a descriptor in the
	 * caller, so the uverbs descriptor itself is the async event file. */
	int fd = ua_.descriptorOf(r.tid, *this);
	if (fd < 0)
		return fd;
	/* ibemu's provider sends its spares for completion channels after the
	 * core request (emu/ibemu_user_verbs.h); other providers send nothing */
	ibemu_get_context_req drv{};
	size_t core = sizeof(ib_uverbs_get_context);
	if (r.inLen >= core + sizeof drv)
		memcpy(&drv, r.in + core, sizeof drv);
	bool ours = drv.magic == IBEMU_UVERBS_MAGIC;
	std::shared_ptr<SharedMapping> area;
	if (ours) {
		if ((drv.version != 1 && drv.version != IBEMU_UVERBS_VERSION) || drv.nspares > IBEMU_MAX_SPARES ||
		    r.outLen < sizeof(ib_uverbs_get_context_resp) + sizeof(ibemu_get_context_resp))
			return -EINVAL;
		/* version 2's rings area (or -1); version 1 has a zero there */
		if (drv.version >= 2 && drv.area_fd < -1)
			return -EINVAL;
		if (drv.version >= 2 && drv.area_fd >= 0) {
			int afd = ua_.takeDescriptor(r.tid, drv.area_fd, FdKind::Memfd);
			if (afd < 0)
				return afd;
			area = std::make_shared<SharedMapping>();
			int ret = area->mapAll(afd, IBEMU_AREA_MAX_BYTES);
			close(afd);
			if (ret)
				return ret;
		}
		if (int ret = takeSpares(r.tid, drv.spares, drv.nspares))
			return ret;
	}
	ib_uverbs_get_context_resp resp{ static_cast<uint32_t>(fd), kNumCompVectors };
	uint8_t out[sizeof resp + sizeof(ibemu_get_context_resp)];
	memcpy(out, &resp, sizeof resp);
	ibemu_get_context_resp dresp{ IBEMU_UVERBS_MAGIC, IBEMU_UVERBS_VERSION, drv.nspares,
				      area ? static_cast<uint32_t>(area->size()) : 0 };
	memcpy(out + sizeof resp, &dresp, sizeof dresp);
	if (int ret = respond(r, out, ours ? sizeof out : sizeof resp)) {
		channels_.clear();
		return ret;
	}
	ibemuProvider_ = ours;
	area_ = std::move(area);
	hasContext_ = true;
	return 0;
}

int UverbsFile::ringMemory(pid_t tid, int32_t ringFd, uint32_t areaOffset, RingMemory &mem)
{
	if (ringFd == IBEMU_RING_IN_AREA) {
		if (!area_)
			return -EINVAL;
		mem.area = area_;
		mem.offset = areaOffset;
		return 0;
	}
	if (areaOffset)
		return -EINVAL;
	int fd = ua_.takeDescriptor(tid, ringFd, FdKind::Memfd);
	if (fd < 0)
		return fd;
	mem.fd = fd;
	return 0;
}

/* At most this many spares and channels per file: each holds a descriptor
 * in the daemon. Those the program has closed and no CQ uses are let go
 * first. */
constexpr size_t kMaxChannels = 32;

int UverbsFile::takeSpares(pid_t tid, const ibemu_spare *spares, uint32_t n)
{
	std::erase_if(channels_, [](const auto &ch) { return ch->cqs == 0 && ch->peerGone(); });
	if (channels_.size() + n > kMaxChannels)
		return -EMFILE;
	std::vector<std::unique_ptr<CompChannel>> taken;
	for (uint32_t i = 0; i < n; i++) {
		int snd = ua_.takeDescriptor(tid, spares[i].send_fd, FdKind::UnixStream);
		if (snd < 0)
			return snd;
		int rcv = ua_.takeDescriptor(tid, spares[i].recv_fd, FdKind::UnixStream);
		if (rcv < 0) {
			close(snd);
			return rcv;
		}
		std::unique_ptr<CompChannel> ch;
		int ret = CompChannel::adopt(dev_.io(), snd, rcv, spares[i].recv_fd, ch);
		close(rcv);
		if (ret) {
			close(snd);
			return ret;
		}
		taken.push_back(std::move(ch));
	}
	for (auto &ch : taken)
		channels_.push_back(std::move(ch));
	return 0;
}

int UverbsFile::addSpares(Request &r)
{
	if (!ibemuProvider_)
		return -EOPNOTSUPP;
	auto cmd = r.cmd<ibemu_add_spares>();
	if (cmd.nspares > IBEMU_MAX_SPARES || cmd.reserved)
		return -EINVAL;
	if (int ret = takeSpares(r.tid, cmd.spares, cmd.nspares))
		return ret;
	ibemu_add_spares_resp resp{};
	for (auto &ch : channels_)
		resp.spares_held += !ch->handedOut;
	return respond(r, &resp, sizeof resp);
}

CompChannel *UverbsFile::channelOf(pid_t tid, int fd)
{
	if (!ibemuProvider_) /* no channels: take nothing */
		return nullptr;
	int copy = ua_.takeDescriptor(tid, fd, FdKind::UnixStream);
	if (copy < 0)
		return nullptr;
	CompChannel *found = nullptr;
	for (auto &ch : channels_)
		if (ch->handedOut && ch->number() == fd && ch->isOurs(copy))
			found = ch.get();
	close(copy);
	return found;
}

int UverbsFile::queryDevice(Request &r)
{
	ib_uverbs_query_device_resp resp;
	dev_.queryDevice(resp);
	return respond(r, &resp, sizeof resp);
}

int UverbsFile::exQueryDevice(Request &r)
{
	auto cmd = r.cmd<ib_uverbs_ex_query_device>();
	if (cmd.comp_mask || cmd.reserved)
		return -EINVAL;
	ib_uverbs_ex_query_device_resp resp{};
	dev_.queryDevice(resp.base);
	resp.response_length = static_cast<uint32_t>(std::min(r.outLen, sizeof resp));
	return respond(r, &resp, sizeof resp);
}

int UverbsFile::queryPort(Request &r)
{
	auto cmd = r.cmd<ib_uverbs_query_port>();
	ib_uverbs_query_port_resp resp;
	if (int ret = dev_.queryPort(cmd.port_num, resp))
		return ret;
	return respond(r, &resp, sizeof resp);
}

/* --- PD, AH, MR --- */

int UverbsFile::allocPd(Request &r)
{
	if (dev_.full(UType::Pd))
		return -ENOMEM;
	Reservation res = reserve();
	ib_uverbs_alloc_pd_resp resp{ res.handle() };
	if (int ret = respond(r, &resp, sizeof resp))
		return ret;
	commit(res, std::make_unique<Pd>());
	return 0;
}

int UverbsFile::deallocPd(Request &r)
{
	return destroyHandle(r.cmd<ib_uverbs_dealloc_pd>().pd_handle, UType::Pd);
}

int UverbsFile::createAh(Request &r)
{
	auto cmd = r.cmd<ib_uverbs_create_ah>();
	Reservation res = reserve();
	Pd *pd = nullptr;
	int ret = portValid(dev_, cmd.attr.port_num) ? get(cmd.pd_handle, pd) : -EINVAL;
	/* qib_check_ah(): an SL, a unicast DLID, or a multicast one with a GRH */
	if (!ret &&
	    (cmd.attr.sl > 15 || cmd.attr.dlid == 0 ||
	     (cmd.attr.dlid >= 0xc000 && cmd.attr.dlid != 0xffff && !cmd.attr.is_global)))
		ret = -EINVAL;
	if (!ret && dev_.full(UType::Ah))
		ret = -ENOMEM;
	if (ret)
		return ret;
	ib_uverbs_create_ah_resp resp{ res.handle() };
	if ((ret = respond(r, &resp, sizeof resp)))
		return ret;
	auto ah = std::make_unique<Ah>();
	ah->pd = pd;
	ah->attr = cmd.attr;
	ah->userHandle = cmd.user_handle;
	pd->usecnt++;
	commit(res, std::move(ah));
	return 0;
}

int UverbsFile::destroyAh(Request &r)
{
	/* UD sends posted to a ring before this resolve the AH they name now,
	 * before its handle can be another's (takeSends) */
	idr_.forEach([&](UObject &o) {
		if (o.type == UType::Qp && static_cast<Qp &>(o).qpType == IB_QPT_UD)
			takeSends(static_cast<Qp &>(o));
	});
	return destroyHandle(r.cmd<ib_uverbs_destroy_ah>().ah_handle, UType::Ah);
}

int UverbsFile::regMr(Request &r)
{
	auto cmd = r.cmd<ib_uverbs_reg_mr>();
	if ((cmd.start ^ cmd.hca_va) & (kPageSize - 1))
		return -EINVAL;
	/* ib_check_mr_access() */
	if ((cmd.access_flags & (IB_ACCESS_REMOTE_ATOMIC | IB_ACCESS_REMOTE_WRITE)) &&
	    !(cmd.access_flags & IB_ACCESS_LOCAL_WRITE))
		return -EINVAL;
	if (cmd.access_flags & ~IB_ACCESS_SUPPORTED)
		return -EINVAL;
	if (cmd.access_flags & IB_ACCESS_ON_DEMAND) /* no ODP */
		return -EINVAL;

	Reservation res = reserve();
	Pd *pd;
	if (int ret = get(cmd.pd_handle, pd))
		return ret;
	if (cmd.length == 0 || cmd.length > (uint64_t(1) << 40))
		return -EINVAL;
	if (dev_.full(UType::Mr))
		return -ENOMEM;
	bool writable = cmd.access_flags &
		(IB_ACCESS_LOCAL_WRITE | IB_ACCESS_REMOTE_WRITE | IB_ACCESS_REMOTE_ATOMIC | IB_ACCESS_MW_BIND);
	auto mr = std::make_unique<Mr>();
	if (int ret = pinned_.pin(ua_, r.tid, cmd.start, cmd.length, writable, mr->pid, mr->npages))
		return ret;
	if (int ret = memoryOf(r.tid, mr->pid, cmd.start, mr->mem)) {
		pinned_.release(mr->pid, mr->npages);
		return ret;
	}
	mr->pd = pd;
	mr->start = cmd.start;
	mr->iova = cmd.hca_va;
	mr->length = cmd.length;
	mr->access = cmd.access_flags;
	dev_.addMr(mr.get());
	ib_uverbs_reg_mr_resp resp{ res.handle(), mr->lkey, mr->rkey };
	if (int ret = respond(r, &resp, sizeof resp)) {
		dev_.removeMr(mr.get());
		pinned_.release(mr->pid, mr->npages);
		return ret;
	}
	pd->usecnt++;
	commit(res, std::move(mr));
	return 0;
}

int UverbsFile::deregMr(Request &r)
{
	return destroyHandle(r.cmd<ib_uverbs_dereg_mr>().mr_handle, UType::Mr);
}

/* --- CQ --- */

/* ib_uverbs_create_comp_channel(): a new descriptor in the caller, which
 * only a spare of ibemu's provider can be (emu/comp_channel.h); with any
 * other provider, EOPNOTSUPP (docs/verbs.md). */
int UverbsFile::createCompChannel(Request &r)
{
	if (!ibemuProvider_)
		return -EOPNOTSUPP;
	for (auto &ch : channels_) {
		if (ch->handedOut)
			continue;
		/* the program may have closed it, or put something else under its number */
		int copy = ua_.takeDescriptor(r.tid, ch->number(), FdKind::UnixStream);
		bool held = copy >= 0 && ch->isOurs(copy);
		if (copy >= 0)
			close(copy);
		if (!held)
			continue;
		ib_uverbs_create_comp_channel_resp resp{ static_cast<uint32_t>(ch->number()) };
		if (int ret = respond(r, &resp, sizeof resp))
			return ret;
		ch->handedOut = true;
		return 0;
	}
	return -EMFILE; /* the provider ran out of spares */
}

int UverbsFile::createCq(Request &r)
{
	auto cmd = r.cmd<ib_uverbs_create_cq>();
	if (cmd.comp_vector >= kNumCompVectors)
		return -EINVAL;
	Reservation res = reserve();
	if (cmd.cqe < 1 || cmd.cqe > dev_.limits().maxCqe)
		return -EINVAL;
	CompChannel *channel = nullptr; /* ib_uverbs_lookup_comp_file() */
	if (cmd.comp_channel >= 0 && !(channel = channelOf(r.tid, cmd.comp_channel)))
		return -EINVAL;
	if (dev_.full(UType::Cq))
		return -ENOMEM;
	/* ibemu's provider: the completions go to its ring (ibemu_user_verbs.h) */
	std::unique_ptr<CqRing> ring;
	ibemu_create_cq_req drv{ -1, 0 };
	size_t core = sizeof(ib_uverbs_create_cq);
	if (ibemuProvider_ && r.inLen >= core + sizeof drv)
		memcpy(&drv, r.in + core, sizeof drv);
	if (drv.ring_fd >= 0 || drv.ring_fd == IBEMU_RING_IN_AREA) {
		if (r.outLen < sizeof(ib_uverbs_create_cq_resp) + sizeof(ibemu_create_cq_resp))
			return -EINVAL;
		RingMemory mem;
		if (int ret = ringMemory(r.tid, drv.ring_fd, drv.area_offset, mem))
			return ret;
		int ret = CqRing::adopt(mem, cmd.cqe, ring);
		if (mem.fd >= 0)
			close(mem.fd);
		if (ret)
			return ret;
	} else if (drv.area_offset) {
		return -EINVAL;
	}
	struct {
		ib_uverbs_create_cq_resp core;
		ibemu_create_cq_resp drv;
	} resp{ { res.handle(), cmd.cqe }, { ring ? ring->entries() : 0, 0 } };
	if (int ret = respond(r, &resp, ibemuProvider_ ? sizeof resp : sizeof resp.core))
		return ret;
	auto cq = std::make_unique<Cq>();
	cq->ring = std::move(ring);
	cq->file = this;
	cq->cqe = cmd.cqe;
	cq->userHandle = cmd.user_handle;
	cq->channel = channel;
	if (channel)
		channel->cqs++;
	commit(res, std::move(cq));
	return 0;
}

int UverbsFile::resizeCq(Request &r)
{
	auto cmd = r.cmd<ib_uverbs_resize_cq>();
	Cq *cq;
	if (int ret = get(cmd.cq_handle, cq))
		return ret;
	if (cmd.cqe < 1 || cmd.cqe > dev_.limits().maxCqe || cmd.cqe < cq->queue.size())
		return -EINVAL;
	if (cq->ring && (cmd.cqe > cq->ring->entries() || cmd.cqe < cq->ring->used()))
		return -EINVAL; /* the shared ring has the size it was made with */
	cq->cqe = cmd.cqe;
	ib_uverbs_resize_cq_resp resp{ cmd.cqe, 0 };
	return respond(r, &resp, sizeof resp);
}

int UverbsFile::destroyCq(Request &r)
{
	auto cmd = r.cmd<ib_uverbs_destroy_cq>();
	UObject *o;
	if (int ret = lookup(cmd.cq_handle, UType::Cq, o))
		return ret;
	auto *cq = static_cast<Cq *>(o);
	if (cq->usecnt)
		return -EBUSY;
	if (cq->channel) { /* its unread events leave the channel, the read ones count */
		int copy = ua_.takeDescriptor(r.tid, cq->channel->number(), FdKind::UnixStream);
		cq->channel->forget(*cq, copy >= 0 && cq->channel->isOurs(copy) ? copy : -1);
		if (copy >= 0)
			close(copy);
	}
	ib_uverbs_destroy_cq_resp resp{ cq->compEventsReported, cq->asyncEventsReported };
	destroy(*cq, false);
	return respond(r, &resp, sizeof resp);
}

int UverbsFile::pollCq(Request &r)
{
	auto cmd = r.cmd<ib_uverbs_poll_cq>();
	Cq *cq;
	if (int ret = get(cmd.cq_handle, cq))
		return ret;
	ib_uverbs_poll_cq_resp hdr{};
	uint64_t at = r.response + sizeof hdr;
	ib_uverbs_wc wc;
	while (hdr.count < cmd.ne && (cq->ring ? cq->ring->pop(wc) : !cq->queue.empty())) {
		if (!cq->ring) {
			wc = cq->queue.front();
			cq->queue.pop_front();
		}
		if (int ret = ua_.write(r.tid, at, &wc, sizeof wc))
			return ret;
		at += sizeof wc;
		hdr.count++;
	}
	return ua_.write(r.tid, r.response, &hdr, sizeof hdr);
}

int UverbsFile::reqNotifyCq(Request &r)
{
	auto cmd = r.cmd<ib_uverbs_req_notify_cq>();
	Cq *cq;
	if (int ret = get(cmd.cq_handle, cq))
		return ret;
	/* ib_req_notify_cq(): the next completion (or the next solicited or
	 * failed one) sends one event to the CQ's channel */
	if (cq->notify != IB_CQ_NEXT_COMP) /* rvt_req_notify_cq(): never narrowed */
		cq->notify = cmd.solicited_only ? IB_CQ_SOLICITED : IB_CQ_NEXT_COMP;
	return 0;
}

/* --- QP --- */

int UverbsFile::createQp(Request &r)
{
	auto cmd = r.cmd<ib_uverbs_create_qp>();
	switch (cmd.qp_type) {
	case IB_QPT_RC:
	case IB_QPT_UC:
	case IB_QPT_UD:
		break;
	case 8: /* RAW_PACKET: needs CAP_NET_RAW, then the driver lacks it */
	case 9: /* XRC_INI */
	case 10: /* XRC_TGT */
	case 0xff: /* DRIVER */
		return -EOPNOTSUPP;
	default:
		return -EINVAL;
	}
	Reservation res = reserve();
	Srq *srq = nullptr;
	Cq *rcq = nullptr, *scq = nullptr;
	Pd *pd = nullptr;
	if (cmd.is_srq)
		if (int ret = get(cmd.srq_handle, srq))
			return ret;
	if (cmd.recv_cq_handle != cmd.send_cq_handle)
		if (int ret = get(cmd.recv_cq_handle, rcq))
			return ret;
	if (int ret = get(cmd.send_cq_handle, scq))
		return ret;
	rcq = rcq ? rcq : scq;
	if (int ret = get(cmd.pd_handle, pd))
		return ret;
	const VerbsLimits &lim = dev_.limits();
	if (cmd.max_send_sge > lim.maxSge || cmd.max_send_wr > lim.maxQpWr || cmd.max_inline_data > lim.maxInline)
		return -EINVAL;
	if (!srq && (cmd.max_recv_sge > lim.maxSge || cmd.max_recv_wr > lim.maxQpWr))
		return -EINVAL;
	if (dev_.full(UType::Qp))
		return -ENOMEM;

	auto qp = std::make_unique<Qp>(dev_.io());
	qp->file = this;
	qp->dev = &dev_;
	qp->qpType = static_cast<QpType>(cmd.qp_type);
	qp->pd = pd;
	qp->sendCq = scq;
	qp->recvCq = rcq;
	qp->srq = srq;
	qp->maxSendWr = std::max(cmd.max_send_wr, 1u);
	qp->maxSendSge = cmd.max_send_sge;
	qp->maxRecvWr = srq ? 0 : std::max(cmd.max_recv_wr, 1u);
	qp->maxRecvSge = srq ? 0 : cmd.max_recv_sge;
	/* a send WQE holds its SGEs or as many bytes inline, whichever is more
	 * (as rxe's rxe_qp_init_req() grants it): that is the QP's inline room */
	qp->maxInline = std::min(lim.maxInline, std::max(cmd.max_inline_data, cmd.max_send_sge * 16));
	qp->sqSigAll = cmd.sq_sig_all;
	qp->userHandle = cmd.user_handle;
	uint32_t qpn = dev_.addQp(qp.get());
	ib_uverbs_create_qp_resp resp{ res.handle(),  qpn, qp->maxSendWr, qp->maxRecvWr, qp->maxSendSge, qp->maxRecvSge,
				       qp->maxInline, 0 };
	if (int ret = respond(r, &resp, sizeof resp)) {
		dev_.removeQp(qp.get());
		return ret;
	}
	pd->usecnt++;
	scq->usecnt++;
	rcq->usecnt++;
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
	    (qp->qpType != IB_QPT_RC && qp->qpType != IB_QPT_UC && qp->qpType != IB_QPT_UD))
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

/* --- SRQ --- */

int UverbsFile::createSrq(Request &r)
{
	auto cmd = r.cmd<ib_uverbs_create_srq>();
	Reservation res = reserve();
	Pd *pd;
	if (int ret = get(cmd.pd_handle, pd))
		return ret;
	const VerbsLimits &lim = dev_.limits();
	if (cmd.max_wr == 0 || cmd.max_wr > lim.maxSrqWr || cmd.max_sge == 0 || cmd.max_sge > lim.maxSrqSge ||
	    cmd.srq_limit > cmd.max_wr)
		return -EINVAL;
	if (dev_.full(UType::Srq))
		return -ENOMEM;
	auto srq = std::make_unique<Srq>();
	srq->file = this;
	srq->pd = pd;
	srq->maxWr = cmd.max_wr;
	srq->maxSge = cmd.max_sge;
	srq->limit = cmd.srq_limit;
	srq->userHandle = cmd.user_handle;
	srq->srqn = dev_.nextSrqn();
	ib_uverbs_create_srq_resp resp{ res.handle(), srq->maxWr, srq->maxSge, srq->srqn };
	if (int ret = respond(r, &resp, sizeof resp))
		return ret;
	pd->usecnt++;
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
	srq->maxWr = maxWr;
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
