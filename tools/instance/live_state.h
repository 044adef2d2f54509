// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// What the CLI learns from a running instance: the daemon's status file,
// commands run in its namespace (sminfo), and the processes that hold its
// devices. Every read that the daemon or a tool answers has a time limit,
// so a stopped daemon never hangs `ibemu`.
#pragma once

#include "tools/instance/instance.h"

#include <nlohmann/json.hpp>

#include <chrono>
#include <string>
#include <vector>

namespace ibemu::tools {

/* A JSON file the daemon wrote; false when missing or not (yet) whole. */
bool loadJson(const std::string &path, nlohmann::json &j);

/* The live status (status.json in the daemon's filesystem), read within 5 s.
 * false with why set when the daemon is stopped or does not answer. */
bool loadLive(const Instance &inst, int daemonPid, nlohmann::json &j, std::string &why);

/* Runs argv in the instance's namespace; its standard output in out. true
 * when it exited 0 within `limit` (it is killed after that). */
bool runInInstance(int daemonPid, const std::vector<std::string> &argv, std::chrono::seconds limit, std::string &out);

/* The SM state sminfo reports from the first local port ("SMINFO_MASTER",
 * ...), or "" with the reason in why. */
std::string smState(int daemonPid, std::string &why);

/* The last (or first) `lines` lines of a file, indented for messages. */
std::string tail(const std::string &path, size_t lines, bool first = false);

/* What ibemud said on its output (path) before it failed, for a message:
 * of its last 20 lines, the warnings and errors without the log's time and
 * name ("  error: --local: ...") and the lines that are not log lines;
 * all 20 when there are none of those. */
std::string daemonComplaint(const std::string &path);

struct Client {
	int pid;
	std::string command; /* /proc/PID/comm */
	unsigned files; /* files it opened (its children may share them) */
};

/* The processes in the live status' "clients" that still hold one of the
 * instance's device files (checked in /proc/PID/fd, or for the seccomp
 * transport's files, which are sockets, by the process living in the
 * instance's mount namespace; so a pid reused by another process since is
 * not named), minus `except`. */
std::vector<Client> clientsOf(const Instance &inst, const nlohmann::json &live, int except);

} /* namespace ibemu::tools */
