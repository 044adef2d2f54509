// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// ibemu: the front CLI: instances (up, down, exec, shell, status) and
// topology files (topo gen, check, show).
#include "tools/commands.h"

#include <cstdio>

int main(int argc, char **argv)
{
	CLI::App app{ "ibemu: an emulated InfiniBand subnet for stock rdma-core tools" };
	app.require_subcommand(1);
	int exitCode = 0;
	ibemu::tools::addTopoCommands(app, exitCode);
	ibemu::tools::addInstanceCommands(app, exitCode);
	try {
		app.parse(argc, argv);
	} catch (const CLI::ParseError &e) {
		return app.exit(e);
	}
	return exitCode;
}
