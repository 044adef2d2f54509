// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// The cluster hosts' namespaces (tools/daemon/host_namespaces.h): a holder
// child per host. The daemon has threads, so a child does nothing but
// system calls on what was prepared before the fork (no allocation): it
// closes everything of the daemon's, takes a pidfd of the daemon,
// unshares a mount and a network namespace, mounts the host's view over
// the instance's (its device files bind-mounted, not linked: the
// instance's directories of them are covered), brings its loopback up,
// says so on a pipe and waits on the pidfd.
#include "tools/daemon/host_namespaces.h"

#include <cerrno>
#include <csignal>
#include <cstring>
#include <fcntl.h>
#include <net/if.h>
#include <poll.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

namespace ibemu::tools {

namespace {

/* What a holder reports: the step that failed (0: none) and its errno. */
struct Report {
	int step = 0;
	int err = 0;
};

constexpr const char *kSteps[] = { "",
				   "unshare(CLONE_NEWNS | CLONE_NEWNET | CLONE_NEWUTS)",
				   "a bind mount",
				   "tmpfs on /dev/infiniband",
				   "a device file in /dev/infiniband",
				   "bringing lo up",
				   "pidfd_open of the daemon",
				   "an empty tmpfs over the instance's device files or sysfs views",
				   "close_range",
				   "sethostname" };

[[noreturn]] void holderFail(int rep, int step)
{
	Report r{ step, errno };
	(void)!write(rep, &r, sizeof r);
	_exit(1);
}

/* In the child: system calls only. */
[[noreturn]] void hold(int rep, pid_t daemon, const std::string &name, const std::vector<const char *> &binds,
		       const std::vector<const char *> &devices, const std::vector<const char *> &covers)
{
	struct sigaction dfl {};
	dfl.sa_handler = SIG_DFL;
	for (int sig : { SIGTERM, SIGINT, SIGHUP, SIGCHLD })
		sigaction(sig, &dfl, nullptr);
	sigset_t none;
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, nullptr);
	prctl(PR_SET_NAME, "ibemu-host", 0, 0, 0);
	/* nothing of the daemon's stays open here (its sockets, its lock, and
	 * above all /dev/fuse and the CUSE sessions: a holder keeping them
	 * would keep a dead daemon's FUSE connection from being aborted, and
	 * itself hang in a mount() that looks a path up there); and the
	 * daemon must still be there before we look anything up */
	if ((rep > 0 && syscall(SYS_close_range, 0u, static_cast<unsigned>(rep - 1), 0u) != 0) ||
	    syscall(SYS_close_range, static_cast<unsigned>(rep + 1), ~0u, 0u) != 0)
		holderFail(rep, 8);
	int pidfd = static_cast<int>(syscall(SYS_pidfd_open, daemon, 0));
	if (pidfd < 0 || getppid() != daemon)
		holderFail(rep, 6);
	if (unshare(CLONE_NEWNS | CLONE_NEWNET | CLONE_NEWUTS) != 0)
		holderFail(rep, 1);
	/* `hostname`, MPI_Get_processor_name: a node of its own */
	if (sethostname(name.data(), name.size()) != 0)
		holderFail(rep, 9);
	for (size_t i = 0; i + 1 < binds.size(); i += 2)
		if (mount(binds[i], binds[i + 1], nullptr, MS_BIND, nullptr) != 0)
			holderFail(rep, 2);
	if (mount("tmpfs", "/dev/infiniband", "tmpfs", MS_NOSUID | MS_NOEXEC, "mode=0755") != 0)
		holderFail(rep, 3);
	/* bind mounts, not links: a link's target would be every HCA's */
	for (size_t i = 0; i + 1 < devices.size(); i += 2) {
		int f = open(devices[i], O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
		if (f < 0)
			holderFail(rep, 4);
		close(f);
		if (mount(devices[i + 1], devices[i], nullptr, MS_BIND, nullptr) != 0)
			holderFail(rep, 4);
	}
	for (const char *dir : covers) /* one the transport does not make (CUSE: no fs/dev) has nothing to hide */
		if (mount("tmpfs", dir, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC | MS_RDONLY, "mode=0555") != 0 &&
		    errno != ENOENT)
			holderFail(rep, 7);
	int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	ifreq ifr{};
	memcpy(ifr.ifr_name, "lo", 3);
	if (s < 0 || ioctl(s, SIOCGIFFLAGS, &ifr) != 0)
		holderFail(rep, 5);
	ifr.ifr_flags = static_cast<short>(ifr.ifr_flags | IFF_UP);
	if (ioctl(s, SIOCSIFFLAGS, &ifr) != 0)
		holderFail(rep, 5);
	close(s);
	Report ok;
	(void)!write(rep, &ok, sizeof ok);
	close(rep);
	pollfd p{ pidfd, POLLIN, 0 };
	while (poll(&p, 1, -1) < 0 && errno == EINTR)
		;
	_exit(0);
}

} /* namespace */

HostNamespaces::~HostNamespaces()
{
	stop();
}

int HostNamespaces::start(const std::vector<HostView> &views, std::string &err)
{
	pid_t daemon = getpid();
	for (const auto &v : views) {
		std::vector<std::string> devPaths;
		for (const auto &[name, file] : v.devices)
			devPaths.push_back("/dev/infiniband/" + name);
		std::vector<const char *> binds, devices, covers;
		for (const auto &[from, to] : v.binds)
			binds.insert(binds.end(), { from.c_str(), to.c_str() });
		for (size_t i = 0; i < v.devices.size(); i++)
			devices.insert(devices.end(), { devPaths[i].c_str(), v.devices[i].second.c_str() });
		for (const auto &dir : v.covers)
			covers.push_back(dir.c_str());
		int rep[2];
		if (pipe2(rep, O_CLOEXEC) != 0) {
			err = "host " + v.name + ": pipe: " + strerror(errno);
			stop();
			return -EIO;
		}
		pid_t pid = fork();
		if (pid == 0) {
			close(rep[0]);
			hold(rep[1], daemon, v.name, binds, devices, covers);
		}
		int e = errno;
		close(rep[1]);
		Report r{ 0, 0 };
		bool said = pid > 0 && read(rep[0], &r, sizeof r) == sizeof r;
		close(rep[0]);
		Entry en;
		en.name = v.name;
		en.pid = pid > 0 ? pid : 0;
		std::string ns = "/proc/" + std::to_string(pid) + "/ns/net";
		struct stat st {};
		if (said && r.step == 0) {
			en.netFd = open(ns.c_str(), O_RDONLY | O_CLOEXEC);
			if (en.netFd < 0 || fstat(en.netFd, &st) != 0)
				r = { -1, errno };
		}
		en.netDev = st.st_dev;
		en.netIno = st.st_ino;
		hosts_.push_back(std::move(en));
		if (pid < 0 || !said || r.step != 0) {
			err = "host " + v.name + ": " +
				(pid < 0       ? std::string("fork: ") + strerror(e)
				 : !said       ? std::string("its namespaces' holder ended at start")
				 : r.step > 0  ? std::string(kSteps[r.step]) + ": " + strerror(r.err)
					       : "open " + ns + ": " + strerror(r.err));
			stop();
			return -(r.err ? r.err : EIO);
		}
	}
	ready_.store(true, std::memory_order_release);
	return 0;
}

void HostNamespaces::stop()
{
	ready_.store(false, std::memory_order_release);
	for (auto &h : hosts_) {
		if (h.netFd >= 0)
			close(h.netFd);
		if (h.pid > 0) {
			kill(h.pid, SIGKILL);
			while (waitpid(h.pid, nullptr, 0) < 0 && errno == EINTR)
				;
		}
	}
	hosts_.clear();
}

int HostNamespaces::netns(const std::string &name) const
{
	if (!ready_.load(std::memory_order_acquire))
		return -1;
	for (const auto &h : hosts_)
		if (h.name == name)
			return h.netFd;
	return -1;
}

pid_t HostNamespaces::holder(const std::string &name) const
{
	if (!ready_.load(std::memory_order_acquire))
		return 0;
	for (const auto &h : hosts_)
		if (h.name == name)
			return h.pid;
	return 0;
}

std::string HostNamespaces::hostOf(pid_t tid) const
{
	if (!ready_.load(std::memory_order_acquire) || hosts_.empty())
		return {};
	struct stat st;
	std::string ns = "/proc/" + std::to_string(tid) + "/ns/net";
	if (stat(ns.c_str(), &st) != 0)
		return {};
	for (const auto &h : hosts_)
		if (h.netDev == st.st_dev && h.netIno == st.st_ino)
			return h.name;
	return {};
}

} /* namespace ibemu::tools */
