// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// Drives a libfuse session (FUSE or CUSE) from the io_context: when its
// /dev/fuse or /dev/cuse descriptor is readable, libfuse reads and
// dispatches one request on the io thread (Asio's pattern for libraries
// that do their own I/O). One request per turn: handlers a request posted
// (the delivery of a MAD it sent, a wakeup) run before the next request is
// read, so a client's poll() after its write() already sees the answer.
// After a request the pump stays awake for a short spin window (see
// serveOne), which saves a cross-CPU wakeup per request under load.
#pragma once

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
	void waitForRequest();
	void serveOne();

	boost::asio::io_context &io_;
	fuse_session *se_;
	std::chrono::steady_clock::duration spin_;
	struct Buffer;
	std::unique_ptr<Buffer> buf_; /* kept: allocating 132 KiB per request costs */
	std::unique_ptr<boost::asio::posix::stream_descriptor> sd_;
	std::shared_ptr<bool> alive_;
	std::chrono::steady_clock::time_point lastRequest_{};
};

} /* namespace ibemu::cuse_dev */
