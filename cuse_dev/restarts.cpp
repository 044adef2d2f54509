// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
#define FUSE_USE_VERSION 35
#include "cuse_dev/restarts.h"

#include <fuse_lowlevel.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cerrno>
#include <chrono>

namespace ibemu::cuse_dev {

bool Restarts::later(fuse_req_t req, unsigned attempt, size_t bytes, std::function<void(unsigned)> again)
{
	if (stopped_)
		return false;
	if (attempt >= kAttempts || bytes > kMaxBytes - bytes_) {
		const char *why = attempt >= kAttempts ? "its caller was never seen asleep in it, for ~10 s"
						       : "the requests waiting for their callers hold too much already";
		if (req)
			spdlog::warn("a request of thread {} is answered EAGAIN: {}", fuse_req_ctx(req)->pid, why);
		else
			spdlog::warn("a parked read is answered EAGAIN: {}", why);
		return false;
	}
	uint64_t id = nextId_++;
	Entry &e = entries_.try_emplace(id, io_, req, attempt + 1, bytes, std::move(again)).first->second;
	bytes_ += bytes;
	e.timer.expires_after(std::chrono::milliseconds(1u << std::min(attempt, 6u)));
	e.timer.async_wait([alive = std::weak_ptr<bool>(alive_), this, id](const boost::system::error_code &ec) {
		if (!ec && !alive.expired())
			run(id);
	});
	/* calls interrupted() at once if the signal came already */
	if (req)
		fuse_req_interrupt_func(req, interrupted, this);
	return true;
}

void Restarts::run(uint64_t id)
{
	Iter it = entries_.find(id);
	if (it == entries_.end())
		return; /* interrupted, or dropped at shutdown */
	if (it->second.req)
		fuse_req_interrupt_func(it->second.req, nullptr, nullptr);
	std::function<void(unsigned)> again = std::move(it->second.again);
	unsigned attempt = it->second.attempt;
	drop(it);
	again(attempt);
}

void Restarts::drop(Iter it)
{
	bytes_ -= it->second.bytes;
	entries_.erase(it); /* cancels the wait, unless it has expired */
}

void Restarts::interrupted(fuse_req_t req, void *self)
{
	auto &s = *static_cast<Restarts *>(self);
	for (Iter it = s.entries_.begin(); it != s.entries_.end(); ++it)
		if (it->second.req == req) {
			s.drop(it);
			fuse_reply_err(req, EINTR);
			return;
		}
}

void Restarts::shutdown()
{
	stopped_ = true;
	while (!entries_.empty()) {
		fuse_req_t req = entries_.begin()->second.req;
		drop(entries_.begin());
		if (req) {
			fuse_req_interrupt_func(req, nullptr, nullptr);
			fuse_reply_err(req, ENXIO);
		}
	}
}

} /* namespace ibemu::cuse_dev */
