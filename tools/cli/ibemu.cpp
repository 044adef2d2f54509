// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// ibemu: the front CLI: instances (up, down, exec, shell, status),
// topology files (topo gen, check, show) and live changes to a running
// fabric (link, node, errors, counters, scenario, ibsim, control).
#include "tools/cli/commands.h"
#include "tools/cli/launch_client.h"

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

int main(int argc, char **argv)
{
	/* Building the tree is a quarter of ibemu's start in the VM suite's
	 * TCG guest (docs/performance.md), and `ibemu exec` runs often */
	if (int exitCode = 0; ibemu::tools::execDirect(argc, argv, exitCode))
		return exitCode;
	/* an exec the daemon runs for one under ibemu's seccomp filter */
	if (int exitCode = 0; ibemu::tools::launchedDirect(argc, argv, exitCode))
		return exitCode;
	CLI::App app{ "ibemu: an emulated InfiniBand subnet for stock rdma-core tools", "ibemu" };
	app.require_subcommand(1);
	app.set_version_flag("--version", std::string("ibemu ") + IBEMU_VERSION);
	int exitCode = 0;
	ibemu::tools::addTopoCommands(app, exitCode);
	ibemu::tools::addInstanceCommands(app, exitCode);
	ibemu::tools::addFaultCommands(app, exitCode);
	ibemu::tools::addCaptureCommands(app, exitCode);
	/* CLI11 would only say that a subcommand is required */
	if (argc == 1) {
		fprintf(stderr, "%s", app.help().c_str());
		return 2;
	}
	if (argv[1][0] != '-') {
		std::string names;
		bool known = false;
		for (const CLI::App *sub : app.get_subcommands({})) {
			known |= sub->get_name() == argv[1];
			names += (names.empty() ? "" : ", ") + sub->get_name();
		}
		if (!known) {
			fprintf(stderr, "ibemu: unknown command \"%s\"; the commands are %s (ibemu --help)\n", argv[1],
				names.c_str());
			return 2;
		}
	}
	/* CLI11 2.1 takes a `--` right after an option whose value is
	 * optional as the end of that option's values and drops it: `up --web
	 * -- -s 0` would lose the marker before OpenSM's arguments. Give it
	 * one to drop. */
	std::vector<std::string> args(argv + 1, argv + argc);
	auto marker = std::find(args.begin(), args.end(), "--");
	if (marker != args.end() && marker != args.begin() && marker[-1] == "--web")
		args.insert(marker, "--");
	std::reverse(args.begin(), args.end());
	try {
		app.parse(args);
	} catch (const CLI::ParseError &e) {
		/* usage errors exit 2, as the man page says; CLI11's own codes
		 * (105, 106, 109...) mean nothing to a script */
		int rc = app.exit(e);
		return rc == 0 ? 0 : 2;
	}
	return exitCode;
}
