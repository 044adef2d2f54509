// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
#include "cuse_dev/caller.h"

#include "cuse_dev/caller_ids.h"

#include <algorithm>
#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <sched.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

namespace ibemu::cuse_dev {

namespace {

/* the cgroup2 mount point from our mountinfo ("- cgroup2" after the
 * optional fields); empty when there is none */
std::string cgroup2Root()
{
	FILE *f = fopen("/proc/self/mountinfo", "re");
	if (!f)
		return {};
	char line[4096];
	std::string root;
	while (root.empty() && fgets(line, sizeof line, f)) {
		char point[4096];
		const char *dash = strstr(line, " - cgroup2 ");
		if (dash && sscanf(line, "%*s %*s %*s %*s %4095s", point) == 1)
			root = point;
	}
	fclose(f);
	return root == "/" ? std::string() : root;
}

} /* namespace */

emu::RdmaCgChain rdmaCgroupOf(pid_t pid, const std::string &dev)
{
	static const std::string root = cgroup2Root();
	if (root.empty())
		return {};
	char path[64], text[4096];
	snprintf(path, sizeof path, "/proc/%d/cgroup", static_cast<int>(pid));
	FILE *f = fopen(path, "re");
	if (!f)
		return {};
	size_t n = fread(text, 1, sizeof text - 1, f);
	fclose(f);
	return emu::readRdmaChain(root, std::string_view(text, n), dev);
}

uint64_t processIdentity(pid_t tgid)
{
	constexpr long kPidfsMagic = 0x50494446; /* PID_FS_MAGIC */
	int pidfd = static_cast<int>(syscall(SYS_pidfd_open, tgid, 0));
	if (pidfd >= 0) {
		struct statfs fs;
		struct stat st;
		bool pidfs = fstatfs(pidfd, &fs) == 0 && fs.f_type == kPidfsMagic && fstat(pidfd, &st) == 0;
		close(pidfd);
		if (pidfs)
			return uint64_t(st.st_ino);
	} else if (errno == ESRCH) {
		return 0;
	}
	char path[64], line[1024];
	snprintf(path, sizeof path, "/proc/%d/stat", static_cast<int>(tgid));
	FILE *f = fopen(path, "re");
	if (!f)
		return 0;
	size_t n = fread(line, 1, sizeof line - 1, f);
	fclose(f);
	line[n] = 0;
	/* the fields after the name, which ends at the last ')': state is
	 * the 3rd field, starttime the 22nd */
	const char *p = strrchr(line, ')');
	unsigned long long start = 0;
	if (!p || sscanf(p + 1, " %*c" "%*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d %*d %*d %*d %llu",
			 &start) != 1)
		return 0;
	return (uint64_t(start) << 22) | uint64_t(tgid); /* pid_max is at most 2^22 */
}

pid_t tgidOf(pid_t tid)
{
	/* pidfd_open() takes a process's first thread only, whose TID is the
	 * process's ID, and says EINVAL for any other: one system call where
	 * reading /proc/TID/status costs 50 to 90 us in the TCG guest. */
	int pidfd = static_cast<int>(syscall(SYS_pidfd_open, tid, 0));
	if (pidfd >= 0) {
		close(pidfd);
		return tid;
	}
	if (errno == ESRCH)
		return -1; /* else not a first thread, or no pidfd_open() here */
	char path[64];
	snprintf(path, sizeof path, "/proc/%d/status", static_cast<int>(tid));
	FILE *f = fopen(path, "re");
	if (!f)
		return -1;
	char line[256];
	pid_t tgid = -1;
	while (fgets(line, sizeof line, f))
		if (!strncmp(line, "Tgid:", 5)) {
			tgid = static_cast<pid_t>(atoi(line + 5));
			break;
		}
	fclose(f);
	return tgid;
}

int callerSyscall(pid_t tid, long &nr, uint64_t args[6], int looks)
{
	/* Most writes ask this (callerIo), so it is a plain open and read:
	 * "NR ARG0 ... ARG5 SP PC", or "running" while the caller has not yet
	 * gone to sleep in its request. Looking again after a yield finds most
	 * callers asleep; one that is not is handled again later (restarts.h),
	 * so the io thread never waits long. The file is opened for each look
	 * on purpose: kept open (tried twice, see docs/performance.md), the
	 * looks got ten times cheaper in the TCG guest, and the first look's
	 * wait too short for many callers there. */
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/syscall", static_cast<int>(tid));
	for (int look = 0; look < looks; look++) {
		int fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			return -errno;
		char text[256];
		ssize_t n = read(fd, text, sizeof text - 1);
		close(fd);
		if (n <= 0)
			return -ESRCH;
		text[n] = 0;
		if (strncmp(text, "running", 7) == 0) {
			sched_yield();
			continue;
		}
		char *p = text, *end;
		nr = strtol(p, &end, 10);
		if (end == p)
			return -ESRCH; /* not in a system call */
		for (int i = 0; i < 6; i++) {
			p = end;
			args[i] = strtoull(p, &end, 16);
			if (end == p)
				return -ESRCH;
		}
		return 0;
	}
	return -kCallerRunning;
}

int pidfdOf(pid_t tid)
{
	constexpr unsigned kPidfdThread = O_EXCL; /* PIDFD_THREAD, 6.9 */
	int pidfd = static_cast<int>(syscall(SYS_pidfd_open, tid, kPidfdThread));
	if (pidfd >= 0 || errno == ESRCH)
		return pidfd;
	pidfd = static_cast<int>(syscall(SYS_pidfd_open, tid, 0));
	if (pidfd >= 0 || errno == ESRCH)
		return pidfd;
	pid_t tgid = tgidOf(tid);
	if (tgid <= 0) {
		errno = ESRCH;
		return -1;
	}
	return static_cast<int>(syscall(SYS_pidfd_open, tgid, 0));
}

int readCaller(pid_t tid, uint64_t addr, void *data, size_t len)
{
	ssize_t n = readOfCaller(tid, data, addr, len);
	if (n < 0)
		return -errno;
	return n == static_cast<ssize_t>(len) ? 0 : -EFAULT;
}

int writeCaller(pid_t tid, uint64_t addr, const void *data, size_t len)
{
	ssize_t n = writeOfCaller(tid, data, addr, len);
	if (n < 0)
		return -errno;
	return n == static_cast<ssize_t>(len) ? 0 : -EFAULT;
}

int callerIo(pid_t tid, long nr, size_t chunk, CallerIo &io, int looks)
{
	/* Any request may be the start of a longer call: the kernel splits at
	 * max_write and at page boundaries, and stops at the first page it
	 * cannot map, so a write running into a hole arrives as its mapped
	 * head. Only the caller's call itself tells. */
	long callNr;
	uint64_t args[6];
	int rc = callerSyscall(tid, callNr, args, looks);
	if (rc == -kCallerRunning)
		return rc;
	io = CallerIo{ nr, 0, chunk };
	if (rc == 0 && callNr == nr && args[2] > chunk) {
		io.addr = args[1];
		io.count = args[2];
	}
	return 0;
}

int Continuation::continues(pid_t t, int looks)
{
	if (!left || tid != t)
		return 0;
	long nr;
	uint64_t args[6];
	int rc = callerSyscall(t, nr, args, looks);
	if (rc == -kCallerRunning)
		return rc;
	if (rc == 0 && nr == io.nr && args[1] == io.addr && args[2] == io.count)
		return 1;
	clear();
	return 0;
}

int takeWrite(pid_t tid, const char *buf, size_t size, size_t maxLen, Continuation &rest, std::vector<uint8_t> &storage,
	      const uint8_t *&data, CallerIo &io, int looks)
{
	if (int c = rest.continues(tid, looks)) {
		if (c < 0)
			return c;
		rest.left -= std::min(size, rest.left);
		return 1;
	}
	if (int rc = callerIo(tid, SYS_write, size, io, looks))
		return rc;
	data = reinterpret_cast<const uint8_t *>(buf);
	size_t len = io.count;
	if (len == size)
		return 0;
	if (len > maxLen)
		return -ENOMEM;
	/* grow with what the caller really has, not with what it claims */
	storage.clear();
	for (size_t at = 0; at < len;) {
		size_t n = std::min(len - at, size_t(1) << 20);
		storage.resize(at + n);
		if (readCaller(tid, io.addr + at, storage.data() + at, n) != 0)
			return -EFAULT;
		at += n;
	}
	data = storage.data();
	return 0;
}

void expectRest(Continuation &rest, pid_t tid, const CallerIo &io, size_t first)
{
	/* a whole write() leaves another thread's continuation be; a second
	 * split write() while one is pending takes its place (one per file) */
	if (io.count <= first && rest.tid != tid)
		return;
	rest.clear();
	if (io.count > first) {
		rest.tid = tid;
		rest.io = io;
		rest.left = io.count - first;
	}
}

} /* namespace ibemu::cuse_dev */
