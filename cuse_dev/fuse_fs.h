// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// The FUSE transport, for machines without /dev/cuse: one FUSE filesystem
// per instance serving the sysfs view (class/...) and the device files
// (dev/umadN, dev/issmN) as regular files. namespace.cpp makes them appear
// at /sys/class and /dev/infiniband inside the instance's mount namespace.
//
// The session's /dev/fuse descriptor is driven by the io_context (Asio's
// pattern for libraries that do their own I/O): when it is readable, libfuse
// reads and dispatches the request on the io thread, so every handler can
// call emu/ directly and no lock is needed.
//
// Interface: open, read, write, ioctl (restricted: the kernel copies the
// _IOC-encoded size in and out), poll, release on the device files; lookup,
// getattr, readdir, open, read, write on sysfs. Requests that must wait (a
// blocking read, a blocking issm open) are parked with an interrupt handler,
// so a signal always frees the caller with EINTR.
#pragma once

#include <boost/asio/io_context.hpp>

#include <memory>
#include <string>

namespace ibemu::emu {
class Host;
}

namespace ibemu::cuse_dev {

class FuseFs {
public:
	FuseFs(boost::asio::io_context &io, emu::Host &host);
	~FuseFs();
	FuseFs(const FuseFs &) = delete;
	FuseFs &operator=(const FuseFs &) = delete;

	/* Mounts at mountpoint and starts serving from the io_context.
	 * Returns 0 or a negative errno (with a message in err). */
	int mount(const std::string &mountpoint, std::string &err);
	/* Fails every parked request, unmounts, stops serving. */
	void shutdown();

	struct Impl;

private:
	std::unique_ptr<Impl> impl_;
};

} /* namespace ibemu::cuse_dev */
