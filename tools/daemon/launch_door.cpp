// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// The launch door (tools/daemon/launch_door.h).
#include "tools/daemon/launch_door.h"

#include "cuse_dev/deferred_close.h"
#include "emu/user_access.h"
#include "fabric/types.h"
#include "tools/instance/launch_wire.h"

#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/steady_timer.hpp>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <fcntl.h>
#include <fstream>
#include <spawn.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef SO_PEERPIDFD
#define SO_PEERPIDFD 77 /* Linux 6.5 */
#endif
#ifndef P_PIDFD
#define P_PIDFD 3
#endif

namespace ibemu::tools {

using boost::asio::local::stream_protocol;

struct LaunchDoor::Launch {
	explicit Launch(boost::asio::io_context &io, stream_protocol::socket s)
		: sock(std::move(s)), deadline(io), child(io)
	{}
	stream_protocol::socket sock;
	boost::asio::steady_timer deadline; /* for the request to arrive whole */
	boost::asio::posix::stream_descriptor child; /* a pidfd of the command, once started */
	launch::RequestHead head;
	std::array<int, 3> stdio{ -1, -1, -1 };
	std::string bytes;
	std::string creds; /* the caller's, for `ibemu --launched` */
	pid_t pid = 0; /* the command's, while it is not reaped */
	int callerFd = -1; /* a pidfd of the connector, from accept to start() */
	pid_t caller = 0;
	uint32_t signo = 0; /* the last the caller forwarded */
	bool done = false;

