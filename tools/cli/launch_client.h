// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// `ibemu exec` under `ibemu exec` (docs/transports.md, "Launching across
// hosts"): the caller's side of the daemon's launch door
// (tools/daemon/launch_door.h), and the side of the ibemu the daemon runs.
#pragma once

#include "tools/instance/launch_wire.h"

#include <string>

namespace ibemu::tools {

/* Has the daemon behind socket run r (the caller's descriptors 0, 1 and 2
 * its), forwarding SIGINT, SIGTERM and SIGHUP to it, and waits: its exit
 * status (a command a signal ended ends the caller with that signal), or
 * 1 with a message on stderr when it could not be run. */
int launchThroughDaemon(const std::string &socket, const launch::Request &r);

/* `ibemu --launched CREDS CWD exec ...`, as the launch door runs it (with
 * no environment): takes no more privilege than the caller's CREDS (its
 * gid and groups, its capability bounding and inheritable sets,
 * no_new_privs), then the caller's environment from descriptor 3 (NUL-
 * separated words), goes to CWD and runs the exec. false when argv is not
 * that. */
bool launchedDirect(int argc, char **argv, int &exitCode);

} /* namespace ibemu::tools */
