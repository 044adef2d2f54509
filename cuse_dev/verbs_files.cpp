// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// uverbs device files: ib_uverbs_open/write/close plus the async event
// read and poll, over CUSE.
#define FUSE_USE_VERSION 35
#include "cuse_dev/verbs_files.h"

#include "cuse_dev/caller.h"
#include "emu/host.h"
#include "emu/uverbs_file.h"
#include "emu/work_queue.h"

#include <fuse_lowlevel.h>

#include <cerrno>
#include <fcntl.h>
#include <sys/syscall.h>
#include <vector>

namespace ibemu::cuse_dev {

namespace {

/* the longest write() command: 24 header bytes and 2 x 0xffff 8-byte words */
constexpr size_t kMaxCommand = 24 + size_t(2) * 0xffff * 8;
/* below the least the kernel's FUSE/CUSE ever hands over of a longer
 * write(): CUSE's 32 pages, less the buffer's offset in its first page */
constexpr size_t kWholeBelow = size_t(64) << 10;

} /* namespace */

struct VerbsFiles::Open {
	OpenLimit::Slot slot;
	std::unique_ptr<emu::UverbsFile> file;
	WaitQueue wait;
};

VerbsFiles::VerbsFiles(boost::asio::io_context &io, emu::Host &host) : io_(io), host_(host), opens_(1), calls_(io)
{}

VerbsFiles::~VerbsFiles()
{
	shutdown();
}

/* ib_uverbs_open() */
void VerbsFiles::open(fuse_req_t req, emu::VerbsDevice &dev, fuse_file_info *fi)
{
	if (opens_.stopping() || dev.dead())
		return (void)fuse_reply_err(req, ENXIO);
	auto o = opens_.create(req);
	if (!o)
		return (void)fuse_reply_err(req, EMFILE);
	o->file = std::make_unique<emu::UverbsFile>(dev, host_.access(), host_.pinned());
	o->file->setOwner(open_files::callerUid(req));
	for (const auto &hca : host_.hcas())
		if (hca->verbs.get() == &dev)
			o->file->setRdmaCgroup(host_.rdmaCgroups(),
					       rdmaCgroupOf(open_files::callerProcess(req), hca->name));
	uint64_t fh = opens_.nextFh();
	o->file->setWakeup([this, fh] { emu::queueWork(io_, [this, fh] { serveReads(fh); }); });
	if (!opens_.add(req, fi, std::move(o))) /* the caller went away meanwhile */
		release(nullptr, fi);
}

void VerbsFiles::write(fuse_req_t req, const char *buf, size_t size, fuse_file_info *fi)
{
	calls_.write(req, buf, size, fi->fh, [this](WholeWrite &call) { return writeCall(call); });
}

int VerbsFiles::writeCall(WholeWrite &call)
{
	Open *o = opens_.find(call.fh);
	if (!o)
		return -EBADF;
	/* A command handled again runs only once its caller is seen asleep,
	 * with a few looks: GET_CONTEXT's own look (ProcessAccess) would
	 * otherwise take the long first wait on every attempt. */
	if (!call.settled())
		return -kCallerRunning;
	/* A request of exactly the size its command declares, and shorter than
	 * the kernel ever cuts a write() by size (32 pages and more), is the
	 * whole call: the kernel takes no other size. A longer write() that
	 * runs into a hole right there would be EINVAL on a real device; here
	 * the command runs. Any other request may be the head of a longer call,
	 * which only the caller's system call tells (WholeWrite::take). */
	bool self = call.size < kWholeBelow && call.size == emu::UverbsFile::commandSize(call.head, call.size);
	/* a command's size is 16-bit word counts: longer writes are EINVAL */
	int t = call.take(kMaxCommand, self);
	if (t == -ENOMEM || t == -EFAULT) { /* too long, or a hole: the header checks come first */
		int h = emu::UverbsFile::headerErrno(call.head, call.size, call.len);
		t = h ? h : (t == -ENOMEM ? -EINVAL : -EFAULT);
	}
	if (t)
		return t; /* the rest of a big command, an error, or its caller is running */
	/* GET_CONTEXT looks for the descriptor it came on, and nothing was
	 * done when it finds the caller running (-kCallerRunning) */
	ssize_t rc = o->file->write(call.tid, call.data, call.len);
	return rc < 0 ? static_cast<int>(rc) : 0;
}

void VerbsFiles::ioctl(fuse_req_t req, unsigned cmd, fuse_file_info *fi)
{
	Open *o = opens_.find(fi->fh);
	if (!o)
		return (void)fuse_reply_err(req, EBADF);
	fuse_reply_err(req, -o->file->ioctl(cmd));
}

void VerbsFiles::read(fuse_req_t req, size_t size, fuse_file_info *fi)
{
	Open *o = opens_.find(fi->fh);
	if (!o)
		return (void)fuse_reply_err(req, EBADF);
	if ((fi->flags & O_NONBLOCK) && !o->file->poll()) /* not behind parked readers */
		return (void)fuse_reply_err(req, EAGAIN);
	opens_.park(*o, req, size, fi->flags & O_NONBLOCK, [&] { serveReads(fi->fh); });
}

void VerbsFiles::serveReads(uint64_t fh)
{
	Open *found = opens_.find(fh);
	if (!found)
		return;
	Open &o = *found;
	while (!o.wait.empty()) {
		const PendingRead r = o.wait.front();
		uint8_t buf[sizeof(emu::ib_uverbs_async_event_desc)];
		ssize_t n = o.file->read(buf, std::min(r.size, sizeof buf));
		if (n == -EAGAIN && !r.nonblock && !opens_.stopping())
			break; /* parked until the next event */
		o.wait.pop();
		if (n < 0)
			fuse_reply_err(r.req, static_cast<int>(-n));
		else
			fuse_reply_buf(r.req, reinterpret_cast<const char *>(buf), static_cast<size_t>(n));
	}
	o.wait.notifyPoll();
}

void VerbsFiles::poll(fuse_req_t req, fuse_file_info *fi, fuse_pollhandle *ph)
{
	opens_.poll(req, fi->fh, ph, [](Open &o) { return o.file->poll(); });
}

/* ib_uverbs_close(): the objects go (emu::UverbsFile's destructor) */
void VerbsFiles::release(fuse_req_t req, fuse_file_info *fi)
{
	if (std::unique_ptr<Open> o = opens_.remove(fi->fh)) {
		o.reset(); /* the file's objects first, then the HCAs they kept */
		calls_.closed(fi->fh);
		host_.reapRetired();
	}
	if (req)
		fuse_reply_err(req, 0);
}

void VerbsFiles::shutdown()
{
	calls_.shutdown();
	if (opens_.shutdown([](Open &) {})) {
		opens_.clear();
		calls_.clear();
	}
}

void VerbsFiles::openers(std::map<pid_t, unsigned> &out) const
{
	opens_.openers(out);
}

} /* namespace ibemu::cuse_dev */
