// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// One trapped system call of a program under the seccomp transport
// (seccomp_unotify(2)): what it asked, exactly as it asked it, and the ways
// to answer it. A caller waits in its call until it is answered; a signal
// takes the call back from us (it is restarted or fails EINTR, as the
// program's handler says), and an answer to it then fails with ENOENT.
#pragma once

#include <cstddef>
#include <cstdint>
#include <linux/seccomp.h>
#include <sys/types.h>

namespace ibemu::cuse_dev::seccomp {

class Notification {
public:
	/* Takes the next call from listener: 0; -ENOENT when the call was
	 * taken back meanwhile; another negative errno. Call it only when the
	 * listener is readable: with nothing pending it would wait. */
	int receive(int listener);

	pid_t tid() const { return static_cast<pid_t>(n_.pid); }
	long nr() const { return n_.data.nr; }
	uint64_t arg(int i) const { return n_.data.args[i]; }
	/* a descriptor argument: the low 32 bits, as the kernel takes it */
	int fdArg(int i) const { return static_cast<int>(static_cast<uint32_t>(n_.data.args[i])); }
	uint64_t id() const { return n_.id; }
	int listener() const { return listener_; }

	/* Is the caller still waiting in this call? After reading its memory,
	 * this says the memory was the caller's (its thread id cannot have
	 * been reused meanwhile). */
	bool valid() const;

	/* The call returns val; -ENOENT when it was taken back. */
	int answer(int64_t val) const;
	/* The call fails with err (> 0). */
	int fail(int err) const;
	/* The kernel runs the call itself, as if never trapped. */
	int proceed() const;
	/* Puts a copy of our descriptor src into the caller at number `at`
	 * (replacing what is there) or, at -1, at its lowest free number; with
	 * `asResult` the call then returns that number, in one step. The
	 * caller's number, or a negative errno (-ENOENT: taken back). */
	int inject(int src, int at, bool cloexec, bool asResult) const;

private:
	int listener_ = -1;
	seccomp_notif n_{};
};

/* A NUL-terminated string of at most max - 1 bytes at addr in the memory
 * of thread tid: its length, or -EFAULT, or -ENAMETOOLONG. */
int readString(pid_t tid, uint64_t addr, char *out, size_t max);

} /* namespace ibemu::cuse_dev::seccomp */
