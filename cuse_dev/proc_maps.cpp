// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
#include "cuse_dev/proc_maps.h"

#include <array>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <fcntl.h>
#include <unistd.h>

namespace ibemu::cuse_dev {

namespace {

/* Enough for the processes registering memory at one time; the least
 * recently used goes first. */
constexpr size_t kKept = 32;

struct Kept {
	pid_t pid = 0;
	int fd = -1;
	uint64_t used = 0;
};

std::array<Kept, kKept> table;
uint64_t useClock;

int openMaps(pid_t pid)
{
	char path[64];
	snprintf(path, sizeof path, "/proc/%d/maps", static_cast<int>(pid));
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

void drop(Kept &k)
{
	if (k.fd >= 0)
		close(k.fd);
	k = Kept{};
}

/* the entry for pid, opened now when there is none */
Kept *find(pid_t pid, int &err)
{
	Kept *oldest = &table[0];
	for (Kept &k : table) {
		if (k.fd >= 0 && k.pid == pid) {
			k.used = ++useClock;
			return &k;
		}
		if (k.fd < 0 || (oldest->fd >= 0 && k.used < oldest->used))
			oldest = &k;
	}
	int fd = openMaps(pid);
	if (fd < 0) {
		err = fd;
		return nullptr;
	}
	drop(*oldest);
	*oldest = Kept{ pid, fd, ++useClock };
	return oldest;
}

ssize_t readKept(const Kept &k, char *buf, size_t len, off_t off)
{
	ssize_t n = pread(k.fd, buf, len, off);
	return n < 0 ? -errno : n;
}

} /* namespace */

ssize_t readMaps(pid_t pid, char *buf, size_t len, off_t off)
{
	int err = 0;
	Kept *k = find(pid, err);
	if (!k)
		return err;
	ssize_t n = readKept(*k, buf, len, off);
	if (off != 0 || n > 0)
		return n;
	/* an address space without users (empty), or an error: again, with
	 * whatever now has that ID */
	drop(*k);
	k = find(pid, err);
	if (!k)
		return err;
	n = readKept(*k, buf, len, off);
	if (n < 0)
		drop(*k);
	return n;
}

} /* namespace ibemu::cuse_dev */
