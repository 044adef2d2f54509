// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// Reaching a caller's memory and descriptors where root alone is not
// enough. The kernel lets a process into another's memory
// (process_vm_readv/writev, /proc/PID/mem), descriptors (pidfd_getfd) and
// mappings (/proc/PID/maps) when it may ptrace it: with CAP_SYS_PTRACE, or
// as the same user. The daemon runs as root, which on a host has
// CAP_SYS_PTRACE; a container's root has not by default (podman's and
// Docker's sets), so there a caller of another user (a program under
// `ibemu exec` that dropped root with setpriv) would be out of reach. Each
// of these calls is therefore tried as the daemon first and, when that is
// refused, once more with the caller's user on this thread alone: its
// real ids for the calls that check those (process_vm_*, pidfd_getfd),
// its filesystem ids for the opens of /proc files, which check those.
// Return values and errno are the system calls'.
#pragma once

#include <cstddef>
#include <cstdint>
#include <sys/types.h>

namespace ibemu::cuse_dev {

ssize_t readOfCaller(pid_t tid, void *out, uint64_t addr, size_t len);
ssize_t writeOfCaller(pid_t tid, const void *data, uint64_t addr, size_t len);
/* pidfd_getfd(pidfd, fd): pidfd is one of thread tid's process */
int copyOfCallerFd(pid_t tid, int pidfd, int fd);
/* open(path, flags) of one of thread tid's files under /proc */
int openOfCaller(pid_t tid, const char *path, int flags);

} /* namespace ibemu::cuse_dev */
