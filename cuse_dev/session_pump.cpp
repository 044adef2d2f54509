// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
#define FUSE_USE_VERSION 35
#include "cuse_dev/session_pump.h"

#include "emu/work_queue.h"

#include <boost/asio/post.hpp>
#include <fuse_lowlevel.h>
#include <spdlog/spdlog.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <fcntl.h>
#include <unistd.h>

namespace ibemu::cuse_dev {

struct SessionPump::Buffer {
	fuse_buf b{};
	~Buffer() { free(b.mem); }
};

SessionPump::SessionPump(boost::asio::io_context &io, fuse_session *se, unsigned spinUs)
	: io_(io), se_(se), spin_(std::chrono::microseconds(spinUs)), buf_(std::make_unique<Buffer>()),
	  alive_(std::make_shared<bool>(true))
{}

SessionPump::~SessionPump()
{
	stop();
}

void SessionPump::start()
{
	int fd = fuse_session_fd(se_);
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
	sd_ = std::make_unique<boost::asio::posix::stream_descriptor>(io_, dup(fd));
	waitForRequest();
}

void SessionPump::stop()
{
	*alive_ = false;
	for (auto &fn : carry_) /* the next turn will not run: nothing is lost */
		boost::asio::post(io_, std::move(fn));
	carry_.clear();
	if (sd_) {
		boost::system::error_code ec;
		sd_->close(ec);
		sd_.reset();
	}
}

void SessionPump::waitForRequest()
{
	std::weak_ptr<bool> alive = alive_;
	sd_->async_wait(boost::asio::posix::stream_descriptor::wait_read,
			[this, alive](const boost::system::error_code &ec) {
				auto a = alive.lock();
				if (ec || !a || !*a)
					return;
				serveWaiting();
			});
}

void SessionPump::serveWaiting()
{
	/* Serve requests while they come, up to kBatch, taking none once
	 * kTurnBudget has passed, then give the loop a turn (timers, the other
	 * sessions). Reading the next request directly saves the reactor's
	 * pass between two. The work a request queues through emu::queueWork
	 * keeps the place posting it to the io_context gave when the pump
	 * served one request a turn: one round of it (the delivery of a MAD
	 * that was sent, an rdma_cm event) runs before the next request, so a
	 * client's poll() after its write() finds the answer, and what that
	 * round queues (a file's poll notification) runs after the next
	 * request. A turn that ends while requests may still come hands its
	 * work to the next (carry_), which starts with that round; one that
	 * goes to sleep posts it. Work posted with boost::asio::post directly
	 * (a send queue's next share, packets to another daemon) runs after
	 * the turn. */
	std::shared_ptr<bool> alive = alive_; /* a request may stop the pump */
	auto start = std::chrono::steady_clock::now();
	emu::RequestWork work(io_);
	work.resume(std::move(carry_));
	work.runQueued();
	if (!*alive)
		return;
	for (unsigned n = 1;; n++) {
		int r = fuse_session_receive_buf(se_, &buf_->b);
		if (r == -EAGAIN || r == -EINTR) {
			/* Requests come in bursts (a tool's write, poll, read;
			 * OpenSM's sweeps). Going to sleep between them costs a
			 * cross-CPU wakeup per request (~40 us on these VMs), so
			 * stay awake for the spin window after the last one,
			 * turning the loop (timers and posted work still run),
			 * before blocking. */
			if (std::chrono::steady_clock::now() - lastRequest_ < spin_)
				break;
			work.postRest();
			return waitForRequest();
		}
		lastRequest_ = std::chrono::steady_clock::now();
		if (r <= 0) {
			spdlog::info("session ended ({})", r);
			return;
		}
		fuse_session_process_buf(se_, &buf_->b);
		if (!*alive || fuse_session_exited(se_))
			return;
		if (n == kBatch || std::chrono::steady_clock::now() - start >= kTurnBudget)
			break;
		work.runQueued();
		if (!*alive)
			return;
	}
	carry_ = work.takeRest();
	serveNextTurn();
}

void SessionPump::serveNextTurn()
{
	std::weak_ptr<bool> alive = alive_;
	boost::asio::post(io_, [this, alive] {
		auto a = alive.lock();
		if (a && *a)
			serveWaiting();
	});
}

} /* namespace ibemu::cuse_dev */
