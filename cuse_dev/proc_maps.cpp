// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
#include "cuse_dev/proc_maps.h"

#include "cuse_dev/caller_ids.h"

#include <array>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <fcntl.h>
#include <unistd.h>

namespace ibemu::cuse_dev {

namespace {

struct Kept {
	pid_t pid = 0;
	int fd = -1;
	uint64_t used = 0;
};

std::array<Kept, kKeptMaps> table;
uint64_t useClock;

void drop(Kept &k)
{
	if (k.fd >= 0)
		close(k.fd);
	k = Kept{};
}

Kept *kept(pid_t pid)
{
	for (Kept &k : table)
		if (k.fd >= 0 && k.pid == pid)
			return &k;
	return nullptr;
}

/* the entry for pid, opened now when there is none */
Kept *find(pid_t pid, pid_t tid, int &err)
{
	if (Kept *k = kept(pid)) {
		k->used = ++useClock;
		return k;
	}
	char path[80];
	snprintf(path, sizeof path, "/proc/%d/task/%d/maps", static_cast<int>(pid), static_cast<int>(tid));
	int fd = openOfCaller(tid, path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		err = -errno;
		return nullptr;
	}
	Kept *slot = &table[0]; /* a free one, else the least recently used */
	for (Kept &k : table)
		if (k.fd < 0 || (slot->fd >= 0 && k.used < slot->used))
			slot = &k;
	drop(*slot);
	*slot = Kept{ pid, fd, ++useClock };
	return slot;
}

ssize_t readKept(const Kept &k, char *buf, size_t len, off_t off)
{
	ssize_t n = pread(k.fd, buf, len, off);
	return n < 0 ? -errno : n;
}

} /* namespace */

ssize_t readMaps(pid_t pid, pid_t tid, char *buf, size_t len, off_t off)
{
	int err = 0;
	Kept *k = find(pid, tid, err);
	if (!k)
		return err;
	ssize_t n = readKept(*k, buf, len, off);
	if (off != 0 || n > 0)
		return n;
	/* an address space without users (empty), or an error: again, with
	 * whatever now has that ID */
	drop(*k);
	k = find(pid, tid, err);
	if (!k)
		return err;
	n = readKept(*k, buf, len, off);
	if (n < 0)
		drop(*k);
	return n;
}

void forgetMaps(pid_t pid)
{
	if (Kept *k = kept(pid))
		drop(*k);
}

} /* namespace ibemu::cuse_dev */
