// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// Where ibemud is (ibemu's provider: tools/instance/host_verbs.h), an instance by name and its ready
// file, stopping its daemon and what is left of its run directory: what
// the instance commands share (tools/cli/instance_cmd.h).
#include "tools/cli/instance_cmd.h"
#include "tools/instance/host_verbs.h"

#include <chrono>
#include <cstdio>
#include <cstring>
#include <signal.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

namespace ibemu::tools::instance_cmd {

using namespace std::chrono_literals;

namespace {

/* pid has ended: gone, or a zombie its parent does not reap (a container
 * whose PID 1 reaps nothing, `sleep infinity`, say, inherits the daemon
 * that `up` left and keeps it a zombie for good) */
bool ended(int pid)
{
	if (kill(pid, 0) != 0)
		return true;
	char path[32], buf[512];
	snprintf(path, sizeof path, "/proc/%d/stat", pid);
	FILE *f = fopen(path, "re");
	if (!f)
		return false;
	size_t n = fread(buf, 1, sizeof buf - 1, f);
	fclose(f);
	buf[n] = 0;
	const char *comm = strrchr(buf, ')'); /* "PID (COMM) STATE ...": COMM may hold anything */
	return comm && comm[1] == ' ' && comm[2] == 'Z';
}

} /* namespace */

bool loadReady(const Instance &inst, nlohmann::json &j)
{
	return loadJson(inst.readyFile(), j);
}

std::string daemonPath()
{
	for (const std::string &p :
	     { programDir() + "/ibemud", programDir() + "/../sbin/ibemud", std::string(IBEMU_SBINDIR) + "/ibemud" })
		if (access(p.c_str(), X_OK) == 0)
			return p;
	return programDir() + "/ibemud";
}

bool instanceOf(const std::string &name, Instance &inst)
{
	std::string err;
	if (!makeInstance(name, inst, err)) {
		fprintf(stderr, "ibemu: %s\n", err.c_str());
		return false;
	}
	return true;
}

void leaveRunDir(const Instance &inst, bool keepLogs, const char *cmd)
{
	if (keepLogs) {
		/* after a failed up, next to its error */
		fprintf(strcmp(cmd, "up") == 0 ? stderr : stdout, "ibemu %s: logs kept in %s\n", cmd,
			inst.runDir.c_str());
		return;
	}
	std::string err;
	if (!removeRunDir(inst, err))
		fprintf(stderr, "ibemu %s: %s\n", cmd, err.c_str());
}

bool stopDaemon(int pid, const char *cmd)
{
	kill(pid, SIGTERM);
	/* `up` is its parent: reap it, or it would linger as a zombie */
	for (int i = 0; i < 1500 && waitpid(pid, nullptr, WNOHANG) <= 0 && !ended(pid); i++)
		std::this_thread::sleep_for(20ms);
	if (ended(pid))
		return true;
	/* the instance goes, but a daemon that needed this is a bug: say so */
	fprintf(stderr, "ibemu %s: ibemud (pid %d) did not stop in 30 s; killed it\n", cmd, pid);
	kill(pid, SIGKILL);
	return false;
}

std::string notRunning(const Instance &inst, const std::string &why, const char *hint)
{
	if (!why.empty())
		return why;
	return "instance \"" + inst.name + "\" is not running" + hint;
}

} /* namespace ibemu::tools::instance_cmd */
