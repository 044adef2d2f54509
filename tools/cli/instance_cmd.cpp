// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// `ibemu up | down | exec | shell | status`: running instances of ibemud.
#include "tools/cli/commands.h"
#include "tools/instance/instance.h"
#include "tools/instance/live_state.h"
#include "tools/instance/namespace.h"
#include "tools/cli/rdma_netlink.h"

#include <nlohmann/json.hpp>

#include <cerrno>
#include <chrono>
#include <climits>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <fstream>
#include <iterator>
#include <optional>
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

/* What the daemon reported when its devices became ready. */
bool loadReady(const Instance &inst, nlohmann::json &j)
{
	return loadJson(inst.readyFile(), j);
}

/* ibemud: next to ibemu in a build tree, in ../sbin when installed */
std::string daemonPath()
{
	for (const std::string &p :
	     { selfDir() + "/ibemud", selfDir() + "/../sbin/ibemud", std::string(IBEMU_SBINDIR) + "/ibemud" })
		if (access(p.c_str(), X_OK) == 0)
			return p;
	return selfDir() + "/ibemud";
}

/* ibemu's libibverbs provider as RDMAV_DRIVERS names it (the path without
 * "-rdmav34.so"): in the build tree next to ibemu, else where meson
 * installs it, relative to ibemu (a DESTDIR) or under the prefix; "" when
 * there is none. */
std::string providerPath()
{
	for (const std::string &p :
	     { selfDir() + "/provider/libibemu", selfDir() + "/../" IBEMU_LIBDIR "/libibverbs/libibemu",
	       std::string(IBEMU_PROVIDER_DIR) + "/libibemu" })
		if (access((p + "-rdmav34.so").c_str(), R_OK) == 0)
			return p;
	return "";
}

/* "1 switch", "2 switches" */
std::string count(int n, const char *one, const char *many)
{
	return std::to_string(n) + " " + (n == 1 ? one : many);
}

/* What `ibemu link|node|errors|scenario` changed, and the last events */
void printFaults(const nlohmann::json &f, const nlohmann::json &scenarios)
{
	auto list = [](const nlohmann::json &a, const char *what) {
		for (const auto &x : a)
			printf("  %s: %s\n", what, x.is_string() ? x.get<std::string>().c_str() : x.dump().c_str());
	};
	for (const auto &c : f.value("pulled_cables", nlohmann::json::array()))
		printf("  pulled cable: %s -- %s\n", c.value("port", "").c_str(), c.value("peer", "").c_str());
	list(f.value("silent_nodes", nlohmann::json::array()), "silent node");
	for (const auto &p : f.value("lossy_ports", nlohmann::json::array()))
		printf("  lossy cable at %s: drop %g, corrupt %g (seed %llu): %llu dropped, %llu corrupted\n",
		       p.value("port", "").c_str(), p.value("drop", 0.0), p.value("corrupt", 0.0),
		       static_cast<unsigned long long>(p.value("seed", 0ull)),
		       static_cast<unsigned long long>(p.value("dropped", 0ull)),
		       static_cast<unsigned long long>(p.value("corrupted", 0ull)));
	for (const auto &d : f.value("degraded_links", nlohmann::json::array()))
		printf("  degraded cable at %s: at most %s %s\n", d.value("port", "").c_str(),
		       d.value("width", "").c_str(), d.value("speed", "").c_str());
	for (const auto &s : scenarios)
		printf("  scenario %s (seed %llu): %llu events fired%s\n", s.value("file", "").c_str(),
		       static_cast<unsigned long long>(s.value("seed", 0ull)),
		       static_cast<unsigned long long>(s.value("fired", 0ull)),
		       s.value("waiting_for_sm_master", false) ? ", some wait for an SM" : "");
	const auto &events = f.value("recent_events", nlohmann::json::array());
	if (events.empty())
		return;
	printf("  events: the last %zu of %s\n", events.size(), f.value("events_file", "").c_str());
	for (const auto &e : events) {
		nlohmann::json rest = e;
		for (const char *k : { "seq", "time", "op", "source" })
			rest.erase(k);
		printf("    %s %s (%s) %s\n", e.value("time", "").c_str(), e.value("op", "").c_str(),
		       e.value("source", "").c_str(), rest.dump().c_str());
	}
}

