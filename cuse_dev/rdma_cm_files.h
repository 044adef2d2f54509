// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// The rdma_cm character device over the CUSE protocol: where a command
// from librdmacm enters emu/ (ucma_open/write/poll/close).
//
// write() carries one command; its response goes straight into the
// caller's memory (ProcessAccess). A GET_EVENT on a blocking file with
// nothing queued is parked, like a read, and run again when an event
// comes; a signal frees its caller with EINTR.
#pragma once

#include "cuse_dev/open_files.h"

#include <boost/asio/io_context.hpp>

#include <functional>
#include <map>
#include <string>

namespace ibemu::emu {
class Host;
class UcmaFile;
}

namespace ibemu::cuse_dev {

class RdmaCmFiles {
public:
	RdmaCmFiles(boost::asio::io_context &io, emu::Host &host);
	/* the device node, which MIGRATE_ID's descriptor must be */
	void setNode(std::string node) { node_ = std::move(node); }
	/* which cluster host a caller (by thread id) belongs to, "" for the
	 * whole instance: its files' IDs keep to that host's HCAs */
	void setHostOf(std::function<std::string(pid_t tid)> hostOf) { hostOf_ = std::move(hostOf); }
	~RdmaCmFiles();
	RdmaCmFiles(const RdmaCmFiles &) = delete;
	RdmaCmFiles &operator=(const RdmaCmFiles &) = delete;

	void open(fuse_req_t req, fuse_file_info *fi);
	void write(fuse_req_t req, const char *buf, size_t size, fuse_file_info *fi);
	void poll(fuse_req_t req, fuse_file_info *fi, fuse_pollhandle *ph);
	void release(fuse_req_t req, fuse_file_info *fi);

	void openers(std::map<pid_t, unsigned> &out) const;
	/* is descriptor fd of tid's process one of our rdma_cm files (the
	 * node's)? 0, -ENOENT (no such descriptor) or -EINVAL (another
	 * file); MIGRATE_ID's check */
	int cmFile(pid_t tid, int fd);
	/* Answers every parked request and closes every file. */
	void shutdown();

	struct Open;

private:
	void serve(uint64_t fh);

	boost::asio::io_context &io_;
	emu::Host &host_;
	OpenFiles<Open> opens_;
	std::string node_;
	std::function<std::string(pid_t tid)> hostOf_;
	/* the node's device and inode, once found */
	dev_t nodeDev_ = 0;
	ino_t nodeIno_ = 0;
};

} /* namespace ibemu::cuse_dev */
