// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
#define FUSE_USE_VERSION 35
#include "cuse_dev/whole_call.h"

#include "cuse_dev/wait_queue.h"

#include <fuse_lowlevel.h>

#include <algorithm>
#include <cerrno>
#include <sys/syscall.h>
#include <utility>

namespace ibemu::cuse_dev {

WholeWrite::WholeWrite(WholeCalls &calls, fuse_req_t r, uint64_t f, const char *buf, size_t n, unsigned attempt)
	: req(r), fh(f), tid(fuse_req_ctx(r)->pid), head(reinterpret_cast<const uint8_t *>(buf)), size(n), data(head),
	  len(n), calls_(calls), attempt_(attempt), io_{ SYS_write, 0, n }
{}

int WholeWrite::take(size_t maxLen, bool self)
{
	Continuation &rest = calls_.files_[fh].write;
	if (self && !rest.left)
		return 0;
	int t = takeWrite(tid, reinterpret_cast<const char *>(head), size, maxLen, rest, storage_, data, io_,
			  looksFor(attempt_));
	len = io_.count;
	return t;
}

bool WholeWrite::settled() const
{
	long nr;
	uint64_t args[6];
	return !attempt_ || callerSyscall(tid, nr, args, kAgainLooks) != -kCallerRunning;
}

WholeRead::WholeRead(WholeCalls &calls, fuse_req_t r, uint64_t f, size_t n, unsigned attempt)
	: req(r), fh(f), tid(fuse_req_ctx(r)->pid), size(n), io{ SYS_read, 0, n }, calls_(calls), attempt_(attempt)
{}

int WholeRead::take(size_t minLen)
{
	int c = calls_.files_[fh].read.continues(tid, looksFor(attempt_));
	if (c == 0 && size < minLen)
		c = callerIo(tid, SYS_read, size, io, looksFor(attempt_));
	return c;
}

void WholeCalls::write(fuse_req_t req, const char *buf, size_t size, uint64_t fh, WriteHandler handle)
{
	writeFrom(req, buf, size, fh, std::move(handle), 0);
}

void WholeCalls::writeFrom(fuse_req_t req, const char *buf, size_t size, uint64_t fh, WriteHandler handle,
			   unsigned attempt)
{
	WholeWrite call(*this, req, fh, buf, size, attempt);
	int rc = handle(call);
	if (rc == -kCallerRunning) {
		auto run = [this, req, bytes = std::vector<char>(buf, buf + size), fh, handle = std::move(handle)](
				   unsigned n) { writeFrom(req, bytes.data(), bytes.size(), fh, handle, n); };
		return later(req, fh, call.tid, attempt, size, std::move(run));
	}
	if (rc < 0)
		return (void)fuse_reply_err(req, -rc);
	if (rc == 0)
		expectRest(files_[fh].write, call.tid, call.io_, size);
	fuse_reply_write(req, size); /* and kRestOfCall: handled already */
}

void WholeCalls::read(fuse_req_t req, size_t size, uint64_t fh, ReadHandler handle)
{
	readFrom(req, size, fh, std::move(handle), 0);
}

void WholeCalls::readFrom(fuse_req_t req, size_t size, uint64_t fh, ReadHandler handle, unsigned attempt)
{
	WholeRead call(*this, req, fh, size, attempt);
	int rc = handle(call);
	if (rc == -kCallerRunning) {
		auto run = [this, req, size, fh, handle = std::move(handle)](unsigned n) {
			readFrom(req, size, fh, handle, n);
		};
		return later(req, fh, call.tid, attempt, 0, std::move(run));
	}
	if (rc < 0)
		return (void)fuse_reply_err(req, -rc);
	if (rc == kRestOfCall) { /* the rest of a big read */
		Continuation &rest = files_[fh].read;
		size_t n = std::min(size, rest.data.size());
		fuse_reply_buf(req, reinterpret_cast<const char *>(rest.data.data()), n);
		rest.data.erase(rest.data.begin(), rest.data.begin() + long(n));
		rest.left = rest.data.empty() ? 0 : rest.left - n;
	}
}

int WholeCalls::parkedRead(uint64_t fh, const PendingRead &r, CallerIo &io, std::function<void()> serve)
{
	File &f = files_[fh];
	if (f.serveSeq != r.seq) {
		f.serveSeq = r.seq;
		f.serveAttempt = 0;
	}
	if (callerIo(fuse_req_ctx(r.req)->pid, SYS_read, r.size, io, looksFor(f.serveAttempt)) == 0)
		return 0;
	if (f.serveAgain)
		return -kCallerRunning;
	auto again = [this, fh, seq = f.serveSeq, serve = std::move(serve)](unsigned n, int err) {
		auto it = files_.find(fh);
		if (it == files_.end())
			return;
		it->second.serveAgain = false;
		if (err) /* the daemon stops, and fails the parked reads */
			return;
		if (it->second.serveSeq == seq)
			it->second.serveAttempt = n;
		serve();
	};
	f.serveAgain = true; /* until again() runs: at once, when stopping */
	if (!restarts_.later(nullptr, f.serveAttempt, 0, std::move(again)))
		f.serveAgain = false;
	return f.serveAgain ? -kCallerRunning : -EAGAIN;
}

void WholeCalls::continueRead(uint64_t fh, pid_t tid, const CallerIo &io, std::vector<uint8_t> rest)
{
	Continuation &c = files_[fh].read;
	c.tid = tid;
	c.io = io;
	c.data = std::move(rest);
	c.left = c.data.size();
}

void WholeCalls::later(fuse_req_t req, uint64_t fh, pid_t tid, unsigned attempt, size_t bytes,
		       std::function<void(unsigned)> run)
{
	auto again = [this, req, fh, tid, run = std::move(run)](unsigned n, int err) {
		if (err)
			return end(req, fh, tid, err);
		run(n);
	};
	if (!restarts_.later(req, attempt, bytes, std::move(again)))
		end(req, fh, tid, EAGAIN);
}

void WholeCalls::end(fuse_req_t req, uint64_t fh, pid_t tid, int err)
{
	auto it = files_.find(fh);
	if (it != files_.end()) {
		if (it->second.read.tid == tid)
			it->second.read.clear();
		if (it->second.write.tid == tid)
			it->second.write.clear();
	}
	fuse_reply_err(req, err);
}

} /* namespace ibemu::cuse_dev */
