// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
#define FUSE_USE_VERSION 35
#include "cuse_dev/wait_queue.h"

#include <fuse_lowlevel.h>

#include <cerrno>

namespace ibemu::cuse_dev {

WaitQueue::~WaitQueue()
{
	dropPollHandle();
}

void WaitQueue::armInterrupt(fuse_req_t req, void (*interrupted)(fuse_req_t, void *), void *data)
{
	if (!parked(req))
		return;
	/* A signal that came already: fuse_req_interrupt_func() would call
	 * interrupted() at once, with the request's lock held, and the answer
	 * would free the request under it. */
	if (fuse_req_interrupted(req))
		cancel(req);
	else
		fuse_req_interrupt_func(req, interrupted, data);
}

bool WaitQueue::parked(fuse_req_t req) const
{
	for (const auto &r : reads_)
		if (r.req == req)
			return true;
	return false;
}

bool WaitQueue::cancel(fuse_req_t req)
{
	for (auto it = reads_.begin(); it != reads_.end(); ++it)
		if (it->req == req) {
			reads_.erase(it);
			fuse_reply_err(req, EINTR);
			return true;
		}
	return false;
}

PendingRead WaitQueue::pop()
{
	PendingRead r = reads_.front();
	reads_.pop_front();
	fuse_req_interrupt_func(r.req, nullptr, nullptr);
	return r;
}

void WaitQueue::failAll(int err)
{
	while (!reads_.empty())
		fuse_reply_err(pop().req, err);
}

void WaitQueue::setPollHandle(fuse_pollhandle *ph)
{
	if (!ph)
		return;
	dropPollHandle();
	ph_ = ph;
}

void WaitQueue::notifyPoll()
{
	if (ph_)
		fuse_lowlevel_notify_poll(ph_);
}

void WaitQueue::dropPollHandle()
{
	if (ph_)
		fuse_pollhandle_destroy(ph_);
	ph_ = nullptr;
}

} /* namespace ibemu::cuse_dev */
