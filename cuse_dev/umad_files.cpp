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
};

struct UmadFiles::PendingIssm {
	fuse_req_t req;
	fuse_file_info fi;
	emu::UmadPort *port;
	OpenLimit::Slot slot;
};

UmadFiles::UmadFiles(boost::asio::io_context &io) : io_(io), opens_(kFhTag | 1), calls_(io)
{}

UmadFiles::~UmadFiles()
{
	shutdown();
}

void UmadFiles::watch(emu::UmadPort &port)
{
	unsigned id = port.watchIssm([this] { emu::queueWork(io_, [this] { retryIssm(); }); });
	watched_.emplace_back(&port, id);
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
	bool nonblock = fi->flags & O_NONBLOCK;
	calls_.read(req, size, fi->fh, [this, nonblock](WholeRead &call) { return readCall(call, nonblock); });
}

int UmadFiles::readCall(WholeRead &call, bool nonblock)
{
	Open *o = opens_.find(call.fh);
	if (!o)
		return -EBADF;
	if (o->issm)
		return -EINVAL; /* issm has no read */
	/* the checks that come before looking at the queue never wait; a
	 * request shorter than the caller's read() is a buffer that runs
	 * into unmapped memory, which serveReads() answers EFAULT */
	if (int c = call.take(o->umad->hdrSize()))
		return c; /* the rest of a big read, or its caller is running */
	if (call.io.count < o->umad->hdrSize())
		return -EINVAL;
	/* ib_umad_read(): a blocking reader waits here for a MAD */
	uint64_t fh = call.fh;
	opens_.park(*o, call.req, call.size, nonblock, [&] { serveReads(fh, false); });
	return 0;
}

void UmadFiles::write(fuse_req_t req, const char *buf, size_t size, fuse_file_info *fi)
{
	calls_.write(req, buf, size, fi->fh, [this](WholeWrite &call) { return writeCall(call); });
}

int UmadFiles::writeCall(WholeWrite &call)
{
	Open *o = opens_.find(call.fh);
	if (!o)
		return -EBADF;
	if (o->issm)
		return -EINVAL; /* issm has no write */
	/* at most the longest message the MAD layer takes */
	if (int t = call.take(o->umad->hdrSize() + emu::rmpp::kMaxMessageBytes))
		return t; /* the rest of a big write, an error, or its caller is running */
	ssize_t rc = o->umad->write(call.data, call.len);
	return rc < 0 ? static_cast<int>(rc) : 0;
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
	calls_.closed(fi->fh);
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
		/* a MAD longer than this request may fit the caller's whole read()
		 * (split over several requests, or cut short by a hole) */
		CallerIo io{ SYS_read, 0, r.size };
		size_t next = o.umad->nextLength();
		if (next > r.size || r.size < o.umad->hdrSize()) {
			int rc = calls_.parkedRead(fh, r, io, [this, fh] { serveReads(fh, false); });
			if (rc == -kCallerRunning)
				break; /* stays parked until its caller is seen asleep */
			if (rc < 0) {
				o.wait.pop();
				fuse_reply_err(r.req, -rc);
				continue;
			}
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
			calls_.continueRead(fh, tid, io, std::vector<uint8_t>(mad.begin() + long(r.size), mad.end()));
		}
	}
	if (queued)
		o.wait.notifyPoll();
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
	calls_.shutdown();
	bool first = opens_.shutdown([](Open &o) {
		if (o.issm)
			o.port->issmRelease();
	});
	if (!first)
		return;
	for (auto [p, id] : watched_)
		p->unwatchIssm(id); /* it pointed at us */
	watched_.clear();
	for (auto &w : issmWaiters_) {
		fuse_req_interrupt_func(w.req, nullptr, nullptr);
		fuse_reply_err(w.req, ENXIO);
	}
	issmWaiters_.clear();
	opens_.clear();
	calls_.clear();
}

void UmadFiles::openers(std::map<pid_t, unsigned> &out) const
{
	opens_.openers(out);
}

} /* namespace ibemu::cuse_dev */
