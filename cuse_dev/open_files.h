// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// The table of open files of one kind of device file over the FUSE
// protocol (the kernel's struct file of each): file handles, each file's
// share of its user's OpenLimit, the reads parked on it with their
// interrupt handlers, its poll handle, close and daemon shutdown. Shared by
// the umad/issm files (umad_files.h) and the uverbs files (verbs_files.h).
//
// Open is the transport's per-file state; it has the members
// `OpenLimit::Slot slot` and `WaitQueue wait`.
#pragma once

#include "cuse_dev/open_limit.h"
#include "cuse_dev/wait_queue.h"

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <sys/types.h>
#include <unordered_map>
#include <utility>
#include <vector>

struct fuse_file_info;
struct fuse_pollhandle;
struct fuse_req;
typedef struct fuse_req *fuse_req_t;

namespace ibemu::cuse_dev {

/* The libfuse calls of the table (open_files.cpp). */
namespace open_files {
/* Answers an open with handle fh (direct I/O, not seekable). false when
 * the caller went away meanwhile: the file must be released then. */
bool replyOpen(fuse_req_t req, fuse_file_info *fi, uint64_t fh);
/* Answers a poll: events for an open file (whose wait keeps ph), EBADF
 * when wait is null (ph is dropped). */
void replyPoll(fuse_req_t req, WaitQueue *wait, fuse_pollhandle *ph, unsigned events);
/* The caller's user, and its process (the request gives a thread). */
uid_t callerUid(fuse_req_t req);
pid_t callerProcess(fuse_req_t req);
} /* namespace open_files */

template <class Open> class OpenFiles {
public:
	/* firstFh: the first file handle given out; the next ones count up */
	explicit OpenFiles(uint64_t firstFh) : nextFh_(firstFh) {}
	OpenFiles(const OpenFiles &) = delete;
	OpenFiles &operator=(const OpenFiles &) = delete;

	/* A new file for the caller of req, charged to its user; null when the
	 * user is at its limit (EMFILE). */
	std::unique_ptr<Open> create(fuse_req_t req)
	{
		auto o = std::make_unique<Open>();
		o->slot = limit_.take(open_files::callerUid(req), open_files::callerProcess(req));
		if (!o->slot)
			return nullptr;
		return o;
	}

	/* The processes that opened the files, and how many each. */
	template <class Map> void openers(Map &out) const
	{
		for (const auto &[fh, o] : opens_)
			out[o->slot.process()]++;
	}

	/* The handle the next add() gives. */
	uint64_t nextFh() const { return nextFh_; }

	/* Files o under a new handle and answers the open request with it.
	 * false when the caller went away meanwhile: release fi->fh then. */
	bool add(fuse_req_t req, fuse_file_info *fi, std::unique_ptr<Open> o);

	Open *find(uint64_t fh) const
	{
		auto it = opens_.find(fh);
		return it == opens_.end() ? nullptr : it->second.get();
	}

	/* close(): takes the file out of the table; its parked reads get
	 * EBADF. Null if fh is not open. */
	std::unique_ptr<Open> remove(uint64_t fh)
	{
		auto it = opens_.find(fh);
		if (it == opens_.end())
			return nullptr;
		std::unique_ptr<Open> o = std::move(it->second);
		o->wait.failAll(EBADF);
		opens_.erase(it);
		return o;
	}

	/* read(): parks the request on o. serve() answers what it can when
	 * this is the only read parked; one still parked after that gets an
	 * interrupt handler, so a signal frees its caller with EINTR. */
	template <class Serve>
	void park(Open &o, fuse_req_t req, size_t size, bool nonblock, Serve &&serve, std::vector<uint8_t> command = {})
	{
		o.wait.park(req, size, nonblock, std::move(command));
		if (o.wait.size() == 1)
			serve();
		o.wait.armInterrupt(req, readInterrupted, this);
	}

	/* poll(): keeps ph on the file and answers events(o); EBADF if fh is
	 * not open. */
	template <class Events> void poll(fuse_req_t req, uint64_t fh, fuse_pollhandle *ph, Events &&events)
	{
		Open *o = find(fh);
		if (!o)
			return open_files::replyPoll(req, nullptr, ph, 0);
		open_files::replyPoll(req, &o->wait, ph, events(*o));
	}

	/* The daemon stops: every parked read gets EIO, poll handles go and
	 * each(o) runs for every file, once; false if that happened already.
	 * The files stay until clear(). */
	template <class Each> bool shutdown(Each &&each)
	{
		if (stopping_)
			return false;
		stopping_ = true;
		for (auto &[fh, o] : opens_) {
			o->wait.failAll(EIO);
			o->wait.dropPollHandle();
			each(*o);
		}
		return true;
	}
	bool stopping() const { return stopping_; }
	void clear() { opens_.clear(); }

private:
	static void readInterrupted(fuse_req_t req, void *self)
	{
		for (auto &[fh, o] : static_cast<OpenFiles *>(self)->opens_)
			if (o->wait.cancel(req))
				return;
	}

	OpenLimit limit_;
	std::unordered_map<uint64_t, std::unique_ptr<Open>> opens_;
	uint64_t nextFh_;
	bool stopping_ = false;
};

template <class Open> bool OpenFiles<Open>::add(fuse_req_t req, fuse_file_info *fi, std::unique_ptr<Open> o)
{
	uint64_t fh = nextFh_++;
	opens_.emplace(fh, std::move(o));
	return open_files::replyOpen(req, fi, fh);
}

} /* namespace ibemu::cuse_dev */
