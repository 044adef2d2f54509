// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// What the instance commands (`ibemu up | down | exec | shell | status`)
// share, for tools/cli's files only:
//   instance_env.cpp    where ibemud is, an instance by
//                       name, its ready file, stopping its daemon, its run
//                       directory left or removed
//   instance_print.cpp  what up and status print
//   instance_up.cpp     `ibemu up`: start ibemud and wait until it is ready
//   instance_cmd.cpp    down, exec, status and the command tree
//   split_hosts.cpp     the hosts a split subnet's other daemons serve
#pragma once

#include "tools/instance/instance.h"
#include "tools/instance/live_state.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace ibemu::tools::instance_cmd {

/* instance_env.cpp */
/* What the daemon reported when its devices became ready. */
bool loadReady(const Instance &inst, nlohmann::json &j);
/* ibemud: next to ibemu in a build tree, in ../sbin when installed */
std::string daemonPath();
/* makeInstance, its error printed */
bool instanceOf(const std::string &name, Instance &inst);
/* The instance's run directory goes, or stays when asked; says which. */
void leaveRunDir(const Instance &inst, bool keepLogs, const char *cmd);
/* SIGTERM to the daemon (it stops OpenSM, then its devices) and wait for
 * it; SIGKILL after 30 s. false when it had to be killed. */
bool stopDaemon(int pid, const char *cmd);
/* Not running, or not ours to see: the reason for a command's error. */
std::string notRunning(const Instance &inst, const std::string &why, const char *hint);

/* instance_print.cpp */
/* "1 switch", "2 switches" */
std::string count(int n, const char *one, const char *many);
/* the ready file or live status: the devices, the SM, faults, pinned memory */
void printDevices(const nlohmann::json &j);
/* processes holding the devices; smPid's marked as the instance's SM */
void printClients(const std::vector<Client> &clients, int smPid = 0);

/* instance_up.cpp */
struct UpOpts {
	std::string instance, topology, gen, local, transport = "auto", logLevel = "info", verbsProvider = "ibemu";
	std::string scenario;
	std::string fuseUring = "auto";
	std::string host, subnetKey, listen; /* a subnet split across hosts */
	std::optional<uint64_t> seed;
	bool global = false, json = false, sm = false, keepLogs = false;
	bool ipoib = false; /* ibemud --ipoib */
	bool webOn = false;
	std::string web;
	unsigned waitTimeout = 60;
	std::optional<unsigned> spinUs;
	std::vector<std::string> smArgs;
};

int up(const std::vector<std::string> &daemonArgs, const Instance &inst, const UpOpts &o);

/* split_hosts.cpp */
/* the ready file's hosts of the other daemons, for `ibemu hosts --json` */
void addOtherHosts(const nlohmann::json &ready, nlohmann::ordered_json &hosts);
/* one of them as `ibemu hosts` prints it */
void printOtherHost(const nlohmann::ordered_json &h);
/* where another daemon serves host `host`, for `exec --host`; empty
 * when none does */
std::string servedElsewhere(const Instance &inst, const nlohmann::json &ready, const std::string &host);
/* The running instance of this machine that is the daemon serving host
 * `host` for inst's split subnet (the same topology file, its host= the
 * one that serves the host), for `exec --host` to go on there: true with
 * it in `out` */
bool servingInstance(const Instance &inst, const nlohmann::json &ready, const std::string &host, Instance &out);

} /* namespace ibemu::tools::instance_cmd */
