// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// A program passing descriptors on a unix socket (SCM_RIGHTS), for the
// tests that hand them to the daemon.
#pragma once

#include <cerrno>
#include <cstring>
#include <sys/socket.h>
#include <vector>

namespace ibemu::test {

/* one byte with fds on sock: 0 or errno */
inline int sendFds(int sock, const std::vector<int> &fds, int flags = MSG_DONTWAIT | MSG_NOSIGNAL)
{
	std::vector<char> control(CMSG_SPACE(fds.size() * sizeof(int)));
	char one = 1;
	iovec iov{ &one, 1 };
	msghdr msg{};
	msg.msg_iov = &iov;
	msg.msg_iovlen = 1;
	msg.msg_control = control.data();
	msg.msg_controllen = control.size();
	cmsghdr *c = CMSG_FIRSTHDR(&msg);
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(fds.size() * sizeof(int));
	memcpy(CMSG_DATA(c), fds.data(), fds.size() * sizeof(int));
	return sendmsg(sock, &msg, flags) == 1 ? 0 : errno;
}

} /* namespace ibemu::test */
