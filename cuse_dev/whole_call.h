// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// FUSE requests turned into whole read() and write() system calls, for the
// file tables whose commands and messages must be taken whole (umad,
// uverbs). The kernel hands a long call over in several requests; this
// learns the whole call from its caller (caller.h), answers the call's
// other requests from the file's continuation, and restarts a request
// whose caller is still on its way into it (restarts.h). A file's handler
// sees one whole call and returns what became of it.
//
// A handler returns 0 (done), a negative errno to answer the request with,
// or -kCallerRunning (as the kernel's -ERESTARTSYS): the request is
// handled again a moment later, the handler run again from its start. A
// call that ends early so (a signal: EINTR; shutdown: ENXIO; ~10 s: EAGAIN)
// drops its thread's continuation on the file.
//
// One per device-file table; the io thread owns it, like everything else
// there.
#pragma once

#include "cuse_dev/caller.h"
#include "cuse_dev/restarts.h"

#include <boost/asio/io_context.hpp>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <sys/types.h>
#include <unordered_map>
#include <vector>

namespace ibemu::cuse_dev {

struct PendingRead;
class WholeCalls;

/* Returned by take(), and by a handler passing it on: the request is a
 * later part of a call handled already (a write's is acknowledged, a
 * read's served from what is left). */
constexpr int kRestOfCall = 1;

/* One write() system call, as its file's handler sees it. */
class WholeWrite {
public:
	fuse_req_t req;
	uint64_t fh;
	pid_t tid; /* the caller's thread */
	const uint8_t *head; /* this request's bytes */
	size_t size;
	/* after take(): the whole call's bytes (len: its count, also when
	 * take() fails with -ENOMEM or -EFAULT) */
	const uint8_t *data;
	size_t len;

	/* Takes the whole call, at most maxLen bytes: 0; kRestOfCall; -ENOMEM
	 * (longer); -EFAULT (a hole in it); -kCallerRunning. self: this
	 * request is the whole call by itself, unless a split call on the file
	 * is pending, and nobody is asked. */
	int take(size_t maxLen, bool self = false);
	/* A call handled again: false until its caller is seen asleep in it,
	 * with a few looks (for a handler that looks at its caller itself).
	 * true the first time. */
	bool settled() const;

private:
	friend class WholeCalls;
	WholeWrite(WholeCalls &calls, fuse_req_t r, uint64_t f, const char *buf, size_t n, unsigned attempt);
	WholeCalls &calls_;
	unsigned attempt_;
	CallerIo io_;
	std::vector<uint8_t> storage_; /* a split call, read from the caller */
};

/* One read() system call, as its file's handler sees it. */
class WholeRead {
public:
	fuse_req_t req;
	uint64_t fh;
	pid_t tid;
	size_t size; /* this request's */
	CallerIo io; /* after take(): the call (count: this request's when it is all there is) */

	/* Takes the call: 0; kRestOfCall; -kCallerRunning. A request shorter
	 * than minLen asks the caller for its whole read(). */
	int take(size_t minLen);

private:
	friend class WholeCalls;
	WholeRead(WholeCalls &calls, fuse_req_t r, uint64_t f, size_t n, unsigned attempt);
	WholeCalls &calls_;
	unsigned attempt_;
};

class WholeCalls {
public:
	using WriteHandler = std::function<int(WholeWrite &)>;
	/* 0: the handler answered the request, or parked it */
	using ReadHandler = std::function<int(WholeRead &)>;

	explicit WholeCalls(boost::asio::io_context &io) : restarts_(io) {}
	WholeCalls(const WholeCalls &) = delete;
	WholeCalls &operator=(const WholeCalls &) = delete;

	/* write(): handle(call); on 0 the call's other requests are to come,
	 * and this one is acknowledged. */
	void write(fuse_req_t req, const char *buf, size_t size, uint64_t fh, WriteHandler handle);
	/* read(): handle(call); on kRestOfCall this serves the request. */
	void read(fuse_req_t req, size_t size, uint64_t fh, ReadHandler handle);

	/* A read parked on fh whose whole read() is needed: 0 with io;
	 * -kCallerRunning while its caller is not seen asleep (it stays parked
	 * and serve() runs again a moment later); -EAGAIN after the last
	 * attempt, or at shutdown. */
	int parkedRead(uint64_t fh, const PendingRead &r, CallerIo &io, std::function<void()> serve);
	/* Parked read r was answered with the first `size` bytes of a longer
	 * message: its call's other requests get rest. */
	void continueRead(uint64_t fh, pid_t tid, const CallerIo &io, std::vector<uint8_t> rest);

	/* The file is gone, and with it its continuations. */
	void closed(uint64_t fh) { files_.erase(fh); }
	/* Every file is gone. */
	void clear() { files_.clear(); }
	/* The daemon stops: waiting requests end (ENXIO), and so do later
	 * ones. */
	void shutdown() { restarts_.shutdown(); }

private:
	friend class WholeWrite;
	friend class WholeRead;

	/* What one open file keeps of the calls split over its requests. */
	struct File {
		Continuation read;
		Continuation write;
		/* the first parked read (its seq), while its caller has not been
		 * seen asleep */
		uint64_t serveSeq = 0;
		unsigned serveAttempt = 0; /* its attempt (restarts.h) */
		bool serveAgain = false; /* serve() is to run again */
	};

	void writeFrom(fuse_req_t req, const char *buf, size_t size, uint64_t fh, WriteHandler handle,
		       unsigned attempt);
	void readFrom(fuse_req_t req, size_t size, uint64_t fh, ReadHandler handle, unsigned attempt);
	/* The request's caller was running: run(attempt + 1) a moment later,
	 * or the request ends (end()); bytes: what run holds of the caller's. */
	void later(fuse_req_t req, uint64_t fh, pid_t tid, unsigned attempt, size_t bytes,
		   std::function<void(unsigned)> run);
	/* A request handled again ends with err: its thread's system call
	 * ends there, and with it any continuation of it on the file. */
	void end(fuse_req_t req, uint64_t fh, pid_t tid, int err);

	std::unordered_map<uint64_t, File> files_;
	Restarts restarts_;
};

} /* namespace ibemu::cuse_dev */
