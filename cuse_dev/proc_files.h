// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// The /proc files the daemon asks about its callers on every request
// (/proc/TID/syscall, /proc/PID/maps), kept open between requests. Opening
// one costs 50 to 90 us in the VM suite's TCG guest, reading it again from
// offset 0 a tenth of that (docs/performance.md).
//
// A descriptor stays bound to what it was opened for, never to the number
// in its name: /proc/TID/syscall to the task, /proc/PID/maps to the address
// space. Once that is gone it reads as an error or as empty, and is opened
// anew, so a reused ID never reads another task's file. maps is kept by
// process ID only: a process ID is not handed out again while any thread of
// the process lives, and the address space has no users by then.
//
// The table is state of cuse_dev/, used under the state lock like the rest.
#pragma once

#include <sys/types.h>

#include <cstddef>

namespace ibemu::cuse_dev {

enum class ProcFile { Syscall, Maps };

/* pread() of /proc/ID/FILE at off: bytes read (0 at the end) or -errno,
 * -ENOENT when there is no such task. A read at offset 0 that finds its
 * task or address space gone opens the file again and reads once more. */
ssize_t procRead(pid_t id, ProcFile file, char *buf, size_t len, off_t off);

} /* namespace ibemu::cuse_dev */
