// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
#include "tools/instance.h"

#include <cstdlib>
#include <fstream>
#include <signal.h>
#include <string>

namespace ibemu::tools {

bool makeInstance(const std::string &name, Instance &out, std::string &err)
{
	if (name.empty() || name.size() > 64 ||
	    name.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") !=
		    std::string::npos ||
	    name[0] == '.') {
		err = "instance names use letters, digits, '.', '_' and '-' (at most 64): \"" + name + "\"";
		return false;
	}
	const char *base = getenv("IBEMU_RUN_DIR");
	out.name = name;
	out.runDir = std::string(base && *base ? base : "/run/ibemu") + "/" + name;
	return true;
}

int runningPid(const Instance &inst)
{
	std::ifstream in(inst.pidFile());
	int pid = 0;
	if (!(in >> pid) || pid <= 0)
		return 0;
	if (kill(pid, 0) != 0)
		return 0;
	/* a recycled pid: make sure it is an ibemud */
	std::ifstream comm("/proc/" + std::to_string(pid) + "/comm");
	std::string c;
	comm >> c;
	return c == "ibemud" ? pid : 0;
}

} /* namespace ibemu::tools */