void printDevices(const nlohmann::json &j)
{
	const auto &f = j["fabric"];
	printf("ibemu instance \"%s\" is up (pid %d, %s transport, fabric %s: %s, %s, %s)\n",
	       j.value("instance", "").c_str(), j.value("pid", 0), j.value("transport", "").c_str(),
	       j.value("topology", "").c_str(), count(f.value("switches", 0), "switch", "switches").c_str(),
	       count(f.value("cas", 0), "CA", "CAs").c_str(), count(f.value("links", 0), "link", "links").c_str());
	for (const auto &d : j["devices"]) {
		printf("  %s  node GUID %s  \"%s\"\n", d.value("ibdev", "").c_str(), d.value("node_guid", "").c_str(),
		       d.value("node", "").c_str());
		for (const auto &p : d["ports"]) {
			printf("    port %d: %s %s", p.value("port", 0), p.value("umad", "").c_str(),
			       p.value("issm", "").c_str());
			if (p.contains("state"))
				printf("  %s/%s  LID %d  SM LID %d  %s%s  %d open", p.value("state", "").c_str(),
				       p.value("phys_state", "").c_str(), p.value("lid", 0), p.value("sm_lid", 0),
				       p.value("rate", "").c_str(), p.value("issm_held", false) ? "  (issm held)" : "",
				       p.value("open_files", 0));
			if (j.contains("rdma_cm") && !p.value("ipv4", "").empty()) /* they mean something to rdma_cm */
				printf("  IPv4 %s", p.value("ipv4", "").c_str());
			printf("\n");
		}
		if (d.contains("uverbs")) {
			printf("    verbs: %s", d.value("uverbs", "").c_str());
			if (d.contains("verbs_open_files"))
				printf("  %d open", d.value("verbs_open_files", 0));
			printf("\n");
		}
	}
	if (j.contains("web"))
		printf("  live view: %s\n", j.value("web", "").c_str());
	if (j.contains("sm")) {
		const auto &sm = j["sm"];
		printf("  OpenSM: %s", sm.value("state", "").c_str());
		if (sm.value("pid", 0))
			printf(", pid %d", sm.value("pid", 0));
		if (sm.contains("sminfo"))
			printf(", %s", sm.value("sminfo", "").c_str());
		printf("\n    log %s\n", sm.value("log", "").c_str());
	}
	if (j.contains("faults"))
		printFaults(j["faults"], j.value("scenarios", nlohmann::json::array()));
	if (j.contains("pinned") && !j["pinned"].empty()) {
		printf("  pinned memory (RLIMIT_MEMLOCK accounting):\n");
		for (const auto &p : j["pinned"])
			printf("    pid %d: %llu pages (%llu KiB)\n", p.value("pid", 0),
			       static_cast<unsigned long long>(p.value("pinned_pages", 0ull)),
			       static_cast<unsigned long long>(p.value("pinned_bytes", 0ull) / 1024));
	}
}

void printClients(const std::vector<Client> &clients, int smPid = 0)
{
	for (const auto &c : clients)
		printf("    pid %d (%s): %s%s\n", c.pid, c.command.c_str(),
		       count(int(c.files), "file", "files").c_str(), c.pid == smPid ? " (the instance's SM)" : "");
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

/* The instance's run directory goes, or stays when asked; says which. */
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

/* SIGTERM to the daemon (it stops OpenSM, then its devices) and wait for
 * it; SIGKILL after 30 s. false when it had to be killed. */
bool stopDaemon(int pid, const char *cmd)
{
	kill(pid, SIGTERM);
	/* `up` is its parent: reap it, or it would linger as a zombie */
	for (int i = 0; i < 1500 && waitpid(pid, nullptr, WNOHANG) <= 0 && kill(pid, 0) == 0; i++)
		std::this_thread::sleep_for(20ms);
	if (kill(pid, 0) != 0)
		return true;
	/* the instance goes, but a daemon that needed this is a bug: say so */
	fprintf(stderr, "ibemu %s: ibemud (pid %d) did not stop in 30 s; killed it\n", cmd, pid);
	kill(pid, SIGKILL);
	return false;
}

/* Why `up --sm` is not done yet: a port not ACTIVE, the SM gone, or "" when
 * every local port is ACTIVE and sminfo sees a MASTER. fatal: no point in
 * waiting any longer. (A daemon that exited is up's to notice: its child.) */
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
			if (p.value("state", "") != "ACTIVE")
				return d.value("ibdev", "") + " port " + std::to_string(p.value("port", 0)) + " is " +
					p.value("state", "?") + ", not ACTIVE";
	std::string state = smState(pid, why);
	if (state != "SMINFO_MASTER")
		return state.empty() ? why : "sminfo reports " + state + ", not SMINFO_MASTER";
	return "";
}

