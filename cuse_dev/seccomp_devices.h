// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// The seccomp transport (docs/transports.md): umadN, issmN, uverbsN and
// rdma_cm for programs whose system calls come through a seccomp
// user-notification listener (cuse_dev/seccomp_filter.h), with no kernel
// module and no device node.
//
// An open of a device path is answered with one end of a fresh AF_UNIX
// socket pair, injected into the caller at a number of its reserved block;
// the daemon keeps the other end. That end says when the program's last
// reference to the file is gone (it reads end-of-file: close, exit, exec,
// in whatever process the descriptor went to), which is the file's
// release. The calls the filter traps on the block are served here by the
// same emu/ objects as the CUSE and FUSE files; poll(), select() and epoll
// are the kernel's, on the injected socket, which holds one byte while the
// file has something to read (a MAD, an event). uverbs' async event file
// and completion channels are descriptors of their own, created in the
// caller by the command that makes them, as on the kernel.
//
// One object per daemon, owned and run by the io thread.
#pragma once

#include "cuse_dev/cuse_devices.h"

#include <boost/asio/io_context.hpp>

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <sys/types.h>
#include <utility>

namespace ibemu::emu {
class Host;
class UserAccess;
}

namespace ibemu::cuse_dev {

class SeccompDevices {
public:
	/* A device's major:minor, as the sysfs `dev` files say (fstat()
	 * answers with them). */
	using Numbers = std::function<std::pair<unsigned, unsigned>(NodeKind, unsigned num)>;

	/* spinUs: how long to stay awake after a call for the next (the FUSE
	 * pump's window) */
	SeccompDevices(boost::asio::io_context &io, emu::Host &host, Numbers numbers, unsigned spinUs);
	~SeccompDevices();
	SeccompDevices(const SeccompDevices &) = delete;
	SeccompDevices &operator=(const SeccompDevices &) = delete;

	/* Serves the programs behind listener (taken: closed when none is
	 * left), whose reserved block starts at base. host: the cluster host
	 * they belong to (emu::Hca::hostName, as `exec --host` said when it
	 * handed the listener over), "" for the whole instance: their opens
	 * find only that host's devices, and their rdma_cm files bind and
	 * listen on that host's addresses, whatever namespaces they move to.
	 * 0, or -EINVAL when it is no seccomp listener (closed where that
	 * cannot stall us) or base is no block. */
	int adopt(int listener, int base, const std::string &host = {});

	/* How emu/ reaches the programs served here (the host's, for the data
	 * path, where no other transport gave it one). */
	emu::UserAccess &access();

	/* The processes that opened its files, and how many each. */
	void openers(std::map<pid_t, unsigned> &out) const;
	/* Answers every waiting call (EIO) and closes every file and listener. */
	void shutdown();

	struct Impl;

private:
	std::unique_ptr<Impl> impl_;
};

/* The kernel's own numbers for a device (the transport with no node of its
 * own): umadN 231:N, issmN 231:64+N, uverbsN 231:192+N, rdma_cm 10:59
 * (ucma is a misc device, whose minor the kernel picks). */
std::pair<unsigned, unsigned> kernelNumbers(NodeKind kind, unsigned num);

} /* namespace ibemu::cuse_dev */
