// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// `ibemu up | down | exec | shell | status`: running instances of ibemud.
#include "tools/commands.h"
#include "tools/instance.h"
#include "tools/namespace.h"

#include <nlohmann/json.hpp>

#include <cerrno>
#include <chrono>
#include <climits>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <fstream>
#include <iterator>
#include <poll.h>
#include <signal.h>
#include <sstream>
#include <sys/stat.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

namespace ibemu::tools {

namespace {

using namespace std::chrono_literals;

std::string selfDir()
{
	char buf[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
	if (n <= 0)
		return ".";
	buf[n] = 0;
	std::string p(buf);
	return p.substr(0, p.rfind('/'));
}

std::string tail(const std::string &path, size_t lines)
{
	std::ifstream in(path);
	std::vector<std::string> all;
	std::string l;
	while (std::getline(in, l))
		all.push_back(l);
	std::string out;
	for (size_t i = all.size() > lines ? all.size() - lines : 0; i < all.size(); i++)
		out += "  " + all[i] + "\n";
	return out;
}

/* A JSON file the daemon wrote; false when missing or not (yet) whole. */
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

/* What the daemon reported when its devices became ready. */
bool loadReady(const Instance &inst, nlohmann::json &j) { return loadJson(inst.readyFile(), j); }

/* The scheduler state of a process (R, S, D, T, ...), from /proc. */
char processState(int pid)
{
	std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
	std::string line;
	std::getline(in, line);
	size_t close = line.rfind(')');
	return close != std::string::npos && close + 2 < line.size() ? line[close + 2] : '?';
}

/* Live state from the daemon's filesystem, reached through its root in
 * /proc (it is mounted in the daemon's namespace only). The daemon answers
 * that read itself, so a stopped or stuck daemon would hold us forever: the
 * read happens in a child that is killed if no answer comes in time. */
bool loadLive(const Instance &inst, int pid, nlohmann::json &j, std::string &why)
{
	char st = processState(pid);
	if (st == 'T' || st == 't') {
		why = "ibemud (pid " + std::to_string(pid) + ") is stopped (SIGSTOP?): no live state; `kill -CONT " +
		      std::to_string(pid) + "` resumes it";
		return false;
	}
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
		std::ifstream in("/proc/" + std::to_string(pid) + "/root" + inst.fsDir() + "/status.json");
		std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
		for (size_t at = 0; at < text.size();) {
			ssize_t n = write(fds[1], text.data() + at, text.size() - at);
			if (n <= 0)
				_exit(1);
			at += size_t(n);
		}
		_exit(in.bad() ? 1 : 0);
	}
	close(fds[1]);
	std::string text;
	auto deadline = std::chrono::steady_clock::now() + 5s;
	bool answered = false;
	for (;;) {
		auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
		pollfd p{ fds[0], POLLIN, 0 };
		if (left.count() <= 0 || poll(&p, 1, int(left.count())) <= 0)
			break;
		char buf[65536];
		ssize_t n = read(fds[0], buf, sizeof buf);
		if (n <= 0) {
			answered = n == 0;
			break;
		}
		text.append(buf, size_t(n));
	}
	close(fds[0]);
	if (!answered) {
		kill(child, SIGKILL);
		why = "ibemud (pid " + std::to_string(pid) + ") did not answer within 5 s; showing what it reported at start";
	}
	int status;
	waitpid(child, &status, 0);
	if (!answered || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
		return false;
	try {
		j = nlohmann::json::parse(text);
	} catch (const std::exception &) {
		return false;
	}
	return true;
}

void printDevices(const nlohmann::json &j)
{
	printf("ibemu instance \"%s\" is up (pid %d, %s transport, fabric %s: %d switches, %d CAs, %d links)\n",
	       j.value("instance", "").c_str(), j.value("pid", 0), j.value("transport", "").c_str(),
	       j.value("topology", "").c_str(), j["fabric"].value("switches", 0), j["fabric"].value("cas", 0),
	       j["fabric"].value("links", 0));
	for (const auto &d : j["devices"]) {
		printf("  %s  node GUID %s  \"%s\"\n", d.value("ibdev", "").c_str(), d.value("node_guid", "").c_str(),
		       d.value("node", "").c_str());
		for (const auto &p : d["ports"]) {
			printf("    port %d: %s %s", p.value("port", 0), p.value("umad", "").c_str(), p.value("issm", "").c_str());
			if (p.contains("state"))
				printf("  %s/%s  LID %d  SM LID %d  %s%s  %d open", p.value("state", "").c_str(),
				       p.value("phys_state", "").c_str(), p.value("lid", 0), p.value("sm_lid", 0),
				       p.value("rate", "").c_str(), p.value("issm_held", false) ? "  (issm held)" : "",
				       p.value("open_files", 0));
			printf("\n");
		}
		if (d.contains("uverbs")) {
			printf("    verbs: %s", d.value("uverbs", "").c_str());
			if (d.contains("verbs_open_files"))
				printf("  %d open", d.value("verbs_open_files", 0));
			printf("\n");
		}
	}
	if (j.contains("pinned") && !j["pinned"].empty()) {
		printf("  pinned memory (RLIMIT_MEMLOCK accounting):\n");
		for (const auto &p : j["pinned"])
			printf("    pid %d: %llu pages (%llu KiB)\n", p.value("pid", 0),
			       static_cast<unsigned long long>(p.value("pinned_pages", 0ull)),
			       static_cast<unsigned long long>(p.value("pinned_bytes", 0ull) / 1024));
	}
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

int up(const std::vector<std::string> &daemonArgs, const Instance &inst, bool json)
{
	if (geteuid() != 0) {
		fprintf(stderr, "ibemu up: must run as root (ibemud mounts a FUSE filesystem and a namespace)\n");
		return 1;
	}
	if (access("/dev/fuse", R_OK | W_OK) != 0) {
		fprintf(stderr, "ibemu up: /dev/fuse is missing or not accessible (%s); load the fuse module\n", strerror(errno));
		return 1;
	}
	if (int pid = runningPid(inst)) {
		fprintf(stderr, "ibemu up: instance \"%s\" is already running (pid %d); `ibemu down --instance %s` first\n",
			inst.name.c_str(), pid, inst.name.c_str());
		return 1;
	}
	std::string err;
	if (!prepareRunDir(inst, err)) {
		fprintf(stderr, "ibemu up: %s\n", err.c_str());
		return 1;
	}
	unlink(inst.readyFile().c_str());

	std::string daemon = selfDir() + "/ibemud";
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
	for (auto deadline = std::chrono::steady_clock::now() + 60s; std::chrono::steady_clock::now() < deadline;) {
		int status;
		if (waitpid(pid, &status, WNOHANG) == pid) {
			fprintf(stderr, "ibemu up: ibemud failed to start (exit %d):\n%s", WIFEXITED(status) ? WEXITSTATUS(status) : -1,
				tail(inst.outFile(), 20).c_str());
			return 1;
		}
		nlohmann::json j;
		if (loadReady(inst, j)) {
			if (json)
				printf("%s\n", j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
			else
				printDevices(j);
			return 0;
		}
		std::this_thread::sleep_for(20ms);
	}
	kill(pid, SIGTERM);
	fprintf(stderr, "ibemu up: ibemud did not become ready in 60 s:\n%s", tail(inst.outFile(), 20).c_str());
	return 1;
}

int down(const Instance &inst)
{
	std::string why;
	int pid = runningPid(inst, &why);
	if (!pid) {
		if (!why.empty())
			fprintf(stderr, "ibemu down: %s\n", why.c_str());
		else
			fprintf(stderr, "ibemu down: instance \"%s\" is not running\n", inst.name.c_str());
		return 1;
	}
	kill(pid, SIGTERM);
	for (int i = 0; i < 500 && kill(pid, 0) == 0; i++)
		std::this_thread::sleep_for(20ms);
	if (kill(pid, 0) == 0) {
		/* the instance goes, but a daemon that needed this is a bug: say so */
		fprintf(stderr, "ibemu down: ibemud (pid %d) did not stop in 10 s; killed it\n", pid);
		kill(pid, SIGKILL);
		return 1;
	}
	printf("ibemu instance \"%s\" is down\n", inst.name.c_str());
	return 0;
}

int exec(const Instance &inst, const std::vector<std::string> &cmd)
{
	std::string why;
	int pid = runningPid(inst, &why);
	if (!pid) {
		if (!why.empty())
			fprintf(stderr, "ibemu exec: %s\n", why.c_str());
		else
			fprintf(stderr, "ibemu exec: instance \"%s\" is not running (`ibemu up` first)\n",
				inst.name.c_str());
		return 1;
	}
	char cwd[PATH_MAX];
	if (!getcwd(cwd, sizeof(cwd)))
		strcpy(cwd, "/");
	std::string err;
	if (tools::joinMountNamespace(pid, err) != 0) {
		fprintf(stderr, "ibemu exec: %s\n", err.c_str());
		return 1;
	}
	if (chdir(cwd) != 0 && chdir("/") != 0)
		perror("ibemu exec: chdir");
	setenv("IBEMU_INSTANCE", inst.name.c_str(), 1);
	std::vector<char *> argv;
	for (const auto &a : cmd)
		argv.push_back(const_cast<char *>(a.c_str()));
	argv.push_back(nullptr);
	execvp(argv[0], argv.data());
	fprintf(stderr, "ibemu exec: %s: %s\n", argv[0], strerror(errno));
	return 127;
}

} /* namespace */

void addInstanceCommands(CLI::App &app, int &exitCode)
{
	struct UpOpts {
		std::string instance = "default", topology, gen, local, transport = "auto", logLevel = "info";
		bool global = false, json = false;
	};
	auto u = std::make_shared<UpOpts>();
	CLI::App *upCmd = app.add_subcommand("up", "Start an instance in the background and wait until it is ready");
	upCmd->add_option("--instance", u->instance, "Instance name (default: default)");
	auto *topo = upCmd->add_option("--topology", u->topology, "Topology file (ibnetdiscover format)");
	upCmd->add_option("--gen", u->gen, "Generate the fabric, e.g. fat-tree:levels=2,hosts=16,radix=8")->excludes(topo);
	upCmd->add_option("--local", u->local, "CAs to make local: node ids, descriptions or GUIDs, comma-separated");
	upCmd->add_option("--transport", u->transport, "auto, cuse or fuse")->check(CLI::IsMember({ "auto", "cuse", "fuse" }));
	upCmd->add_option("--log-level", u->logLevel, "trace, debug, info, warn, error");
	upCmd->add_flag("--global", u->global, "CUSE only: show the devices host-wide");
	upCmd->add_flag("--json", u->json, "Print what is exposed as JSON");
	upCmd->callback([u, &exitCode] {
		Instance inst;
		if (!instanceOf(u->instance, inst))
			return void(exitCode = 2);
		if (u->global && (u->transport == "fuse" || access("/dev/cuse", R_OK | W_OK) != 0)) {
			fprintf(stderr, "ibemu up: --global needs the CUSE transport (/dev/cuse): FUSE devices are only "
					"visible through `ibemu exec`\n");
			return void(exitCode = 2);
		}
		std::vector<std::string> args{ "--instance", u->instance, "--transport", u->transport, "--log-level", u->logLevel };
		if (!u->topology.empty()) {
			char real[PATH_MAX];
			if (!realpath(u->topology.c_str(), real)) {
				fprintf(stderr, "ibemu up: %s: %s\n", u->topology.c_str(), strerror(errno));
				return void(exitCode = 1);
			}
			args.insert(args.end(), { "--topology", real });
		}
		if (!u->gen.empty())
			args.insert(args.end(), { "--gen", u->gen });
		if (!u->local.empty())
			args.insert(args.end(), { "--local", u->local });
		if (u->global)
			args.push_back("--global");
		exitCode = up(args, inst, u->json);
	});

	auto downName = std::make_shared<std::string>("default");
	CLI::App *downCmd = app.add_subcommand("down", "Stop an instance; its clients get errors, its mounts go");
	downCmd->add_option("--instance", *downName, "Instance name");
	downCmd->callback([downName, &exitCode] {
		Instance inst;
		exitCode = instanceOf(*downName, inst) ? down(inst) : 2;
	});

	struct ExecOpts {
		std::string instance = "default";
		std::vector<std::string> cmd;
	};
	auto e = std::make_shared<ExecOpts>();
	CLI::App *execCmd = app.add_subcommand("exec", "Run a command that sees the instance's devices and sysfs");
	execCmd->add_option("--instance", e->instance, "Instance name");
	execCmd->add_option("cmd", e->cmd, "Command and arguments (after --)")->required();
	execCmd->callback([e, &exitCode] {
		Instance inst;
		exitCode = instanceOf(e->instance, inst) ? exec(inst, e->cmd) : 2;
	});

	auto shellName = std::make_shared<std::string>("default");
	CLI::App *shellCmd = app.add_subcommand("shell", "An interactive shell that sees the instance's devices");
	shellCmd->add_option("--instance", *shellName, "Instance name");
	shellCmd->callback([shellName, &exitCode] {
		Instance inst;
		const char *sh = getenv("SHELL");
		exitCode = instanceOf(*shellName, inst) ? exec(inst, { sh && *sh ? sh : "/bin/bash" }) : 2;
	});

	struct StatusOpts {
		std::string instance = "default";
		bool json = false;
	};
	auto st = std::make_shared<StatusOpts>();
	CLI::App *statusCmd = app.add_subcommand("status", "Is an instance running, and what does it expose");
	statusCmd->add_option("--instance", st->instance, "Instance name");
	statusCmd->add_flag("--json", st->json, "JSON output");
	statusCmd->callback([st, &exitCode] {
		Instance inst;
		if (!instanceOf(st->instance, inst))
			return void(exitCode = 2);
		nlohmann::json j;
		std::string why;
		int pid = runningPid(inst, &why);
		bool live = pid && loadLive(inst, pid, j, why);
		if (!why.empty())
			fprintf(stderr, "ibemu status: %s\n", why.c_str());
		if (!pid || !(live || loadReady(inst, j))) {
			if (st->json)
				printf("{\"instance\":\"%s\",\"running\":false}\n", inst.name.c_str());
			else
				printf("ibemu instance \"%s\" is not running\n", inst.name.c_str());
			return void(exitCode = 3);
		}
		j["running"] = true;
		if (st->json)
			printf("%s\n", j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
		else
			printDevices(j);
	});
}

} /* namespace ibemu::tools */
