// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
#include "cuse_dev/caller.h"

#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <algorithm>
#include <sys/syscall.h>
#include <sched.h>
#include <sys/uio.h>
#include <unistd.h>

namespace ibemu::cuse_dev {

int callerSyscall(pid_t tid, long &nr, uint64_t args[6])
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/syscall", static_cast<int>(tid));
	/* The caller queued its request and is about to sleep in it; until it
	 * does, the file says "running". Give it a moment: a few hundred
	 * yields, a millisecond or two at most for the io thread. */
	for (int attempt = 0; attempt < 200; attempt++) {
		FILE *f = fopen(path, "re");
		if (!f)
			return -errno;
		char word[16] = "";
		unsigned long long a[6];
		int n = fscanf(f, "%ld %llx %llx %llx %llx %llx %llx", &nr, &a[0], &a[1], &a[2], &a[3], &a[4], &a[5]);
		if (n != 7) {
			rewind(f);
			if (fscanf(f, "%15s", word) != 1)
				word[0] = 0;
		}
		fclose(f);
		if (n == 7) {
			for (int i = 0; i < 6; i++)
				args[i] = a[i];
			return 0;
		}
		if (strcmp(word, "running") != 0)
			return -ESRCH; /* not in a system call */
		sched_yield();
	}
	return -EAGAIN;
}

int readCaller(pid_t tid, uint64_t addr, void *data, size_t len)
{
	iovec local{ data, len };
	iovec remote{ reinterpret_cast<void *>(addr), len };
	ssize_t n = process_vm_readv(tid, &local, 1, &remote, 1, 0);
	if (n < 0)
		return -errno;
	return n == static_cast<ssize_t>(len) ? 0 : -EFAULT;
}

int writeCaller(pid_t tid, uint64_t addr, const void *data, size_t len)
{
	iovec local{ const_cast<void *>(data), len };
	iovec remote{ reinterpret_cast<void *>(addr), len };
	ssize_t n = process_vm_writev(tid, &local, 1, &remote, 1, 0);
	if (n < 0)
		return -errno;
	return n == static_cast<ssize_t>(len) ? 0 : -EFAULT;
}

size_t wholeCount(pid_t tid, long syscallNr, size_t chunk, uint64_t &addr)
{
	if (chunk < 4096 || chunk % 4096)
		return chunk; /* the kernel only splits at page multiples */
	long nr;
	uint64_t args[6];
	if (callerSyscall(tid, nr, args) != 0 || nr != syscallNr || args[2] <= chunk)
		return chunk;
	addr = args[1];
	return args[2];
}

int takeWrite(pid_t tid, const char *buf, size_t size, size_t maxLen, Continuation &rest,
	      std::vector<uint8_t> &storage, const uint8_t *&data, size_t &len)
{
	if (rest.left && rest.tid == tid) {
		/* still the same write()? (a signal may have cut the last one short) */
		long nr;
		uint64_t args[6];
		int rc = callerSyscall(tid, nr, args);
		/* when in doubt it is the tail: running a command twice is worse */
		if (rc == -EAGAIN || (rc == 0 && nr == SYS_write && args[1] == rest.addr && args[2] == rest.whole)) {
			rest.left -= std::min(size, rest.left);
			return 1;
		}
		rest.left = 0;
	}
	uint64_t addr = 0;
	len = wholeCount(tid, SYS_write, size, addr);
	rest.addr = addr;
	data = reinterpret_cast<const uint8_t *>(buf);
	if (len == size)
		return 0;
	if (len > maxLen)
		return -ENOMEM;
	storage.resize(len);
	if (readCaller(tid, addr, storage.data(), len) != 0)
		return -EFAULT;
	data = storage.data();
	return 0;
}

} /* namespace ibemu::cuse_dev */
