// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
#include "cuse_dev/process_access.h"

#include "cuse_dev/caller.h"
#include "cuse_dev/caller_ids.h"
#include "cuse_dev/deferred_close.h"
#include "cuse_dev/proc_maps.h"

#include <algorithm>
#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <linux/capability.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace ibemu::cuse_dev {

int ProcessAccess::read(pid_t tid, uint64_t addr, void *buf, size_t len)
{
	return readCaller(tid, addr, buf, len);
}

int ProcessAccess::write(pid_t tid, uint64_t addr, const void *buf, size_t len)
{
	return writeCaller(tid, addr, buf, len);
}

namespace {

/* One line of /proc/PID/maps against the range [at, end) still to cover:
 * 1 when it covers more of it (at moves on), 0 when it lies before, -1 for a
 * hole or a mapping that cannot be pinned. get_user_pages() fails with
 * EFAULT on a hole or (for FOLL_WRITE without FOLL_FORCE) on a mapping that
 * is not writable. */
int coverWith(const char *line, uint64_t &at, bool write)
{
	uint64_t s, e;
	char perms[8];
	if (sscanf(line, "%" SCNx64 "-%" SCNx64 " %7s", &s, &e, perms) != 3 || e <= at)
		return 0;
	if (s > at || (perms[0] != 'r' && perms[1] != 'w') || (write && perms[1] != 'w'))
		return -1;
	at = e;
	return 1;
}

/* One look through the maps of pid as thread tid sees them: 0 or
 * -EFAULT, or -ESRCH when there are none to read. The file is read a
 * little at a time: the kernel formats only the lines asked for, and a
 * buffer is most often in the first few (the heap). */
int judgeRange(pid_t pid, pid_t tid, uint64_t addr, uint64_t len, bool write)
{
	uint64_t at = addr & ~uint64_t(4095), end = addr + len;
	char buf[4096];
	size_t have = 0; /* the start of a line not yet complete */
	bool skipping = false; /* the rest of a line longer than buf */
	for (off_t off = 0; at < end;) {
		ssize_t n = readMaps(pid, tid, buf + have, std::min<size_t>(1024, sizeof buf - 1 - have), off);
		if (n < 0)
			return off == 0 ? -ESRCH : -EFAULT;
		if (n == 0)
			break;
		off += n;
		have += size_t(n);
		buf[have] = 0;
		char *line = buf, *nl;
		while (at < end && (nl = static_cast<char *>(memchr(line, '\n', size_t(buf + have - line))))) {
			*nl = 0;
			if (!skipping && coverWith(line, at, write) < 0)
				return -EFAULT;
			skipping = false;
			line = nl + 1;
		}
		have = size_t(buf + have - line);
		memmove(buf, line, have);
		if (have == sizeof buf - 1) {
			/* a file name longer than buf (escaped characters take
			 * four bytes; the kernel prints past PATH_MAX): the
			 * range and permissions come first */
			if (!skipping && coverWith(buf, at, write) < 0)
				return -EFAULT;
			skipping = true;
			have = 0;
		}
	}
	return at >= end ? 0 : -EFAULT;
}

/* The same judgement through PROCMAP_QUERY, one mapping at a time: the
 * cost follows the range, not the caller's number of mappings. -ENOTTY
 * when the kernel cannot be asked. */
int queryRange(pid_t pid, pid_t tid, uint64_t addr, uint64_t len, bool write)
{
	uint64_t at = addr & ~uint64_t(4095), end = addr + len;
	for (bool first = true; at < end; first = false) {
		Vma v;
		int rc = queryMaps(pid, tid, at, v);
		if (rc == -ENOENT) /* a hole */
			return -EFAULT;
		if (rc == -ENOTTY)
			return rc;
		if (rc < 0)
			return first && rc == -ESRCH ? -ESRCH : -EFAULT;
		if ((!v.read && !v.write) || (write && !v.write) || v.end <= at)
			return -EFAULT;
		at = v.end;
	}
	return 0;
}

int judge(pid_t pid, pid_t tid, uint64_t addr, uint64_t len, bool write)
{
	int rc = queryRange(pid, tid, addr, len, write);
	return rc == -ENOTTY ? judgeRange(pid, tid, addr, len, write) : rc;
}

} /* namespace */

