// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// The uverbs CQ commands (the kernel's ib_uverbs_create_comp_channel() and
// the CQ handlers of uverbs_cmd.c, uverbs_std_types_cq.c): handing out a
// completion channel from ibemu's provider's spares, CREATE_CQ with its
// optional completion ring (emu/cq_ring.h), RESIZE_CQ, DESTROY_CQ, POLL_CQ
// and REQ_NOTIFY_CQ. The shared lookups are in uverbs_cmd.cpp.
#include "emu/uverbs_file.h"

#include "emu/uverbs_cmd.h"
#include "emu/verbs_device.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <unistd.h>
#include <vector>

namespace ibemu::emu {

/* --- CQ --- */

/* ib_uverbs_create_comp_channel(): a new descriptor in the caller, which
 * only a spare of ibemu's provider can be (emu/comp_channel.h); with any
 * other provider, EOPNOTSUPP (docs/verbs.md). */
int UverbsFile::createCompChannel(Request &r)
{
	/* a transport that makes descriptors in the caller makes the channel
	 * (ENOSYS from the others); with no room left, a spare of ibemu's
	 * provider may still be handed out below */
	int sendFd, recvFd;
	bool room = roomForChannels(1);
	int num = room ? ua_.newChannel(r.tid, sendFd, recvFd) : -EMFILE;
	if (num != -ENOSYS && (room || !ibemuProvider_)) {
		if (num < 0)
			return num;
		std::unique_ptr<CompChannel> ch;
		int ret = CompChannel::adopt(dev_.io(), ua_, sendFd, recvFd, num, ch);
		ua_.discardDescriptor(recvFd);
		if (ret) {
			ua_.discardDescriptor(sendFd);
			return ret;
		}
		ib_uverbs_create_comp_channel_resp resp{ static_cast<uint32_t>(num) };
		ret = respond(r, &resp, sizeof resp);
		ch->handedOut = true; /* the caller holds it either way */
		channels_.push_back(std::move(ch));
		return ret;
	}
	if (!ibemuProvider_)
		return -EOPNOTSUPP;
	for (auto &ch : channels_) {
		if (ch->handedOut)
			continue;
		/* the program may have closed it, or put something else under its number */
		int copy = ua_.takeDescriptor(r.tid, ch->number(), FdKind::UnixStream);
		bool held = copy >= 0 && ch->isOurs(copy);
		if (copy >= 0)
			ua_.discardDescriptor(copy);
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
	if (int rc = room(UType::Cq))
		return rc;
	/* ibemu's provider: the completions go to its ring (ibemu_user_verbs.h) */
	std::unique_ptr<CqRing> ring;
	uint32_t capacity = ibemu_queue_capacity(cmd.cqe); /* rxe's rounding */
	if (int ret = driverCqRing(r, sizeof(ib_uverbs_create_cq),
				   sizeof(ib_uverbs_create_cq_resp) + sizeof(ibemu_create_cq_resp), cmd.cqe, ring))
		return ret;
	if (!ring && cmd.cqe > dev_.limits().maxCqeWithoutRing)
		return -EINVAL; /* the daemon's heap would hold them */
	/* its memory, ring or kept completions, is the caller's to pay for:
	 * charged to its RLIMIT_MEMLOCK as mlx5 pins a CQ's buffer */
	PinnedCharge pinned(pinned_);
	if (int ret = pinned.charge(ua_, r.tid, ibemu_cq_ring_bytes(cmd.cqe)))
		return ret;
	struct {
		ib_uverbs_create_cq_resp core;
		ibemu_create_cq_resp drv;
	} resp{ { res.handle(), capacity }, { ring ? ring->entries() : 0, 0 } };
	if (int ret = respond(r, &resp, ibemuProvider_ ? sizeof resp : sizeof resp.core))
		return ret;
	auto cq = std::make_unique<Cq>();
	pinned.take(cq->pid, cq->npages);
	cq->ring = std::move(ring);
	cq->file = this;
	cq->cqe = capacity;
	cq->userHandle = cmd.user_handle;
	cq->channel = channel;
	if (channel)
		channel->cqs++;
	commit(res, std::move(cq));
	return 0;
}

/* The ring CREATE_CQ's or RESIZE_CQ's driver data names (one layout,
 * after the core request of coreIn bytes; the response must have room for
 * outNeeded): ring stays empty without one. */
int UverbsFile::driverCqRing(const Request &r, size_t coreIn, size_t outNeeded, uint32_t cqe,
			     std::unique_ptr<CqRing> &ring)
{
	static_assert(sizeof(ibemu_create_cq_req) == sizeof(ibemu_resize_cq_req));
	ibemu_create_cq_req drv{ -1, 0 };
	if (ibemuProvider_ && r.inLen >= coreIn + sizeof drv)
		memcpy(&drv, r.in + coreIn, sizeof drv);
	if (drv.ring_fd < 0 && drv.ring_fd != IBEMU_RING_IN_AREA)
		return drv.area_offset ? -EINVAL : 0;
	if (r.outLen < outNeeded)
		return -EINVAL;
	RingMemory mem;
	if (int ret = ringMemory(r.tid, drv.ring_fd, drv.area_offset, mem))
		return ret;
	int ret = CqRing::adopt(mem, cqe, ring);
	if (mem.fd >= 0)
		close(mem.fd);
	return ret;
}

/* ib_uverbs_resize_cq(), rxe_resize_cq(): at least 1, at most the device's
 * max_cqe, at least the completions not yet read (EINVAL otherwise); the
 * capacity rounded as at create. A ring CQ moves to the ring the driver
 * data names, its unread completions first, in order; without one it
 * keeps its ring if the capacity fits it. */
int UverbsFile::resizeCq(Request &r)
{
	auto cmd = r.cmd<ib_uverbs_resize_cq>();
	Cq *cq;
	if (int ret = get(cmd.cq_handle, cq))
		return ret;
	uint32_t pending = cq->ring ? cq->ring->used() : static_cast<uint32_t>(cq->queue.size());
	if (cmd.cqe < 1 || cmd.cqe > dev_.limits().maxCqe || cmd.cqe < pending)
		return -EINVAL;
	uint32_t capacity = ibemu_queue_capacity(cmd.cqe);
	std::unique_ptr<CqRing> ring;
	if (int ret = driverCqRing(r, sizeof(ib_uverbs_resize_cq),
				   sizeof(ib_uverbs_resize_cq_resp) + sizeof(ibemu_resize_cq_resp), cmd.cqe, ring))
		return ret;
	if (ring ? !cq->ring : cq->ring && capacity >= cq->ring->entries())
		return -EINVAL; /* a ring for a CQ without one, or beyond the ring it has */
	if (!cq->ring && cmd.cqe > dev_.limits().maxCqeWithoutRing)
		return -EINVAL; /* the daemon's heap would hold them */
	/* a CQ that keeps its ring keeps that ring's charge; a new ring or
	 * the kept completions are charged their new size before the old is
	 * let go, as mlx5's */
	bool keepsRing = cq->ring && !ring;
	PinnedCharge pinned(pinned_);
	if (!keepsRing)
		if (int ret = pinned.charge(ua_, r.tid, ibemu_cq_ring_bytes(cmd.cqe)))
			return ret;
	CqRing *now = ring ? ring.get() : cq->ring.get();
	struct {
		ib_uverbs_resize_cq_resp core;
		ibemu_resize_cq_resp drv;
	} resp{ { capacity, 0 }, { now ? now->entries() : 0, 0 } };
	if (int ret = respond(r, &resp, ibemuProvider_ && r.outLen >= sizeof resp ? sizeof resp : sizeof resp.core))
		return ret;
	if (!keepsRing) {
		pinned_.release(cq->pid, cq->npages);
		pinned.take(cq->pid, cq->npages);
	}
	if (ring) {
		ring->takeFrom(*cq->ring);
		cq->ring = std::move(ring);
	}
	cq->cqe = capacity;
	return 0;
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
			ua_.discardDescriptor(copy);
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

} /* namespace ibemu::emu */
