// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// The seccomp transport's filter, built with libseccomp.
#include "cuse_dev/seccomp_filter.h"

#include "cuse_dev/deferred_close.h"
#include "emu/user_access.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <fstream>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <seccomp.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

namespace ibemu::cuse_dev::seccomp {

namespace {

/* calls trapped whatever their arguments: the daemon reads the path */
constexpr const char *kOpens[] = { "open", "openat", "openat2" };

/* calls trapped when their first argument is a number in the block */
constexpr const char *kOnBlock[] = {
	"read",	       "readv",	      "write",	     "writev",	    "ioctl",	   "fstat",
	"newfstatat",  "statx",	      "dup",	     "recvfrom",    "recvmsg",	   "recvmmsg",
	"sendto",      "sendmsg",     "sendmmsg",    "getsockopt",  "setsockopt",  "getsockname",
	"getpeername", "shutdown",    "bind",	     "connect",	    "listen",	   "accept",
	"accept4",
};

scmp_arg_cmp inBlock(int base)
{
	scmp_arg_cmp c{}; /* SCMP_A0() is a C compound literal */
	c.arg = 0;
	c.op = SCMP_CMP_MASKED_EQ;
	/* the low 32 bits only: a descriptor is an int, and the register's
	 * upper half is whatever the caller left there */
	c.datum_a = uint32_t(~uint32_t(kBlock - 1));
	c.datum_b = uint64_t(base);
	return c;
}

int addRule(scmp_filter_ctx ctx, const char *name, unsigned n, const scmp_arg_cmp *cmps)
{
	int nr = seccomp_syscall_resolve_name(name);
	if (nr == __NR_SCMP_ERROR || nr < 0) /* not a call of this architecture */
		return 0;
	return seccomp_rule_add_array(ctx, SCMP_ACT_NOTIFY, nr, n, cmps);
}

} /* namespace */

int filterCount()
{
	std::ifstream status("/proc/self/status");
	std::string line;
	while (std::getline(status, line))
		if (line.rfind("Seccomp_filters:", 0) == 0)
			return atoi(line.c_str() + 16);
	return 0;
}

bool underListener()
{
	if (filterCount() == 0)
		return false;
	pid_t pid = fork();
	if (pid == 0) { /* a filter allowing everything, with a listener */
		sock_filter allow = BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
		sock_fprog prog{ 1, &allow };
		prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
		long rc = syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_NEW_LISTENER, &prog);
		_exit(rc < 0 && errno == EBUSY ? 1 : 0);
	}
	int st = 0;
	while (pid > 0 && waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	return pid > 0 && WIFEXITED(st) && WEXITSTATUS(st) == 1;
}

int reservedBase(rlim_t soft)
{
	rlim_t top = std::min<rlim_t>(soft, 1024);
	if (top < rlim_t(2 * kBlock))
		return -1;
	return int((top - kBlock) / kBlock * kBlock);
}

int load(scmp_filter_ctx ctx)
{
	/* 32-bit (i386, x32) programs are not filtered: allowed, not killed */
	int rc = seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_ALLOW);
	/* root (CAP_SYS_ADMIN) needs no no_new_privs, which would keep setuid
	 * programs under exec from their privileges; anyone else must set it */
	if (rc == 0)
		rc = seccomp_attr_set(ctx, SCMP_FLTATR_CTL_NNP, 0);
	if (rc == 0) {
		rc = seccomp_load(ctx);
		if (rc == -EACCES && seccomp_attr_set(ctx, SCMP_FLTATR_CTL_NNP, 1) == 0)
			rc = seccomp_load(ctx);
	}
	return rc;
}

