// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// umad/issm device files: the kernel's ib_umad_open/read/write/ioctl/poll/
// close and ib_umad_sm_open/close, over the FUSE protocol.
#define FUSE_USE_VERSION 35
#include "cuse_dev/umad_files.h"

#include "cuse_dev/caller.h"
#include "emu/mad_rmpp.h"
#include "emu/memory_budget.h"
#include "emu/umad_abi.h"
#include "emu/umad_file.h"
#include "emu/umad_port.h"
#include "emu/work_queue.h"

#include <fuse_lowlevel.h>

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstring>
#include <fcntl.h>
#include <poll.h>
#include <sys/syscall.h>
#include <vector>

namespace ibemu::cuse_dev {

struct UmadFiles::Open {
	OpenLimit::Slot slot;
	bool issm = false;
	emu::UmadPort *port = nullptr;
	std::unique_ptr<emu::UmadFile> umad;
	bool nonblock = false; /* at open: for issm */
	WaitQueue wait;
	Continuation readRest;
	Continuation writeRest;
	/* the first parked read (its seq), while its caller has not been seen
	 * asleep */
	uint64_t serveSeq = 0;
	unsigned serveAttempt = 0; /* its attempt (restarts.h) */
	bool serveAgain = false; /* serveReads() is to run again: serveLater() */
};

struct UmadFiles::PendingIssm {
	fuse_req_t req;
	fuse_file_info fi;
	emu::UmadPort *port;
	OpenLimit::Slot slot;
};

UmadFiles::UmadFiles(boost::asio::io_context &io) : io_(io), opens_(kFhTag | 1), restarts_(io)
{}

UmadFiles::~UmadFiles()
{
	shutdown();
}

void UmadFiles::watch(emu::UmadPort &port)
{
	port.onIssmReleased = [this] { emu::queueWork(io_, [this] { retryIssm(); }); };
	watched_.push_back(&port);
}

void UmadFiles::issmInterrupted(fuse_req_t req, void *data)
{
	auto &s = *static_cast<UmadFiles *>(data);
	for (auto it = s.issmWaiters_.begin(); it != s.issmWaiters_.end(); ++it)
		if (it->req == req) {
			s.issmWaiters_.erase(it);
			fuse_reply_err(req, EINTR);
			return;
		}
}

void UmadFiles::open(fuse_req_t req, emu::UmadPort &port, bool issm, fuse_file_info *fi)
{
	uid_t uid = fuse_req_ctx(req)->uid;
	auto o = opens_.create(req);
	if (!o)
		return (void)fuse_reply_err(req, EMFILE);
	o->issm = issm;
	o->port = &port;
	o->nonblock = fi->flags & O_NONBLOCK;
	if (!issm) {
		/* ib_umad_open() */
		if (int rc = port.openCheck())
			return (void)fuse_reply_err(req, -rc);
		auto &budget = budgets_[uid];
		if (!budget)
			budget = std::make_unique<emu::MemoryBudget>();
		o->umad = std::make_unique<emu::UmadFile>(port, budget.get());
		uint64_t fh = opens_.nextFh();
		o->umad->setWakeup([this, fh] { emu::queueWork(io_, [this, fh] { serveReads(fh, true); }); });
	} else {
		/* ib_umad_sm_open(): one holder per port */
		int rc = port.issmOpen();
		if (rc == -EAGAIN && !o->nonblock) {
			if (fuse_req_interrupted(req)) /* as WaitQueue::armInterrupt() */
				return (void)fuse_reply_err(req, EINTR);
			issmWaiters_.push_back({ req, *fi, &port, std::move(o->slot) });
			fuse_req_interrupt_func(req, issmInterrupted, this);
			return;
		}
		if (rc)
			return (void)fuse_reply_err(req, -rc);
	}
	if (!opens_.add(req, fi, std::move(o))) /* the caller went away meanwhile */
		release(nullptr, fi);
}

void UmadFiles::read(fuse_req_t req, size_t size, fuse_file_info *fi)
{
	readFrom(req, size, fi->fh, fi->flags & O_NONBLOCK, 0);
}

void UmadFiles::readFrom(fuse_req_t req, size_t size, uint64_t fh, bool nonblock, unsigned attempt)
{
	Open *o = opens_.find(fh);
	if (!o)
		return (void)fuse_reply_err(req, EBADF);
	if (o->issm)
		return (void)fuse_reply_err(req, EINVAL); /* issm has no read */
	pid_t tid = fuse_req_ctx(req)->pid;
	Continuation &rest = o->readRest;
	int c = rest.continues(tid, looksFor(attempt));
	/* the checks that come before looking at the queue never wait; a
	 * request shorter than the caller's read() is a buffer that runs
	 * into unmapped memory, which serveReads() answers EFAULT */
	CallerIo io{ SYS_read, 0, size };
	if (c == 0 && size < o->umad->hdrSize())
		c = callerIo(tid, SYS_read, size, io, looksFor(attempt));
	if (c == -kCallerRunning) {
		auto again = [this, req, size, fh, nonblock, tid](unsigned n, int err) {
			if (err)
				return endRequest(req, fh, tid, err);
			readFrom(req, size, fh, nonblock, n);
		};
		if (!restarts_.later(req, attempt, 0, again))
			endRequest(req, fh, tid, EAGAIN);
		return;
	}
	if (c > 0) { /* the rest of a big read */
		size_t n = std::min(size, rest.data.size());
		fuse_reply_buf(req, reinterpret_cast<const char *>(rest.data.data()), n);
		rest.data.erase(rest.data.begin(), rest.data.begin() + long(n));
		rest.left = rest.data.empty() ? 0 : rest.left - n;
		return;
	}
	if (io.count < o->umad->hdrSize())
		return (void)fuse_reply_err(req, EINVAL);
	/* ib_umad_read(): a blocking reader waits here for a MAD */
	opens_.park(*o, req, size, nonblock, [&] { serveReads(fh, false); });
}

void UmadFiles::write(fuse_req_t req, const char *buf, size_t size, fuse_file_info *fi)
{
	writeFrom(req, buf, size, fi->fh, 0);
}

void UmadFiles::writeFrom(fuse_req_t req, const char *buf, size_t size, uint64_t fh, unsigned attempt)
{
	Open *o = opens_.find(fh);
	if (!o)
		return (void)fuse_reply_err(req, EBADF);
	if (o->issm)
		return (void)fuse_reply_err(req, EINVAL); /* issm has no write */
	pid_t tid = fuse_req_ctx(req)->pid;
	std::vector<uint8_t> storage;
	const uint8_t *data;
	CallerIo io;
	/* at most the longest message the MAD layer takes */
	int t = takeWrite(tid, buf, size, o->umad->hdrSize() + emu::rmpp::kMaxMessageBytes, o->writeRest, storage, data,
			  io, looksFor(attempt));
	if (t == -kCallerRunning) {
		auto again = [this, req, bytes = std::vector<char>(buf, buf + size), fh, tid](unsigned n, int err) {
			if (err)
				return endRequest(req, fh, tid, err);
			writeFrom(req, bytes.data(), bytes.size(), fh, n);
		};
		if (!restarts_.later(req, attempt, size, std::move(again)))
			endRequest(req, fh, tid, EAGAIN);
		return;
	}
	if (t < 0)
		return (void)fuse_reply_err(req, -t);
	if (t > 0) /* the rest of a big write, handled already */
		return (void)fuse_reply_write(req, size);
	ssize_t rc = o->umad->write(data, io.count);
	if (rc < 0)
		return (void)fuse_reply_err(req, static_cast<int>(-rc));
	expectRest(o->writeRest, tid, io, size);
	fuse_reply_write(req, size);
}

void UmadFiles::ioctl(fuse_req_t req, unsigned cmd, void *userArg, fuse_file_info *fi, unsigned flags, const void *in,
		      size_t inSize, size_t outSize)
{
	Open *o = opens_.find(fi->fh);
	if (!o)
		return (void)fuse_reply_err(req, EBADF);
	if (o->issm || (flags & FUSE_IOCTL_COMPAT))
		return (void)fuse_reply_err(req, ENOTTY);
	std::vector<uint8_t> arg(std::max<size_t>({ size_t(iocSize(cmd)), inSize, outSize, size_t(1) }), 0);
	if (inSize)
		memcpy(arg.data(), in, inSize);
	int rc = o->umad->ioctl(cmd, arg.data(), iocSize(cmd));
	bool registered = rc == 0 && (cmd == IB_USER_MAD_REGISTER_AGENT || cmd == IB_USER_MAD_REGISTER_AGENT2);
	if (registered && outSize) {
		/* The kernel copies the id back after our reply, too late to undo
		 * the registration when that copy faults; ib_umad_reg_agent()
		 * unregisters then. So copy it here first. */
		size_t idAt = cmd == IB_USER_MAD_REGISTER_AGENT ? offsetof(ib_user_mad_reg_req, id)
								: offsetof(ib_user_mad_reg_req2, id);
		pid_t tid = fuse_req_ctx(req)->pid;
		if (writeCaller(tid, reinterpret_cast<uintptr_t>(userArg) + idAt, arg.data() + idAt,
				sizeof(uint32_t))) {
			uint32_t id;
			memcpy(&id, arg.data() + idAt, sizeof id);
			o->umad->ioctl(IB_USER_MAD_UNREGISTER_AGENT, reinterpret_cast<uint8_t *>(&id), sizeof id);
			return (void)fuse_reply_err(req, EFAULT);
		}
	}
	/* REGISTER_AGENT2 writes the supported flags back even when it fails */
	if (rc == 0 || (rc == -EINVAL && cmd == IB_USER_MAD_REGISTER_AGENT2))
		return (void)fuse_reply_ioctl(req, rc, outSize ? arg.data() : nullptr, outSize);
	fuse_reply_err(req, -rc);
}

void UmadFiles::poll(fuse_req_t req, fuse_file_info *fi, fuse_pollhandle *ph)
{
	opens_.poll(req, fi->fh, ph, [](Open &o) { return o.issm ? emu::issm::poll() : o.umad->poll(); });
}

void UmadFiles::release(fuse_req_t req, fuse_file_info *fi)
{
	std::unique_ptr<Open> o = opens_.remove(fi->fh);
	if (o && o->issm)
		o->port->issmRelease(); /* ib_umad_sm_close() */
	o.reset(); /* a umad file's close: ib_umad_close() */
	if (req)
		fuse_reply_err(req, 0);
}

void UmadFiles::serveReads(uint64_t fh, bool queued)
{
	Open *found = opens_.find(fh);
	if (!found)
		return;
	Open &o = *found;
	std::vector<uint8_t> mad;
	while (!o.wait.empty()) {
		const PendingRead r = o.wait.front();
		pid_t tid = fuse_req_ctx(r.req)->pid;
		if (o.serveSeq != r.seq) {
			o.serveSeq = r.seq;
			o.serveAttempt = 0;
		}
		/* a MAD longer than this request may fit the caller's whole read()
		 * (split over several requests, or cut short by a hole) */
		CallerIo io{ SYS_read, 0, r.size };
		size_t next = o.umad->nextLength();
		if ((next > r.size || r.size < o.umad->hdrSize()) &&
		    callerIo(tid, SYS_read, r.size, io, looksFor(o.serveAttempt)) != 0) {
			if (serveLater(o, fh))
				break; /* stays parked until its caller is seen asleep */
			o.wait.pop();
			fuse_reply_err(r.req, EAGAIN);
			continue;
		}
		ssize_t n = o.umad->read(io.count, mad);
		if (n == -EAGAIN && !r.nonblock && !opens_.stopping())
			break; /* stays parked until the next MAD */
		o.wait.pop();
		if (n == -ENOSPC) {
			/* The kernel returns ENOSPC *after* copying the header (whose
			 * length says what is needed) and the first segment; libibumad
			 * reads that length. A FUSE reply is data or an error, so the
			 * bytes go straight into the reader's buffer. */
			long nr;
			uint64_t args[6];
			if (callerSyscall(tid, nr, args) == 0 && nr == SYS_read && args[2] >= mad.size())
				writeCaller(tid, args[1], mad.data(), mad.size());
			fuse_reply_err(r.req, ENOSPC);
		} else if (n < 0) {
			fuse_reply_err(r.req, static_cast<int>(-n));
		} else if (static_cast<size_t>(n) <= r.size) {
			o.umad->consume();
			fuse_reply_buf(r.req, reinterpret_cast<const char *>(mad.data()), mad.size());
		} else {
			/* More requests of this read() follow, one per part of the
			 * buffer. Copy it all now, so a buffer that faults part way
			 * fails the read (EFAULT) and the MAD stays queued, as the
			 * kernel's copy_to_user failure requeues it. */
			if (writeCaller(tid, io.addr, mad.data(), mad.size()) != 0) {
				fuse_reply_err(r.req, EFAULT);
				continue;
			}
			o.umad->consume();
			fuse_reply_buf(r.req, reinterpret_cast<const char *>(mad.data()), r.size);
			Continuation &rest = o.readRest;
			rest.tid = tid;
			rest.io = io;
			rest.data.assign(mad.begin() + long(r.size), mad.end());
			rest.left = rest.data.size();
		}
	}
	if (queued)
		o.wait.notifyPoll();
}

bool UmadFiles::serveLater(Open &o, uint64_t fh)
{
	if (o.serveAgain)
		return true;
	auto again = [this, fh, seq = o.serveSeq](unsigned n, int err) {
		Open *f = opens_.find(fh);
		if (!f)
			return;
		f->serveAgain = false;
		if (err) /* the daemon stops, and fails the parked reads */
			return;
		if (f->serveSeq == seq)
			f->serveAttempt = n;
		serveReads(fh, false);
	};
	o.serveAgain = true; /* until again() runs: at once, when stopping */
	if (!restarts_.later(nullptr, o.serveAttempt, 0, again))
		o.serveAgain = false;
	return o.serveAgain;
}

void UmadFiles::endRequest(fuse_req_t req, uint64_t fh, pid_t tid, int err)
{
	if (Open *o = opens_.find(fh)) {
		if (o->readRest.tid == tid)
			o->readRest.clear();
		if (o->writeRest.tid == tid)
			o->writeRest.clear();
	}
	fuse_reply_err(req, err);
}

void UmadFiles::retryIssm()
{
	for (auto it = issmWaiters_.begin(); it != issmWaiters_.end();) {
		int rc = it->port->issmOpen();
		if (rc == -EAGAIN && !opens_.stopping()) {
			++it;
			continue;
		}
		fuse_req_interrupt_func(it->req, nullptr, nullptr);
		if (rc) {
			fuse_reply_err(it->req, opens_.stopping() ? EINTR : -rc);
		} else {
			auto o = std::make_unique<Open>();
			o->slot = std::move(it->slot);
			o->issm = true;
			o->port = it->port;
			if (!opens_.add(it->req, &it->fi, std::move(o)))
				release(nullptr, &it->fi);
		}
		it = issmWaiters_.erase(it);
	}
}

void UmadFiles::shutdown()
{
	restarts_.shutdown();
	bool first = opens_.shutdown([](Open &o) {
		if (o.issm)
			o.port->issmRelease();
	});
	if (!first)
		return;
	for (emu::UmadPort *p : watched_)
		p->onIssmReleased = nullptr; /* it pointed at us */
	watched_.clear();
	for (auto &w : issmWaiters_) {
		fuse_req_interrupt_func(w.req, nullptr, nullptr);
		fuse_reply_err(w.req, ENXIO);
	}
	issmWaiters_.clear();
	opens_.clear();
}

void UmadFiles::openers(std::map<pid_t, unsigned> &out) const
{
	opens_.openers(out);
}

} /* namespace ibemu::cuse_dev */