struct UpOpts {
	std::string instance, topology, gen, local, transport = "auto", logLevel = "info", verbsProvider = "ibemu";
	std::string scenario;
	std::string fuseUring = "auto";
	std::string host, subnetKey, listen; /* a subnet split across hosts */
	std::optional<uint64_t> seed;
	bool global = false, json = false, sm = false, keepLogs = false;
	bool webOn = false;
	std::string web;
	unsigned waitTimeout = 60;
	std::optional<unsigned> spinUs;
	std::vector<std::string> smArgs;
};

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

	/* the devices, then (--sm) an SM that made every local port ACTIVE */
	nlohmann::json ready;
	std::string why;
	bool fatal = false;
	auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(o.waitTimeout);
	while (std::chrono::steady_clock::now() < deadline) {
		int status;
		if (waitpid(pid, &status, WNOHANG) == pid) {
			fprintf(stderr, "ibemu up: ibemud failed to start (exit %d):\n%s",
				WIFEXITED(status) ? WEXITSTATUS(status) : -1, tail(inst.outFile(), 20).c_str());
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
			printf("%s\n", ready.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
		else
			printDevices(ready);
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

/* Not running, or not ours to see: the reason for a command's error. */
std::string notRunning(const Instance &inst, const std::string &why, const char *hint)
{
	if (!why.empty())
		return why;
	return "instance \"" + inst.name + "\" is not running" + hint;
}

int down(const Instance &inst, bool killClients, bool keepLogs)
{
	std::string why;
	int pid = runningPid(inst, &why);
	if (!pid) {
		fprintf(stderr, "ibemu down: %s\n", notRunning(inst, why, "").c_str());
		return 1;
	}
	/* who still holds the devices (OpenSM is the daemon's to stop) */
	nlohmann::json live;
	std::vector<Client> clients;
	if (loadLive(inst, pid, live, why))
		clients = clientsOf(inst, live, live.contains("sm") ? live["sm"].value("pid", 0) : 0);
	if (!clients.empty() && killClients) {
		printf("ibemu down: ending %s holding the devices:\n",
		       count(int(clients.size()), "process", "processes").c_str());
		printClients(clients);
		for (const auto &c : clients)
			kill(c.pid, SIGTERM);
		for (int i = 0; i < 250; i++) {
			bool left = false;
			for (const auto &c : clients)
				left |= kill(c.pid, 0) == 0;
			if (!left)
				break;
			std::this_thread::sleep_for(20ms);
		}
		for (const auto &c : clients)
			if (kill(c.pid, 0) == 0) {
				printf("ibemu down: pid %d (%s) did not end within 5 s of SIGTERM: SIGKILL\n", c.pid,
				       c.command.c_str());
				kill(c.pid, SIGKILL);
			}
	} else if (!clients.empty()) {
		printf("ibemu down: %s still %s the devices; their files fail from now on (--kill-clients ends "
		       "them first):\n",
		       count(int(clients.size()), "process", "processes").c_str(),
		       clients.size() == 1 ? "holds" : "hold");
		printClients(clients);
	}
	if (!stopDaemon(pid, "down")) {
		printf("ibemu down: logs kept in %s\n", inst.runDir.c_str());
		return 1;
	}
	printf("ibemu instance \"%s\" is down\n", inst.name.c_str());
	leaveRunDir(inst, keepLogs, "down");
	return 0;
}

int exec(const Instance &inst, const std::vector<std::string> &cmd)
{
	std::string why;
	int pid = runningPid(inst, &why);
	if (!pid) {
		fprintf(stderr, "ibemu exec: %s\n", notRunning(inst, why, " (`ibemu up` first)").c_str());
		return 1;
	}
	/* ibemu's provider registers first (libibverbs loads RDMAV_DRIVERS
	 * before its config directory) and so claims the ibemu devices before
	 * ipathverbs can; with --verbs-provider stock, ipathverbs does (found
	 * before joining the instance's namespace, where /proc/self is not ours) */
	nlohmann::json ready;
	if (loadReady(inst, ready) && ready.value("verbs_provider", "ibemu") == "ibemu") {
		std::string provider = providerPath();
		if (provider.empty()) {
			fprintf(stderr,
				"ibemu exec: ibemu's libibverbs provider (libibemu-rdmav34.so) is not installed "
				"next to ibemu or in " IBEMU_PROVIDER_DIR "; verbs programs get the stock provider\n");
		} else {
			const char *theirs = getenv("RDMAV_DRIVERS");
			setenv("RDMAV_DRIVERS", (theirs && *theirs ? provider + ":" + theirs : provider).c_str(), 1);
		}
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
	if (tools::hideRdmaNetlink(err) != 0) {
		fprintf(stderr, "ibemu exec: %s\n", err.c_str());
		return 1;
	}
	std::vector<char *> argv;
	for (const auto &a : cmd)
		argv.push_back(const_cast<char *>(a.c_str()));
	argv.push_back(nullptr);
	execvp(argv[0], argv.data());
	fprintf(stderr, "ibemu exec: %s: %s\n", argv[0], strerror(errno));
	return 127;
}

int status(const Instance &inst, bool json)
{
	nlohmann::json j;
	std::string why;
	int pid = runningPid(inst, &why);
	if (!pid && !why.empty()) { /* cannot tell: not ours to see */
		fprintf(stderr, "ibemu status: %s\n", why.c_str());
		return 1;
	}
	bool live = pid && loadLive(inst, pid, j, why);
	if (!why.empty())
		fprintf(stderr, "ibemu status: %s\n", why.c_str());
	if (!pid || !(live || loadReady(inst, j))) {
		if (json)
			printf("{\"instance\":\"%s\",\"running\":false}\n", inst.name.c_str());
		else
			printf("ibemu instance \"%s\" is not running\n", inst.name.c_str());
		return 3;
	}
	j["running"] = true;
	std::vector<Client> clients;
	if (live) {
		int smPid = j.contains("sm") ? j["sm"].value("pid", 0) : 0;
		if (smPid) {
			std::string state = smState(pid, why);
			j["sm"]["sminfo"] = state.empty() ? why : state;
		}
		clients = clientsOf(inst, j, 0);
		nlohmann::json cl = nlohmann::json::array();
		for (const auto &c : clients)
			cl.push_back({ { "pid", c.pid }, { "command", c.command }, { "files", c.files } });
		j["clients"] = cl;
	}
	if (json) {
		printf("%s\n", j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
		return 0;
	}
	printDevices(j);
	if (!clients.empty()) {
		printf("  processes holding its devices:\n");
		printClients(clients, j.contains("sm") ? j["sm"].value("pid", 0) : 0);
	}
	return 0;
}

} /* namespace */

bool execDirect(int argc, char **argv, int &exitCode)
{
	if (argc < 4 || strcmp(argv[1], "exec") != 0)
		return false;
	std::string name = defaultInstance();
	int i = 2;
	if (strcmp(argv[i], "--instance") == 0 && argc > i + 1 && argv[i + 1][0] != '-') {
		name = argv[i + 1];
		i += 2;
	} else if (strncmp(argv[i], "--instance=", 11) == 0) {
		name = argv[i] + 11;
		i++;
	}
	if (i + 1 >= argc || strcmp(argv[i], "--") != 0)
		return false;
	Instance inst;
	exitCode = instanceOf(name, inst) ? exec(inst, std::vector<std::string>(argv + i + 1, argv + argc)) : 2;
	return true;
}

void addInstanceCommands(CLI::App &app, int &exitCode)
{
	const std::string instanceHelp = "Instance name (default: $IBEMU_INSTANCE, else \"default\")";
	auto u = std::make_shared<UpOpts>();
	u->instance = defaultInstance();
	CLI::App *upCmd = app.add_subcommand("up", "Start an instance in the background and wait until it is ready");
	upCmd->add_option("--instance", u->instance, instanceHelp);
	auto *topo = upCmd->add_option("--topology", u->topology, "Topology file (ibnetdiscover format)");
	upCmd->add_option("--gen", u->gen, "Generate the fabric, e.g. fat-tree:levels=2,hosts=16,radix=8")
		->excludes(topo);
	upCmd->add_option("--local", u->local, "CAs to make local: node ids, descriptions or GUIDs, comma-separated");
	upCmd->add_option("--transport", u->transport, "auto, cuse or fuse")
		->check(CLI::IsMember({ "auto", "cuse", "fuse" }));
	upCmd->add_option("--log-level", u->logLevel, "trace, debug, info, warn, error");
	upCmd->add_option("--verbs-provider", u->verbsProvider,
			  "The libibverbs provider `ibemu exec` gives programs: ibemu (completion channels, the "
			  "extended API) or stock (Debian's ipathverbs)")
		->check(CLI::IsMember({ "ibemu", "stock" }))
		->capture_default_str();
	upCmd->add_flag("--global", u->global, "CUSE only: show the devices host-wide");
	upCmd->add_flag("--fuse-uring{on}", u->fuseUring,
			"FUSE transport over io_uring, a queue per CPU: --fuse-uring (=on) turns on the host-wide "
			"fuse parameter enable_uring (the last instance that asked puts it back); =auto (the default) "
			"uses the ring if "
			"the host enables it already; =off never")
		->check(CLI::IsMember({ "auto", "on", "off" }))
		->envname("IBEMU_FUSE_URING");
	upCmd->add_flag("--sm", u->sm,
			"Run OpenSM in the instance and wait until every local port is ACTIVE and an SM is MASTER");
	upCmd->add_option("--wait-timeout", u->waitTimeout,
			  "Seconds to wait for the devices (and with --sm the subnet)")
		->capture_default_str();
	upCmd->add_option("--spin-us", u->spinUs,
			  "Keep serving for this many microseconds after a request before sleeping (default 50; 0 "
			  "never)");
	upCmd->add_option("--host", u->host,
			  "With a topology of several hosts: which host= this instance is (default: the host name)");
	upCmd->add_option("--subnet-key", u->subnetKey,
			  "With a topology of several hosts: a file (mode 600) with the key its hosts share");
	upCmd->add_option("--listen", u->listen,
			  "With a topology of several hosts: ADDR:PORT to listen on instead of the file's addr=");
	upCmd->add_flag("--keep-logs", u->keepLogs, "Keep the run directory and its logs if up fails");
	upCmd->add_flag("--json", u->json, "Print what is exposed as JSON");
	upCmd->add_option("--scenario", u->scenario, "A scenario file (TOML) of fault events to play once up");
	upCmd->add_option("--seed", u->seed, "With --scenario: the seed of its random choices, instead of the file's");
	auto *web = upCmd->add_option("--web", u->web,
				      "Serve the live view, read only, at ADDR:PORT (default 127.0.0.1 and any free "
				      "port; the URL is printed)")
			    ->expected(0, 1);
	upCmd->add_option("opensm_args", u->smArgs, "With --sm: arguments for OpenSM, after --");
	upCmd->callback([u, web, &exitCode] {
		u->webOn = web->count() > 0;
		Instance inst;
		if (!instanceOf(u->instance, inst))
			return void(exitCode = 2);
		if (u->global && (u->transport == "fuse" || access("/dev/cuse", R_OK | W_OK) != 0)) {
			fprintf(stderr,
				"ibemu up: --global needs the CUSE transport (/dev/cuse): FUSE devices are only "
				"visible through `ibemu exec`\n");
			return void(exitCode = 2);
		}
		if (!u->smArgs.empty() && !u->sm) {
			fprintf(stderr, "ibemu up: arguments after -- are OpenSM's, and need --sm\n");
			return void(exitCode = 2);
		}
		std::vector<std::string> args{ "--instance",       u->instance,      "--transport",
					       u->transport,       "--log-level",    u->logLevel,
					       "--verbs-provider", u->verbsProvider, "--fuse-uring=" + u->fuseUring };
		/* the daemon runs elsewhere: files by their absolute paths */
		auto file = [&args](const char *opt, const std::string &path) {
			char real[PATH_MAX];
			if (!realpath(path.c_str(), real)) {
				fprintf(stderr, "ibemu up: %s: %s\n", path.c_str(), strerror(errno));
				return false;
			}
			args.insert(args.end(), { opt, real });
			return true;
		};
		if (!u->topology.empty() && !file("--topology", u->topology))
			return void(exitCode = 1);
		if (!u->gen.empty())
			args.insert(args.end(), { "--gen", u->gen });
		if (!u->local.empty())
			args.insert(args.end(), { "--local", u->local });
		if (u->global)
			args.push_back("--global");
		if (!u->scenario.empty() && !file("--scenario", u->scenario))
			return void(exitCode = 1);
		if (u->seed)
			args.insert(args.end(), { "--seed", std::to_string(*u->seed) });
		if (!u->host.empty())
			args.insert(args.end(), { "--host", u->host });
		if (!u->subnetKey.empty() && !file("--subnet-key", u->subnetKey))
			return void(exitCode = 1);
		if (!u->listen.empty())
			args.insert(args.end(), { "--listen", u->listen });
		if (u->spinUs)
			args.insert(args.end(), { "--spin-us", std::to_string(*u->spinUs) });
		if (u->webOn) {
			args.push_back("--web");
			if (!u->web.empty())
				args.push_back(u->web);
		}
		if (u->sm) {
			args.push_back("--sm");
			args.push_back("--");
			args.insert(args.end(), u->smArgs.begin(), u->smArgs.end());
		}
		exitCode = up(args, inst, *u);
	});

	struct DownOpts {
		std::string instance;
		bool killClients = false, keepLogs = false;
	};
	auto d = std::make_shared<DownOpts>();
	d->instance = defaultInstance();
	CLI::App *downCmd = app.add_subcommand("down", "Stop an instance: OpenSM first, then its devices and mounts");
	downCmd->add_option("--instance", d->instance, instanceHelp);
	downCmd->add_flag("--kill-clients", d->killClients,
			  "End the processes that hold its devices first (SIGTERM, SIGKILL after 5 s)");
	downCmd->add_flag("--keep-logs", d->keepLogs, "Keep the run directory and its logs");
	downCmd->callback([d, &exitCode] {
		Instance inst;
		exitCode = instanceOf(d->instance, inst) ? down(inst, d->killClients, d->keepLogs) : 2;
	});

	struct ExecOpts {
		std::string instance;
		std::vector<std::string> cmd;
	};
	auto e = std::make_shared<ExecOpts>();
	e->instance = defaultInstance();
	CLI::App *execCmd = app.add_subcommand("exec", "Run a command that sees the instance's devices and sysfs");
	execCmd->add_option("--instance", e->instance, instanceHelp);
	execCmd->add_option("cmd", e->cmd, "Command and arguments (after --)")->required();
	execCmd->callback([e, &exitCode] {
		Instance inst;
		exitCode = instanceOf(e->instance, inst) ? exec(inst, e->cmd) : 2;
	});

	auto shellName = std::make_shared<std::string>(defaultInstance());
	CLI::App *shellCmd = app.add_subcommand("shell", "An interactive shell that sees the instance's devices");
	shellCmd->add_option("--instance", *shellName, instanceHelp);
	shellCmd->callback([shellName, &exitCode] {
		Instance inst;
		const char *sh = getenv("SHELL");
		exitCode = instanceOf(*shellName, inst) ? exec(inst, { sh && *sh ? sh : "/bin/bash" }) : 2;
	});

	struct StatusOpts {
		std::string instance;
		bool json = false;
	};
	auto st = std::make_shared<StatusOpts>();
	st->instance = defaultInstance();
	CLI::App *statusCmd = app.add_subcommand("status", "Is an instance running, what does it expose, who uses it");
	statusCmd->add_option("--instance", st->instance, instanceHelp);
	statusCmd->add_flag("--json", st->json, "JSON output");
	statusCmd->callback([st, &exitCode] {
		Instance inst;
		exitCode = instanceOf(st->instance, inst) ? status(inst, st->json) : 2;
	});
}

} /* namespace ibemu::tools */
