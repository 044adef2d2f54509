// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// emu::UserAccess for real processes: the memory of a caller blocked in its
// system call through process_vm_readv/writev (the daemon runs as root),
// registered memory through /proc/PID/mem descriptors (bound to the address
// space, not the PID), credentials and mappings from /proc, and the
// descriptor a caller's write() went to (its async event "file", see
// docs/verbs.md).
#pragma once

#include "emu/user_access.h"

#include <cstdio>
#include <sys/types.h>

namespace ibemu::cuse_dev {

class ProcessAccess final : public emu::UserAccess {
public:
	int read(pid_t tid, uint64_t addr, void *buf, size_t len) override;
	int write(pid_t tid, uint64_t addr, const void *buf, size_t len) override;
	int pinnable(pid_t tid, pid_t pid, uint64_t addr, uint64_t len, bool write) override;
	int credentials(pid_t tid, emu::ProcessCreds &out) override;
	int descriptorOf(pid_t tid, const emu::UverbsFile &file) override;
	int takeDescriptor(pid_t tid, int fd, emu::FdKind kind) override;
	void discardDescriptor(int fd) override;
	int takeFile(pid_t tid, int fd, uint64_t &mnt, uint64_t &ino) override;
	int openMemory(pid_t tid) override;
	void closeMemory(int mem) override;
	int readMemory(int mem, uint64_t addr, void *buf, size_t len) override;
	int writeMemory(int mem, uint64_t addr, const void *buf, size_t len) override;
};

/* The mount and inode numbers of the file an fdinfo text (f, from
 * /proc/PID/fdinfo/FD) describes: 0, or -EBADF when it lacks one of them
 * or the file is O_PATH. Its first flags:, mnt_id: and ino: lines; what
 * follows ino: is the file's driver's, some of it set by users (a
 * dma-buf's name), and is not read. */
int fdinfoInode(FILE *f, uint64_t &mnt, uint64_t &ino);

} /* namespace ibemu::cuse_dev */
