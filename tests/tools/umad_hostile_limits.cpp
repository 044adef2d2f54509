// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// umad_hostile's attacks on the daemon's limits: requests whose answers
// are never read (flood), requests waiting for answers until ENOMEM
// (outstanding), and files full of agents (agents).
#include "tests/tools/umad_hostile.h"
#include "tests/tools/umad_client.h"

#include "emu/umad_abi.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <unistd.h>
#include <vector>

namespace ibemu::hostile {

/* ---------------- flood ---------------- */

int flood(const char *dev, long n)
{
	int fd = openDev(dev);
	if (fd < 0)
		return 0;
	ioctl(fd, IB_USER_MAD_ENABLE_PKEY);
	int id = needAgent(regAgent(fd, 0, 0), "register QP0 agent");
	long ok = 0;
	int firstErr = 0;
	for (long i = 0; i < n; i++) {
		std::vector<uint8_t> m = nodeInfoGet(uint32_t(id), uint32_t(i + 1));
		if (write(fd, m.data(), m.size()) == ssize_t(m.size()))
			ok++;
		else if (!firstErr)
			firstErr = errno;
	}
	printf("flood: %ld written, %ld accepted%s%s\n", n, ok, firstErr ? ", first error " : "",
	       firstErr ? ename(firstErr) : "");
	return 0; /* and never read */
}

/* ---------------- outstanding ---------------- */

int outstanding(const char *dev)
{
	int fd = openDev(dev);
	if (fd < 0)
		return 0;
	int id = needAgent(regAgent2(fd, 1, 0, 0, 0, 0), "register GSI agent");
	long ok = 0;
	int err = 0;
	for (long i = 0; i < 100000; i++) {
		std::vector<uint8_t> m(sizeof(ib_user_mad_hdr) + kMad);
		ib_user_mad_hdr h = header(uint32_t(id), kNobodyLid, 1, 60000);
		memcpy(m.data(), &h, sizeof h);
		uint8_t *mad = m.data() + sizeof h;
		mad[0] = 1, mad[1] = 0x04, mad[2] = 1, mad[3] = 0x01; /* PerfMgt Get */
		put64(mad + 8, uint64_t(i + 1));
		put16(mad + 16, 0x0012); /* PortCounters */
		if (write(fd, m.data(), m.size()) != ssize_t(m.size())) {
			err = errno;
			break;
		}
		ok++;
	}
	printf("outstanding: %ld accepted, then %s\n", ok, err ? ename(err) : "no error");
	return 0;
}

/* ---------------- agents ---------------- */

int agents(const char *dev, long nfiles)
{
	rlimit rl;
	getrlimit(RLIMIT_NOFILE, &rl);
	if (rl.rlim_max < rlim_t(nfiles) + 64)
		rl.rlim_max = rlim_t(nfiles) + 64; /* root may raise it */
	rl.rlim_cur = rl.rlim_max;
	if (setrlimit(RLIMIT_NOFILE, &rl) != 0) {
		getrlimit(RLIMIT_NOFILE, &rl);
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	std::vector<int> fds;
	long nagents = 0;
	for (long i = 0; i < nfiles; i++) {
		int fd = open(dev, O_RDWR | O_NONBLOCK | O_CLOEXEC);
		if (fd < 0) {
			printf("open %ld: %s\n", i + 1, ename(errno));
			break;
		}
		fds.push_back(fd);
		for (int a = 0; a < int(IB_UMAD_MAX_AGENTS); a++) {
			int id = regAgent(fd, 1, 0);
			if (id < 0) {
				printf("file %ld agent %d: %s\n", i + 1, a + 1, ename(-id));
				break;
			}
			nagents++;
		}
	}
	printf("ready %zu files %ld agents\n", fds.size(), nagents);
	fflush(stdout);
	char line[16];
	if (!fgets(line, sizeof line, stdin))
		printf("stdin closed\n");
	for (int fd : fds)
		close(fd);
	printf("closed\n");
	return 0;
}

} /* namespace ibemu::hostile */
