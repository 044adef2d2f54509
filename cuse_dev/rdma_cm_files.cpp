// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// rdma_cm device files: ucma_open/write/poll/close over CUSE.
#define FUSE_USE_VERSION 35
#include "cuse_dev/rdma_cm_files.h"

#include "emu/host.h"
#include "emu/ucma_file.h"
#include "emu/work_queue.h"

#include <fuse_lowlevel.h>

#include <cerrno>
#include <cstdio>
#include <fcntl.h>
#include <sys/stat.h>
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
	o->file = std::make_unique<emu::UcmaFile>(host_.cma(), host_.access(), open_files::callerProcess(req));
	uint64_t fh = opens_.nextFh();
	o->file->setWakeup([this, fh] { emu::queueWork(io_, [this, fh] { serve(fh); }); });
	o->file->setIsCmFile([this](pid_t tid, int fd) { return isCmFile(tid, fd); });
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

/* Compares the descriptor's filesystem and inode with those of our node,
 * from /proc/TID/fdinfo (its mount and inode) and /proc/TID/mountinfo (that
 * mount's device), which never ask the file's filesystem: a stat() of a
 * FUSE file could wait on a server that is this very thread. */
bool RdmaCmFiles::isCmFile(pid_t tid, int fd) const
{
	struct statx ours;
	if (node_.empty() || statx(AT_FDCWD, node_.c_str(), 0, STATX_INO, &ours) != 0)
		return false;
	std::string proc = "/proc/" + std::to_string(tid);
	unsigned long long mnt = ~0ull, ino = ~0ull;
	char line[1024];
	if (FILE *f = fopen((proc + "/fdinfo/" + std::to_string(fd)).c_str(), "re")) {
		while (fgets(line, sizeof line, f)) {
			sscanf(line, "mnt_id: %llu", &mnt);
			sscanf(line, "ino: %llu", &ino);
		}
		fclose(f);
	}
	if (ino == ~0ull) { /* a kernel whose fdinfo has no inode: the path the link names */
		char target[4096];
		std::string link = proc + "/fd/" + std::to_string(fd);
		ssize_t n = readlink(link.c_str(), target, sizeof target - 1);
		if (n <= 0 || std::string(target, size_t(n)) != node_)
			return false;
	} else if (ino != ours.stx_ino) {
		return false;
	}
	bool same = false;
	if (FILE *f = fopen((proc + "/mountinfo").c_str(), "re")) {
		unsigned long long id;
		unsigned maj, min;
		while (!same && fgets(line, sizeof line, f))
			same = sscanf(line, "%llu %*u %u:%u", &id, &maj, &min) == 3 && id == mnt &&
				maj == ours.stx_dev_major && min == ours.stx_dev_minor;
		fclose(f);
	}
	return same;
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
