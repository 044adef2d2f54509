// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// The cluster hosts of a split subnet's other daemons (docs/multihost.md,
// "Hosts across daemons"), as `ibemu hosts` lists them and `ibemu exec
// --host` names them: each with the host= daemon that serves it, from the
// ready file's "other_hosts" (tools/daemon/daemon_status.cpp).
#include "tools/cli/instance_cmd.h"

#include <cstdio>
#include <filesystem>

namespace ibemu::tools::instance_cmd {

void addOtherHosts(const nlohmann::json &ready, nlohmann::ordered_json &hosts)
{
	for (const auto &h : ready.value("other_hosts", nlohmann::json::array())) {
		const auto &by = h.value("served_by", nlohmann::json::object());
		nlohmann::ordered_json e;
		e["name"] = h.value("name", "");
		e["served_by"] = { { "host", by.value("host", "") }, { "addr", by.value("addr", "") } };
		e["hcas"] = nlohmann::ordered_json::array();
		for (const auto &c : h.value("hcas", nlohmann::json::array()))
			e["hcas"].push_back({ { "node_desc", c.value("node_desc", "") },
					      { "node_guid", c.value("node_guid", "") } });
		e["addresses"] = nlohmann::ordered_json::array();
		for (const auto &a : h.value("addresses", nlohmann::json::array()))
			e["addresses"].push_back({ { "address", a.value("address", "") },
						   { "node_guid", a.value("node_guid", "") },
						   { "port", a.value("port", 0u) } });
		hosts.push_back(e);
	}
}

void printOtherHost(const nlohmann::ordered_json &h)
{
	printf("%s  (served by host= %s, %s)\n", h["name"].get<std::string>().c_str(),
	       h["served_by"]["host"].get<std::string>().c_str(), h["served_by"]["addr"].get<std::string>().c_str());
	for (const auto &c : h["hcas"])
		printf("  %-8s %s  \"%s\"\n", "-", c["node_guid"].get<std::string>().c_str(),
		       c["node_desc"].get<std::string>().c_str());
	for (const auto &a : h["addresses"])
		printf("  %-8s %-18s %s port %u\n", "-", a["address"].get<std::string>().c_str(),
		       a["node_guid"].get<std::string>().c_str(), a["port"].get<unsigned>());
}

std::string servedElsewhere(const Instance &inst, const nlohmann::json &ready, const std::string &host)
{
	for (const auto &h : ready.value("other_hosts", nlohmann::json::array())) {
		if (h.value("name", "") != host)
			continue;
		const auto &by = h.value("served_by", nlohmann::json::object());
		return "host \"" + host + "\" is served by the daemon of host= \"" + by.value("host", "") + "\" (" +
			by.value("addr", "") + "), not by instance \"" + inst.name +
			"\": run `ibemu exec --host " + host + "` on that daemon's machine";
	}
	return {};
}

bool servingInstance(const Instance &inst, const nlohmann::json &ready, const std::string &host, Instance &out)
{
	std::string by;
	for (const auto &h : ready.value("other_hosts", nlohmann::json::array()))
		if (h.value("name", "") == host)
			by = h.value("served_by", nlohmann::json::object()).value("host", "");
	const std::string topology = ready.value("topology", "");
	if (by.empty() || topology.empty())
		return false;
	/* the instances beside inst: the entries of its run directory's parent
	 * that are trusted run directories (the user's own) of running daemons */
	std::error_code ec;
	for (const auto &entry : std::filesystem::directory_iterator(
		     std::filesystem::path(inst.runDir).parent_path(), ec)) {
		Instance other;
		std::string err;
		nlohmann::json theirs;
		if (!entry.is_directory(ec) || !makeInstance(entry.path().filename(), other, err) ||
		    other.name == inst.name || !trustedRunDir(other, err) || !runningPid(other) ||
		    !loadReady(other, theirs))
			continue;
		const auto split = theirs.value("split", nlohmann::json::object());
		if (split.value("host", "") == by && theirs.value("topology", "") == topology) {
			out = other;
			return true;
		}
	}
	return false;
}

} /* namespace ibemu::tools::instance_cmd */
