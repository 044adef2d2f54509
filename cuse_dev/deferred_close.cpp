// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
#include "cuse_dev/deferred_close.h"

#include <spdlog/spdlog.h>

#include <cerrno>
#include <fcntl.h>
#include <thread>
#include <unistd.h>

namespace ibemu::cuse_dev {

namespace {

/* the queue: descriptor numbers in a pipe, written without blocking */
int queueFd()
{
	static const int fd = [] {
		int p[2];
		if (pipe2(p, O_CLOEXEC) != 0)
			return -1;
		fcntl(p[1], F_SETFL, O_NONBLOCK);
		std::thread([in = p[0]] {
			int victim;
			while (read(in, &victim, sizeof victim) == ssize_t(sizeof victim))
				close(victim);
		}).detach();
		return p[1];
	}();
	return fd;
}

} /* namespace */

void deferredClose(int fd)
{
	int q = queueFd();
	if (q < 0 || write(q, &fd, sizeof fd) != ssize_t(sizeof fd))
		spdlog::error("descriptor {} taken from a client could not be closed safely; left open", fd);
}

} /* namespace ibemu::cuse_dev */
