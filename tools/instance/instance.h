// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// Where an instance lives: everything an instance owns is under its run
// directory, so instances with different names never collide.
//
// The run directory is trusted only when it is a real directory (not a
// symlink) owned by the user running ibemu, writable by nobody else, in a
// parent where nobody else can rename it (not writable by others, or
// sticky like /tmp). The daemon holds a write lock on its pid file for its
// whole life, so the pid found there is proven to be this instance's
// daemon, not a pid someone wrote into a file.
#pragma once

#include <string>

namespace ibemu::tools {

struct Instance {
	std::string name;
	std::string runDir; /* /run/ibemu/<name>, or $IBEMU_RUN_DIR/<name>, absolute */

	std::string pidFile() const { return runDir + "/pid"; }
	std::string readyFile() const { return runDir + "/ready.json"; }
	std::string logFile() const { return runDir + "/ibemud.log"; }
	std::string outFile() const { return runDir + "/ibemud.out"; }
	std::string fsDir() const { return runDir + "/fs"; }
	std::string controlSocket() const { return runDir + "/control.sock"; }
	std::string eventLog() const { return runDir + "/events.jsonl"; }
	std::string scratchDir() const { return runDir + "/scratch"; }
	/* OpenSM's cache and temporary files, for `up --sm` and `exec --
	 * opensm` alike: the instance's, never the machine's /var/cache/opensm */
	std::string smDir() const { return runDir + "/opensm"; }
};

/* --instance when not given: $IBEMU_INSTANCE (set by `ibemu exec`), else
 * "default" */
std::string defaultInstance();

/* Validates the name ([A-Za-z0-9._-], at most 64, starting with a letter or
 * digit) and builds the paths (a relative IBEMU_RUN_DIR is taken from the
 * current directory). */
bool makeInstance(const std::string &name, Instance &out, std::string &err);

/* Creates the run directory (and its parent) if missing and checks that
 * it can be trusted (see above). false with the reason in err. */
bool prepareRunDir(const Instance &inst, std::string &err);
/* The same checks on an existing run directory, creating nothing. */
bool trustedRunDir(const Instance &inst, std::string &err);

/* Removes the run directory of an instance that is not running, after the
 * same checks. false with the reason in err (a mount left behind by a
 * killed --global daemon, for one). */
bool removeRunDir(const Instance &inst, std::string &err);

/* The pid of the running daemon of this instance, or 0. When the pid file
 * exists but cannot be read (not root) err says so. */
int runningPid(const Instance &inst, std::string *err = nullptr);

/* For the daemon: creates and locks the pid file, writes our pid. Returns
 * the descriptor (kept open for the daemon's life), or -1 with err set
 * (another daemon holds it: its pid in `holder`). */
int lockPidFile(const Instance &inst, int &holder, std::string &err);

} /* namespace ibemu::tools */
