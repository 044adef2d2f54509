// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// seccomp user notifications: the ioctls of the listener.
#include "cuse_dev/seccomp_notif.h"

#include "cuse_dev/caller_ids.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/ioctl.h>
#include <sys/uio.h>
#include <unistd.h>

namespace ibemu::cuse_dev::seccomp {

int Notification::receive(int listener)
{
	listener_ = listener;
	memset(&n_, 0, sizeof n_); /* the kernel wants it zeroed */
	if (ioctl(listener, SECCOMP_IOCTL_NOTIF_RECV, &n_) != 0)
		return -errno;
	return 0;
}

bool Notification::valid() const
{
	uint64_t id = n_.id;
	return ioctl(listener_, SECCOMP_IOCTL_NOTIF_ID_VALID, &id) == 0;
}

namespace {

int send(int listener, uint64_t id, int64_t val, int error, uint32_t flags)
{
	seccomp_notif_resp r{};
	r.id = id;
	r.val = val;
	r.error = error;
	r.flags = flags;
	return ioctl(listener, SECCOMP_IOCTL_NOTIF_SEND, &r) == 0 ? 0 : -errno;
}

} /* namespace */

int Notification::answer(int64_t val) const
{
	return send(listener_, n_.id, val, 0, 0);
}

int Notification::fail(int err) const
{
	return send(listener_, n_.id, 0, -err, 0);
}

int Notification::proceed() const
{
	return send(listener_, n_.id, 0, 0, SECCOMP_USER_NOTIF_FLAG_CONTINUE);
}

int Notification::inject(int src, int at, bool cloexec, bool asResult) const
{
	seccomp_notif_addfd a{};
	a.id = n_.id;
	a.srcfd = static_cast<uint32_t>(src);
	a.newfd = at >= 0 ? static_cast<uint32_t>(at) : 0;
	a.flags = (at >= 0 ? SECCOMP_ADDFD_FLAG_SETFD : 0) | (asResult ? SECCOMP_ADDFD_FLAG_SEND : 0);
	a.newfd_flags = cloexec ? O_CLOEXEC : 0;
	int fd = ioctl(listener_, SECCOMP_IOCTL_NOTIF_ADDFD, &a);
	if (fd >= 0 || !asResult || errno != EINVAL)
		return fd >= 0 ? fd : -errno;
	/* before 5.14 there is no FLAG_SEND: two steps */
	a.flags &= ~uint32_t(SECCOMP_ADDFD_FLAG_SEND);
	fd = ioctl(listener_, SECCOMP_IOCTL_NOTIF_ADDFD, &a);
	if (fd < 0)
		return -errno;
	int rc = answer(fd);
	return rc ? rc : fd;
}

int readString(pid_t tid, uint64_t addr, char *out, size_t max)
{
	size_t have = 0;
	while (have + 1 < max) {
		/* up to the end of the page: the next one may not be mapped */
		size_t page = 4096 - ((addr + have) & 4095);
		size_t want = std::min(page, max - 1 - have);
		ssize_t n = readOfCaller(tid, out + have, addr + have, want);
		if (n <= 0)
			return -EFAULT;
		if (void *nul = memchr(out + have, 0, size_t(n)))
			return static_cast<int>(static_cast<char *>(nul) - out);
		have += size_t(n);
	}
	return -ENAMETOOLONG;
}

} /* namespace ibemu::cuse_dev::seccomp */
