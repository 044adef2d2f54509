// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// ibemu: the front CLI: instances (up, down, exec, shell, status),
// topology files (topo gen, check, show) and live changes to a running
// fabric (link, node, errors, counters, scenario, ibsim, control).
#include "tools/cli/commands.h"

#include <cstdio>
#include <string>

int main(int argc, char **argv)
{
	/* Building the tree is a quarter of ibemu's start in the VM suite's
	 * TCG guest (docs/performance.md), and `ibemu exec` runs often */
	if (int exitCode = 0; ibemu::tools::execDirect(argc, argv, exitCode))
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
	try {
		app.parse(argc, argv);
	} catch (const CLI::ParseError &e) {
		return app.exit(e);
	}
	return exitCode;
}