/* The maps file stays open between registrations (proc_maps.h). A range
 * found wanting is judged once more from a fresh open, in case the kept
 * file described an address space the process has left. */
int ProcessAccess::pinnable(pid_t tid, pid_t pid, uint64_t addr, uint64_t len, bool write)
{
	int rc = judge(pid, tid, addr, len, write);
	if (rc == -EFAULT) {
		forgetMaps(pid);
		rc = judge(pid, tid, addr, len, write);
	}
	return rc;
}

namespace {

/* RLIMIT_MEMLOCK's soft limit from /proc/TID/limits, for when prlimit()
 * may not look (a daemon without CAP_SYS_RESOURCE and other uids than the
 * caller's, or a security module saying no): 0 or -ESRCH */
int memlockFromProc(pid_t tid, uint64_t &soft)
{
	char path[64];
	snprintf(path, sizeof path, "/proc/%d/limits", static_cast<int>(tid));
	FILE *f = fopen(path, "re");
	if (!f)
		return -ESRCH;
	char line[256];
	soft = 0;
	while (fgets(line, sizeof line, f)) {
		if (strncmp(line, "Max locked memory", 17))
			continue;
		char word[32];
		if (sscanf(line + 17, "%31s", word) == 1)
			soft = strcmp(word, "unlimited") ? strtoull(word, nullptr, 10) : ~uint64_t(0);
	}
	fclose(f);
	return 0;
}

/* Is thread tid in the daemon's user namespace? A capability in another
 * is not one capable() counts. */
bool sameUserNamespace(pid_t tid)
{
	char path[64];
	snprintf(path, sizeof path, "/proc/%d/ns/user", static_cast<int>(tid));
	struct stat theirs, ours;
	return stat(path, &theirs) == 0 && stat("/proc/self/ns/user", &ours) == 0 && theirs.st_ino == ours.st_ino &&
	       theirs.st_dev == ours.st_dev;
}

} /* namespace */

/* System calls, not /proc text: each file costs 50 to 90 us in the TCG
 * guest, and a registration asked for two. */
int ProcessAccess::credentials(pid_t tid, emu::ProcessCreds &out)
{
	pid_t tgid = tgidOf(tid);
	if (tgid <= 0)
		return -ESRCH;
	uint64_t soft;
	rlimit rl;
	if (prlimit(tid, RLIMIT_MEMLOCK, nullptr, &rl) == 0)
		soft = rl.rlim_cur == RLIM_INFINITY ? ~uint64_t(0) : uint64_t(rl.rlim_cur);
	else if (errno == ESRCH || memlockFromProc(tid, soft) != 0)
		return -ESRCH;
	__user_cap_header_struct hdr{ _LINUX_CAPABILITY_VERSION_3, tid };
	__user_cap_data_struct caps[_LINUX_CAPABILITY_U32S_3]{};
	if (syscall(SYS_capget, &hdr, caps) != 0)
		return -ESRCH;
	out.pid = tgid;
	out.memlockSoft = soft;
	/* the kernel's capable() counts only the initial user namespace: root
	 * of its own (unshare -Ur) is not exempt from RLIMIT_MEMLOCK */
	out.capIpcLock = (caps[CAP_IPC_LOCK / 32].effective & (1u << (CAP_IPC_LOCK % 32))) && sameUserNamespace(tid);
	out.capNetBindService = (caps[CAP_NET_BIND_SERVICE / 32].effective & (1u << (CAP_NET_BIND_SERVICE % 32))) &&
				sameUserNamespace(tid);
	return 0;
}

/* GET_CONTEXT comes in a write() on the uverbs descriptor, and the caller
 * waits in it: /proc/TID/syscall names the descriptor (or says the caller
 * is not asleep yet: kCallerRunning, and the command is run again). */
int ProcessAccess::descriptorOf(pid_t tid, const emu::UverbsFile &)
{
	long nr;
	uint64_t args[6];
	if (int rc = callerSyscall(tid, nr, args))
		return rc;
	if (nr != SYS_write || args[0] > INT32_MAX)
		return -EBADF;
	return static_cast<int>(args[0]);
}

