// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// descriptorIs() (emu/user_access.h): socket options and memfd seals are
// answered by the kernel's socket and shmem code; fstat() or close() of an
// unknown descriptor could reach a FUSE server instead.
#include "emu/user_access.h"

#include <fcntl.h>
#include <linux/magic.h>
#include <sys/socket.h>
#include <sys/vfs.h>

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

} /* namespace ibemu::emu */
