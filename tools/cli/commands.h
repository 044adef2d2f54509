// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// Subcommands of the ibemu front CLI.
#pragma once

#include <CLI/CLI.hpp>

namespace ibemu::tools {

/* `ibemu topo gen|check|show` */
void addTopoCommands(CLI::App &app, int &exitCode);
/* `ibemu up|down|exec|shell|status` */
void addInstanceCommands(CLI::App &app, int &exitCode);
/* `ibemu exec [--instance NAME] -- CMD...` as it starts every program run
 * against an instance, before any command tree is built: true when argv is
 * that form, with the exit code (if CMD could not be started) in exitCode;
 * false for any other form, which the tree then parses. launchedCwd: run
 * by the daemon's launch door (`ibemu --launched`), in that directory. */
bool execDirect(int argc, char **argv, int &exitCode, const char *launchedCwd = nullptr);
/* `ibemu link|node|errors|counters|scenario|ibsim|control` */
void addFaultCommands(CLI::App &app, int &exitCode);
/* `ibemu capture` */
void addCaptureCommands(CLI::App &app, int &exitCode);

} /* namespace ibemu::tools */
