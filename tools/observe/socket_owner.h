// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// Who is at the other end of a TCP connection the live view accepted,
// when that end is a socket of this machine (and network namespace): the
// user who owns it, as `ss -e` shows it. The kernel answers from its
// socket table (NETLINK_SOCK_DIAG, one exact lookup by the connection's
// addresses and ports), at once and without privileges; a peer elsewhere
// has no socket here, and is known by its address only.
#pragma once

#include <boost/asio/ip/tcp.hpp>

#include <cstdint>
#include <optional>
#include <sys/types.h>

namespace ibemu::tools {

class SocketOwner {
public:
	SocketOwner();
	~SocketOwner();
	SocketOwner(const SocketOwner &) = delete;
	SocketOwner &operator=(const SocketOwner &) = delete;

	/* The owner of the socket whose own end is `peer` and whose other end
	 * is `local` (the accepted connection's two endpoints, as our side
	 * sees them); nothing when there is no such socket here. */
	std::optional<uid_t> uidOf(const boost::asio::ip::tcp::endpoint &local,
				   const boost::asio::ip::tcp::endpoint &peer);

private:
	int fd_ = -1; /* NETLINK_SOCK_DIAG, opened on first use */
	uint32_t seq_ = 0;
};

} /* namespace ibemu::tools */
