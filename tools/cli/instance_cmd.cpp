// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// `ibemu up | down | exec | shell | status`: running instances of ibemud.
// This file holds the command tree, and down, exec and status; up is
// tools/cli/instance_up.cpp, what they share tools/cli/instance_cmd.h.
#include "tools/cli/instance_cmd.h"
#include "cuse_dev/seccomp_filter.h"
#include "tools/cli/commands.h"
#include "tools/cli/launch_client.h"
#include "tools/cli/rdma_netlink.h"
#include "tools/control/json_text.h"
#include "tools/instance/host_verbs.h"
#include "tools/instance/namespace.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <thread>
#include <unistd.h>

extern char **environ;

namespace ibemu::tools {

using namespace instance_cmd;

namespace {

using namespace std::chrono_literals;

namespace {

/* SIGTERM to each, SIGKILL to those still there after 5 s */
void endClients(const std::vector<Client> &clients)
{
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
}

} /* namespace */

int down(const Instance &inst, bool killClients, bool keepLogs)
{
	std::string why;
	int pid = runningPid(inst, &why);
	if (!pid) {
		fprintf(stderr, "ibemu down: %s\n", notRunning(inst, why, "").c_str());
		if (why.empty() && tools::forgetGlobalListing(inst.name)) /* its daemon was killed */
			fprintf(stderr, "ibemu down: removed /etc/libibverbs.d/ibemu.driver, left by its daemon\n");
		return 1;
	}
	/* who still holds the devices (OpenSM is the daemon's to stop) */
	nlohmann::json live;
	std::vector<Client> clients;
	if (loadLive(inst, pid, live, why))
		clients = clientsOf(inst, live, live.contains("sm") ? live["sm"].value("pid", 0) : 0);
	/* an OpenSM whose umad file fails spins and no longer hears SIGTERM
	 * (as on the kernel when its HCA goes): one started by hand is ended
	 * first, with or without --kill-clients */
	std::vector<Client> sms;
	for (auto it = clients.begin(); !killClients && it != clients.end();) {
		if (it->command == "opensm") {
			sms.push_back(*it);
			it = clients.erase(it);
		} else
			++it;
	}
	if (!sms.empty()) {
		printf("ibemu down: ending the OpenSM started by hand, which would hang once its device goes:\n");
		printClients(sms);
		endClients(sms);
	}
	if (!clients.empty() && killClients) {
		printf("ibemu down: ending %s holding the devices:\n",
		       count(int(clients.size()), "process", "processes").c_str());
		printClients(clients);
		endClients(clients);
	} else if (!clients.empty()) {
		printf("ibemu down: %s still %s the devices; their files fail from now on (--kill-clients ends "
		       "them first):\n",
		       count(int(clients.size()), "process", "processes").c_str(),
		       clients.size() == 1 ? "holds" : "hold");
		printClients(clients);
	}
	bool stopped = stopDaemon(pid, "down");
	tools::forgetGlobalListing(inst.name); /* what a daemon killed on the way left */
	if (!stopped) {
		printf("ibemu down: logs kept in %s\n", inst.runDir.c_str());
		return 1;
	}
	printf("ibemu instance \"%s\" is down\n", inst.name.c_str());
	leaveRunDir(inst, keepLogs, "down");
	return 0;
}

/* A connection to the daemon's seccomp door, or -1 with why set. */
int seccompDoor(const std::string &path, std::string &why)
{
	int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	sockaddr_un a{};
	a.sun_family = AF_UNIX;
	if (s < 0 || path.empty() || path.size() >= sizeof a.sun_path) {
		why = "no door to the daemon";
		if (s >= 0)
			close(s);
		return -1;
	}
	memcpy(a.sun_path, path.c_str(), path.size());
	if (connect(s, reinterpret_cast<sockaddr *>(&a), sizeof a) != 0) {
		why = "cannot reach " + path + ": " + strerror(errno);
		close(s);
		return -1;
	}
	return s;
}

/* Installs the filter and hands its listener to the daemon over door
 * (closed): 0, or -1 with why set (and no filter, unless the daemon
 * refused it: then every trapped call fails, so exec stops there). */
int throughSeccomp(int door, const std::string &host, std::string &why)
{
	rlimit nofile{};
	getrlimit(RLIMIT_NOFILE, &nofile);
	int base = cuse_dev::seccomp::reservedBase(nofile.rlim_cur);
	if (base < 0) {
		why = "RLIMIT_NOFILE leaves no room for the reserved descriptors";
		close(door);
		return -1;
	}
	int listener = cuse_dev::seccomp::installFilter(base, why);
	if (listener < 0) {
		close(door);
		return -1;
	}
	int rc = cuse_dev::seccomp::handOver(door, listener, base, host, why);
	close(listener);
	close(door);
	if (rc != 0) { /* the filter is on and nobody answers it */
		fprintf(stderr, "ibemu exec: %s\n", why.c_str());
		_exit(126);
	}
	return 0;
}

/* The names of the instance's cluster hosts, for a message: "a, b" */
std::string hostNames(const nlohmann::json &ready)
{
	std::string names;
	for (const auto &h : ready.value("hosts", nlohmann::json::array()))
		names += (names.empty() ? "" : ", ") + h.value("name", "");
	return names;
}

/* Why host `host` of inst has no namespaces to join. */
std::string noNamespaces(const Instance &inst, const std::string &host)
{
	return "host \"" + host + "\" of instance \"" + inst.name +
		"\" has no namespaces of its own (a --global instance has none; otherwise their holder is gone)";
}

/* The holder of cluster host `host`'s namespaces, as the ready file of
 * the daemon pid names it (tools/daemon/host_namespaces.h; exec checks it
 * is the daemon's child): its pid, or 0 with why set and the exit code in
 * code. */
int hostHolder(const Instance &inst, int pid, const nlohmann::json &ready, const std::string &host, std::string &why,
	       int &code)
{
	for (const auto &h : ready.value("hosts", nlohmann::json::array())) {
		if (h.value("name", "") != host)
			continue;
		if (int holder = h.value("holder", 0); holder > 0 && ready.value("pid", 0) == pid)
			return holder;
		why = noNamespaces(inst, host);
		code = 1;
		return 0;
	}
	code = 2;
	if (why = servedElsewhere(inst, ready, host); !why.empty())
		return 0;
	std::string names = hostNames(ready);
	why = "instance \"" + inst.name + "\" has no host \"" + host + "\"" +
		(names.empty() ? "" : " (its hosts: " + names + "; `ibemu hosts` lists them)");
	return 0;
}

/* launchedCwd: run by the daemon's launch door (`ibemu --launched`), which
 * never takes the door again, in the caller's working directory, an
 * absolute path looked up once the namespaces are joined */
int exec(const Instance &inst, const std::vector<std::string> &cmd, const std::string &host = {},
	 const char *launchedCwd = nullptr)
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
	bool haveReady = loadReady(inst, ready);
	/* under the filter of an `ibemu exec` already (a launcher's remote
	 * shell), which no second filter can join: the daemon runs this exec.
	 * Only under more filters than the daemon's own: one the daemon runs
	 * under too (a container's listener, an exec's it was started under)
	 * is not an exec's of this instance, and its launched exec would be
	 * under it again; the old way then, the device files. */
	const bool nested = !launchedCwd && haveReady && ready.value("exec_transport", "") == "seccomp" &&
		cuse_dev::seccomp::filterCount() > ready.value("seccomp_filters", 0) &&
		cuse_dev::seccomp::underListener();
	int nsPid = pid; /* whose namespaces the command joins: a host's holder, or the daemon's */
	if (!host.empty()) {
		int code = 1;
		nsPid = haveReady ? hostHolder(inst, pid, ready, host, why, code) : 0;
		/* a host another daemon of the split subnet serves, that daemon an
		 * instance of this machine: the exec goes on there (under a filter,
		 * through this daemon's door first, whose launched exec comes here) */
		Instance serving;
		if (!nsPid && code == 2 && servingInstance(inst, ready, host, serving)) {
			if (!nested)
				return exec(serving, cmd, host, launchedCwd);
		} else if (!nsPid) {
			fprintf(stderr, "ibemu exec: %s\n",
				haveReady ? why.c_str() : "the instance is not ready yet: no hosts to join");
			return code;
		}
	}
	if (nested) {
		launch::Request r;
		r.host = host;
		char dir[PATH_MAX];
		r.cwd = getcwd(dir, sizeof dir) ? dir : "/";
		r.argv = cmd;
		for (char **e = environ; *e; e++)
			r.env.emplace_back(*e);
		return launchThroughDaemon(ready.value("launch_socket", ""), r);
	}
	if (haveReady && ready.value("verbs_provider", "ibemu") == "ibemu") {
		std::string provider = providerPath();
		if (provider.empty()) {
			fprintf(stderr,
				"ibemu exec: ibemu's libibverbs provider (libibemu-rdmav34.so) is not installed "
				"next to ibemu or in " IBEMU_PROVIDER_DIR "; verbs programs get the stock provider\n");
		} else {
			std::string theirs = getenv("RDMAV_DRIVERS") ? getenv("RDMAV_DRIVERS") : "";
			if (theirs != provider && theirs.rfind(provider + ":", 0) != 0) /* an exec's of ours: once */
				setenv("RDMAV_DRIVERS", (theirs.empty() ? provider : provider + ":" + theirs).c_str(), 1);
		}
	}
	/* the seccomp transport: the door is reached from here, before the
	 * namespace (whose mounts may cover the run directory) */
	int door = -1;
	std::string doorWhy;
	if (haveReady && ready.value("exec_transport", "") == "seccomp")
		door = seccompDoor(ready.value("seccomp_socket", ""), doorWhy);
	/* an OpenSM run by hand keeps its GUID-to-LID cache in the instance,
	 * as the instance's own does: the LIDs do not depend on what ran on
	 * this machine before (unless the caller chose a cache) */
	for (const char *sub : { "", "/cache", "/tmp" })
		mkdir((inst.smDir() + sub).c_str(), 0700);
	setenv("OSM_CACHE_DIR", (inst.smDir() + "/cache").c_str(), 0);
	setenv("OSM_TMP_DIR", (inst.smDir() + "/tmp").c_str(), 0);
	char cwd[PATH_MAX];
	if (launchedCwd)
		snprintf(cwd, sizeof cwd, "%s", launchedCwd);
	else if (!getcwd(cwd, sizeof(cwd)))
		strcpy(cwd, "/");
	std::string err;
	if (nsPid != pid) { /* a host's: only if the holder is the daemon's child */
		int rc = tools::joinHostNamespaces(pid, nsPid, err);
		if (rc != 0) {
			fprintf(stderr, "ibemu exec: %s\n", rc == -ESRCH ? noNamespaces(inst, host).c_str() : err.c_str());
			return 1;
		}
	} else if (tools::joinMountNamespace(nsPid, err) != 0) {
		fprintf(stderr, "ibemu exec: %s\n", err.c_str());
		return 1;
	}
	if (chdir(cwd) != 0) {
		if (launchedCwd) /* the caller's directory, not on this host */
			fprintf(stderr, "ibemu exec: cannot enter %s (%s): the command runs in /\n", cwd,
				strerror(errno));
		if (chdir("/") != 0)
			perror("ibemu exec: chdir");
	}
	setenv("IBEMU_INSTANCE", inst.name.c_str(), 1);
	if (!host.empty())
		setenv("IBEMU_HOST", host.c_str(), 1);
	else
		unsetenv("IBEMU_HOST");
	if (tools::hideRdmaNetlink(err) != 0) {
		fprintf(stderr, "ibemu exec: %s\n", err.c_str());
		return 1;
	}
	std::vector<char *> argv;
	for (const auto &a : cmd)
		argv.push_back(const_cast<char *>(a.c_str()));
	argv.push_back(nullptr);
	/* last: from here on our own open()s go through the daemon */
	if (door >= 0 && throughSeccomp(door, host, doorWhy) != 0)
		door = -1;
	if (door < 0 && !doorWhy.empty()) {
		bool cuse = ready.value("transport", "fuse") == "cuse";
		fprintf(stderr, "ibemu exec: the seccomp transport is not in use (%s); the devices are %s files%s\n",
			doorWhy.c_str(), cuse ? "CUSE" : "FUSE", cuse ? "" : ", without verbs or rdma_cm");
	}
	execvp(argv[0], argv.data());
	fprintf(stderr, "ibemu exec: %s: %s\n", argv[0], strerror(errno));
	return 127;
}

/* `ibemu hosts`: the cluster hosts and their HCAs, from the ready file */
int hosts(const Instance &inst, bool json)
{
	std::string why;
	int pid = runningPid(inst, &why);
	nlohmann::json ready;
	if (!pid || !loadReady(inst, ready)) {
		fprintf(stderr, "ibemu hosts: %s\n", notRunning(inst, why, " (`ibemu up` first)").c_str());
		return pid ? 1 : 3;
	}
	nlohmann::ordered_json out;
	out["instance"] = inst.name;
	out["hosts"] = nlohmann::ordered_json::array();
	for (const auto &h : ready.value("hosts", nlohmann::json::array())) {
		nlohmann::ordered_json e;
		e["name"] = h.value("name", "");
		e["hcas"] = nlohmann::ordered_json::array();
		for (const auto &c : h.value("hcas", nlohmann::json::array()))
			e["hcas"].push_back({ { "name", c.value("name", "") },
					      { "node_desc", c.value("node_desc", "") },
					      { "node_guid", c.value("node_guid", "") } });
		/* its IPoIB interfaces (docs/cluster.md, "IPoIB") */
		e["ib"] = nlohmann::ordered_json::array();
		for (const auto &i : h.value("ib", nlohmann::json::array()))
			e["ib"].push_back({ { "name", i.value("name", "") },
					    { "address", i.value("address", "") },
					    { "hca", i.value("hca", "") },
					    { "port", i.value("port", 0u) } });
		out["hosts"].push_back(e);
	}
	addOtherHosts(ready, out["hosts"]); /* a split subnet's other daemons' */
	if (json) {
		printf("%s\n", jsonText(out).c_str());
		return 0;
	}
	for (const auto &h : out["hosts"]) {
		if (h.contains("served_by")) {
			printOtherHost(h);
			continue;
		}
		printf("%s\n", h["name"].get<std::string>().c_str());
		for (const auto &c : h["hcas"])
			printf("  %-8s %s  \"%s\"\n", c["name"].get<std::string>().c_str(),
			       c["node_guid"].get<std::string>().c_str(), c["node_desc"].get<std::string>().c_str());
		for (const auto &i : h["ib"])
			printf("  %-8s %-18s %s port %u\n", i["name"].get<std::string>().c_str(),
			       i["address"].get<std::string>().c_str(), i["hca"].get<std::string>().c_str(),
			       i["port"].get<unsigned>());
	}
	return 0;
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
		printf("%s\n", jsonText(j).c_str());
		return 0;
	}
	printDevices(j);
	if (!clients.empty()) {
		printf("  processes holding its devices:\n");
		printClients(clients, j.contains("sm") ? j["sm"].value("pid", 0) : 0);
	}
	return 0;
}

