// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// Where an instance lives: everything an instance owns is under its run
// directory, so instances with different names never collide.
#pragma once

#include <string>

namespace ibemu::tools {

struct Instance {
	std::string name;
	std::string runDir; /* /run/ibemu/<name>, or $IBEMU_RUN_DIR/<name> */

	std::string pidFile() const { return runDir + "/pid"; }
	std::string readyFile() const { return runDir + "/ready.json"; }
	std::string logFile() const { return runDir + "/ibemud.log"; }
	std::string outFile() const { return runDir + "/ibemud.out"; }
	std::string fsDir() const { return runDir + "/fs"; }
	std::string scratchDir() const { return runDir + "/scratch"; }
};

/* Validates the name ([A-Za-z0-9._-], at most 64) and builds the paths. */
bool makeInstance(const std::string &name, Instance &out, std::string &err);
/* The pid of a running daemon of this instance, or 0. */
int runningPid(const Instance &inst);

} /* namespace ibemu::tools */
