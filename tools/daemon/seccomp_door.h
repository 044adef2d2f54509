// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// Where the seccomp transport's listeners come in (docs/transports.md):
// `ibemu exec` connects to <run dir>/seccomp.sock (mode 0600: the
// daemon's user, as for the namespace exec joins) and hands over the
// listener of the filter it installed; OpenSM's comes over a socket pair
// made when it is started (SmProcess). Each goes to SeccompDevices.
#pragma once

#include "cuse_dev/seccomp_devices.h"

#include <boost/asio/io_context.hpp>
#include <boost/asio/local/stream_protocol.hpp>

#include <functional>
#include <list>
#include <memory>
#include <string>

namespace ibemu::tools {

/* A Unix socket's door for the daemon's user only: listens at a path (a
 * file left there is replaced) made mode 0600 from the start, and hands
 * each connection to admit on the io thread until closed. The seccomp
 * door and the launch door (launch_door.h) are one each. */
class OwnerOnlyListener {
public:
	using Admit = std::function<void(boost::asio::local::stream_protocol::socket)>;
	/* 0, or -1 with err set */
	int listen(boost::asio::io_context &io, const std::string &path, Admit admit, std::string &err);
	/* no more connections; the path goes */
	void close();

private:
	void accept();
	std::unique_ptr<boost::asio::local::stream_protocol::acceptor> acceptor_;
	std::string path_;
	Admit admit_;
};

class SeccompDoor {
public:
	SeccompDoor(boost::asio::io_context &io, cuse_dev::SeccompDevices &devices) : io_(io), devices_(devices) {}
	SeccompDoor(const SeccompDoor &) = delete;
	SeccompDoor &operator=(const SeccompDoor &) = delete;

	/* Listens at path: 0, or -1 with err set. */
	int listen(const std::string &path, std::string &err);
	/* A connected socket (taken) whose other end hands a listener over. */
	void take(int sock);
	void close();

private:
	/* At most this many hand-overs wait for their message; a new one
	 * past that ends the oldest, so that connections that never say
	 * anything cannot keep an honest exec out (its message comes at once). */
	static constexpr unsigned kMaxPending = 16;
	using Socket = std::shared_ptr<boost::asio::local::stream_protocol::socket>;
	void await(Socket s); /* admitted, then watched */
	void watch(Socket s);
	/* s is done: closed on the helper thread, since what its client still
	 * queued in it (descriptors too) goes with its last close */
	void drop(const Socket &s);

	boost::asio::io_context &io_;
	cuse_dev::SeccompDevices &devices_;
	OwnerOnlyListener door_;
	std::list<Socket> pending_; /* oldest first */
};

} /* namespace ibemu::tools */
