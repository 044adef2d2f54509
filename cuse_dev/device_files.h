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

#include "cuse_dev/open_limit.h"

#include <boost/asio/io_context.hpp>

#include <cstddef>
#include <cstdint>
#include <deque>
#include <list>
#include <memory>
#include <unordered_map>
#include <vector>

struct fuse_file_info;
struct fuse_pollhandle;
struct fuse_req;
typedef struct fuse_req *fuse_req_t;

namespace ibemu::emu {
class MemoryBudget;
class UmadFile;
class UmadPort;
}

namespace ibemu::cuse_dev {

class DeviceFiles {
public:
	explicit DeviceFiles(boost::asio::io_context &io);
	~DeviceFiles();
	DeviceFiles(const DeviceFiles &) = delete;
	DeviceFiles &operator=(const DeviceFiles &) = delete;

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

	/* Answers every parked request and drops every open file. */
	void shutdown();

	struct Open;
	struct PendingIssm;

private:
	static constexpr uint64_t kFhTag = 1ull << 62;

	Open *openOf(const fuse_file_info *fi) const;
	void serveReads(uint64_t fh);
	void retryIssm();
	static void readInterrupted(fuse_req_t req, void *self);
	static void issmInterrupted(fuse_req_t req, void *self);

	boost::asio::io_context &io_;
	OpenLimit openLimit_;
	/* per user, for as long as the daemon runs: a handful at most */
	std::unordered_map<uid_t, std::unique_ptr<emu::MemoryBudget>> budgets_;
	std::unordered_map<uint64_t, std::unique_ptr<Open>> opens_;
	std::list<PendingIssm> issmWaiters_;
	std::vector<emu::UmadPort *> watched_;
	uint64_t nextFh_ = kFhTag | 1;
	bool stopping_ = false;
};

} /* namespace ibemu::cuse_dev */