	~Launch()
	{
		if (callerFd >= 0)
			::close(callerFd);
		for (int fd : stdio)
			if (fd >= 0)
				cuse_dev::deferredClose(fd);
	}
};

namespace {

/* "0000003fffffffff" from a /proc status line's value: the mask */
bool hexMask(const std::string &v, uint64_t &mask)
{
	char *end = nullptr;
	errno = 0;
	mask = strtoull(v.c_str(), &end, 16);
	return errno == 0 && end && end != v.c_str();
}

/* Whether /proc/A/ns/KIND and /proc/B/ns/KIND are one namespace */
bool sameNamespace(const std::string &a, const std::string &b, const char *kind)
{
	struct stat x {
	}, y{};
	return stat((a + "/ns/" + kind).c_str(), &x) == 0 && stat((b + "/ns/" + kind).c_str(), &y) == 0 &&
		x.st_dev == y.st_dev && x.st_ino == y.st_ino;
}

/* The caller's resource limits as `ibemu --launched` takes them:
 * "CUR.MAX,CUR.MAX..." in hex, RLIMIT_CPU on; false if one cannot be read */
bool callerLimits(pid_t pid, std::string &limits)
{
	for (int r = 0; r < RLIM_NLIMITS; r++) {
		rlimit lim{};
		if (prlimit(pid, __rlimit_resource(r), nullptr, &lim) != 0)
			return false;
		char one[48];
		snprintf(one, sizeof one, "%s%llx.%llx", r ? "," : "", static_cast<unsigned long long>(lim.rlim_cur),
			 static_cast<unsigned long long>(lim.rlim_max));
		limits += one;
	}
	return true;
}

/* The connector at the other end of sock, at accept: a pidfd of it (from
 * SO_PEERPIDFD, Linux 6.5, else pidfd_open() on SO_PEERCRED's pid now,
 * before that pid can be another's for long), its pid in pid; -1 with why
 * set when it is not of the daemon's user and user namespace, or gone. */
int connector(int sock, pid_t &pid, std::string &why)
{
	ucred cr{};
	socklen_t len = sizeof cr;
	if (getsockopt(sock, SOL_SOCKET, SO_PEERCRED, &cr, &len) != 0 || cr.pid <= 0) {
		why = "no credentials";
		return -1;
	}
	if (cr.uid != geteuid()) {
		why = "uid " + std::to_string(cr.uid) + " is not the daemon's";
		return -1;
	}
	int pidfd = -1;
	len = sizeof pidfd;
	if (getsockopt(sock, SOL_SOCKET, SO_PEERPIDFD, &pidfd, &len) != 0)
		pidfd = static_cast<int>(syscall(SYS_pidfd_open, cr.pid, 0));
	if (pidfd < 0) {
		why = "its process is gone";
		return -1;
	}
	if (!sameNamespace("/proc/self", "/proc/" + std::to_string(cr.pid), "user") ||
	    syscall(SYS_pidfd_send_signal, pidfd, 0, nullptr, 0u) != 0) {
		why = "another user namespace, or gone";
		close(pidfd);
		return -1;
	}
	pid = cr.pid;
	return pidfd;
}

/* The caller pid (pidfd, from connector()), as `ibemu --launched` takes
 * it (launchedDirect(), tools/cli/launch_client.cpp):
 * "GID:GROUP,GROUP...:CAPBND:CAPINH:NNP:UMASK:LIMITS". 0, or -EPERM when
 * it is gone, not of the daemon's user (all four ids), not a program of
 * the instance's `ibemu exec` (the mount and network namespaces of the
 * daemon, or of the host holderOf names for it), holds capabilities it
 * has dropped from its effective set or bounding set (it could regain
 * them), or cannot be told. */
int callerCreds(pid_t pid, int pidfd, const std::function<pid_t(pid_t)> &holderOf, std::string &creds,
		std::string &why)
{
	std::string proc = "/proc/" + std::to_string(pid);
	std::ifstream status(proc + "/status");
	std::string line, uids, gid, groups, bnd, inh, prm, eff, umask, nnp = "0";
	while (std::getline(status, line)) {
		size_t colon = line.find(':');
		if (colon == std::string::npos)
			continue;
		std::string key = line.substr(0, colon), val = line.substr(colon + 1);
		val.erase(0, val.find_first_not_of(" \t"));
		if (key == "Gid")
			gid = val.substr(0, val.find_first_of(" \t"));
		for (auto [name, to] : { std::pair{ "Uid", &uids }, { "Groups", &groups }, { "CapBnd", &bnd },
					 { "CapInh", &inh }, { "CapPrm", &prm }, { "CapEff", &eff },
					 { "Umask", &umask }, { "NoNewPrivs", &nnp } })
			if (key == name)
				*to = val;
	}
	/* a program of `ibemu exec`: in the mount namespace it joins (the
	 * daemon's, or a host's holder's) and the network namespace that
	 * goes with it (the daemon's, or that host's) */
	pid_t holder = holderOf(pid);
	std::string where = holder > 0 ? "/proc/" + std::to_string(holder) : "/proc/self";
	bool ofExec = sameNamespace(proc, where, "mnt") && sameNamespace(proc, where, "net");
	std::string limits;
	bool limited = callerLimits(pid, limits);
	/* what was read is of the peer itself: not a process that took its pid */
	bool alive = syscall(SYS_pidfd_send_signal, pidfd, 0, nullptr, 0u) == 0;
	uint64_t b = 0, i = 0, p = 0, e = 0;
	if (!alive || gid.empty() || !hexMask(bnd, b) || !hexMask(inh, i) || !hexMask(prm, p) || !hexMask(eff, e) ||
	    umask.empty() || !limited) {
		why = !alive ? "its process is gone" : "cannot read its status";
		return -EPERM;
	}
	if (!ofExec) {
		why = "not a program of the instance's `ibemu exec` (another mount or network namespace)";
		return -EPERM;
	}
	if (p != b || e != b) {
		why = "its permitted or effective capabilities are not its bounding set";
		return -EPERM;
	}
	std::string me = std::to_string(geteuid());
	for (size_t at = 0, n = 0; n < 4; n++) { /* real, effective, saved, filesystem */
		size_t end = uids.find_first_of(" \t", at);
		if (uids.substr(at, end == std::string::npos ? end : end - at) != me) {
			why = "user ids " + uids + " are not all the daemon's";
			return -EPERM;
		}
		at = end == std::string::npos ? uids.size() : uids.find_first_not_of(" \t", end);
		if (at == std::string::npos)
			at = uids.size();
	}
	std::replace(groups.begin(), groups.end(), ' ', ',');
	while (!groups.empty() && groups.back() == ',')
		groups.pop_back();
	char masks[64];
	snprintf(masks, sizeof masks, "%llx:%llx", static_cast<unsigned long long>(b),
		 static_cast<unsigned long long>(i));
	creds = gid + ":" + groups + ":" + masks + ":" + (nnp == "1" ? "1" : "0") + ":" + umask + ":" + limits;
	return 0;
}

/* A refusal in the log, at debug level: any program of the daemon's user
 * can ask for as many as it likes */
template <typename... Args>
void refusal(fmt::format_string<Args...> what, Args &&...args)
{
	if (spdlog::should_log(spdlog::level::debug))
		spdlog::debug("launch: refused {}", fmt::format(what, std::forward<Args>(args)...));
}

} /* namespace */

LaunchDoor::LaunchDoor(boost::asio::io_context &io, std::string cli, std::string instance,
		       std::function<pid_t(pid_t)> holderOf)
	: io_(io), cli_(std::move(cli)), instance_(std::move(instance)), holderOf_(std::move(holderOf))
{}

LaunchDoor::~LaunchDoor()
{
	close();
}

int LaunchDoor::listen(const std::string &path, std::string &err)
{
	return door_.listen(
		io_, path, [this](stream_protocol::socket s) { admit(std::move(s)); }, err);
}

void LaunchDoor::close()
{
	door_.close();
	auto launches = launches_;
	for (const auto &l : launches) {
		if (l->pid > 0)
			kill(-l->pid, SIGKILL);
		finish(l, 0, 0);
	}
}

void LaunchDoor::admit(stream_protocol::socket s)
{
	auto l = std::make_shared<Launch>(io_, std::move(s));
	launches_.insert(l);
	if (launches_.size() > launch::kMaxLaunches) {
		refusal("{} launches already", launch::kMaxLaunches);
		return finish(l, uint32_t(launch::AnswerKind::Refused), EAGAIN);
	}
	std::string why;
	l->callerFd = connector(l->sock.native_handle(), l->caller, why);
	if (l->callerFd < 0) { /* before reading anything of it */
		refusal("a caller: {}", why);
		return finish(l, uint32_t(launch::AnswerKind::Refused), EPERM);
	}
	l->deadline.expires_after(kRequestTime);
	l->deadline.async_wait([this, l](const boost::system::error_code &e) {
		if (!e && !l->done && l->pid == 0)
			finish(l, uint32_t(launch::AnswerKind::Refused), ETIMEDOUT);
	});
	readHead(l);
}

void LaunchDoor::readHead(const LaunchPtr &l)
{
	l->sock.async_wait(stream_protocol::socket::wait_read, [this, l](const boost::system::error_code &ec) {
		if (ec || l->done)
			return;
		std::vector<int> fds;
		bool cut = false;
		ssize_t n = emu::receiveWithDescriptors(l->sock.native_handle(), &l->head, sizeof l->head, MSG_DONTWAIT,
							fds, cut);
		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			return readHead(l);
		bool ok = n == ssize_t(sizeof l->head) && fds.size() == 3 && !cut && launch::headOk(l->head);
		for (size_t i = 0; i < fds.size(); i++)
			if (ok)
				l->stdio[i] = fds[i];
			else
				cuse_dev::deferredClose(fds[i]);
		if (!ok) {
			if (n != 0)
				refusal("a malformed request");
			return finish(l, uint32_t(launch::AnswerKind::Refused), EINVAL);
		}
		readStrings(l);
	});
}

void LaunchDoor::receive(const LaunchPtr &l, char *buf, size_t len, Next next)
{
	l->sock.async_wait(stream_protocol::socket::wait_read,
			   [this, l, buf, len, next](const boost::system::error_code &ec) {
				   if (ec || l->done)
					   return;
				   std::vector<int> fds;
				   bool cut = false;
				   ssize_t n = emu::receiveWithDescriptors(l->sock.native_handle(), buf, len,
									   MSG_DONTWAIT, fds, cut);
				   for (int fd : fds)
					   cuse_dev::deferredClose(fd);
				   if (n < 0 && (errno == EAGAIN || errno == EINTR))
					   return receive(l, buf, len, next);
				   if (n <= 0 || !fds.empty() || cut)
					   return next(l, false);
				   if (size_t(n) < len)
					   return receive(l, buf + n, len - size_t(n), next);
				   next(l, true);
			   });
}

void LaunchDoor::readStrings(const LaunchPtr &l)
{
	/* descriptors come with the head only (any later one is refused at
	 * its sendmsg, Linux 6.16, or received and closed off the io thread) */
	emu::refuseDescriptors(l->sock.native_handle());
	l->bytes.resize(l->head.bytes);
	receive(l, l->bytes.data(), l->bytes.size(), [this](const LaunchPtr &m, bool ok) {
		if (ok)
			start(m);
		else
			finish(m, uint32_t(launch::AnswerKind::Refused), EINVAL);
	});
}

void LaunchDoor::start(const LaunchPtr &l)
{
	launch::Request r;
	std::string why;
	if (launch::decode(l->head, l->bytes, r) != 0 || (!r.host.empty() && !fabric::isPathName(r.host)) ||
	    r.cwd.empty() || r.cwd[0] != '/') {
		refusal("a malformed request");
		return finish(l, uint32_t(launch::AnswerKind::Refused), EINVAL);
	}
	l->bytes = {};
	int rc = callerCreds(l->caller, l->callerFd, holderOf_, l->creds, why);
	::close(l->callerFd);
	l->callerFd = -1;
	if (rc != 0) {
		refusal("a caller: {}", why);
		return finish(l, uint32_t(launch::AnswerKind::Refused), EPERM);
	}
	/* ibemu --launched CREDS CWD exec --instance=I [--host=H] -- CMD... */
	std::vector<std::string> args{ cli_, "--launched", l->creds, r.cwd, "exec", "--instance=" + instance_ };
	if (!r.host.empty())
		args.push_back("--host=" + r.host);
	args.push_back("--");
	args.insert(args.end(), r.argv.begin(), r.argv.end());
	std::vector<char *> argv;
	for (auto &a : args)
		argv.push_back(a.data());
	argv.push_back(nullptr);
	/* The caller's environment reaches the command through descriptor 3,
	 * which `ibemu --launched` reads once it has no more privilege than
	 * the caller: ibemu starts with none, as an environment of the
	 * caller's (LD_PRELOAD, LD_LIBRARY_PATH) would run the caller's code
	 * in it before that, with the daemon's capabilities. */
	int envFd = memfd_create("ibemu-launch-env", MFD_CLOEXEC);
	std::string env;
	for (const auto &e : r.env)
		env.append(e.c_str(), e.size() + 1);
	if (envFd < 0 || write(envFd, env.data(), env.size()) != ssize_t(env.size()) ||
	    lseek(envFd, 0, SEEK_SET) != 0) {
		int e = errno;
		if (envFd >= 0)
			::close(envFd);
		spdlog::warn("launch: the environment's memfd: {}", strerror(e));
		return finish(l, uint32_t(launch::AnswerKind::Refused), e);
	}
	/* the spawned child's dup2s onto 0-3 must not overwrite one of
	 * these: above 3 (the daemon's 0-2 may be closed, when ours came
	 * at their numbers) */
	for (int *fd : { &l->stdio[0], &l->stdio[1], &l->stdio[2], &envFd })
		if (*fd <= 3) {
			int above = fcntl(*fd, F_DUPFD_CLOEXEC, 4);
			if (above < 0) {
				int e = errno;
				::close(envFd);
				spdlog::warn("launch: cannot move a descriptor: {}", strerror(e));
				return finish(l, uint32_t(launch::AnswerKind::Refused), e);
			}
			if (fd == &envFd)
				::close(*fd);
			else /* the caller's: its close may wait (a FUSE file's flush) */
				cuse_dev::deferredClose(*fd);
			*fd = above;
		}
	char *noEnv[] = { nullptr };
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t at;
	posix_spawn_file_actions_init(&fa);
	posix_spawnattr_init(&at);
	for (int i = 0; i < 3; i++)
		posix_spawn_file_actions_adddup2(&fa, l->stdio[i], i);
	/* Nothing closed here: the child holds the io thread until it execs
	 * (CLONE_VFORK), and a close can wait for a FUSE server (flush).
	 * Every descriptor of the daemon's is close-on-exec, closed once the
	 * io thread runs again; `ibemu --launched` closes any from 4 on. */
	posix_spawn_file_actions_adddup2(&fa, envFd, 3);
	sigset_t none, all;
	sigemptyset(&none);
	sigfillset(&all);
	posix_spawnattr_setsigmask(&at, &none);
	posix_spawnattr_setsigdefault(&at, &all);
	/* a session and process group of its own: the caller's signals and
	 * its end go to the whole command */
	posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSID | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
	pid_t pid = 0;
	rc = posix_spawn(&pid, cli_.c_str(), &fa, &at, argv.data(), noEnv);
	posix_spawn_file_actions_destroy(&fa);
	posix_spawnattr_destroy(&at);
	::close(envFd);
	for (int &fd : l->stdio) {
		cuse_dev::deferredClose(fd);
		fd = -1;
	}
	if (rc != 0) {
		spdlog::warn("launch: cannot start {}: {}", cli_, strerror(rc));
		return finish(l, uint32_t(launch::AnswerKind::Refused), rc);
	}
	l->pid = pid;
	l->deadline.cancel();
	/* our unreaped child: its pid cannot be another's */
	int pidfd = static_cast<int>(syscall(SYS_pidfd_open, pid, 0));
	if (pidfd < 0) {
		int e = errno;
		kill(-pid, SIGKILL);
		reap(pid);
		l->pid = 0;
		return finish(l, uint32_t(launch::AnswerKind::Refused), e);
	}
	spdlog::info("launch: pid {} runs `{}`{}", pid, r.argv[0], r.host.empty() ? "" : " on host " + r.host);
	l->child.assign(pidfd);
	watchChild(l);
	readSignals(l);
}

void LaunchDoor::watchChild(const LaunchPtr &l)
{
	l->child.async_wait(
		boost::asio::posix::stream_descriptor::wait_read, [this, l](const boost::system::error_code &ec) {
			if (ec || l->done)
				return;
			siginfo_t si{};
			if (waitid(idtype_t(P_PIDFD), l->child.native_handle(), &si, WEXITED | WNOHANG) != 0) {
				/* readable, and it will stay so: no second try */
				int e = errno;
				spdlog::warn("launch: pid {}: waitid: {}", l->pid, strerror(e));
				kill(-l->pid, SIGKILL);
				return finish(l, uint32_t(launch::AnswerKind::Refused), e);
			}
			if (si.si_pid == 0)
				return watchChild(l);
			l->pid = 0;
			bool exited = si.si_code == CLD_EXITED;
			finish(l, uint32_t(exited ? launch::AnswerKind::Exited : launch::AnswerKind::Signaled),
			       si.si_status);
		});
}

void LaunchDoor::reap(pid_t pid)
{
	if (waitpid(pid, nullptr, WNOHANG) != 0)
		return;
	auto t = std::make_shared<boost::asio::steady_timer>(io_, std::chrono::milliseconds(50));
	t->async_wait([this, t, pid](const boost::system::error_code &ec) {
		if (!ec)
			reap(pid);
	});
}

void LaunchDoor::readSignals(const LaunchPtr &l)
{
	receive(l, reinterpret_cast<char *>(&l->signo), sizeof l->signo, [this](const LaunchPtr &m, bool ok) {
		if (m->pid == 0)
			return;
		if (!ok) { /* the caller is gone (or broke the protocol): so is its command */
			kill(-m->pid, SIGKILL);
			return;
		}
		if (m->signo == SIGINT || m->signo == SIGTERM || m->signo == SIGHUP)
			kill(-m->pid, int(m->signo));
		readSignals(m);
	});
}

void LaunchDoor::finish(const LaunchPtr &l, uint32_t kind, int32_t value)
{
	if (l->done)
		return;
	l->done = true;
	if (kind) {
		launch::Answer a{ launch::AnswerKind(kind), value };
		send(l->sock.native_handle(), &a, sizeof a, MSG_DONTWAIT | MSG_NOSIGNAL);
	}
	boost::system::error_code ec;
	l->deadline.cancel();
	if (l->child.is_open())
		l->child.close(ec);
	if (l->sock.is_open()) {
		l->sock.cancel(ec);
		cuse_dev::deferredClose(l->sock.release(ec));
	}
	launches_.erase(l);
}

} /* namespace ibemu::tools */
