// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
#include "tools/observe/socket_owner.h"

#include <cstring>
#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/sock_diag.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

namespace ibemu::tools {

namespace {

/* An address as inet_diag takes it: four 32-bit words, network order;
 * an IPv4 one (or an IPv4-mapped IPv6 one, as v4) in the first */
void put(const boost::asio::ip::address &a, bool v4, __be32 out[4])
{
	memset(out, 0, 4 * sizeof(__be32));
	if (v4) {
		auto b = a.is_v4() ? a.to_v4().to_bytes()
				   : make_address_v4(boost::asio::ip::v4_mapped, a.to_v6()).to_bytes();
		memcpy(out, b.data(), b.size());
	} else {
		auto b = a.to_v6().to_bytes();
		memcpy(out, b.data(), b.size());
	}
}

bool isV4(const boost::asio::ip::address &a)
{
	return a.is_v4() || a.to_v6().is_v4_mapped();
}

} /* namespace */

SocketOwner::SocketOwner() = default;

SocketOwner::~SocketOwner()
{
	if (fd_ >= 0)
		close(fd_);
}

std::optional<uid_t> SocketOwner::uidOf(const boost::asio::ip::tcp::endpoint &local,
					const boost::asio::ip::tcp::endpoint &peer)
{
	if (fd_ < 0)
		fd_ = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, NETLINK_SOCK_DIAG);
	if (fd_ < 0)
		return std::nullopt;
	/* a client connecting over IPv4 to a socket listening on :: has an
	 * IPv4 socket, and we see its address mapped */
	const bool v4 = isV4(peer.address());
	if (v4 != isV4(local.address()))
		return std::nullopt;
	struct {
		nlmsghdr nlh;
		inet_diag_req_v2 r;
	} req{};
	req.nlh.nlmsg_len = sizeof req;
	req.nlh.nlmsg_type = SOCK_DIAG_BY_FAMILY;
	req.nlh.nlmsg_flags = NLM_F_REQUEST;
	req.nlh.nlmsg_seq = ++seq_;
	req.r.sdiag_family = v4 ? AF_INET : AF_INET6;
	req.r.sdiag_protocol = IPPROTO_TCP;
	req.r.idiag_states = ~0u;
	/* the peer's socket: its own end is our peer, its other end us */
	req.r.id.idiag_sport = htons(peer.port());
	req.r.id.idiag_dport = htons(local.port());
	put(peer.address(), v4, req.r.id.idiag_src);
	put(local.address(), v4, req.r.id.idiag_dst);
	req.r.id.idiag_cookie[0] = req.r.id.idiag_cookie[1] = INET_DIAG_NOCOOKIE;
	sockaddr_nl kernel{};
	kernel.nl_family = AF_NETLINK;
	if (sendto(fd_, &req, sizeof req, 0, reinterpret_cast<sockaddr *>(&kernel), sizeof kernel) !=
	    ssize_t(sizeof req))
		return std::nullopt;
	/* the kernel answered inside sendto(): the reply is queued already.
	 * Stale replies (an earlier one we did not read) are skipped by their
	 * sequence number. */
	alignas(nlmsghdr) char buf[8192];
	for (;;) {
		ssize_t n = recv(fd_, buf, sizeof buf, MSG_DONTWAIT);
		if (n <= 0)
			return std::nullopt;
		for (auto *h = reinterpret_cast<nlmsghdr *>(buf); NLMSG_OK(h, size_t(n)); h = NLMSG_NEXT(h, n)) {
			if (h->nlmsg_seq != seq_)
				continue;
			if (h->nlmsg_type != SOCK_DIAG_BY_FAMILY || h->nlmsg_len < NLMSG_LENGTH(sizeof(inet_diag_msg)))
				return std::nullopt; /* NLMSG_ERROR: no such socket */
			auto *m = static_cast<const inet_diag_msg *>(NLMSG_DATA(h));
			/* The lookup falls back to a listening socket on the peer's
			 * port, which is not the peer; a socket in TIME_WAIT is no
			 * one's any more (its uid reads 0). */
			if (m->idiag_state == TCP_LISTEN || m->idiag_state == TCP_TIME_WAIT ||
			    m->id.idiag_dport != htons(local.port()))
				return std::nullopt;
			return m->idiag_uid;
		}
	}
}

} /* namespace ibemu::tools */
