// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// Drives a libfuse session (FUSE or CUSE) from the io_context: when its
// /dev/fuse or /dev/cuse descriptor is readable, libfuse reads and
// dispatches one request on the io thread (Asio's pattern for libraries
// that do their own I/O). One request per turn: handlers a request posted
// (the delivery of a MAD it sent, a wakeup) run before the next request is
// read, so a client's poll() after its write() already sees the answer.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>

#include <memory>

struct fuse_session;

namespace ibemu::cuse_dev {

class SessionPump {
public:
	SessionPump(boost::asio::io_context &io, fuse_session *se);
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
	struct Buffer;
	std::unique_ptr<Buffer> buf_; /* kept: allocating 132 KiB per request costs */
	std::unique_ptr<boost::asio::posix::stream_descriptor> sd_;
	std::shared_ptr<bool> alive_;
};

} /* namespace ibemu::cuse_dev */
