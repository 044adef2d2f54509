// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// Requests handled again a moment later, as the kernel restarts a system
// call that returned ERESTARTSYS. A handler that must see its caller's
// system call (caller.h) and finds the caller still on its way into the
// request (kCallerRunning) neither guesses nor holds the io thread: it
// hands the request here, and a timer runs the handler again, a little
// later each time (1, 2, 4 ... 64 ms), until the caller is asleep. A
// signal to the caller ends the wait with EINTR; a caller still not
// asleep after about ten seconds is answered EAGAIN.
//
// The handler answers its request, always: Restarts only tells it when
// to run again, or with which error to end.
//
// One per WholeCalls (whole_call.h), that is per device-file table; the
// io thread owns it, like everything else there.
#pragma once

#include "emu/liveness.h"

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <sys/types.h>

struct fuse_req;
typedef struct fuse_req *fuse_req_t;

namespace ibemu::cuse_dev {

class Restarts {
public:
	/* the attempts a request gets after its first: ~10 s in all */
	static constexpr unsigned kAttempts = 160;
	/* what one user's waiting requests may hold of their callers' bytes */
	static constexpr size_t kMaxBytes = size_t(32) << 20;

	/* attempt: the attempt to make (1 on); err: 0 to run again, or the
	 * error to answer the request with and end it (EINTR: a signal;
	 * ENXIO: the daemon stops) */
	using Again = std::function<void(unsigned attempt, int err)>;

	explicit Restarts(boost::asio::io_context &io) : io_(io) {}
	~Restarts() { shutdown(); }
	Restarts(const Restarts &) = delete;
	Restarts &operator=(const Restarts &) = delete;

	/* The handler of req (attempt: 0 the first time) found its caller
	 * running: again(attempt + 1, 0) runs a moment later, or again(_,
	 * EINTR) when a signal comes first (at once, if one came already), or
	 * again(_, ENXIO) at shutdown() (at once, after it). false, with
	 * nothing taken, when that was the last attempt, or when `bytes` (what
	 * again() holds) would take what the caller's user holds here over
	 * kMaxBytes: the handler answers req then (EAGAIN). req may be null:
	 * a request parked elsewhere, with its own interrupt handler. */
	bool later(fuse_req_t req, unsigned attempt, size_t bytes, Again again);

	/* The daemon stops: waiting requests end (ENXIO), and so do later
	 * ones. */
	void shutdown();

private:
	struct Entry {
		Entry(boost::asio::io_context &io, fuse_req_t r, uid_t u, unsigned n, size_t b, Again fn)
			: req(r), uid(u), attempt(n), bytes(b), again(std::move(fn)), timer(io)
		{}
		fuse_req_t req;
		uid_t uid;
		unsigned attempt; /* the one again() makes */
		size_t bytes;
		Again again;
		boost::asio::steady_timer timer;
	};
	using Iter = std::map<uint64_t, Entry>::iterator;

	/* Takes the entry out and tells its handler: err 0 runs it again;
	 * EINTR comes from interrupted() only. */
	void end(Iter it, int err);
	static void interrupted(fuse_req_t req, void *self);

	boost::asio::io_context &io_;
	/* By id: a timer's handler finds its entry by id, never by pointer,
	 * since a wait that has expired already is not cancelled when its
	 * entry goes (an interrupt handled first); nor is a handler run after
	 * this object went (alive_). */
	std::map<uint64_t, Entry> entries_;
	uint64_t nextId_ = 0;
	std::map<uid_t, size_t> bytes_; /* held, by user */
	bool stopped_ = false;
	/* refusals since the last warning, logged at most every 10 s */
	unsigned long refused_ = 0;
	std::chrono::steady_clock::time_point lastWarning_{};
	emu::Liveness alive_;
};

} /* namespace ibemu::cuse_dev */
