// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// ibemu: the front CLI. `ibemu topo ...` works on topology files.
#include "tools/commands.h"

#include <cstdio>

int main(int argc, char **argv)
{
	CLI::App app{ "ibemu: an emulated InfiniBand subnet for stock rdma-core tools" };
	app.require_subcommand(1);
	int exitCode = 0;
	ibemu::tools::addTopoCommands(app, exitCode);
	try {
		app.parse(argc, argv);
	} catch (const CLI::ParseError &e) {
		return app.exit(e);
	}
	return exitCode;
}