/* A command that reports on an instance, as text or --json. */
void addReport(CLI::App &app, const char *name, const char *what, const std::string &instanceHelp,
	       int (*report)(const Instance &, bool json), int &exitCode)
{
	struct Opts {
		std::string instance = defaultInstance();
		bool json = false;
	};
	auto o = std::make_shared<Opts>();
	CLI::App *cmd = app.add_subcommand(name, what);
	cmd->add_option("--instance", o->instance, instanceHelp);
	cmd->add_flag("--json", o->json, "JSON output");
	cmd->callback([o, report, &exitCode] {
		Instance inst;
		exitCode = instanceOf(o->instance, inst) ? report(inst, o->json) : 2;
	});
}

} /* namespace */

bool execDirect(int argc, char **argv, int &exitCode, const char *launchedCwd)
{
	if (argc < 4 || strcmp(argv[1], "exec") != 0)
		return false;
	std::string name = defaultInstance(), host;
	int i = 2;
	for (auto [opt, val] : { std::pair{ "--instance", &name }, std::pair{ "--host", &host } }) {
		size_t len = strlen(opt);
		if (i >= argc)
			break;
		const char *given = strcmp(argv[i], opt) == 0 && argc > i + 1 && argv[i + 1][0] != '-' ? argv[i + 1]
			: strncmp(argv[i], opt, len) == 0 && argv[i][len] == '='		    ? argv[i] + len + 1
												    : nullptr;
		if (!given)
			continue;
		if (!*given) { /* `--host=`, a variable that was not set: no host (nor instance) at all */
			fprintf(stderr, "ibemu exec: %s: a name, not an empty word\n", opt);
			exitCode = 2;
			return true;
		}
		*val = given;
		i += given == argv[i + 1] ? 2 : 1;
	}
	if (i + 1 >= argc || strcmp(argv[i], "--") != 0)
		return false;
	Instance inst;
	exitCode = instanceOf(name, inst) ? exec(inst, std::vector<std::string>(argv + i + 1, argv + argc), host, launchedCwd) : 2;
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
	upCmd->add_option("--transport", u->transport,
			  "How programs under `ibemu exec` reach the devices: auto (the default) and seccomp through a "
			  "seccomp filter, the device files being CUSE nodes where /dev/cuse is, else FUSE files; "
			  "cuse or fuse through those files alone")
		->check(CLI::IsMember({ "auto", "seccomp", "cuse", "fuse" }))
		->envname("IBEMU_TRANSPORT");
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
	upCmd->add_flag("--ipoib", u->ipoib,
			"IPoIB: ib0 (ib1, ...) in every host's network namespace, for `ibemu exec --host` "
			"(docs/cluster.md)");
	upCmd->add_flag("--sm", u->sm,
			"Run OpenSM in the instance and wait until every local port with a cable is ACTIVE and an SM "
			"is MASTER");
	upCmd->add_option("--wait-timeout", u->waitTimeout,
			  "Seconds to wait for the devices (and with --sm the subnet)")
		->capture_default_str();
	upCmd->add_option("--spin-us", u->spinUs,
			  "Keep serving for this many microseconds after a request before sleeping (default 50; 0 "
			  "never)");
	upCmd->add_option("--host", u->host,
			  "With a topology of several hosts: which host= this instance is (default: the host name)");
	upCmd->add_option("--subnet-key", u->subnetKey,
			  "With a topology of several hosts: a file (yours or root's, mode 600) with the key its hosts share");
	upCmd->add_option("--listen", u->listen,
			  "With a topology of several hosts: ADDR:PORT to listen on instead of the file's addr= "
			  "(0.0.0.0:PORT or [::]:PORT: every address)");
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
		if (u->ipoib)
			args.push_back("--ipoib");
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

	const std::string hostHelp = "Run it on this cluster host of the instance (`ibemu hosts`): its own network "
				     "namespace, and only its HCAs in /dev/infiniband and /sys/class/infiniband*";
	/* `--host=` (an empty word, a variable that was not set) names no host: a usage error, not an
	 * exec on no host (CLI11 checks no empty value) */
	const auto noHost = [](const CLI::Option *opt, const std::string &host, const char *cmd) {
		if (opt->count() == 0 || !host.empty())
			return false;
		fprintf(stderr, "ibemu %s: --host: a host name, not an empty word (`ibemu hosts` lists them)\n", cmd);
		return true;
	};
	struct ExecOpts {
		std::string instance, host;
		std::vector<std::string> cmd;
	};
	auto e = std::make_shared<ExecOpts>();
	e->instance = defaultInstance();
	CLI::App *execCmd = app.add_subcommand("exec", "Run a command that sees the instance's devices and sysfs");
	execCmd->add_option("--instance", e->instance, instanceHelp);
	CLI::Option *execHost = execCmd->add_option("--host", e->host, hostHelp);
	execCmd->add_option("cmd", e->cmd, "Command and arguments (after --)")->required();
	execCmd->callback([e, execHost, noHost, &exitCode] {
		if (noHost(execHost, e->host, "exec")) {
			exitCode = 2;
			return;
		}
		Instance inst;
		exitCode = instanceOf(e->instance, inst) ? exec(inst, e->cmd, e->host) : 2;
	});

	auto sh = std::make_shared<ExecOpts>();
	sh->instance = defaultInstance();
	CLI::App *shellCmd = app.add_subcommand("shell", "An interactive shell that sees the instance's devices");
	shellCmd->add_option("--instance", sh->instance, instanceHelp);
	CLI::Option *shellHost = shellCmd->add_option("--host", sh->host, hostHelp);
	shellCmd->callback([sh, shellHost, noHost, &exitCode] {
		if (noHost(shellHost, sh->host, "shell")) {
			exitCode = 2;
			return;
		}
		Instance inst;
		const char *shell = getenv("SHELL");
		exitCode = instanceOf(sh->instance, inst) ? exec(inst, { shell && *shell ? shell : "/bin/bash" }, sh->host)
							  : 2;
	});

	addReport(app, "hosts", "The instance's cluster hosts and their HCAs", instanceHelp, hosts, exitCode);
	addReport(app, "status", "Is an instance running, what does it expose, who uses it", instanceHelp, status,
		  exitCode);
}

} /* namespace ibemu::tools */
