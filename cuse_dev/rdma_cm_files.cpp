// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// rdma_cm device files: ucma_open/write/poll/close over CUSE.
#define FUSE_USE_VERSION 35
#include "cuse_dev/rdma_cm_files.h"

#include "cuse_dev/caller.h"
#include "cuse_dev/caller_ids.h"
#include "cuse_dev/deferred_close.h"
#include "emu/host.h"
#include "emu/ucma_file.h"
#include "emu/work_queue.h"

#include <fuse_lowlevel.h>

#include <cerrno>
#include <cstdio>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

namespace ibemu::cuse_dev {

namespace {

/* the longest command: a header and a 16-bit count of command bytes */
constexpr size_t kMaxCommand = 8 + 0xffff;

} /* namespace */

struct RdmaCmFiles::Open {
	OpenLimit::Slot slot;
	std::unique_ptr<emu::UcmaFile> file;
	WaitQueue wait;
};

RdmaCmFiles::RdmaCmFiles(boost::asio::io_context &io, emu::Host &host) : io_(io), host_(host), opens_(1)
{}

RdmaCmFiles::~RdmaCmFiles()
{
	shutdown();
}

/* ucma_open() */
void RdmaCmFiles::open(fuse_req_t req, fuse_file_info *fi)
{
	if (opens_.stopping())
		return (void)fuse_reply_err(req, ENXIO);
	auto o = opens_.create(req);
	if (!o)
		return (void)fuse_reply_err(req, EMFILE);
	pid_t opener = open_files::callerProcess(req);
	o->file = std::make_unique<emu::UcmaFile>(host_.cma(), host_.access(), opener);
	if (hostOf_)
		o->file->setHostScope(hostOf_(fuse_req_ctx(req)->pid));
	/* the opener waits in open(): its ID is still its own */
	if (uint64_t id = processIdentity(opener))
		o->file->setOpenerIdentity(id);
	uint64_t fh = opens_.nextFh();
	o->file->setWakeup([this, fh] { emu::queueWork(io_, [this, fh] { serve(fh); }); });
	o->file->setCmFileOf([this](pid_t tid, int fd, const emu::UcmaFile *&file) {
		file = nullptr; /* which of ours, a CUSE server cannot tell */
		return cmFile(tid, fd);
	});
	if (!opens_.add(req, fi, std::move(o)))
		release(nullptr, fi);
}

void RdmaCmFiles::write(fuse_req_t req, const char *buf, size_t size, fuse_file_info *fi)
{
	Open *o = opens_.find(fi->fh);
	if (!o)
		return (void)fuse_reply_err(req, EBADF);
	if (size > kMaxCommand)
		return (void)fuse_reply_err(req, EINVAL);
	pid_t tid = fuse_req_ctx(req)->pid;
	bool nonblock = fi->flags & O_NONBLOCK;
	auto *data = reinterpret_cast<const uint8_t *>(buf);
	ssize_t rc = o->file->write(tid, data, size, nonblock);
	if (rc == emu::UcmaFile::kBlocked) { /* GET_EVENT waits, behind any that wait already */
		std::vector<uint8_t> cmd(data, data + size);
		return opens_.park(
			*o, req, size, false, [&] { serve(fi->fh); }, std::move(cmd));
	}
	if (rc < 0)
		return (void)fuse_reply_err(req, static_cast<int>(-rc));
	fuse_reply_write(req, size);
}

/* parked GET_EVENTs, in order, while there are events for them */
void RdmaCmFiles::serve(uint64_t fh)
{
	Open *found = opens_.find(fh);
	if (!found)
		return;
	Open &o = *found;
	while (!o.wait.empty()) {
		const PendingRead &r = o.wait.front();
		pid_t tid = fuse_req_ctx(r.req)->pid;
		ssize_t rc = opens_.stopping() ? -EIO : o.file->write(tid, r.command.data(), r.command.size(), false);
		if (rc == emu::UcmaFile::kBlocked)
			break;
		PendingRead done = o.wait.pop();
		if (rc < 0)
			fuse_reply_err(done.req, static_cast<int>(-rc));
		else
			fuse_reply_write(done.req, done.size);
	}
	o.wait.notifyPoll();
}

void RdmaCmFiles::poll(fuse_req_t req, fuse_file_info *fi, fuse_pollhandle *ph)
{
	opens_.poll(req, fi->fh, ph, [](Open &o) { return o.file->poll(); });
}

/* ucma_close(): the file's IDs go, their peers hear it */
void RdmaCmFiles::release(fuse_req_t req, fuse_file_info *fi)
{
	opens_.remove(fi->fh);
	if (req)
		fuse_reply_err(req, 0);
}

/* Compares the device and inode of a copy of the descriptor
 * (pidfd_getfd()) with those of our node: a constant cost, whatever the
 * caller holds or has mounted. The attributes are the ones the kernel has
 * (AT_STATX_DONT_SYNC: a FUSE file's server, which may be this very
 * thread, is not asked), and the copy goes to the deferred-close thread, as
 * every foreign descriptor: its close may be the last and may block. */
int RdmaCmFiles::cmFile(pid_t tid, int fd)
{
	constexpr int kFlags = AT_STATX_DONT_SYNC;
	struct statx st;
	if (nodeIno_ == 0 && !node_.empty() && statx(AT_FDCWD, node_.c_str(), kFlags, STATX_INO, &st) == 0) {
		nodeDev_ = makedev(st.stx_dev_major, st.stx_dev_minor);
		nodeIno_ = st.stx_ino;
	}
	if (fd < 0)
		return -ENOENT;
	int pidfd = pidfdOf(tid);
	if (pidfd < 0)
		return -ENOENT;
	int copy = copyOfCallerFd(tid, pidfd, fd);
	close(pidfd);
	if (copy < 0)
		return -ENOENT;
	bool ours = nodeIno_ != 0 && statx(copy, "", AT_EMPTY_PATH | kFlags, STATX_INO, &st) == 0 &&
		    makedev(st.stx_dev_major, st.stx_dev_minor) == nodeDev_ && st.stx_ino == nodeIno_;
	deferredClose(copy);
	return ours ? 0 : -EINVAL;
}

void RdmaCmFiles::shutdown()
{
	if (opens_.shutdown([](Open &) {}))
		opens_.clear();
}

void RdmaCmFiles::openers(std::map<pid_t, unsigned> &out) const
{
	opens_.openers(out);
}

} /* namespace ibemu::cuse_dev */
