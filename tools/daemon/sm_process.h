// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// OpenSM run by ibemud inside its instance (`ibemu up --sm`).
//
// OpenSM hangs when its umad files vanish under it, as it does when a real
// HCA is removed. So the daemon that owns the files owns OpenSM too: it
// starts it once the devices are mounted, in the instance's namespace, with
// its cache, temp files and log in the run directory (never the machine's
// /var/cache/opensm), and at shutdown stops it, and waits for it, before a
// single file goes.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>

#include <functional>
#include <string>
#include <sys/types.h>
#include <vector>

namespace ibemu::tools {

class SmProcess {
public:
	/* smDir: the directory for OpenSM's cache, temp files and log */
	SmProcess(boost::asio::io_context &io, std::string smDir);
	~SmProcess();
	SmProcess(const SmProcess &) = delete;
	SmProcess &operator=(const SmProcess &) = delete;

	/* Starts `opensm -f <smDir>/opensm.log ARGS`; its stdout and stderr
	 * go to <smDir>/opensm.out. 0, or a negative errno with err set. */
	int start(const std::vector<std::string> &args, std::string &err);
	/* The same under the seccomp transport's filter: ibemud itself starts
	 * first (`--seccomp-exec`), installs the filter, hands its listener
	 * over sock (its end of a socket pair; taken) and runs OpenSM. */
	int start(const std::vector<std::string> &args, int sock, int base, std::string &err);
	/* SIGTERM, then SIGKILL if it is still there after `grace`; `done` runs
	 * once it has been reaped (at once when it is not running). Called once:
	 * the daemon stops once. */
	void stop(std::chrono::milliseconds grace, std::function<void()> done);

	pid_t pid() const { return pid_; }
	bool running() const { return pid_ > 0; }
	/* "running", "exited with status N", "killed by signal N", "not started" */
	std::string state() const;
	std::string logFile() const { return dir_ + "/opensm.log"; }
	std::string outFile() const { return dir_ + "/opensm.out"; }

private:
	void awaitChild();
	void reaped(int status);

	std::string dir_;
	boost::asio::signal_set sigchld_;
	boost::asio::steady_timer killTimer_;
	pid_t pid_ = 0;
	int lastStatus_ = -1; /* wait status once reaped */
	std::function<void()> onStopped_;
};

} /* namespace ibemu::tools */
