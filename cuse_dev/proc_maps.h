// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// /proc/PID/maps of the processes that register memory, kept open between
// registrations. Opening it costs about 50 us in the VM suite's TCG guest,
// and reading a kept one again from offset 0 costs only the lines asked
// for (docs/performance.md). (/proc/TID/syscall is not kept: see
// callerSyscall().)
//
// A descriptor of maps stays bound to the address space it was opened for,
// not to the number in its name. Once that space has no users (the process
// ended, or it ran exec) it reads as empty and is opened anew; it is kept
// by process ID, which is not handed out again while a thread of the
// process lives. Something else can keep an old address space in use (a
// CLONE_VM child that has not run exec yet): a kept file then still
// describes it, so a caller that finds a range wanting asks again with
// forgetMaps() first.
//
// At most kKeptMaps files, the least recently used closed first: a file of
// a process that has ended stays open until then, and holds the kernel's
// small record of the address space (not its memory). The table is state
// of cuse_dev/, used under the state lock like the rest.
//
// Since Linux 6.11 a kept file also answers PROCMAP_QUERY, "which mapping
// covers this address", in time logarithmic in the number of mappings:
// queryMaps(). A registration then costs one query per mapping its range
// spans, whatever else the caller has mapped; before 6.11 (the ioctl says
// ENOTTY) the text is read from its start, as long as the range needs.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>

namespace ibemu::cuse_dev {

constexpr size_t kKeptMaps = 32;

/* pread() at off of the maps of process pid, as thread tid of it sees them
 * (opened as /proc/PID/task/TID/maps: the process's first thread may have
 * ended). Bytes read (0 at the end) or -errno. A read at offset 0 that
 * finds the address space gone opens the file again and reads once more. */
ssize_t readMaps(pid_t pid, pid_t tid, char *buf, size_t len, off_t off);

struct Vma {
	uint64_t start = 0, end = 0;
	bool read = false, write = false;
};

/* PROCMAP_QUERY on the kept maps of pid: the mapping that covers addr.
 * 0, -ENOENT when none covers it, -ENOTTY when the kernel has no such
 * query (or setMapsQuery(false)), -ESRCH when there is no address space.
 * Like readMaps(), a query that finds the address space gone opens the file
 * again and asks once more. */
int queryMaps(pid_t pid, pid_t tid, uint64_t addr, Vma &out);

/* false: queryMaps() says -ENOTTY, as on a kernel before 6.11 (for tests of
 * the reader that is its fallback) */
void setMapsQuery(bool on);

/* Closes the file kept for pid, if any. */
void forgetMaps(pid_t pid);

} /* namespace ibemu::cuse_dev */
