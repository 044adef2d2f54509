// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// The seccomp transport's filter (docs/transports.md): what a program under
// `ibemu exec` (or OpenSM under `ibemu up --sm`) hands the daemon of its
// system calls, through a seccomp user-notification listener.
//
// The daemon puts every device file it serves this way at a number in a
// reserved block of 128 descriptors, near the top of the program's first
// 1,024 (where select() still reaches). The filter traps:
//   - every open(), openat() and openat2(): the daemon reads the path and
//     lets all but /dev/infiniband/{umadN,issmN,uverbsN,rdma_cm} go on;
//   - on a number in the block: read, readv, write, writev, ioctl, fstat,
//     newfstatat, statx, dup, fcntl(F_DUPFD*) and the socket calls; the
//     daemon serves them when the number holds one of its files, and lets
//     them go on to the program's own file otherwise.
// Everything else (close, poll, epoll, select, mmap, fcntl's flags) is the
// kernel's own, on the socket the daemon injected.
#pragma once

#include <seccomp.h>
#include <string>
#include <sys/resource.h>

namespace ibemu::cuse_dev::seccomp {

/* The reserved block: kBlock descriptors from a multiple of kBlock. */
constexpr int kBlock = 128;

/* The block's first number for a program whose soft RLIMIT_NOFILE is
 * `soft`: the highest block below min(soft, 1024), or -1 when the limit
 * leaves no room for one above the first 128 descriptors. */
int reservedBase(rlim_t soft);

/* Loads a libseccomp filter into the calling thread as ibemu exec's filters
 * are: 32-bit calls allowed, no_new_privs only where the caller may not do
 * without it. 0 or libseccomp's negative errno. */
int load(scmp_filter_ctx ctx);

/* How many seccomp filters the calling process runs under (its
 * /proc/self/status Seccomp_filters), 0 where it cannot be told. */
int filterCount();

/* Whether the calling process already runs under a seccomp filter with a
 * listener (a program of `ibemu exec`), under which the kernel refuses
 * another (EBUSY): tried in a child of its own, which then ends. */
bool underListener();

/* Installs the filter in the calling thread (its children and exec()s keep
 * it; it cannot be taken off): the listener's descriptor, or -1 with err
 * set. Sets no_new_privs unless the caller may do without it (root). */
int installFilter(int base, std::string &err);

} /* namespace ibemu::cuse_dev::seccomp */

namespace ibemu::cuse_dev::seccomp {

/* Handing a listener to the daemon, over a connected AF_UNIX stream
 * socket: one message carries the block's base (4 bytes), the cluster host
 * the programs behind it belong to (`exec --host`: up to kMaxHost bytes,
 * none for the whole instance) and the listener (SCM_RIGHTS); the daemon
 * answers one byte, 0 or an errno.
 * handOver() sends and waits for the answer: 0, or -1 with err set. */
constexpr size_t kMaxHost = 64;
int handOver(int sock, int listener, int base, const std::string &host, std::string &err);
/* The daemon's side, on a readable socket: 0 with listener, base and host,
 * -EAGAIN (nothing yet), or another negative errno (the socket is of no
 * more use). Any other descriptor sent along is closed where that cannot
 * stall the daemon. */
int receiveHandOver(int sock, int &listener, int &base, std::string &host);
/* The daemon's answer: 0 or an errno. */
void answerHandOver(int sock, int err);

/* `ibemud --seccomp-exec FD BASE PROGRAM ARGS...` (how the daemon starts
 * OpenSM under the filter, without installing one after a fork of a
 * process with threads): installs the filter, hands the listener over FD
 * and runs PROGRAM. Returns only on failure: the exit status. */
int filteredExec(int argc, char **argv);

} /* namespace ibemu::cuse_dev::seccomp */
