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

namespace ibemu::cuse_dev {

/* The system call thread `tid` is blocked in: its number and arguments.
 * Returns 0 or a negative errno. */
int callerSyscall(pid_t tid, long &nr, uint64_t args[6]);

/* Reads len bytes at addr in the address space of `tid`'s process. */
int readCaller(pid_t tid, uint64_t addr, void *data, size_t len);

/* Writes len bytes at addr in the address space of `tid`'s process. */
int writeCaller(pid_t tid, uint64_t addr, const void *data, size_t len);

} /* namespace ibemu::cuse_dev */
