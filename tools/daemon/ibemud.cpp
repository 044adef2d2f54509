// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// ibemud: the foreground daemon of one instance. It simulates the subnet,
// makes the chosen CAs local HCAs, and serves their devices and sysfs view
// in a private mount namespace. `ibemu up` starts it in the background.
//
// This file holds main(): the options, the run directory and pid lock, the
// log; the daemon itself is tools/daemon/daemon.h.
//
// Live changes (ibemu link/node/errors/counters/scenario) come in through
// the control socket (tools/control/control_socket.h) and are carried out by
// tools/control/fabric_control.h; scenarios are played by tools/control/scenario.h.
#include "cuse_dev/cuse_devices.h"
#include "cuse_dev/seccomp_filter.h"
#include "tools/daemon/daemon.h"
#include "tools/instance/instance.h"

#include <CLI/CLI.hpp>
#include <spdlog/sinks/basic_file_sink.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <cstdio>
#include <cstring>
#include <unistd.h>

using namespace ibemu;

int main(int argc, char **argv)
{
	/* how the daemon starts OpenSM under the seccomp transport's filter */
	if (argc > 1 && strcmp(argv[1], "--seccomp-exec") == 0)
		return cuse_dev::seccomp::filteredExec(argc, argv);
	tools::DaemonOptions opts;
	CLI::App app{ "ibemud: the ibemu daemon (foreground); `ibemu up` starts it in the background" };
	app.add_option("--instance", opts.instance, "Instance name");
	auto *topo = app.add_option("--topology", opts.topology, "Topology file (ibnetdiscover format)");
	app.add_option("--gen", opts.gen, "Generate the fabric, e.g. fat-tree:levels=2,hosts=16,radix=8")
		->excludes(topo);
	app.add_option("--local", opts.local,
		       "CAs to make local HCAs: node ids, descriptions or GUIDs, comma-separated");
	app.add_option("--transport", opts.transport,
		       "auto, seccomp, fuse or cuse: how programs under `ibemu exec` reach the devices (auto and "
		       "seccomp: through a seccomp filter, with CUSE or FUSE device files for the rest)")
		->check(CLI::IsMember({ "auto", "seccomp", "fuse", "cuse" }));
	app.add_option("--log-level", opts.logLevel, "trace, debug, info, warn, error");
	app.add_flag("--global", opts.global, "CUSE only: devices and sysfs visible host-wide, no namespace");
	app.add_option("--verbs-provider", opts.verbsProvider,
		       "ibemu (ibemu's own provider, what `ibemu exec` loads) or stock (ipathverbs)")
		->check(CLI::IsMember({ "ibemu", "stock" }));
	app.add_option("--spin-us", opts.spinUs,
		       "Stay awake this long after a request before sleeping (0: never spin)");
	app.add_flag("--fuse-uring{on}", opts.fuseUring,
		     "FUSE transport over io_uring, a queue per CPU: --fuse-uring (or =on) turns on the host-wide "
		     "fuse parameter enable_uring (the last instance that asked puts it back); =auto (the default) "
		     "uses the ring if the host "
		     "enables it already; =off never")
		->check(CLI::IsMember({ "auto", "on", "off" }));
	app.add_option("--host", opts.host,
		       "With a topology of several hosts: which host= this daemon is (default: the host name)");
	app.add_option("--subnet-key", opts.subnetKey,
		       "With a topology of several hosts: a file (yours or root's, mode 600) with the key its hosts share");
	app.add_option("--listen", opts.listen,
		       "With a topology of several hosts: ADDR:PORT to listen on instead of the file's addr= "
		       "(0.0.0.0:PORT or [::]:PORT: every address)");
	app.add_flag("--ipoib", opts.ipoib,
		     "IPoIB: ib0 (ib1, ...) in every cluster host's network namespace (docs/cluster.md)");
	app.add_flag("--sm", opts.sm, "Run OpenSM in the instance (cache, temp files and log in the run directory)");
	app.add_option("--scenario", opts.scenario, "A scenario file (TOML) of fault events to play once ready");
	app.add_option("--seed", opts.seed, "With --scenario: the seed of its random choices, instead of the file's");
	auto *web = app.add_option("--web", opts.web,
				   "Serve the live view, read only, at ADDR:PORT (default 127.0.0.1 and any free port)")
			    ->expected(0, 1);
	app.add_option("opensm_args", opts.smArgs, "With --sm: OpenSM's own arguments, after --");
	CLI11_PARSE(app, argc, argv);
	opts.webOn = web->count() > 0;

	tools::Instance inst;
	std::string err;
	if (!tools::makeInstance(opts.instance, inst, err)) {
		fprintf(stderr, "ibemud: %s\n", err.c_str());
		return 2;
	}
	if ((opts.transport == "cuse" || opts.global) && !cuse_dev::cuseAvailable()) {
		fprintf(stderr,
			"ibemud: --transport cuse: /dev/cuse is missing or not writable (load the cuse module)\n");
		return 1;
	}
	if (geteuid() != 0) {
		fprintf(stderr, "ibemud: must run as root (it mounts a FUSE filesystem and a private namespace)\n");
		return 1;
	}
	if (!tools::prepareRunDir(inst, err)) {
		fprintf(stderr, "ibemud: %s\n", err.c_str());
		return 1;
	}
	int holder = 0;
	int pidFd = tools::lockPidFile(inst, holder, err);
	if (pidFd < 0) {
		if (holder)
			fprintf(stderr, "ibemud: instance \"%s\" is already running (pid %d)\n", inst.name.c_str(),
				holder);
		else
			fprintf(stderr, "ibemud: %s\n", err.c_str());
		return 1;
	}

	auto console = std::make_shared<spdlog::sinks::stderr_color_sink_mt>();
	auto file = std::make_shared<spdlog::sinks::basic_file_sink_mt>(inst.logFile(), true);
	auto logger = std::make_shared<spdlog::logger>("ibemud", spdlog::sinks_init_list{ console, file });
	logger->set_level(spdlog::level::from_str(opts.logLevel));
	logger->flush_on(spdlog::level::info);
	spdlog::set_default_logger(logger);
	spdlog::info("instance \"{}\", run directory {}", inst.name, inst.runDir);

	tools::Daemon d(opts, inst);
	int rc = d.run();
	unlink(inst.pidFile().c_str());
	close(pidFd); /* the lock goes with it */
	return rc;
}
