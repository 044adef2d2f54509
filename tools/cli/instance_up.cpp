// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// `ibemu up`: start ibemud in the background and wait until its devices
// are ready and, with --sm, until OpenSM made every cabled local port ACTIVE
// (tools/cli/instance_cmd.h).
#include "tools/cli/instance_cmd.h"
#include "tools/control/json_text.h"

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

namespace ibemu::tools::instance_cmd {

using namespace std::chrono_literals;

namespace {

/* Why `up --sm` is not done yet: a cabled port not ACTIVE, the SM gone, or
 * "" when every local port with a cable (physically LinkUp) is ACTIVE and
 * sminfo sees a MASTER; a port without one never becomes ACTIVE, on
 * hardware either, and is not waited for. fatal: no point in waiting any
 * longer. (A daemon that exited is up's to notice: its child.) */
std::string notUpYet(const Instance &inst, int pid, bool &fatal)
{
	fatal = false;
	nlohmann::json j;
	std::string why;
	if (!loadLive(inst, pid, j, why))
		return why.empty() ? "no status from ibemud" : why;
	if (j.contains("sm") && j["sm"].value("state", "") != "running") {
		fatal = true;
		return "OpenSM " + j["sm"].value("state", "");
	}
	for (const auto &d : j["devices"])
		for (const auto &p : d["ports"])
			if (p.value("phys_state", "") == "LinkUp" && p.value("state", "") != "ACTIVE")
				return d.value("ibdev", "") + " port " + std::to_string(p.value("port", 0)) + " is " +
					p.value("state", "?") + ", not ACTIVE";
	std::string state = smState(pid, why);
	if (state != "SMINFO_MASTER")
		return state.empty() ? why : "sminfo reports " + state + ", not SMINFO_MASTER";
	return "";
}

/* the local ports `up --sm` did not wait for, on standard error */
void sayUncabled(const nlohmann::json &live)
{
	for (const auto &d : live["devices"])
		for (const auto &p : d["ports"])
			if (std::string phys = p.value("phys_state", "?"); phys != "LinkUp")
				fprintf(stderr, "ibemu up: %s port %d %s; not waited for\n",
					d.value("ibdev", "").c_str(), p.value("port", 0),
					phys == "Polling" ? "has no cable (Polling)" : ("is " + phys).c_str());
}

} /* namespace */

int up(const std::vector<std::string> &daemonArgs, const Instance &inst, const UpOpts &o)
{
	if (geteuid() != 0) {
		fprintf(stderr,
			"ibemu up: must run as root (ibemud mounts a FUSE filesystem and a namespace); try "
			"`sudo ibemu up`\n");
		return 1;
	}
	if (access("/dev/fuse", R_OK | W_OK) != 0) {
		fprintf(stderr,
			"ibemu up: /dev/fuse is missing or not accessible (%s); load the fuse module (in a container: "
			"--device /dev/fuse)\n",
			strerror(errno));
		return 1;
	}
	if (int pid = runningPid(inst)) {
		fprintf(stderr,
			"ibemu up: instance \"%s\" is already running (pid %d); `ibemu down --instance %s` first\n",
			inst.name.c_str(), pid, inst.name.c_str());
		return 1;
	}
	std::string err;
	if (!prepareRunDir(inst, err)) {
		fprintf(stderr, "ibemu up: %s\n", err.c_str());
		return 1;
	}
	unlink(inst.readyFile().c_str());

	std::string daemon = daemonPath();
	pid_t pid = fork();
	if (pid < 0) {
		perror("ibemu up: fork");
		return 1;
	}
	if (pid == 0) {
		setsid();
		int out = open(inst.outFile().c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
		int null = open("/dev/null", O_RDONLY);
		if (out >= 0) {
			dup2(out, 1);
			dup2(out, 2);
		}
		if (null >= 0)
			dup2(null, 0);
		std::vector<char *> argv;
		argv.push_back(const_cast<char *>(daemon.c_str()));
		for (const auto &a : daemonArgs)
			argv.push_back(const_cast<char *>(a.c_str()));
		argv.push_back(nullptr);
		execv(daemon.c_str(), argv.data());
		fprintf(stderr, "cannot run %s: %s\n", daemon.c_str(), strerror(errno));
		_exit(127);
	}

	/* the devices, then (--sm) an SM that made every cabled local port ACTIVE */
	nlohmann::json ready;
	std::string why;
	bool fatal = false;
	auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(o.waitTimeout);
	while (std::chrono::steady_clock::now() < deadline) {
		int status;
		if (waitpid(pid, &status, WNOHANG) == pid) {
			fprintf(stderr, "ibemu up: ibemud failed to start (exit %d):\n%s",
				WIFEXITED(status) ? WEXITSTATUS(status) : -1, daemonComplaint(inst.outFile()).c_str());
			leaveRunDir(inst, o.keepLogs, "up");
			return 1;
		}
		if (ready.empty() && !loadReady(inst, ready)) {
			std::this_thread::sleep_for(20ms);
			continue;
		}
		if (!o.sm)
			break;
		why = notUpYet(inst, pid, fatal);
		if (why.empty() || fatal)
			break;
		std::this_thread::sleep_for(200ms);
	}
	if (!ready.empty() && (!o.sm || why.empty())) {
		nlohmann::json live; /* with --sm: the ports as the SM left them */
		std::string ignored;
		if (o.sm && loadLive(inst, pid, live, ignored))
			ready = live;
		if (o.json)
			printf("%s\n", jsonText(ready).c_str());
		else
			printDevices(ready);
		if (o.sm)
			sayUncabled(ready);
		return 0;
	}
	if (ready.empty())
		fprintf(stderr, "ibemu up: ibemud did not become ready in %u s:\n%s", o.waitTimeout,
			tail(inst.outFile(), 20).c_str());
	else {
		/* an OpenSM that exited said why on its output; a running one logs */
		std::string log = inst.runDir + (fatal ? "/opensm/opensm.out" : "/opensm/opensm.log");
		if (fatal)
			fprintf(stderr, "ibemu up: the subnet did not come up: %s\n", why.c_str());
		else
			fprintf(stderr, "ibemu up: the subnet did not come up in %u s: %s\n", o.waitTimeout,
				why.c_str());
		/* OpenSM prints its complaint about arguments first, then usage */
		fprintf(stderr, "%s %s:\n%s", fatal ? "the start of" : "the end of", log.c_str(),
			tail(log, 10, fatal).c_str());
	}
	stopDaemon(pid, "up");
	waitpid(pid, nullptr, 0);
	leaveRunDir(inst, o.keepLogs, "up");
	return 1;
}

} /* namespace ibemu::tools::instance_cmd */
