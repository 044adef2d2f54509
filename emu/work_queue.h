// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// Work left for "after the current call": the kernel's MAD completions,
// receive handlers and file wakeups, which run after the syscall that
// caused them has returned, in the order they were queued.
//
// Outside a RequestWork, queueWork() posts to the io_context. The io
// thread's SessionPump serves several requests per turn under one, and
// runs a round of the work between them (runQueued). A FUSE ring thread
// (cuse_dev/fuse_uring.h) serves a request under the state lock without
// running the io_context; posting from there would hand the work to the io
// thread, a wakeup on another CPU, and it might run after the client's
// next request (a poll() that should already see the answer). So while a
// RequestWork is alive on a thread, queueWork() keeps the work on that
// thread, and RequestWork::run() runs it, in order, before the thread gives
// the state lock back: the same order as posting, a turn later.
#pragma once

#include <boost/asio/io_context.hpp>

#include <deque>
#include <functional>

namespace ibemu::emu {

void queueWork(boost::asio::io_context &io, std::function<void()> fn);

class RequestWork {
public:
	RequestWork();
	/* a turn of the io thread's SessionPump: what is left at the end is
	 * posted to io, in order, instead of run (unless the pump took it
	 * for its next turn, takeRest) */
	explicit RequestWork(boost::asio::io_context &io);
	~RequestWork(); /* runs what is left, or posts it */
	RequestWork(const RequestWork &) = delete;
	RequestWork &operator=(const RequestWork &) = delete;

	/* runs the queued work, and the work it queues, until none is left */
	void run();
	/* runs the work queued so far, but not the work that queues in turn:
	 * that waits for the next call, as work posted to the io_context
	 * waits behind the handlers posted before it */
	void runQueued();
	/* posts what is left to the io_context given at construction, in
	 * order (without one, runs it) */
	void postRest();

	/* What is left, handed on: a pump's turn that ends while requests
	 * still come gives its work to the next turn (resume), which runs it
	 * before its first request, so what that work queues runs after that
	 * request, as when each request was an io_context turn of its own. */
	using Work = std::deque<std::function<void()>>;
	Work takeRest();
	void resume(Work &&left); /* ahead of the work queued so far */

private:
	friend void queueWork(boost::asio::io_context &, std::function<void()>);
	Work work_;
	RequestWork *outer_;
	boost::asio::io_context *postTo_ = nullptr;
};

} /* namespace ibemu::emu */
