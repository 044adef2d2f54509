// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
#define FUSE_USE_VERSION 35
#include "cuse_dev/restarts.h"

#include <fuse_lowlevel.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <string>

namespace ibemu::cuse_dev {

bool Restarts::later(fuse_req_t req, unsigned attempt, size_t bytes, Again again)
{
	if (stopped_) {
		again(attempt + 1, ENXIO);
		return true;
	}
	/* A signal that came already: fuse_req_interrupt_func() would call
	 * interrupted() at once, with the request's lock held, and the answer
	 * would free the request under it. */
	if (req && fuse_req_interrupted(req)) {
		again(attempt + 1, EINTR);
		return true;
	}
	uid_t uid = req ? fuse_req_ctx(req)->uid : 0;
	auto found = bytes_.find(uid);
	size_t held = found == bytes_.end() ? 0 : found->second;
	if (attempt >= kAttempts || bytes > kMaxBytes - held) {
		refused_++;
		auto now = std::chrono::steady_clock::now();
		if (now - lastWarning_ >= std::chrono::seconds(10)) { /* a user can make many */
			lastWarning_ = now;
			spdlog::warn("{} request(s) answered EAGAIN, the last {}: {}", refused_,
				     req ? "of thread " + std::to_string(fuse_req_ctx(req)->pid)
					 : std::string("a parked read"),
				     attempt >= kAttempts
					     ? "its caller was never seen asleep in it, for ~10 s"
					     : "its user's requests waiting for their callers hold too much");
			refused_ = 0;
		}
		return false;
	}
	uint64_t id = nextId_++;
	Entry &e = entries_.try_emplace(id, io_, req, uid, attempt + 1, bytes, std::move(again)).first->second;
	if (bytes) /* a user is in bytes_ while it holds any */
		bytes_[uid] += bytes;
	e.timer.expires_after(std::chrono::milliseconds(1u << std::min(attempt, 6u)));
	e.timer.async_wait([alive = alive_.weak(), this, id](const boost::system::error_code &ec) {
		if (ec || alive.expired())
			return;
		Iter it = entries_.find(id);
		if (it != entries_.end()) /* else interrupted, or ended at shutdown */
			end(it, 0);
	});
	if (req)
		fuse_req_interrupt_func(req, interrupted, this);
	return true;
}

void Restarts::end(Iter it, int err)
{
	/* (interrupted() runs under the request's lock, which this takes) */
	if (it->second.req && err != EINTR)
		fuse_req_interrupt_func(it->second.req, nullptr, nullptr);
	Again again = std::move(it->second.again);
	unsigned attempt = it->second.attempt;
	if (it->second.bytes) {
		auto held = bytes_.find(it->second.uid);
		held->second -= it->second.bytes;
		if (!held->second)
			bytes_.erase(held);
	}
	entries_.erase(it); /* cancels the wait, unless it has expired */
	again(attempt, err);
}

void Restarts::interrupted(fuse_req_t req, void *self)
{
	auto &s = *static_cast<Restarts *>(self);
	for (Iter it = s.entries_.begin(); it != s.entries_.end(); ++it)
		if (it->second.req == req)
			return s.end(it, EINTR);
}

void Restarts::shutdown()
{
	stopped_ = true;
	while (!entries_.empty())
		end(entries_.begin(), ENXIO);
}

} /* namespace ibemu::cuse_dev */