namespace {

/* The daemon's copy of descriptor fd of tid's process, or -EBADF, -ESRCH:
 * pidfd_getfd() needs the ptrace access process_vm_writev() needs
 * (caller_ids.h) */
int copyOfDescriptor(pid_t tid, int fd)
{
	int pidfd = pidfdOf(tid);
	if (pidfd < 0)
		return -errno;
	int copy = copyOfCallerFd(tid, pidfd, fd);
	int err = errno;
	close(pidfd);
	return copy >= 0 ? copy : err == ESRCH ? -ESRCH : -EBADF;
}

} /* namespace */

int ProcessAccess::takeDescriptor(pid_t tid, int fd, emu::FdKind kind)
{
	int copy = copyOfDescriptor(tid, fd);
	if (copy < 0)
		return copy;
	if (!emu::descriptorIs(copy, kind)) {
		deferredClose(copy);
		return -EINVAL;
	}
	return copy;
}

void ProcessAccess::discardDescriptor(int fd)
{
	deferredClose(fd);
}

int fdinfoInode(FILE *f, uint64_t &mnt, uint64_t &ino)
{
	/* pos:, flags:, mnt_id: and ino: come first (fs/proc/fd.c; ino: since
	 * Linux 5.14) */
	unsigned found = 0;
	unsigned long long flags = 0;
	char line[128];
	while (fgets(line, sizeof line, f)) {
		unsigned long long v;
		if (!(found & 4) && sscanf(line, "flags: %llo", &v) == 1) {
			flags = v;
			found |= 4;
		} else if (!(found & 1) && sscanf(line, "mnt_id: %llu", &v) == 1) {
			mnt = v;
			found |= 1;
		} else if (sscanf(line, "ino: %llu", &v) == 1) {
			ino = v;
			found |= 2;
			break;
		}
	}
	/* fdget() does not give an O_PATH file to a system call: EBADF */
	return found == 7 && !(flags & O_PATH) ? 0 : -EBADF;
}

/* The daemon's own copy (pidfd_getfd(), as takeDescriptor) is the file
 * the numbers are read for: /proc/self/fdinfo of it, procfs alone
 * answering (nothing calls into the file's filesystem), and no later
 * close or dup2 in the caller can put another file under the number. */
int ProcessAccess::takeFile(pid_t tid, int fd, uint64_t &mnt, uint64_t &ino)
{
	int copy = fd < 0 ? -EBADF : copyOfDescriptor(tid, fd);
	if (copy < 0)
		return copy;
	char path[64];
	snprintf(path, sizeof path, "/proc/self/fdinfo/%d", copy);
	int rc = -EBADF;
	if (FILE *f = fopen(path, "re")) {
		rc = fdinfoInode(f, mnt, ino);
		fclose(f);
	}
	if (rc) {
		deferredClose(copy); /* whatever it is, its close may block */
		return rc;
	}
	return copy;
}

int ProcessAccess::openMemory(pid_t tid)
{
	char path[64];
	snprintf(path, sizeof path, "/proc/%d/mem", static_cast<int>(tid));
	int fd = openOfCaller(tid, path, O_RDWR | O_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

void ProcessAccess::closeMemory(int mem)
{
	if (mem >= 0)
		close(mem);
}

namespace {

/* pread/pwrite on /proc/PID/mem until done: 0, -EFAULT for a hole (the
 * kernel says EIO), -ESRCH once the address space is gone (the kernel
 * then transfers nothing and says nothing: mem_rw() finds no mm users) */
template <typename Io, typename Ptr> int wholeIo(Io io, int fd, Ptr p, size_t len, uint64_t addr)
{
	while (len) {
		ssize_t n = io(fd, p, len, static_cast<off_t>(addr));
		if (n == 0)
			return -ESRCH;
		if (n < 0)
			return errno == EIO ? -EFAULT : -errno;
		p += n;
		addr += uint64_t(n);
		len -= size_t(n);
	}
	return 0;
}

} /* namespace */

int ProcessAccess::readMemory(int mem, uint64_t addr, void *buf, size_t len)
{
	return wholeIo(pread, mem, static_cast<uint8_t *>(buf), len, addr);
}

int ProcessAccess::writeMemory(int mem, uint64_t addr, const void *buf, size_t len)
{
	return wholeIo(pwrite, mem, static_cast<const uint8_t *>(buf), len, addr);
}

} /* namespace ibemu::cuse_dev */
