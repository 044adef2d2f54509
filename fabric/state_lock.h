// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// The one lock over the state the daemon's io_context owns: the Subnet,
// the Host and everything under them, the device files' tables, libfuse's
// sessions. Its holder is "the io thread" of docs/architecture.md.
//
// Two kinds of thread take it:
//   - the thread running the io_context, around every handler it runs
//     (asio_hooks.h puts a StateGuard into Asio's handler invocation, so no
//     handler can forget it, and the thread waits in the reactor without it);
//   - the FUSE ring threads (cuse_dev/fuse_uring.h), around each request
//     they serve on the CPU of the process that made it.
// It is recursive per thread: a handler run inline from another handler
// (or from a request) does not deadlock. Code under fabric/ and emu/ never
// takes it itself; it only runs under it.
#pragma once

#include <mutex>

namespace ibemu::fabric {

class StateLock {
public:
	static void lock()
	{
		if (depth_++ == 0)
			mutex_.lock();
	}
	static void unlock()
	{
		if (--depth_ == 0)
			mutex_.unlock();
	}
	/* held by this thread */
	static bool held() { return depth_ > 0; }

private:
	friend class StateUnlocked;
	static inline std::mutex mutex_;
	static inline thread_local unsigned depth_ = 0;
};

/* Holds the lock for a scope. */
class StateGuard {
public:
	StateGuard() { StateLock::lock(); }
	~StateGuard() { StateLock::unlock(); }
	StateGuard(const StateGuard &) = delete;
	StateGuard &operator=(const StateGuard &) = delete;
};

/* Gives the lock up entirely for a scope and takes it back after: for the
 * io thread waiting for a thread that may need the lock to finish (joining
 * the ring threads). The state may change meanwhile. */
class StateUnlocked {
public:
	StateUnlocked() : depth_(StateLock::depth_)
	{
		if (depth_) {
			StateLock::depth_ = 0;
			StateLock::mutex_.unlock();
		}
	}
	~StateUnlocked()
	{
		if (depth_) {
			StateLock::mutex_.lock();
			StateLock::depth_ = depth_;
		}
	}
	StateUnlocked(const StateUnlocked &) = delete;
	StateUnlocked &operator=(const StateUnlocked &) = delete;

private:
	unsigned depth_;
};

} /* namespace ibemu::fabric */
