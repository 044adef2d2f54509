// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// What `ibemu up` and `ibemu status` print of an instance: its devices
// and ports, its SM, the faults and scenarios, pinned memory, and the
// processes holding its devices (tools/cli/instance_cmd.h).
#include "tools/cli/instance_cmd.h"
#include "tools/control/json_text.h"

#include <cstdio>
#include <string>

namespace ibemu::tools::instance_cmd {

std::string count(int n, const char *one, const char *many)
{
	return std::to_string(n) + " " + (n == 1 ? one : many);
}

namespace {

/* an event's fields as a person reads them, as the live view shows
 * them (the keys sorted): "node ibemu-sw1, peer "ibemu-sw2"[7], port 7";
 * control characters (a node description is anybody's) as \xNN */
std::string words(const nlohmann::json &v)
{
	if (v.is_string()) {
		std::string out;
		for (unsigned char c : v.get<std::string>()) {
			char hex[8];
			snprintf(hex, sizeof hex, "\\x%02x", c);
			out += c < 0x20 || c == 0x7f ? std::string(hex) : std::string(1, char(c));
		}
		return out;
	}
	if (v.is_array() || v.is_object()) {
		std::string out;
		for (auto it = v.begin(); it != v.end(); ++it) {
			if (!out.empty())
				out += ", ";
			if (v.is_object())
				out += it.key() + " ";
			out += it->is_structured() && v.is_object() ? "(" + words(*it) + ")" : words(*it);
		}
		return out;
	}
	return jsonText(v);
}

/* What `ibemu link|node|errors|scenario` changed, and the last events */
void printFaults(const nlohmann::json &f, const nlohmann::json &scenarios)
{
	for (const auto &c : f.value("pulled_cables", nlohmann::json::array()))
		printf("  pulled cable: %s -- %s\n", c.value("port", "").c_str(), c.value("peer", "").c_str());
	for (const auto &n : f.value("silent_nodes", nlohmann::json::array()))
		printf("  silent node: %s\n", words(n).c_str());
	for (const auto &p : f.value("lossy_ports", nlohmann::json::array()))
		printf("  lossy cable at %s: drop %g, corrupt %g (seed %llu): %llu dropped, %llu corrupted\n",
		       p.value("port", "").c_str(), p.value("drop", 0.0), p.value("corrupt", 0.0),
		       static_cast<unsigned long long>(p.value("seed", 0ull)),
		       static_cast<unsigned long long>(p.value("dropped", 0ull)),
		       static_cast<unsigned long long>(p.value("corrupted", 0ull)));
	for (const auto &d : f.value("degraded_links", nlohmann::json::array()))
		printf("  degraded cable at %s: at most %s %s\n", d.value("port", "").c_str(),
		       d.value("width", "").c_str(), d.value("speed", "").c_str());
	for (const auto &s : scenarios) {
		uint64_t skipped = s.value("skipped", 0ull);
		printf("  scenario %s (seed %llu): %llu events fired%s%s\n", s.value("file", "").c_str(),
		       static_cast<unsigned long long>(s.value("seed", 0ull)),
		       static_cast<unsigned long long>(s.value("fired", 0ull)),
		       skipped ? (", " + std::to_string(skipped) + " ticks skipped (late)").c_str() : "",
		       s.value("waiting_for_sm_master", false) ? ", some wait for an SM" : "");
	}
	const auto &events = f.value("recent_events", nlohmann::json::array());
	if (events.empty())
		return;
	printf("  events: the last %zu of %s\n", events.size(), f.value("events_file", "").c_str());
	for (const auto &e : events) {
		nlohmann::json rest = e;
		for (const char *k : { "seq", "time", "op", "source" })
			rest.erase(k);
		printf("    %s %s (%s) %s\n", e.value("time", "").c_str(), e.value("op", "").c_str(),
		       e.value("source", "").c_str(), words(rest).c_str());
	}
}

} /* namespace */

void printDevices(const nlohmann::json &j)
{
	const auto &f = j["fabric"];
	/* "seccomp transport (FUSE files)": what `exec` gives, and the files */
	std::string transport = j.value("transport", "") + " transport";
	if (j.value("exec_transport", "") == "seccomp")
		transport = "seccomp transport (" + std::string(j.value("transport", "") == "cuse" ? "CUSE" : "FUSE") +
			" files)";
	printf("ibemu instance \"%s\" is up (pid %d, %s, fabric %s: %s, %s, %s)\n", j.value("instance", "").c_str(),
	       j.value("pid", 0), transport.c_str(), j.value("topology", "").c_str(),
	       count(f.value("switches", 0), "switch", "switches").c_str(),
	       count(f.value("cas", 0), "CA", "CAs").c_str(), count(f.value("links", 0), "link", "links").c_str());
	for (const auto &d : j["devices"]) {
		printf("  %s  node GUID %s  \"%s\"\n", d.value("ibdev", "").c_str(), d.value("node_guid", "").c_str(),
		       d.value("node", "").c_str());
		for (const auto &p : d["ports"]) {
			printf("    port %d: %s %s", p.value("port", 0), p.value("umad", "").c_str(),
			       p.value("issm", "").c_str());
			if (p.contains("state"))
				printf("  %s/%s  LID %d  SM LID %d  %s%s  %d open", p.value("state", "").c_str(),
				       p.value("phys_state", "").c_str(), p.value("lid", 0), p.value("sm_lid", 0),
				       p.value("rate", "").c_str(), p.value("issm_held", false) ? "  (issm held)" : "",
				       p.value("open_files", 0));
			if (j.contains("rdma_cm") && !p.value("ipv4", "").empty()) /* they mean something to rdma_cm */
				printf("  IPv4 %s", p.value("ipv4", "").c_str());
			printf("\n");
		}
		if (d.contains("uverbs")) {
			printf("    verbs: %s", d.value("uverbs", "").c_str());
			if (d.contains("verbs_open_files"))
				printf("  %d open", d.value("verbs_open_files", 0));
			printf("\n");
		}
	}
	if (j.contains("verbs")) {
		const auto &v = j["verbs"];
		if (v.value("available", false))
			printf("  verbs and rdma_cm: %s, %s provider\n", v.value("where", "").c_str(),
			       j.value("verbs_provider", "").c_str());
		else
			printf("  verbs and rdma_cm: not available: %s (%s)\n", v.value("why", "").c_str(),
			       v.value("fix", "").c_str());
		for (const auto &w : v.value("warnings", nlohmann::json::array()))
			printf("    but %s (%s)\n", w.value("why", "").c_str(), w.value("fix", "").c_str());
	}
	if (j.contains("web"))
		printf("  live view: %s\n", j.value("web", "").c_str());
	if (j.contains("hosts") && !j["hosts"].empty()) { /* docs/cluster.md */
		printf("  hosts (ibemu exec --host):");
		const char *sep = " ";
		for (const auto &h : j["hosts"]) {
			printf("%s%s:", sep, h.value("name", "").c_str());
			for (const auto &c : h.value("hcas", nlohmann::json::array()))
				printf(" %s", c.value("name", "").c_str());
			sep = "; ";
		}
		printf("\n");
	}
	if (j.contains("sm")) {
		const auto &sm = j["sm"];
		printf("  OpenSM: %s", sm.value("state", "").c_str());
		if (sm.value("pid", 0))
			printf(", pid %d", sm.value("pid", 0));
		if (sm.contains("sminfo"))
			printf(", %s", sm.value("sminfo", "").c_str());
		printf("\n    log %s\n", sm.value("log", "").c_str());
	}
	if (j.contains("faults"))
		printFaults(j["faults"], j.value("scenarios", nlohmann::json::array()));
	if (j.contains("pinned") && !j["pinned"].empty()) {
		printf("  pinned memory (RLIMIT_MEMLOCK accounting):\n");
		for (const auto &p : j["pinned"])
			printf("    pid %d: %llu pages (%llu KiB)\n", p.value("pid", 0),
			       static_cast<unsigned long long>(p.value("pinned_pages", 0ull)),
			       static_cast<unsigned long long>(p.value("pinned_bytes", 0ull) / 1024));
	}
}

void printClients(const std::vector<Client> &clients, int smPid)
{
	for (const auto &c : clients)
		printf("    pid %d (%s): %s%s\n", c.pid, c.command.c_str(),
		       count(int(c.files), "file", "files").c_str(), c.pid == smPid ? " (the instance's SM)" : "");
}

} /* namespace ibemu::tools::instance_cmd */
