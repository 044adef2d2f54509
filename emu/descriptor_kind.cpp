// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// descriptorIs() (emu/user_access.h): socket options and memfd seals are
// answered by the kernel's socket and shmem code; fstat() or close() of an
// unknown descriptor could reach a FUSE server instead.
#include "emu/user_access.h"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <linux/magic.h>
#include <sys/socket.h>
#include <sys/vfs.h>

#ifndef SO_PASSRIGHTS
#define SO_PASSRIGHTS 83 /* Linux 6.16, include/uapi/asm-generic/socket.h */
#endif

namespace ibemu::emu {

bool descriptorIs(int fd, FdKind kind)
{
	if (kind == FdKind::UnixStream) {
		int type = 0, domain = 0;
		socklen_t len = sizeof type;
		if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) != 0 || type != SOCK_STREAM)
			return false;
		len = sizeof domain;
		return getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &domain, &len) == 0 && domain == AF_UNIX;
	}
	/* F_GET_SEALS works on shmem and hugetlbfs files only; a hugetlbfs one
	 * could lose its pages under our mapping (a SIGBUS), so tmpfs only */
	struct statfs fs;
	return fcntl(fd, F_GET_SEALS) >= 0 && fstatfs(fd, &fs) == 0 && fs.f_type == TMPFS_MAGIC;
}

void refuseDescriptors(int fd)
{
	int off = 0;
	setsockopt(fd, SOL_SOCKET, SO_PASSRIGHTS, &off, sizeof off); /* ENOPROTOOPT before 6.16 */
}

ssize_t receiveWithDescriptors(int sock, void *buf, size_t len, int flags, std::vector<int> &fds, bool &truncated)
{
	alignas(cmsghdr) char control[CMSG_SPACE(kMaxFdsPerMessage * sizeof(int))];
	iovec iov{ buf, len };
	msghdr msg{};
	msg.msg_iov = &iov;
	msg.msg_iovlen = 1;
	msg.msg_control = control;
	msg.msg_controllen = sizeof control;
	ssize_t n = recvmsg(sock, &msg, flags | MSG_CMSG_CLOEXEC);
	truncated = n >= 0 && (msg.msg_flags & MSG_CTRUNC);
	if (n < 0)
		return n;
	for (cmsghdr *c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
			continue;
		size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (size_t k = 0; k < count; k++) {
			int fd;
			memcpy(&fd, CMSG_DATA(c) + k * sizeof(int), sizeof fd);
			fds.push_back(fd);
		}
	}
	return n;
}

ssize_t sendWithDescriptors(int sock, const void *buf, size_t len, const int *fds, size_t nfds, int flags)
{
	if (nfds > kMaxFdsPerMessage) {
		errno = EINVAL;
		return -1;
	}
	alignas(cmsghdr) char control[CMSG_SPACE(kMaxFdsPerMessage * sizeof(int))] = {};
	iovec iov{ const_cast<void *>(buf), len };
	msghdr msg{};
	msg.msg_iov = &iov;
	msg.msg_iovlen = 1;
	if (nfds) {
		msg.msg_control = control;
		msg.msg_controllen = CMSG_SPACE(nfds * sizeof(int));
		cmsghdr *c = CMSG_FIRSTHDR(&msg);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(nfds * sizeof(int));
		memcpy(CMSG_DATA(c), fds, nfds * sizeof(int));
	}
	return sendmsg(sock, &msg, flags);
}

} /* namespace ibemu::emu */
