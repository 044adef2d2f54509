// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
#include "tools/daemon/sm_process.h"

#include <spdlog/spdlog.h>

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

namespace ibemu::tools {

SmProcess::SmProcess(boost::asio::io_context &io, std::string smDir)
	: dir_(std::move(smDir)), sigchld_(io, SIGCHLD), killTimer_(io)
{}

SmProcess::~SmProcess()
{
	/* the daemon stops it first (stop()); this is the last resort */
	if (pid_ > 0) {
		kill(pid_, SIGKILL);
		waitpid(pid_, nullptr, 0);
	}
}

int SmProcess::start(const std::vector<std::string> &args, std::string &err)
{
	return start(args, -1, 0, err);
}

int SmProcess::start(const std::vector<std::string> &args, int sock, int base, std::string &err)
{
	for (const char *sub : { "", "/cache", "/tmp" })
		if (mkdir((dir_ + sub).c_str(), 0700) != 0 && errno != EEXIST) {
			int e = errno;
			err = "cannot create " + dir_ + sub + ": " + strerror(e);
			if (sock >= 0)
				close(sock);
			return -e;
		}

	std::vector<std::string> env;
	for (char **e = environ; *e; e++) /* ours, and the service manager's socket is not its to use */
		if (strncmp(*e, "OSM_CACHE_DIR=", 14) && strncmp(*e, "OSM_TMP_DIR=", 12) &&
		    strncmp(*e, "NOTIFY_SOCKET=", 14))
			env.emplace_back(*e);
	env.push_back("OSM_CACHE_DIR=" + dir_ + "/cache");
	env.push_back("OSM_TMP_DIR=" + dir_ + "/tmp");

	std::vector<std::string> argv{ "opensm", "-f", logFile() };
	if (sock >= 0) /* fd 3 in the child */
		argv.insert(argv.begin(), { "ibemud", "--seccomp-exec", "3", std::to_string(base) });
	argv.insert(argv.end(), args.begin(), args.end());

	std::vector<char *> cargv, cenv;
	for (auto &a : argv)
		cargv.push_back(a.data());
	cargv.push_back(nullptr);
	for (auto &e : env)
		cenv.push_back(e.data());
	cenv.push_back(nullptr);

	/* stdin from /dev/null, stdout and stderr to opensm.out, nothing else
	 * of ours (the FUSE and CUSE descriptors above all), default signals */
	posix_spawn_file_actions_t fa;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	posix_spawn_file_actions_addopen(&fa, 1, outFile().c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW, 0600);
	posix_spawn_file_actions_adddup2(&fa, 1, 2);
	if (sock >= 0)
		posix_spawn_file_actions_adddup2(&fa, sock, 3);
	posix_spawn_file_actions_addclosefrom_np(&fa, sock >= 0 ? 4 : 3);
	posix_spawnattr_t attr;
	posix_spawnattr_init(&attr);
	sigset_t none, defaults;
	sigemptyset(&none);
	sigfillset(&defaults);
	posix_spawnattr_setsigmask(&attr, &none);
	posix_spawnattr_setsigdefault(&attr, &defaults);
	posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSID);

	/* watch for its end before it can end */
	awaitChild();
	pid_t pid;
	int rc = sock >= 0 ? posix_spawn(&pid, "/proc/self/exe", &fa, &attr, cargv.data(), cenv.data())
			   : posix_spawnp(&pid, "opensm", &fa, &attr, cargv.data(), cenv.data());
	if (sock >= 0)
		close(sock);
	posix_spawn_file_actions_destroy(&fa);
	posix_spawnattr_destroy(&attr);
	if (rc != 0) {
		sigchld_.cancel();
		err = std::string("cannot run opensm: ") + strerror(rc) +
			(rc == ENOENT ? " (install the opensm package, or put opensm on PATH)" : "");
		return -rc;
	}
	pid_ = pid;
	spdlog::info("OpenSM: pid {}, log {}, cache {}/cache", pid_, logFile(), dir_);
	return 0;
}

void SmProcess::awaitChild()
{
	sigchld_.async_wait([this](const boost::system::error_code &ec, int) {
		if (ec)
			return;
		int status;
		if (pid_ > 0 && waitpid(pid_, &status, WNOHANG) == pid_) {
			reaped(status);
			return;
		}
		awaitChild();
	});
}

void SmProcess::reaped(int status)
{
	lastStatus_ = status;
	pid_ = 0;
	killTimer_.cancel();
	sigchld_.cancel();
	if (onStopped_) {
		spdlog::info("OpenSM: {}", state());
		auto done = std::move(onStopped_);
		onStopped_ = nullptr;
		done();
	} else {
		spdlog::warn("OpenSM {} on its own; its log: {}", state(), logFile());
	}
}

void SmProcess::stop(std::chrono::milliseconds grace, std::function<void()> done)
{
	if (pid_ <= 0) {
		done();
		return;
	}
	onStopped_ = std::move(done);
	spdlog::info("OpenSM: stopping pid {}", pid_);
	kill(pid_, SIGTERM);
	killTimer_.expires_after(grace);
	killTimer_.async_wait([this, grace](const boost::system::error_code &ec) {
		if (ec || pid_ <= 0)
			return;
		spdlog::warn("OpenSM (pid {}) did not stop within {} ms of SIGTERM: SIGKILL", pid_, grace.count());
		kill(pid_, SIGKILL);
	});
}

std::string SmProcess::state() const
{
	if (pid_ > 0)
		return "running";
	if (lastStatus_ < 0)
		return "not started";
	if (WIFEXITED(lastStatus_))
		return "exited with status " + std::to_string(WEXITSTATUS(lastStatus_));
	if (WIFSIGNALED(lastStatus_))
		return std::string("killed by signal ") + std::to_string(WTERMSIG(lastStatus_)) + " (" +
			strsignal(WTERMSIG(lastStatus_)) + ")";
	return "gone";
}

} /* namespace ibemu::tools */
