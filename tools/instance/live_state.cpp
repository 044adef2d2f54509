// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
#include "tools/instance/live_state.h"
#include "tools/instance/namespace.h"

#include <cerrno>
#include <climits>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <fstream>
#include <functional>
#include <iterator>
#include <poll.h>
#include <signal.h>
#include <sstream>
#include <sys/wait.h>
#include <unistd.h>

namespace ibemu::tools {

namespace {

using namespace std::chrono_literals;

/* The scheduler state of a process (R, S, D, T, ...), from /proc. */
char processState(int pid)
{
	std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
	std::string line;
	std::getline(in, line);
	size_t close = line.rfind(')');
	return close != std::string::npos && close + 2 < line.size() ? line[close + 2] : '?';
}

/* Forks; the child runs `body` with the write end of a pipe and exits with
 * what it returns. The parent collects what the child writes until it ends
 * or `limit` passes (then kills it). true when the child exited 0 in time;
 * timedOut says which failure it was. */
bool childOutput(const std::function<int(int fd)> &body, std::chrono::milliseconds limit, std::string &out,
		 bool &timedOut)
{
	timedOut = false;
	int fds[2];
	if (pipe2(fds, O_CLOEXEC) != 0)
		return false;
	pid_t child = fork();
	if (child < 0) {
		close(fds[0]);
		close(fds[1]);
		return false;
	}
	if (child == 0) {
		close(fds[0]);
		/* the child may outlive us (below): it must not hold our output
		 * open, or whoever reads it would wait for it too */
		int null = open("/dev/null", O_RDWR);
		if (null >= 0) {
			dup2(null, 1);
			dup2(null, 2);
		}
		_exit(body(fds[1]));
	}
	close(fds[1]);
	auto deadline = std::chrono::steady_clock::now() + limit;
	bool ended = false;
	for (;;) {
		auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline -
										  std::chrono::steady_clock::now());
		pollfd p{ fds[0], POLLIN, 0 };
		if (left.count() <= 0 || poll(&p, 1, int(left.count())) <= 0)
			break;
		char buf[65536];
		ssize_t n = read(fds[0], buf, sizeof buf);
		if (n <= 0) {
			ended = n == 0;
			break;
		}
		out.append(buf, size_t(n));
	}
	close(fds[0]);
	int status;
	if (!ended) {
		kill(child, SIGKILL);
		timedOut = true;
		/* A request the daemon has taken cannot be interrupted: with FUSE
		 * over io_uring it goes to the daemon's queues at once, and the
		 * kernel then waits for the answer, even after SIGKILL. Give the
		 * child a moment, then leave it (init reaps it once it dies). */
		for (int i = 0; i < 20; i++) {
			if (waitpid(child, &status, WNOHANG) == child)
				break;
			usleep(50 * 1000);
		}
		return false;
	}
	waitpid(child, &status, 0);
	return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

bool writeAll(int fd, const std::string &text)
{
	for (size_t at = 0; at < text.size();) {
		ssize_t n = write(fd, text.data() + at, text.size() - at);
		if (n <= 0)
			return false;
		at += size_t(n);
	}
	return true;
}

/* Does process pid have one of the instance's device files open? The
 * links in /proc/PID/fd name them as the daemon's namespace sees them;
 * alsoMark, if given, marks them too (the process's own
 * /dev/infiniband where that is the instance's). */
bool holdsDevices(int pid, const std::vector<std::string> &marks, const char *alsoMark)
{
	std::string dir = "/proc/" + std::to_string(pid) + "/fd";
	DIR *d = opendir(dir.c_str());
	if (!d)
		return false;
	bool found = false;
	while (dirent *e = readdir(d)) {
		char target[PATH_MAX];
		ssize_t n = readlinkat(dirfd(d), e->d_name, target, sizeof target - 1);
		if (n <= 0)
			continue;
		std::string t(target, size_t(n));
		for (const auto &m : marks)
			if (t.find(m) != std::string::npos)
				found = true;
		if (alsoMark && t.find(alsoMark) != std::string::npos)
			found = true;
	}
	closedir(d);
	return found;
}

/* Whether pid lives in the mount namespace of the daemon (where `ibemu
 * exec` puts its programs) or of one of its cluster hosts (`exec --host`;
 * the live status names each host's holder): how a program holding the
 * seccomp transport's files, which are sockets, is told from another that
 * took its pid since */
bool inInstanceNamespace(int pid, const nlohmann::json &live)
{
	auto ns = [](int p) {
		char target[64];
		std::string link = "/proc/" + std::to_string(p) + "/ns/mnt";
		ssize_t n = p > 0 ? readlink(link.c_str(), target, sizeof target) : -1;
		return n > 0 ? std::string(target, size_t(n)) : std::string();
	};
	std::string theirs = ns(pid);
	if (theirs.empty())
		return false;
	if (theirs == ns(live.value("pid", 0)))
		return true;
	for (const auto &h : live.value("hosts", nlohmann::json::array()))
		if (theirs == ns(h.value("holder", 0)))
			return true;
	return false;
}

} /* namespace */

bool loadJson(const std::string &path, nlohmann::json &j)
{
	std::ifstream in(path);
	if (!in)
		return false;
	try {
		in >> j;
	} catch (const std::exception &) {
		return false;
	}
	return true;
}

/* status.json is in the daemon's filesystem, mounted in its namespace only:
 * reached through its root in /proc. The daemon answers that read itself,
 * so the read happens in a child that is killed if no answer comes. */
bool loadLive(const Instance &inst, int daemonPid, nlohmann::json &j, std::string &why)
{
	std::string pid = std::to_string(daemonPid);
	char st = processState(daemonPid);
	if (st == 'T' || st == 't') {
		why = "ibemud (pid " + pid + ") is stopped (SIGSTOP?): no live state; `kill -CONT " + pid +
			"` resumes it";
		return false;
	}
	std::string text;
	bool timedOut;
	bool ok = childOutput(
		[&](int fd) {
			std::ifstream in("/proc/" + pid + "/root" + inst.fsDir() + "/status.json");
			std::string t((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
			return writeAll(fd, t) && !in.bad() ? 0 : 1;
		},
		5s, text, timedOut);
	if (timedOut)
		why = "ibemud (pid " + pid + ") did not answer within 5 s; showing what it reported at start";
	if (!ok)
		return false;
	try {
		j = nlohmann::json::parse(text);
	} catch (const std::exception &) {
		return false;
	}
	return true;
}

bool runInInstance(int daemonPid, const std::vector<std::string> &argv, std::chrono::seconds limit, std::string &out)
{
	bool timedOut;
	return childOutput(
		[&](int fd) {
			std::string err;
			if (joinMountNamespace(daemonPid, err) != 0)
				return 126;
			int null = open("/dev/null", O_RDWR);
			dup2(null, 0);
			dup2(null, 2);
			dup2(fd, 1);
			std::vector<char *> args;
			for (const auto &a : argv)
				args.push_back(const_cast<char *>(a.c_str()));
			args.push_back(nullptr);
			execvp(args[0], args.data());
			return 127;
		},
		limit, out, timedOut);
}

std::string smState(int daemonPid, std::string &why)
{
	std::string out;
	if (!runInInstance(daemonPid, { "sminfo" }, 10s, out)) {
		why = out.empty() ? "sminfo found no SM" : "sminfo: " + out;
		return "";
	}
	/* "sminfo: sm lid 1 sm guid 0x..., activity count 12 priority 0 state 3 SMINFO_MASTER" */
	size_t at = out.find("SMINFO_");
	if (at == std::string::npos) {
		why = "sminfo printed no state: " + out;
		return "";
	}
	size_t end = out.find_first_of(" \n", at);
	return out.substr(at, end == std::string::npos ? std::string::npos : end - at);
}

std::string tail(const std::string &path, size_t lines, bool first)
{
	std::ifstream in(path);
	std::vector<std::string> all;
	std::string l;
	while (std::getline(in, l))
		all.push_back(l);
	std::string out;
	size_t from = first || all.size() <= lines ? 0 : all.size() - lines;
	for (size_t i = from; i < all.size() && i < from + lines; i++)
		out += "  " + all[i] + "\n";
	return out;
}

std::string daemonComplaint(const std::string &path)
{
	std::istringstream lines(tail(path, 20));
	std::string out, l;
	while (std::getline(lines, l)) {
		/* "  [2026-11-29 10:27:26.071] [ibemud] [error] MESSAGE" */
		static const std::string name = "] [ibemud] [";
		size_t at = l.find(name), close = at == std::string::npos ? at : l.find("] ", at + name.size());
		if (l.compare(0, 3, "  [") != 0 || close == std::string::npos) {
			out += l + "\n"; /* not a log line: a message of its own */
			continue;
		}
		std::string level = l.substr(at + name.size(), close - at - name.size());
		if (level == "warning" || level == "error" || level == "critical")
			out += "  " + level + ": " + l.substr(close + 2) + "\n";
	}
	return out.empty() ? tail(path, 20) : out;
}

std::vector<Client> clientsOf(const Instance &inst, const nlohmann::json &live, int except)
{
	/* how the files appear: FUSE files under the run directory; CUSE nodes
	 * in the instance's directory of /dev/infiniband, or (--global) the
	 * standard names */
	std::vector<std::string> marks;
	if (live.value("transport", "") == "fuse")
		marks.push_back(inst.fsDir() + "/dev/");
	else if (live.value("global", false))
		marks.push_back("/dev/infiniband/");
	else
		marks.push_back("/ibemu-" + inst.name + "/");
	std::vector<Client> out;
	if (!live.contains("clients"))
		return out;
	for (const auto &c : live["clients"]) {
		int pid = c.value("pid", 0);
		if (pid <= 0 || pid == except || pid == getpid())
			continue;
		/* in the instance's or a host's mount namespace, /dev/infiniband
		 * is the instance's (a host's files are bind mounts there) */
		bool inside = inInstanceNamespace(pid, live);
		if (!(live.value("exec_transport", "") == "seccomp" && inside) &&
		    !holdsDevices(pid, marks, inside ? "/dev/infiniband/" : nullptr))
			continue;
		std::ifstream comm("/proc/" + std::to_string(pid) + "/comm");
		std::string name;
		std::getline(comm, name);
		out.push_back({ pid, name, c.value("files", 0u) });
	}
	return out;
}

} /* namespace ibemu::tools */
