// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// /proc/PID/maps of the processes that register memory, kept open between
// registrations. Opening it costs 50 to 90 us in the VM suite's TCG guest,
// and reading a kept one again from offset 0 only the lines asked for
// (docs/performance.md).
//
// A descriptor of maps stays bound to the address space it was opened for,
// not to the number in its name: once that space has no users (the process
// ended, or it ran exec) it reads as empty, and is opened anew. It is kept
// by process ID, which is not handed out again while any thread of the
// process lives, and by then the address space has no users.
//
// (/proc/TID/syscall is not kept: the look for a caller still "running"
// on its way to sleep is bounded by a count of fresh reads, whose cost
// makes the wait it allows; docs/robustness.md.)
//
// The table is state of cuse_dev/, used under the state lock like the rest.
#pragma once

#include <sys/types.h>

#include <cstddef>

namespace ibemu::cuse_dev {

/* pread() of /proc/PID/maps at off: bytes read (0 at the end) or -errno,
 * -ENOENT when there is no such process. A read at offset 0 that finds
 * the address space gone opens the file again and reads once more. */
ssize_t readMaps(pid_t pid, char *buf, size_t len, off_t off);

} /* namespace ibemu::cuse_dev */
