// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// A new network namespace, made by a thread of its own.
#include "tests/unit/netns_helpers.h"

#include <fcntl.h>
#include <sched.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <thread>

namespace ibemu::netdev {

int newNetns(std::string *why)
{
	int fd = -1;
	std::string failed;
	std::thread t([&] {
		if (unshare(CLONE_NEWNET) != 0)
			failed = std::string("unshare(CLONE_NEWNET): ") + strerror(errno);
		else if ((fd = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC)) < 0)
			failed = std::string("/proc/thread-self/ns/net: ") + strerror(errno);
	});
	t.join();
	if (fd < 0 && why)
		*why = failed;
	return fd;
}

} /* namespace ibemu::netdev */
