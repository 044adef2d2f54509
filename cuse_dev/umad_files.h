// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// The umadN and issmN device files over the FUSE protocol, shared by both
// transports (FUSE files and CUSE character devices): where a request from
// a tool enters emu/.
//
// Interface: open, read, write, ioctl (restricted: the kernel copies the
// _IOC-encoded size in and out), poll, release. Requests that must wait (a
// blocking read, a blocking issm open) are parked with an interrupt
// handler, so a signal always frees the caller with EINTR.
#pragma once

#include "cuse_dev/open_files.h"
#include "cuse_dev/whole_call.h"

#include <boost/asio/io_context.hpp>

#include <cstddef>
#include <cstdint>
#include <list>
#include <map>
#include <memory>
#include <unordered_map>
#include <utility>
#include <vector>

namespace ibemu::emu {
class MemoryBudget;
class UmadFile;
class UmadPort;
}

namespace ibemu::cuse_dev {

class UmadFiles {
public:
	explicit UmadFiles(boost::asio::io_context &io);
	~UmadFiles();
	UmadFiles(const UmadFiles &) = delete;
	UmadFiles &operator=(const UmadFiles &) = delete;

	/* Lets blocked issm opens of this port in when its claim is released. */
	void watch(emu::UmadPort &port);

	void open(fuse_req_t req, emu::UmadPort &port, bool issm, fuse_file_info *fi);
	void read(fuse_req_t req, size_t size, fuse_file_info *fi);
	void write(fuse_req_t req, const char *buf, size_t size, fuse_file_info *fi);
	/* userArg: the caller's ioctl argument pointer (restricted ioctls: the
	 * kernel copies `in` from it and the reply's bytes back to it) */
	void ioctl(fuse_req_t req, unsigned cmd, void *userArg, fuse_file_info *fi, unsigned flags, const void *in,
		   size_t inSize, size_t outSize);
	void poll(fuse_req_t req, fuse_file_info *fi, fuse_pollhandle *ph);
	void release(fuse_req_t req, fuse_file_info *fi);

	/* File handles this object gave out (fh values have bit 62 set). */
	static bool owns(uint64_t fh) { return fh & kFhTag; }

	/* The processes that opened umad/issm files, and how many each. */
	void openers(std::map<pid_t, unsigned> &out) const;

	/* Answers every parked request and drops every open file. */
	void shutdown();

	struct Open;
	struct PendingIssm;

private:
	static constexpr uint64_t kFhTag = 1ull << 62;

	/* Answers the reads parked on fh that the queue can serve; queued: a
	 * MAD (or an error) was just queued, so pollers are told, as
	 * ib_umad's queue_packet() wakes them. A read that takes a MAD makes
	 * nothing readable, so it tells nobody. */
	void serveReads(uint64_t fh, bool queued);
	/* ib_umad_read() and ib_umad_write() on a whole call (whole_call.h) */
	int readCall(WholeRead &call, bool nonblock);
	int writeCall(WholeWrite &call);
	void retryIssm();
	static void issmInterrupted(fuse_req_t req, void *self);

	boost::asio::io_context &io_;
	/* per user, for as long as the daemon runs: a handful at most */
	std::unordered_map<uid_t, std::unique_ptr<emu::MemoryBudget>> budgets_;
	OpenFiles<Open> opens_; /* handles kFhTag | 1 on */
	std::list<PendingIssm> issmWaiters_;
	std::vector<std::pair<emu::UmadPort *, unsigned>> watched_;
	WholeCalls calls_;
};

} /* namespace ibemu::cuse_dev */
