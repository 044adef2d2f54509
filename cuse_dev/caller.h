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

#include "emu/rdma_cgroup.h"

#include <cstddef>
#include <cstdint>
#include <string>
#include <sys/types.h>
#include <vector>

namespace ibemu::cuse_dev {

/* What a look at the caller gives while it is still on its way into its
 * request: /proc/TID/syscall says "running" until the thread has gone to
 * sleep, and a thread that is runnable but off the CPU (a loaded machine)
 * can stay so for many milliseconds. It is the kernel's ERESTARTSYS (512),
 * and like it never reaches the caller: the request is handled again a
 * moment later (restarts.h) rather than guessed at. */
constexpr int kCallerRunning = 512;

/* How often a look reads /proc/TID/syscall, yielding in between, before it
 * gives kCallerRunning: the first look at a request waits a while (most
 * callers go to sleep within it), a request handled again looks briefly. */
constexpr int kFirstLooks = 200;
constexpr int kAgainLooks = 8;
/* attempt: 0 the first time a request is handled, then 1 on (restarts.h) */
constexpr int looksFor(unsigned attempt)
{
	return attempt ? kAgainLooks : kFirstLooks;
}

/* The system call thread `tid` is blocked in: its number and arguments.
 * Returns 0, -kCallerRunning, or a negative errno (-ESRCH: not in a
 * system call, or gone). */
int callerSyscall(pid_t tid, long &nr, uint64_t args[6], int looks = kFirstLooks);

/* The process (thread group) of thread `tid`, or -1 when it is gone. */
pid_t tgidOf(pid_t tid);

/* A number that names process tgid for as long as the system runs, unlike
 * its ID, which is handed out again once it has ended: the inode of a pidfd
 * on pidfs (6.9 and later), else its start time (clock ticks since boot,
 * /proc/PID/stat) with its ID. 0 when it is gone. */
uint64_t processIdentity(pid_t tgid);

/* The rdma cgroups of process pid with a limit for ib device dev
 * (emu/rdma_cgroup.h): its path in /proc/PID/cgroup, the rdma.max files
 * along it under the cgroup2 mount (found once). Empty without cgroup v2,
 * its rdma controller, or a limit. */
emu::RdmaCgChain rdmaCgroupOf(pid_t pid, const std::string &dev);

/* A pidfd for the process of thread `tid` (for pidfd_getfd()), or -1 with
 * errno set: on 6.9 and later one for the thread itself (PIDFD_THREAD);
 * before, pidfd_open() takes only a first thread (EINVAL, and ENOENT since
 * 6.9, for any other), and the process comes from /proc/TID/status. */
int pidfdOf(pid_t tid);

/* Reads len bytes at addr in the address space of `tid`'s process; 0 or a
 * negative errno (-EFAULT when any of it is not mapped). */
int readCaller(pid_t tid, uint64_t addr, void *data, size_t len);

/* Writes len bytes at addr in the address space of `tid`'s process. */
int writeCaller(pid_t tid, uint64_t addr, const void *data, size_t len);

/* The caller's read() or write() system call that a request belongs to. */
struct CallerIo {
	long nr = 0; /* SYS_read or SYS_write */
	uint64_t addr = 0; /* its buffer */
	size_t count = 0; /* its size */
};

/* (whole_call.h keeps these per file and uses them.)
 * The kernel hands a read() or write() bigger than one request (max_write,
 * 1 MiB here; less for a buffer that does not start on a page) over in
 * several requests. A command or message must be taken whole, so the first
 * request handles the caller's entire system call and the rest of it is
 * served (read) or acknowledged (write) from a Continuation, but only while
 * /proc/TID/syscall still shows that same call: a signal or a fault can end
 * it early, and what is left then belongs to nobody. */
struct Continuation {
	pid_t tid = 0;
	CallerIo io;
	size_t left = 0; /* bytes of the system call still to come */
	std::vector<uint8_t> data; /* read: what is left to hand out */

	void clear() { *this = Continuation{}; }
	/* Is a request of thread tid the next part of the call? 1 yes; 0 no,
	 * and the continuation is dropped (the thread has moved on to another
	 * call); -kCallerRunning when the thread cannot be seen yet. */
	int continues(pid_t tid, int looks);
};

/* The system call that a request of `chunk` bytes from thread tid starts:
 * io is the caller's whole read() or write() (nr), or just the chunk itself
 * when the call is no longer (or is another call). 0, or -kCallerRunning
 * with io left alone. */
int callerIo(pid_t tid, long nr, size_t chunk, CallerIo &io, int looks);

/* A write request from thread tid: returns 1 when it is the tail of a
 * write() handled already (acknowledge it), or 0 with the caller's whole
 * write() in data (io.count bytes; read from the caller into storage when
 * the kernel split it), or -ENOMEM when that is longer than maxLen, or
 * -EFAULT, or -kCallerRunning. After handling the data, call expectRest(). */
int takeWrite(pid_t tid, const char *buf, size_t size, size_t maxLen, Continuation &rest, std::vector<uint8_t> &storage,
	      const uint8_t *&data, CallerIo &io, int looks);
/* The whole write() of `len` bytes was handled from a first request of
 * `first`: its other requests are to be acknowledged. A file keeps one
 * continuation: a write() that was not split leaves another thread's be,
 * a second split one takes its place. */
void expectRest(Continuation &rest, pid_t tid, const CallerIo &io, size_t first);

} /* namespace ibemu::cuse_dev */
