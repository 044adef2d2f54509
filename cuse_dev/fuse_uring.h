// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// FUSE requests over io_uring (fuse_uring_abi.h), for the FUSE transport.
//
// The kernel queues a request on the queue of the CPU its caller runs on;
// there is one queue per possible CPU, each served by a thread pinned to
// that CPU with an io_uring of its own. So a tool's write(), poll() and
// read() are served on the tool's CPU: the tool sleeps, its queue thread
// wakes on the same CPU, answers, and the tool wakes there again, instead
// of two wakeups across CPUs per request on the classic /dev/fuse loop.
//
// A queue thread serves a request the way the io thread would: under the
// state lock (fabric/state_lock.h), through libfuse (fuse_session_process_buf
// on the request, rebuilt as /dev/fuse would have delivered it), with the
// work the request leaves (emu/work_queue.h) run before the lock is given
// back. Replies come back through the session's writev hook (reply()),
// whichever thread makes them; a queue's thread alone submits its commits,
// so replies from other threads (a parked read answered later) are handed
// to it with an eventfd.
//
// /dev/fuse stays served by the io thread (SessionPump): INIT, FORGET,
// INTERRUPT, and everything when the ring is not in use. Poll wakeups are
// written there too, as the kernel requires.
//
// Lifetime: prepare() before the mount's INIT is answered; the INIT reply
// passes through writev(), which asks the kernel for the ring only if
// every queue is ready, then registers the entries; close() at shutdown
// commits the answers given and refuses new requests; stop() (after the
// unmount, or from the destructor) ends the threads and the rings.
#pragma once

#include <sys/uio.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <sys/types.h>
#include <unordered_map>

namespace ibemu::cuse_dev {

class FuseUring {
public:
	/* serves one request laid out as /dev/fuse delivers it (called under
	 * the state lock) */
	using Serve = std::function<void(const char *req, size_t len)>;

	/* Sets up a queue per possible CPU (rings and threads, no entries yet)
	 * for the /dev/fuse descriptor fuseFd. Null, with why set, when
	 * io_uring cannot be used. */
	static std::unique_ptr<FuseUring> prepare(int fuseFd, unsigned depth, Serve serve, std::string &why);
	~FuseUring();
	FuseUring(const FuseUring &) = delete;
	FuseUring &operator=(const FuseUring &) = delete;

	/* The session's custom I/O (fuse_session_custom_io): read() notes
	 * whether the kernel's INIT offers the ring; writev() negotiates it in
	 * the INIT reply and takes the replies to ring requests. */
	ssize_t read(int fd, void *buf, size_t len);
	ssize_t writev(int fd, struct iovec *iov, int count);

	/* true once INIT has asked for the ring, unless the kernel refused
	 * an entry (it then serves /dev/fuse) */
	bool active() const;
	/* the queues and entries per queue, for the log and `ibemu status` */
	unsigned queues() const;
	unsigned depth() const;

	/* At shutdown, before the unmount: requests from now on fail with
	 * ENOTCONN without reaching the files, and the replies made so far, on
	 * any thread, are committed before it returns (it gives the state lock
	 * up meanwhile), so requests answered at shutdown get their answers. */
	void close();

	/* Ends the threads and the rings (give the state lock up first: a
	 * thread may be waiting for it). Requests still held are dropped, so
	 * call it once the connection is gone (after the unmount). */
	void stop();

	struct Queue;
	struct Entry;

private:
	FuseUring() = default;
	bool allocate(size_t payload, std::string &why);
	Entry *addEntry(Queue &q);
	void grow(Queue &q);
	void start();
	void dropRing(const std::string &why);
	void serve(Queue &q, Entry &e);
	void run(Queue &q);

	int fd_ = -1;
	unsigned depth_ = 0;
	size_t payloadCap_ = 0;
	Serve serve_;
	std::unique_ptr<std::unique_ptr<Queue>[]> queues_;
	unsigned nQueues_ = 0;
	bool offered_ = false;
	uint64_t initUnique_ = 0;
	bool initSeen_ = false;
	bool active_ = false; /* INIT asked for the ring */
	std::atomic<bool> refused_ = false; /* and the kernel refused an entry */
	std::atomic<bool> stopped_ = false;
	std::atomic<bool> closing_ = false;
	/* requests being served, by unique (under the state lock) */
	std::unordered_map<uint64_t, Entry *> serving_;
};

} /* namespace ibemu::cuse_dev */
