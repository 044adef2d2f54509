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

#include "cuse_dev/open_limit.h"

#include <boost/asio/io_context.hpp>

#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <unordered_map>

struct fuse_file_info;
struct fuse_pollhandle;
struct fuse_req;
typedef struct fuse_req *fuse_req_t;

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

	/* Answers every parked request and closes every file. */
	void shutdown();

	struct Open;

private:
	Open *openOf(const fuse_file_info *fi) const;
	void serveReads(uint64_t fh);
	static void readInterrupted(fuse_req_t req, void *self);

	boost::asio::io_context &io_;
	emu::Host &host_;
	OpenLimit openLimit_;
	std::unordered_map<uint64_t, std::unique_ptr<Open>> opens_;
	uint64_t nextFh_ = 1;
	bool stopping_ = false;
};

} /* namespace ibemu::cuse_dev */
