// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// umad_hostile's clients that wait: poll() and ppoll() with and without
// timeouts, woken by the daemon's notification or a signal (pollwait), and
// a client that stays in a call to be killed there (block).
#include "tests/tools/umad_hostile.h"
#include "tests/tools/umad_client.h"

#include "emu/umad_abi.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <string>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

namespace ibemu::hostile {

namespace {

void onAlarm(int)
{}

/* Waits until process pid is in system call nr (/proc/PID/syscall), at
 * most 10 s: then what wakes it is the daemon's poll notification, not a
 * MAD found queued when it polled. */
void waitInSyscall(pid_t pid, long nr)
{
	char path[64];
	snprintf(path, sizeof path, "/proc/%d/syscall", static_cast<int>(pid));
	for (int i = 0; i < 1000; i++) {
		long now = -1;
		if (FILE *f = fopen(path, "re")) {
			if (fscanf(f, "%ld", &now) != 1) /* "running" */
				now = -1;
			fclose(f);
		}
		if (now == nr)
			return;
		usleep(10 * 1000);
	}
}

const char *revents(const pollfd &p)
{
	return p.revents == POLLIN ? "POLLIN" : p.revents ? "other events" : "none";
}

} /* namespace */

/* ---------------- pollwait ---------------- */

/* poll() and ppoll() waiting without a timeout for the answer to a MAD
 * that another process sends on the same file once they sleep (the
 * daemon's poll notification must wake them), one interrupted by a
 * signal, and one with a timeout that passes. */
int pollwait(const char *dev)
{
	int fd = openDev(dev);
	if (fd < 0)
		return 0;
	ioctl(fd, IB_USER_MAD_ENABLE_PKEY);
	int id = needAgent(regAgent(fd, 0, 0), "register QP0 agent");
	std::vector<uint8_t> buf(kPage);
	for (const char *call : { "poll", "ppoll" }) {
		bool isPoll = strcmp(call, "poll") == 0;
		pid_t parent = getpid();
		pid_t child = fork();
		if (child == 0) {
			waitInSyscall(parent, isPoll ? SYS_poll : SYS_ppoll);
			std::vector<uint8_t> m = nodeInfoGet(uint32_t(id), 0x77);
			_exit(write(fd, m.data(), m.size()) == ssize_t(m.size()) ? 0 : 1);
		}
		pollfd p{ fd, POLLIN, 0 };
		int n = isPoll ? poll(&p, 1, -1) : ppoll(&p, 1, nullptr, nullptr);
		printf("%s, no timeout, a MAD sent meanwhile: %d, %s\n", call, n, revents(p));
		printf("read it: %s\n", result(read(fd, buf.data(), buf.size())).c_str());
		int status = -1;
		waitpid(child, &status, 0);
		if (status != 0)
			printf("the sender failed\n");
	}
	struct sigaction sa {};
	sa.sa_handler = onAlarm; /* no SA_RESTART */
	sigaction(SIGALRM, &sa, nullptr);
	alarm(1);
	pollfd p{ fd, POLLIN, 0 };
	int n = poll(&p, 1, -1);
	printf("poll, no timeout, a signal: %s\n", n < 0 ? ename(errno) : "returned");
	p.revents = 0;
	n = poll(&p, 1, 300);
	printf("poll, 300 ms, nothing comes: %d, %s\n", n, revents(p));
	return 0;
}

/* ---------------- block ---------------- */

/* A client for a kill storm: it says where it is, then stays in (or keeps
 * making) the call until it is killed. */
int block(const char *dev, const std::string &kind)
{
	if (kind == "issm") {
		printf("opening %s\n", dev);
		fflush(stdout);
		int fd = open(dev, O_RDONLY | O_CLOEXEC); /* waits while an SM holds it */
		printf("issm open: %s\n", fd < 0 ? ename(errno) : "ok");
		return 0;
	}
	/* a blocking file for the reader; the loops must never wait */
	int fd = open(dev, O_RDWR | O_CLOEXEC | (kind == "read" ? 0 : O_NONBLOCK));
	if (fd < 0) {
		printf("open %s: %s\n", dev, ename(errno));
		return 0;
	}
	ioctl(fd, IB_USER_MAD_ENABLE_PKEY);
	std::vector<uint8_t> buf(kPage);
	if (kind == "poll") {
		printf("polling\n");
		fflush(stdout);
		pollfd p{ fd, POLLIN, 0 };
		printf("poll: %d\n", poll(&p, 1, -1));
		return 0;
	}
	if (kind == "read") {
		printf("reading\n");
		fflush(stdout);
		printf("read: %s\n", result(read(fd, buf.data(), buf.size())).c_str());
		return 0;
	}
	if (kind == "ioctl") {
		printf("looping\n");
		fflush(stdout);
		for (;;) {
			int id = regAgent(fd, 1, 0);
			if (id >= 0)
				ioctl(fd, IB_USER_MAD_UNREGISTER_AGENT, &id);
		}
	}
	if (kind == "write") {
		int id = needAgent(regAgent(fd, 0, 0), "register QP0 agent");
		printf("looping\n");
		fflush(stdout);
		for (uint32_t tid = 1;; tid++) {
			std::vector<uint8_t> m = nodeInfoGet(uint32_t(id), tid);
			if (write(fd, m.data(), m.size()) < 0 && errno != ENOMEM)
				return 0;
			while (read(fd, buf.data(), buf.size()) > 0) {
			}
		}
	}
	fprintf(stderr, "block: read, poll, issm, ioctl or write\n");
	return 2;
}

} /* namespace ibemu::hostile */