int installFilter(int base, std::string &err)
{
	scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
	if (!ctx) {
		err = "seccomp_init failed";
		return -1;
	}
	int rc = 0;
	for (const char *name : kOpens)
		if (rc == 0)
			rc = addRule(ctx, name, 0, nullptr);
	scmp_arg_cmp fd = inBlock(base);
	for (const char *name : kOnBlock)
		if (rc == 0)
			rc = addRule(ctx, name, 1, &fd);
	for (int cmd : { F_DUPFD, F_DUPFD_CLOEXEC }) {
		scmp_arg_cmp c[2] = { fd, {} };
		c[1].arg = 1;
		c[1].op = SCMP_CMP_MASKED_EQ; /* an int, as the kernel takes it */
		c[1].datum_a = 0xffffffffu;
		c[1].datum_b = uint64_t(cmd);
		if (rc == 0)
			rc = addRule(ctx, "fcntl", 2, c);
	}
	if (rc == 0)
		rc = load(ctx);
	int listener = rc == 0 ? seccomp_notify_fd(ctx) : -1;
	seccomp_release(ctx);
	if (rc != 0 || listener < 0) {
		err = std::string("the seccomp filter: ") + strerror(rc ? -rc : EINVAL);
		return -1;
	}
	return listener;
}

} /* namespace ibemu::cuse_dev::seccomp */

namespace ibemu::cuse_dev::seccomp {

int handOver(int sock, int listener, int base, const std::string &host, std::string &err)
{
	if (host.size() > kMaxHost) {
		err = "host name too long";
		return -1;
	}
	char msgBuf[sizeof(int32_t) + kMaxHost];
	int32_t b = base;
	memcpy(msgBuf, &b, sizeof b);
	memcpy(msgBuf + sizeof b, host.data(), host.size());
	size_t len = sizeof b + host.size();
	/* no strerror() from here: the filter is on, and a locale's message
	 * catalog would be opened through it, with nobody to answer */
	if (emu::sendWithDescriptors(sock, msgBuf, len, &listener, 1, MSG_NOSIGNAL) != ssize_t(len)) {
		err = std::string("cannot reach the daemon: ") + strerrorname_np(errno);
		return -1;
	}
	uint8_t answer = 0;
	ssize_t n;
	do
		n = recv(sock, &answer, 1, 0);
	while (n < 0 && errno == EINTR);
	if (n != 1) {
		err = "the daemon did not answer";
		return -1;
	}
	if (answer) {
		err = std::string("the daemon refused the listener: ") + strerrorname_np(answer);
		return -1;
	}
	return 0;
}

int receiveHandOver(int sock, int &listener, int &base, std::string &host)
{
	int32_t b = 0;
	char msgBuf[sizeof b + kMaxHost + 1]; /* one more: a longer name is refused */
	std::vector<int> fds;
	bool cut;
	/* room for all a message can carry: the kernel releases the rest here */
	ssize_t n = emu::receiveWithDescriptors(sock, msgBuf, sizeof msgBuf, MSG_DONTWAIT, fds, cut);
	if (n < 0)
		return errno == EAGAIN || errno == EINTR ? -EAGAIN : -errno;
	if (n < ssize_t(sizeof b) || n > ssize_t(sizeof b + kMaxHost) || fds.size() != 1 || cut) {
		for (int fd : fds)
			deferredClose(fd);
		return n == 0 ? -ECONNRESET : -EINVAL;
	}
	memcpy(&b, msgBuf, sizeof b);
	listener = fds[0];
	base = b;
	host.assign(msgBuf + sizeof b, size_t(n) - sizeof b);
	return 0;
}

void answerHandOver(int sock, int err)
{
	uint8_t a = static_cast<uint8_t>(err > 0 && err < 256 ? err : (err ? EINVAL : 0));
	send(sock, &a, 1, MSG_DONTWAIT | MSG_NOSIGNAL);
}

int filteredExec(int argc, char **argv)
{
	/* argv: ibemud --seccomp-exec FD BASE PROGRAM ARGS... */
	if (argc < 5) {
		fprintf(stderr, "usage: ibemud --seccomp-exec FD BASE PROGRAM [ARGS...]\n");
		return 2;
	}
	int sock = atoi(argv[2]);
	int base = atoi(argv[3]);
	std::string err;
	int listener = installFilter(base, err);
	if (listener < 0 || handOver(sock, listener, base, {}, err) != 0) {
		fprintf(stderr, "ibemud --seccomp-exec: %s\n", err.c_str());
		return 126;
	}
	close(listener);
	close(sock);
	execvp(argv[4], argv + 4);
	fprintf(stderr, "ibemud --seccomp-exec: %s: %s\n", argv[4], strerrorname_np(errno));
	return 127;
}

} /* namespace ibemu::cuse_dev::seccomp */
