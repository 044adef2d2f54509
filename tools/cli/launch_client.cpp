// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// The launch door's clients (tools/cli/launch_client.h).
#include "tools/cli/launch_client.h"

#include "emu/user_access.h"
#include "tools/cli/commands.h"

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <grp.h>
#include <linux/capability.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <unistd.h>
#include <vector>

namespace ibemu::tools {

namespace {

int refused(int err)
{
	std::string why = strerror(err);
	if (err == EAGAIN)
		why = "the daemon is running as many launches as it allows already (" +
			std::to_string(launch::kMaxLaunches) + ")";
	else if (err == EPERM)
		why = "the daemon launches for programs of its instance's `ibemu exec`, of its own user, that hold "
		      "no capability they dropped from their bounding or effective set";
	else if (err == EINVAL)
		why = "the daemon found the request malformed";
	else if (err == ETIMEDOUT)
		why = "the request did not reach the daemon in time";
	fprintf(stderr, "ibemu exec: the daemon did not run the command: %s\n", why.c_str());
	return 1;
}

bool sendAll(int s, const char *p, size_t n)
{
	while (n) {
		ssize_t w = send(s, p, n, MSG_NOSIGNAL);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return false;
		p += w;
		n -= size_t(w);
	}
	return true;
}

/* A descriptor closed when it goes out of scope */
struct OwnedFd {
	explicit OwnedFd(int f = -1) : fd(f) {}
	~OwnedFd()
	{
		if (fd >= 0)
			close(fd);
	}
	OwnedFd(const OwnedFd &) = delete;
	OwnedFd &operator=(const OwnedFd &) = delete;
	int fd;
};

} /* namespace */

int launchThroughDaemon(const std::string &path, const launch::Request &r)
{
	launch::RequestHead head;
	std::string bytes;
	if (!launch::encode(r, head, bytes)) {
		fprintf(stderr,
			"ibemu exec: the command and its environment are too large to launch (%zu bytes at most)\n",
			launch::kMaxBytes);
		return 1;
	}
	OwnedFd sock(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
	int s = sock.fd;
	sockaddr_un a{};
	a.sun_family = AF_UNIX;
	if (s < 0 || path.empty() || path.size() >= sizeof a.sun_path) {
		fprintf(stderr,
			"ibemu exec: the daemon has no launch door (an older ibemud, or no ibemu next to it)\n");
		return 1;
	}
	memcpy(a.sun_path, path.c_str(), path.size());
	if (connect(s, reinterpret_cast<sockaddr *>(&a), sizeof a) != 0) {
		fprintf(stderr, "ibemu exec: cannot reach the daemon's launch door %s: %s\n", path.c_str(),
			strerror(errno));
		return 1;
	}
	/* our 0, 1 and 2 are the command's (/dev/null for one we lack) */
	int fds[3];
	OwnedFd null[3];
	for (int i = 0; i < 3; i++)
		fds[i] = fcntl(i, F_GETFD) >= 0 ? i : (null[i].fd = open("/dev/null", O_RDWR | O_CLOEXEC));
	/* the signals the command gets from us, from now on */
	sigset_t forward;
	sigemptyset(&forward);
	for (int sig : { SIGINT, SIGTERM, SIGHUP })
		sigaddset(&forward, sig);
	sigprocmask(SIG_BLOCK, &forward, nullptr);
	OwnedFd signals(signalfd(-1, &forward, SFD_CLOEXEC));
	int sfd = signals.fd;
	if (sfd < 0) /* then they are not forwarded, and end us as before */
		sigprocmask(SIG_UNBLOCK, &forward, nullptr);
	launch::Answer ans{};
	size_t got = 0;
	if (emu::sendWithDescriptors(s, &head, sizeof head, fds, 3, MSG_NOSIGNAL) != ssize_t(sizeof head) ||
	    !sendAll(s, bytes.data(), bytes.size())) {
		/* a door that refuses at once (too many launches) answers and
		 * closes before our request is in: its answer is there */
		int e = errno;
		if (recv(s, &ans, sizeof ans, MSG_DONTWAIT) == ssize_t(sizeof ans) &&
		    ans.kind == launch::AnswerKind::Refused)
			return refused(ans.value);
		fprintf(stderr, "ibemu exec: the daemon's launch door closed: %s\n", strerror(e));
		return 1;
	}
	for (;;) {
		pollfd p[2] = { { s, POLLIN, 0 }, { sfd, POLLIN, 0 } };
		if (poll(p, sfd >= 0 ? 2 : 1, -1) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (sfd >= 0 && (p[1].revents & POLLIN)) {
			signalfd_siginfo si{};
			if (read(sfd, &si, sizeof si) == ssize_t(sizeof si)) {
				uint32_t sig = si.ssi_signo;
				sendAll(s, reinterpret_cast<const char *>(&sig), sizeof sig);
			}
		}
		if (p[0].revents) {
			ssize_t n = recv(s, reinterpret_cast<char *>(&ans) + got, sizeof ans - got, 0);
			if (n < 0 && errno == EINTR)
				continue;
			if (n <= 0)
				break;
			got += size_t(n);
			if (got == sizeof ans)
				break;
		}
	}
	if (got != sizeof ans) {
		fprintf(stderr, "ibemu exec: the daemon went away before the command ended\n");
		return 1;
	}
	switch (ans.kind) {
	case launch::AnswerKind::Exited:
		return ans.value & 0xff;
	case launch::AnswerKind::Signaled: /* ended as the command was */
		signal(ans.value, SIG_DFL);
		sigprocmask(SIG_UNBLOCK, &forward, nullptr);
		raise(ans.value);
		return 128 + ans.value;
	case launch::AnswerKind::Refused:
		return refused(ans.value);
	}
	fprintf(stderr, "ibemu exec: the daemon's answer makes no sense\n");
	return 1;
}

namespace {

/* The caller's resource limits, "CUR.MAX,..." in hex (tools/daemon/
 * launch_door.cpp), made ours: 0, or -1 with a message. */
int takeLimits(const std::string &limits)
{
	const char *p = limits.c_str();
	for (int r = 0; r < RLIM_NLIMITS && *p; r++) {
		char *end;
		rlimit lim{};
		lim.rlim_cur = strtoull(p, &end, 16);
		if (*end != '.')
			break;
		lim.rlim_max = strtoull(end + 1, &end, 16);
		if (setrlimit(__rlimit_resource(r), &lim) != 0) {
			perror("ibemu --launched: setrlimit");
			return -1;
		}
		p = *end ? end + 1 : end;
	}
	return 0;
}

/* The caller's "GID:GROUPS:CAPBND:CAPINH:NNP:UMASK:LIMITS" (tools/daemon/
 * launch_door.cpp) made ours: 0, or -1 with a message. */
int takeCreds(const char *creds)
{
	std::vector<std::string> f;
	for (const char *p = creds;; p++) {
		const char *e = strchr(p, ':');
		f.emplace_back(p, e ? size_t(e - p) : strlen(p));
		if (!e)
			break;
		p = e;
	}
	if (f.size() != 7) {
		fprintf(stderr, "ibemu --launched: malformed credentials\n");
		return -1;
	}
	/* while we may still raise a hard limit to the caller's */
	if (takeLimits(f[6]) != 0)
		return -1;
	umask(mode_t(strtoul(f[5].c_str(), nullptr, 8)));
	gid_t gid = gid_t(strtoul(f[0].c_str(), nullptr, 10));
	std::vector<gid_t> groups, mine(size_t(std::max(getgroups(0, nullptr), 0)));
	for (const char *p = f[1].c_str(); *p;) {
		char *end;
		groups.push_back(gid_t(strtoul(p, &end, 10)));
		p = *end ? end + 1 : end;
	}
	mine.resize(size_t(std::max(getgroups(int(mine.size()), mine.data()), 0)));
	std::sort(groups.begin(), groups.end());
	std::sort(mine.begin(), mine.end());
	if (groups != mine && setgroups(groups.size(), groups.data()) != 0) {
		perror("ibemu --launched: setgroups");
		return -1;
	}
	if ((getgid() != gid || getegid() != gid) && setresgid(gid, gid, gid) != 0) {
		perror("ibemu --launched: setresgid");
		return -1;
	}
	uint64_t bnd = strtoull(f[2].c_str(), nullptr, 16), inh = strtoull(f[3].c_str(), nullptr, 16);
	for (int cap = 0; cap < 64; cap++)
		if (!(bnd >> cap & 1) && prctl(PR_CAPBSET_READ, cap, 0, 0, 0) == 1 &&
		    prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0) {
			perror("ibemu --launched: dropping a capability from the bounding set");
			return -1;
		}
	/* what we hold, and may pass on, within what the caller could get */
	__user_cap_header_struct hdr{ _LINUX_CAPABILITY_VERSION_3, 0 };
	__user_cap_data_struct data[2]{};
	if (syscall(SYS_capget, &hdr, data) != 0) {
		perror("ibemu --launched: capget");
		return -1;
	}
	for (int i = 0; i < 2; i++) {
		auto b = uint32_t(bnd >> (32 * i)), in = uint32_t(inh >> (32 * i));
		data[i].effective &= b;
		data[i].permitted &= b;
		data[i].inheritable &= b & in;
	}
	prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
	if (syscall(SYS_capset, &hdr, data) != 0) {
		perror("ibemu --launched: capset");
		return -1;
	}
	if (f[4] == "1" && prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) {
		perror("ibemu --launched: no_new_privs");
		return -1;
	}
	return 0;
}

/* The caller's environment, NUL-separated words on descriptor fd (the
 * launch door's memfd), made ours: 0, or -1 with a message. */
int takeEnvironment(int fd)
{
	std::string words;
	char buf[65536];
	ssize_t n;
	while ((n = read(fd, buf, sizeof buf)) > 0 && words.size() <= launch::kMaxBytes)
		words.append(buf, size_t(n));
	close(fd);
	if (n < 0 || words.size() > launch::kMaxBytes) {
		fprintf(stderr, "ibemu --launched: cannot read the environment\n");
		return -1;
	}
	clearenv();
	for (size_t at = 0; at < words.size();) {
		std::string w = words.c_str() + at; /* up to its NUL */
		at += w.size() + 1;
		if (size_t eq = w.find('='); eq != std::string::npos && eq > 0)
			setenv(w.substr(0, eq).c_str(), w.c_str() + eq + 1, 1);
	}
	return 0;
}

} /* namespace */

bool launchedDirect(int argc, char **argv, int &exitCode)
{
	if (argc < 5 || strcmp(argv[1], "--launched") != 0)
		return false;
	/* none of the daemon's descriptors past the caller's 0-2 and the
	 * environment's 3, should one have been inherited */
	close_range(4, ~0U, 0);
	/* privilege first, then what the caller chose */
	if (takeCreds(argv[2]) != 0 || takeEnvironment(3) != 0) {
		exitCode = 126;
		return true;
	}
	/* looked up by exec in the namespaces it joins, not in the daemon's */
	std::string cwd = argv[3];
	if (cwd[0] != '/') {
		fprintf(stderr, "ibemu --launched: the working directory is not an absolute path\n");
		exitCode = 2;
		return true;
	}
	argv[3] = argv[0];
	if (!execDirect(argc - 3, argv + 3, exitCode, cwd.c_str())) {
		fprintf(stderr, "ibemu --launched: not an exec\n");
		exitCode = 2;
	}
	return true;
}

} /* namespace ibemu::tools */
