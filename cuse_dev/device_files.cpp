// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// umad/issm device files: the kernel's ib_umad_open/read/write/ioctl/poll/
// close and ib_umad_sm_open/close, over the FUSE protocol.
#define FUSE_USE_VERSION 35
#include "cuse_dev/device_files.h"

#include "cuse_dev/caller.h"
#include "cuse_dev/wait_queue.h"
#include "emu/umad_abi.h"
#include "emu/umad_file.h"
#include "emu/umad_port.h"

#include <boost/asio/post.hpp>
#include <fuse_lowlevel.h>

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <poll.h>
#include <sys/syscall.h>
#include <vector>

namespace ibemu::cuse_dev {

struct DeviceFiles::Open {
	bool issm = false;
	emu::UmadPort *port = nullptr;
	std::unique_ptr<emu::UmadFile> umad;
	bool nonblock = false; /* at open: for issm */
	WaitQueue wait;
	Continuation readRest;
	Continuation writeRest;
};

struct DeviceFiles::PendingIssm {
	fuse_req_t req;
	fuse_file_info fi;
	emu::UmadPort *port;
};

DeviceFiles::DeviceFiles(boost::asio::io_context &io) : io_(io) {}

DeviceFiles::~DeviceFiles()
{
	shutdown();
}

void DeviceFiles::watch(emu::UmadPort &port)
{
	port.onIssmReleased = [this] { boost::asio::post(io_, [this] { retryIssm(); }); };
	watched_.push_back(&port);
}

DeviceFiles::Open *DeviceFiles::openOf(const fuse_file_info *fi) const
{
	auto it = opens_.find(fi->fh);
	return it == opens_.end() ? nullptr : it->second.get();
}

void DeviceFiles::issmInterrupted(fuse_req_t req, void *data)
{
	auto &s = *static_cast<DeviceFiles *>(data);
	for (auto it = s.issmWaiters_.begin(); it != s.issmWaiters_.end(); ++it)
		if (it->req == req) {
			s.issmWaiters_.erase(it);
			fuse_reply_err(req, EINTR);
			return;
		}
}

void DeviceFiles::open(fuse_req_t req, emu::UmadPort &port, bool issm, fuse_file_info *fi)
{
	auto o = std::make_unique<Open>();
	o->issm = issm;
	o->port = &port;
	o->nonblock = fi->flags & O_NONBLOCK;
	fi->direct_io = 1;
	fi->nonseekable = 1;
	if (!issm) {
		/* ib_umad_open() */
		if (int rc = port.openCheck())
			return (void)fuse_reply_err(req, -rc);
		o->umad = std::make_unique<emu::UmadFile>(port);
		uint64_t fh = nextFh_;
		o->umad->setWakeup([this, fh] { boost::asio::post(io_, [this, fh] { serveReads(fh); }); });
	} else {
		/* ib_umad_sm_open(): one holder per port */
		int rc = port.issmOpen();
		if (rc == -EAGAIN && !o->nonblock) {
			issmWaiters_.push_back({ req, *fi, &port });
			fuse_req_interrupt_func(req, issmInterrupted, this);
			return;
		}
		if (rc)
			return (void)fuse_reply_err(req, -rc);
	}
	fi->fh = nextFh_++;
	opens_.emplace(fi->fh, std::move(o));
	if (fuse_reply_open(req, fi) == -ENOENT) /* the caller went away meanwhile */
		release(nullptr, fi);
}

void DeviceFiles::readInterrupted(fuse_req_t req, void *data)
{
	auto &s = *static_cast<DeviceFiles *>(data);
	for (auto &[fh, o] : s.opens_)
		if (o->wait.cancel(req))
			return;
}

void DeviceFiles::read(fuse_req_t req, size_t size, fuse_file_info *fi)
{
	Open *o = openOf(fi);
	if (!o)
		return (void)fuse_reply_err(req, EBADF);
	if (o->issm)
		return (void)fuse_reply_err(req, EINVAL); /* issm has no read */
	Continuation &rest = o->readRest;
	if (rest.left && rest.tid == fuse_req_ctx(req)->pid) { /* the rest of a big read */
		size_t n = std::min(size, rest.data.size());
		fuse_reply_buf(req, reinterpret_cast<const char *>(rest.data.data()), n);
		rest.data.erase(rest.data.begin(), rest.data.begin() + long(n));
		rest.left = rest.data.empty() ? 0 : rest.left - n;
		return;
	}
	/* the checks that come before looking at the queue never wait */
	if (size < o->umad->hdrSize())
		return (void)fuse_reply_err(req, EINVAL);
	/* ib_umad_read(): a blocking reader waits here for a MAD */
	o->wait.park(req, size, fi->flags & O_NONBLOCK);
	if (o->wait.size() == 1)
		serveReads(fi->fh);
	o->wait.armInterrupt(req, readInterrupted, this);
}

void DeviceFiles::write(fuse_req_t req, const char *buf, size_t size, fuse_file_info *fi)
{
	Open *o = openOf(fi);
	if (!o)
		return (void)fuse_reply_err(req, EBADF);
	if (o->issm)
		return (void)fuse_reply_err(req, EINVAL); /* issm has no write */
	pid_t tid = fuse_req_ctx(req)->pid;
	std::vector<uint8_t> storage;
	const uint8_t *data;
	size_t whole;
	/* an RMPP message as big as the kernel would take: 64 MiB is plenty */
	int t = takeWrite(tid, buf, size, size_t(64) << 20, o->writeRest, storage, data, whole);
	if (t < 0)
		return (void)fuse_reply_err(req, -t);
	if (t > 0) /* the rest of a big write, handled already */
		return (void)fuse_reply_write(req, size);
	ssize_t rc = o->umad->write(data, whole);
	if (rc < 0)
		return (void)fuse_reply_err(req, static_cast<int>(-rc));
	o->writeRest.expect(tid, whole, size);
	fuse_reply_write(req, size);
}

void DeviceFiles::ioctl(fuse_req_t req, unsigned cmd, fuse_file_info *fi, unsigned flags, const void *in,
			size_t inSize, size_t outSize)
{
	Open *o = openOf(fi);
	if (!o)
		return (void)fuse_reply_err(req, EBADF);
	if (o->issm || (flags & FUSE_IOCTL_COMPAT))
		return (void)fuse_reply_err(req, ENOTTY);
	std::vector<uint8_t> arg(std::max<size_t>({ size_t(iocSize(cmd)), inSize, outSize, size_t(1) }), 0);
	if (inSize)
		memcpy(arg.data(), in, inSize);
	int rc = o->umad->ioctl(cmd, arg.data(), iocSize(cmd));
	/* REGISTER_AGENT2 writes the supported flags back even when it fails */
	if (rc == 0 || (rc == -EINVAL && cmd == IB_USER_MAD_REGISTER_AGENT2))
		return (void)fuse_reply_ioctl(req, rc, outSize ? arg.data() : nullptr, outSize);
	fuse_reply_err(req, -rc);
}

void DeviceFiles::poll(fuse_req_t req, fuse_file_info *fi, fuse_pollhandle *ph)
{
	Open *o = openOf(fi);
	if (!o) {
		if (ph)
			fuse_pollhandle_destroy(ph);
		return (void)fuse_reply_err(req, EBADF);
	}
	o->wait.setPollHandle(ph);
	fuse_reply_poll(req, o->issm ? emu::issm::poll() : o->umad->poll());
}

void DeviceFiles::release(fuse_req_t req, fuse_file_info *fi)
{
	auto it = opens_.find(fi->fh);
	if (it != opens_.end()) {
		Open &o = *it->second;
		o.wait.failAll(EBADF);
		if (o.issm)
			o.port->issmRelease(); /* ib_umad_sm_close() */
		opens_.erase(it);          /* a umad file's close: ib_umad_close() */
	}
	if (req)
		fuse_reply_err(req, 0);
}

void DeviceFiles::serveReads(uint64_t fh)
{
	auto it = opens_.find(fh);
	if (it == opens_.end())
		return;
	Open &o = *it->second;
	while (!o.wait.empty()) {
		const PendingRead r = o.wait.front();
		uint64_t addr = 0;
		size_t whole = wholeCount(fuse_req_ctx(r.req)->pid, SYS_read, r.size, addr);
		std::vector<uint8_t> buf(whole);
		ssize_t n = o.umad->read(buf.data(), buf.size());
		if (n == -EAGAIN && !r.nonblock && !stopping_)
			break; /* stays parked until the next MAD */
		o.wait.pop();
		if (n == -ENOSPC) {
			/* The kernel returns ENOSPC *after* copying the header (whose
			 * length says what is needed) and the first segment; libibumad
			 * reads that length. A FUSE reply is data or an error, so the
			 * bytes go straight into the reader's buffer. */
			long nr;
			uint64_t args[6];
			pid_t tid = fuse_req_ctx(r.req)->pid;
			size_t copied = o.umad->hdrSize() + kMadSize;
			if (callerSyscall(tid, nr, args) == 0 && nr == SYS_read && args[2] >= copied)
				writeCaller(tid, args[1], buf.data(), copied);
			fuse_reply_err(r.req, ENOSPC);
		} else if (n < 0) {
			fuse_reply_err(r.req, static_cast<int>(-n));
		} else {
			size_t first = std::min(static_cast<size_t>(n), r.size);
			pid_t tid = fuse_req_ctx(r.req)->pid; /* the reply frees r.req */
			fuse_reply_buf(r.req, reinterpret_cast<const char *>(buf.data()), first);
			if (static_cast<size_t>(n) > first) { /* more requests of this read() follow */
				buf.erase(buf.begin(), buf.begin() + long(first));
				buf.resize(static_cast<size_t>(n) - first);
				o.readRest = { tid, buf.size(), std::move(buf) };
			}
		}
	}
	o.wait.notifyPoll();
}

void DeviceFiles::retryIssm()
{
	for (auto it = issmWaiters_.begin(); it != issmWaiters_.end();) {
		int rc = it->port->issmOpen();
		if (rc == -EAGAIN && !stopping_) {
			++it;
			continue;
		}
		fuse_req_interrupt_func(it->req, nullptr, nullptr);
		if (rc) {
			fuse_reply_err(it->req, stopping_ ? EINTR : -rc);
		} else {
			auto o = std::make_unique<Open>();
			o->issm = true;
			o->port = it->port;
			it->fi.fh = nextFh_++;
			it->fi.nonseekable = 1;
			it->fi.direct_io = 1;
			opens_.emplace(it->fi.fh, std::move(o));
			if (fuse_reply_open(it->req, &it->fi) == -ENOENT)
				release(nullptr, &it->fi);
		}
		it = issmWaiters_.erase(it);
	}
}

void DeviceFiles::shutdown()
{
	if (stopping_)
		return;
	stopping_ = true;
	for (auto &[fh, o] : opens_) {
		o->wait.failAll(EIO);
		o->wait.dropPollHandle();
		if (o->issm)
			o->port->issmRelease();
	}
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

} /* namespace ibemu::cuse_dev */
