// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
#include "cuse_dev/proc_maps.h"

#include "cuse_dev/caller_ids.h"

#include <array>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <fcntl.h>
#include <sys/ioctl.h>
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
bool queryWorks = true; /* until the kernel says ENOTTY, or a test says no */

/* the kernel's struct procmap_query (linux/fs.h of 6.11; older headers lack
 * it) and its ioctl */
struct ProcmapQuery {
	uint64_t size;
	uint64_t query_flags;
	uint64_t query_addr;
	uint64_t vma_start;
	uint64_t vma_end;
	uint64_t vma_flags;
	uint64_t vma_page_size;
	uint64_t vma_offset;
	uint64_t inode;
	uint32_t dev_major;
	uint32_t dev_minor;
	uint32_t vma_name_size;
	uint32_t build_id_size;
	uint64_t vma_name_addr;
	uint64_t build_id_addr;
};
static_assert(sizeof(ProcmapQuery) == 104);
constexpr unsigned long kProcmapQuery = _IOWR('f', 17, ProcmapQuery);
constexpr uint64_t kVmaReadable = 0x01, kVmaWritable = 0x02;

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

/* one PROCMAP_QUERY: 0 or -errno */
int queryKept(const Kept &k, uint64_t addr, Vma &out)
{
	ProcmapQuery q{};
	q.size = sizeof q;
	q.query_addr = addr; /* no flags: the mapping covering addr, else ENOENT */
	if (ioctl(k.fd, kProcmapQuery, &q) != 0)
		return -errno;
	out = Vma{ q.vma_start, q.vma_end, (q.vma_flags & kVmaReadable) != 0, (q.vma_flags & kVmaWritable) != 0 };
	return 0;
}

} /* namespace */

int queryMaps(pid_t pid, pid_t tid, uint64_t addr, Vma &out)
{
	if (!queryWorks)
		return -ENOTTY;
	int err = 0; /* a file that cannot be opened: no process to ask */
	Kept *k = find(pid, tid, err);
	if (!k)
		return -ESRCH;
	int rc = queryKept(*k, addr, out);
	if (rc == -ESRCH) { /* an address space without users: again, as readMaps() */
		drop(*k);
		if (!(k = find(pid, tid, err)))
			return -ESRCH;
		rc = queryKept(*k, addr, out);
		if (rc == -ESRCH)
			drop(*k);
	}
	if (rc == -ENOTTY || rc == -EINVAL) { /* a kernel before 6.11 */
		queryWorks = false;
		return -ENOTTY;
	}
	return rc;
}

void setMapsQuery(bool on)
{
	queryWorks = on;
}

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
