// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// The uverbsN character devices over the CUSE protocol: where a verbs
// command from libibverbs enters emu/ (ib_uverbs_open/write/close).
//
// write() carries one command; its response goes straight into the
// caller's memory (ProcessAccess). Every ioctl is ENOTTY, so libibverbs
// uses write() alone. read() and poll() serve async events: the uverbs
// descriptor doubles as the async event file (docs/verbs.md).
#pragma once

#include "cuse_dev/open_files.h"
#include "cuse_dev/whole_call.h"

#include <boost/asio/io_context.hpp>

#include <cstddef>
#include <cstdint>

namespace ibemu::emu {
class Host;
class VerbsDevice;
}

namespace ibemu::cuse_dev {

class VerbsFiles {
public:
	VerbsFiles(boost::asio::io_context &io, emu::Host &host);
	~VerbsFiles();
	VerbsFiles(const VerbsFiles &) = delete;
	VerbsFiles &operator=(const VerbsFiles &) = delete;

	void open(fuse_req_t req, emu::VerbsDevice &dev, fuse_file_info *fi);
	void read(fuse_req_t req, size_t size, fuse_file_info *fi);
	void write(fuse_req_t req, const char *buf, size_t size, fuse_file_info *fi);
	void ioctl(fuse_req_t req, unsigned cmd, fuse_file_info *fi);
	void poll(fuse_req_t req, fuse_file_info *fi, fuse_pollhandle *ph);
	void release(fuse_req_t req, fuse_file_info *fi);

	/* The processes that opened uverbs files, and how many each. */
	void openers(std::map<pid_t, unsigned> &out) const;

	/* Answers every parked request and closes every file. */
	void shutdown();

	struct Open;

private:
	void serveReads(uint64_t fh);
	/* ib_uverbs_write() on a whole call (whole_call.h) */
	int writeCall(WholeWrite &call);

	boost::asio::io_context &io_;
	emu::Host &host_;
	OpenFiles<Open> opens_; /* handles 1 on */
	WholeCalls calls_;
};

} /* namespace ibemu::cuse_dev */
