// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// Reaching into the calling process, for the few places where the kernel
// ABI writes to user memory that a FUSE/CUSE reply cannot carry.
//
// The request context gives the caller's thread id. While the caller waits
// for our reply it sits in its system call, and /proc/TID/syscall shows that
// call's number and arguments; process_vm_writev() then writes into its
// address space (the daemon runs as root).
#pragma once

#include <cstddef>
#include <cstdint>
#include <sys/types.h>
#include <vector>

namespace ibemu::cuse_dev {

/* The system call thread `tid` is blocked in: its number and arguments.
 * Returns 0 or a negative errno. */
int callerSyscall(pid_t tid, long &nr, uint64_t args[6]);

/* Reads len bytes at addr in the address space of `tid`'s process. */
int readCaller(pid_t tid, uint64_t addr, void *data, size_t len);

/* Writes len bytes at addr in the address space of `tid`'s process. */
int writeCaller(pid_t tid, uint64_t addr, const void *data, size_t len);

/* The kernel hands a read() or write() bigger than the connection's maximum
 * (128 KiB) over in several requests. A command or message must be taken
 * whole, so the first request handles the caller's entire system call and
 * the rest of it is served (read) or acknowledged (write) from a
 * Continuation. */
struct Continuation {
	pid_t tid = 0;
	size_t left = 0;           /* bytes of the system call still to come */
	std::vector<uint8_t> data; /* read: what is left to hand out */
	uint64_t addr = 0;         /* write: the system call's buffer and size, */
	size_t whole = 0;          /* to tell its tail from the thread's next write */

	/* a write of `whole` bytes was handled from its first `first` */
	void expect(pid_t t, size_t all, size_t first)
	{
		if (all > first) {
			tid = t;
			left = all - first;
			whole = all;
		}
	}
};

/* The size of the caller's read() or write() (syscallNr) that a request of
 * `chunk` bytes from thread tid is the start of; its buffer in addr. */
size_t wholeCount(pid_t tid, long syscallNr, size_t chunk, uint64_t &addr);

/* A write request from thread tid: returns 1 when it is the tail of a
 * write() handled already (acknowledge it), or 0 with the caller's whole
 * write() in data/len (read from the caller into storage when the kernel
 * split it), or -ENOMEM when that is longer than maxLen, -EFAULT. After
 * handling the data, call rest.expect(). */
int takeWrite(pid_t tid, const char *buf, size_t size, size_t maxLen, Continuation &rest,
	      std::vector<uint8_t> &storage, const uint8_t *&data, size_t &len);

} /* namespace ibemu::cuse_dev */
