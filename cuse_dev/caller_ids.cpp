// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
#include "cuse_dev/caller_ids.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

namespace ibemu::cuse_dev {

namespace {

/* The user and group of thread tid, when its real, effective and saved ids
 * agree (__ptrace_may_access() wants all three to be the caller's; a
 * thread in the middle of a setuid program is not reachable this way). */
bool idsOf(pid_t tid, uid_t &uid, gid_t &gid)
{
	char path[64], line[256];
	snprintf(path, sizeof path, "/proc/%d/status", static_cast<int>(tid));
	FILE *f = fopen(path, "re");
	if (!f)
		return false;
	unsigned u[3], g[3];
	int have = 0;
	while (have != 3 && fgets(line, sizeof line, f)) {
		if (sscanf(line, "Uid: %u %u %u", &u[0], &u[1], &u[2]) == 3)
			have |= 1;
		else if (sscanf(line, "Gid: %u %u %u", &g[0], &g[1], &g[2]) == 3)
			have |= 2;
	}
	fclose(f);
	if (have != 3 || u[0] != u[1] || u[0] != u[2] || g[0] != g[1] || g[0] != g[2])
		return false;
	uid = u[0];
	gid = g[0];
	return true;
}

/* This thread takes the caller's ids for as long as it lives: raw system
 * calls, as glibc's wrappers would change every thread's. The real ids
 * leave the effective ones (and so the capabilities) as they are; the
 * filesystem ids take the capabilities that go with file access away
 * until they are root's again, and make the process not dumpable
 * (commit_creds()), which is undone at once: a root without
 * CAP_SYS_PTRACE (`ibemu exec` in the container) could not open the
 * daemon's /proc/PID/ns/mnt otherwise. */
class AsCaller {
public:
	enum Ids { Real, Fs };

	AsCaller(pid_t tid, Ids ids) : ids_(ids)
	{
		uid_t uid;
		gid_t gid;
		if (!idsOf(tid, uid, gid))
			return;
		if (ids == Real) {
			uid_t e, s;
			gid_t ge, gs;
			if (syscall(SYS_getresuid, &uid_, &e, &s) != 0 ||
			    syscall(SYS_getresgid, &gid_, &ge, &gs) != 0 || uid == uid_)
				return;
			if (syscall(SYS_setresgid, gid, -1, -1) != 0)
				return;
			if (syscall(SYS_setresuid, uid, -1, -1) != 0) {
				syscall(SYS_setresgid, gid_, -1, -1);
				return;
			}
		} else {
			dumpable_ = prctl(PR_GET_DUMPABLE) == 1;
			gid_ = static_cast<gid_t>(syscall(SYS_setfsgid, gid));
			uid_ = static_cast<uid_t>(syscall(SYS_setfsuid, uid));
			if (uid == uid_ || static_cast<uid_t>(syscall(SYS_setfsuid, -1)) != uid) {
				restore(); /* the same user already, or refused */
				return;
			}
		}
		on_ = true;
	}
	~AsCaller()
	{
		if (on_)
			restore();
	}
	AsCaller(const AsCaller &) = delete;
	AsCaller &operator=(const AsCaller &) = delete;
	explicit operator bool() const { return on_; }

private:
	void restore()
	{
		int err = errno; /* the call's, for the caller of this */
		if (ids_ == Real) {
			syscall(SYS_setresuid, uid_, -1, -1);
			syscall(SYS_setresgid, gid_, -1, -1);
		} else {
			syscall(SYS_setfsuid, uid_);
			syscall(SYS_setfsgid, gid_);
			if (dumpable_)
				prctl(PR_SET_DUMPABLE, 1);
		}
		errno = err;
	}

	Ids ids_;
	bool on_ = false;
	bool dumpable_ = false;
	uid_t uid_ = 0;
	gid_t gid_ = 0;
};

/* call() as the daemon, and once more as the caller when that is refused */
template <typename Call> auto asCallerIfRefused(pid_t tid, AsCaller::Ids ids, Call call) -> decltype(call())
{
	auto r = call();
	if (r >= 0 || (errno != EPERM && errno != EACCES))
		return r;
	int err = errno;
	AsCaller as(tid, ids);
	if (!as) {
		errno = err;
		return r;
	}
	return call();
}

} /* namespace */

ssize_t readOfCaller(pid_t tid, void *out, uint64_t addr, size_t len)
{
	iovec local{ out, len };
	iovec remote{ reinterpret_cast<void *>(addr), len };
	return asCallerIfRefused(tid, AsCaller::Real, [&] { return process_vm_readv(tid, &local, 1, &remote, 1, 0); });
}

ssize_t writeOfCaller(pid_t tid, const void *data, uint64_t addr, size_t len)
{
	iovec local{ const_cast<void *>(data), len };
	iovec remote{ reinterpret_cast<void *>(addr), len };
	return asCallerIfRefused(tid, AsCaller::Real, [&] { return process_vm_writev(tid, &local, 1, &remote, 1, 0); });
}

int copyOfCallerFd(pid_t tid, int pidfd, int fd)
{
	return asCallerIfRefused(tid, AsCaller::Real,
				 [&] { return static_cast<int>(syscall(SYS_pidfd_getfd, pidfd, fd, 0)); });
}

int openOfCaller(pid_t tid, const char *path, int flags)
{
	return asCallerIfRefused(tid, AsCaller::Fs, [&] { return open(path, flags); });
}

} /* namespace ibemu::cuse_dev */
