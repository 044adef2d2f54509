// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// The seccomp transport's door (tools/daemon/seccomp_door.h).
#include "tools/daemon/seccomp_door.h"

#include "cuse_dev/deferred_close.h"
#include "cuse_dev/seccomp_filter.h"

#include <spdlog/spdlog.h>

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace ibemu::tools {

using boost::asio::local::stream_protocol;

int OwnerOnlyListener::listen(boost::asio::io_context &io, const std::string &path, Admit admit, std::string &err)
{
	unlink(path.c_str());
	boost::system::error_code ec;
	auto a = std::make_unique<stream_protocol::acceptor>(io);
	mode_t old = umask(0077); /* 0600 from the start */
	a->open(stream_protocol(), ec);
	if (!ec)
		a->bind(stream_protocol::endpoint(path), ec);
	umask(old);
	if (!ec)
		a->listen(16, ec);
	if (ec) {
		err = "cannot listen at " + path + ": " + ec.message();
		return -1;
	}
	acceptor_ = std::move(a);
	path_ = path;
	admit_ = std::move(admit);
	accept();
	return 0;
}

void OwnerOnlyListener::accept()
{
	acceptor_->async_accept([this](const boost::system::error_code &ec, stream_protocol::socket s) {
		if (ec == boost::asio::error::operation_aborted || !acceptor_)
			return;
		if (!ec) {
			/* not inherited by what the daemon runs (the launch door's
			 * ibemu): Asio accepts without SOCK_CLOEXEC */
			fcntl(s.native_handle(), F_SETFD, FD_CLOEXEC);
			admit_(std::move(s));
		}
		accept();
	});
}

void OwnerOnlyListener::close()
{
	if (!acceptor_)
		return;
	acceptor_.reset();
	unlink(path_.c_str());
}

int SeccompDoor::listen(const std::string &path, std::string &err)
{
	return door_.listen(
		io_, path,
		[this](stream_protocol::socket s) { await(std::make_shared<stream_protocol::socket>(std::move(s))); },
		err);
}

void SeccompDoor::take(int sock)
{
	await(std::make_shared<stream_protocol::socket>(io_, stream_protocol(), sock));
}

void SeccompDoor::await(Socket s)
{
	if (pending_.size() >= kMaxPending) /* the oldest goes: exec says the daemon did not answer */
		drop(pending_.front());
	pending_.push_back(s);
	watch(s);
}

void SeccompDoor::watch(Socket s)
{
	s->async_wait(stream_protocol::socket::wait_read, [this, s](const boost::system::error_code &ec) {
		if (ec) /* dropped */
			return;
		int listener, base;
		std::string host;
		int rc = cuse_dev::seccomp::receiveHandOver(s->native_handle(), listener, base, host);
		if (rc == -EAGAIN)
			return watch(s);
		if (rc == 0) {
			rc = devices_.adopt(listener, base, host);
			if (rc)
				spdlog::warn("seccomp: refused a listener ({})", strerror(-rc));
			cuse_dev::seccomp::answerHandOver(s->native_handle(), -rc);
		}
		drop(s);
	});
}

void SeccompDoor::drop(const Socket &s)
{
	Socket keep = s; /* s may be the list's own */
	pending_.remove(keep);
	boost::system::error_code ec;
	if (keep->is_open())
		cuse_dev::deferredClose(keep->release(ec));
}

void SeccompDoor::close()
{
	door_.close();
}

} /* namespace ibemu::tools */
