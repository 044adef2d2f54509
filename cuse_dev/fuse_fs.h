// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// The FUSE transport, for machines without /dev/cuse: one FUSE filesystem
// per instance serving the sysfs view (class/..., and each cluster host's
// in hosts/NAME/class/..., docs/cluster.md) and the device files
// (dev/umadN, dev/issmN) as regular files. tools/instance/namespace.cpp makes them
// appear at /sys/class and /dev/infiniband inside the instance's mount
// namespace.
//
// The session is driven by the io_context (session_pump.h), so every
// handler runs on the thread that owns emu/ and needs no lock. Device files
// are served by UmadFiles (umad_files.h).
//
// Interface: lookup, getattr, readdir, open, read, write on sysfs (node_desc
// is writable); the device file operations of UmadFiles.
#pragma once

#include <boost/asio/io_context.hpp>

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <sys/types.h>
#include <utility>

namespace ibemu::emu {
class Host;
}

namespace ibemu::cuse_dev {

class FuseFs {
public:
	struct Options {
		/* serve dev/umadN and dev/issmN (FUSE transport); without them the
		 * filesystem is the sysfs view only (CUSE transport) */
		bool deviceFiles = true;
		/* major:minor for the sysfs `dev` files; the kernel's 231:N by default */
		std::function<std::pair<unsigned, unsigned>(unsigned devNum, bool issm)> umadNumbers;
		/* CUSE: uverbsN numbers; with them the tree has class/infiniband_verbs */
		std::function<std::pair<unsigned, unsigned>(unsigned verbsNum)> uverbsNumbers;
		/* rdma_cm's; unset: no rdma_cm device */
		std::function<std::pair<unsigned, unsigned>()> rdmaCmNumbers;
		/* the verbs devices' PCI identity, which ipathverbs matches
		 * (buildSysfs in sysfs.h) */
		bool pciIdentity = true;
		/* the session pump's spin window, microseconds */
		unsigned spinUs = 50;
		/* serve requests over io_uring, a queue per CPU (fuse_uring.h), if
		 * the kernel offers it at mount time; else /dev/fuse only */
		bool fuseUring = false;
		/* ring entries per queue */
		unsigned uringDepth = 16;
		/* renders /status.json at the root of the filesystem (live state
		 * for `ibemu status`); none if empty */
		std::function<std::string()> status;
	};

	FuseFs(boost::asio::io_context &io, emu::Host &host, const Options &opts);
	~FuseFs();
	FuseFs(const FuseFs &) = delete;
	FuseFs &operator=(const FuseFs &) = delete;

	/* Mounts at mountpoint and starts serving from the io_context.
	 * Returns 0 or a negative errno (with a message in err). */
	int mount(const std::string &mountpoint, std::string &err);
	/* Fails every parked request, unmounts, stops serving. */
	void shutdown();
	/* requests go over io_uring (fuse_uring.h), not /dev/fuse */
	bool overIoUring() const;
	/* The processes that opened its device files, and how many each. */
	void openers(std::map<pid_t, unsigned> &out) const;

	struct Impl;

private:
	void prepareRing();
	std::unique_ptr<Impl> impl_;
};

} /* namespace ibemu::cuse_dev */
