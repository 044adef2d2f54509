// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// Drives a libfuse session (FUSE or CUSE) from the io_context: when its
// /dev/fuse or /dev/cuse descriptor is readable, libfuse reads and
// dispatches requests on the io thread (Asio's pattern for libraries that
// do their own I/O): the requests waiting, several per turn of the
// io_context (see serveWaiting). The work a request queues (the delivery
// of a MAD it sent) keeps the order posting it gave, so a client's poll()
// after its write() already sees the answer.
// After a request the pump stays awake for a short spin window, which
// saves a cross-CPU wakeup per request under load.
#pragma once

#include "emu/work_queue.h"

#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>

#include <chrono>
#include <memory>

struct fuse_session;

namespace ibemu::cuse_dev {

class SessionPump {
public:
	/* spinUs: how long to keep polling the session after a request before
	 * blocking (0: block at once) */
	SessionPump(boost::asio::io_context &io, fuse_session *se, unsigned spinUs);
	~SessionPump();
	SessionPump(const SessionPump &) = delete;
	SessionPump &operator=(const SessionPump &) = delete;

	void start();
	void stop();

private:
	/* at most per turn of the loop: a turn ends at whichever comes first */
	static constexpr unsigned kBatch = 16;
	static constexpr std::chrono::microseconds kTurnBudget{ 200 };

	void waitForRequest();
	void serveWaiting();
	void serveNextTurn();

	boost::asio::io_context &io_;
	fuse_session *se_;
	std::chrono::steady_clock::duration spin_;
	struct Buffer;
	std::unique_ptr<Buffer> buf_; /* kept: allocating 132 KiB per request costs */
	std::unique_ptr<boost::asio::posix::stream_descriptor> sd_;
	std::shared_ptr<bool> alive_;
	std::chrono::steady_clock::time_point lastRequest_{};
	emu::RequestWork::Work carry_; /* the last turn's work, for the next */
};

} /* namespace ibemu::cuse_dev */
