// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// What the daemon tells about itself (tools/daemon/daemon.h): the
// description written to the ready file, and the live status `ibemu status`
// reads from the FUSE filesystem.
#include "tools/control/json_text.h"
#include "tools/daemon/daemon.h"

#include "cuse_dev/seccomp_filter.h"
#include "emu/hca_attrs.h"
#include "tools/instance/host_verbs.h"

#include <algorithm>
#include <arpa/inet.h>
#include <cinttypes>
#include <cstdio>
#include <map>
#include <unistd.h>

namespace ibemu::tools {

/* What keeps programs started without `ibemu exec` from the verbs of a
 * --global instance, or from ibemu's provider, and what to do. */
nlohmann::ordered_json Daemon::globalVerbsWarnings() const
{
	nlohmann::ordered_json w = nlohmann::ordered_json::array();
	if (!providerWhy_.empty())
		w.push_back({ { "why",
				providerWhy_ +
					"; programs get the stock provider (ipathverbs), without completion channels "
					"or the extended verbs API" },
			      { "fix", "ibemu down, then ibemu up --global with ibemu's provider installed" } });
	/* asked again each time: something may load ib_core later (rdma_rxe) */
	if (tools::rdmaNetlinkAnswers())
		w.push_back({ { "why",
				"the kernel's RDMA netlink answers (ib_core is loaded), and libibverbs then "
				"lists the kernel's devices only: programs do not see ibemu's unless run "
				"under `ibemu exec`" },
			      { "fix",
				"ibemu exec, or keep ib_core from loading: an `install ib_core /bin/false` "
				"line in /etc/modprobe.d, and modprobe -r the modules that use it" } });
	return w;
}

/* The cluster hosts (docs/cluster.md): each with its HCAs and the holder
 * of its namespaces, which `ibemu exec --host` joins. */
nlohmann::ordered_json Daemon::hostsJson() const
{
	nlohmann::ordered_json hosts = nlohmann::ordered_json::array();
	for (const auto &h : host_->hcas()) {
		if (h->hostName.empty()) /* added live: on no host */
			continue;
		auto it = std::find_if(hosts.begin(), hosts.end(),
				       [&h](const auto &e) { return e["name"] == h->hostName; });
		if (it == hosts.end()) {
			hosts.push_back({ { "name", h->hostName },
					  { "holder", hostNs_.holder(h->hostName) },
					  { "hcas", nlohmann::ordered_json::array() },
					  { "ib", ipoibJson(h->hostName) } });
			it = hosts.end() - 1;
		}
		char guid[24];
		snprintf(guid, sizeof guid, "0x%016" PRIx64, h->node->nodeGuid);
		(*it)["hcas"].push_back({ { "name", h->name }, { "node_desc", h->node->desc }, { "node_guid", guid } });
	}
	return hosts;
}

/* A split subnet's cluster hosts that other daemons serve
 * (docs/multihost.md, "Hosts across daemons"): the CAs the file gives to
 * another host=, grouped by host as that daemon groups its local HCAs
 * (a description's first word; one that names no host, by its GUID), each
 * with the daemon that serves it and its ports' rdma_cm addresses, which
 * every daemon numbers alike. Which of them that daemon made local
 * (`--local`) and whether they have an ib0 only it knows. */
nlohmann::ordered_json Daemon::otherHostsJson() const
{
	nlohmann::ordered_json hosts = nlohmann::ordered_json::array();
	std::map<std::pair<std::string, std::string>, size_t> at; /* (host, host=) to its entry: a big split
								     subnet has thousands */
	for (const auto &n : subnet_.nodes()) {
		if (!n->foreign || n->type != fabric::NodeType::CA)
			continue;
		const fabric::TopoHost &owner = split_.hosts[size_t(split_.ownerOf[n->index])];
		char guid[24];
		snprintf(guid, sizeof guid, "0x%016" PRIx64, n->nodeGuid);
		std::string_view word = fabric::descHost(n->desc);
		const std::string name = fabric::isPathName(word) ? std::string(word) : std::string(guid);
		auto [slot, added] = at.try_emplace({ name, owner.name }, hosts.size());
		if (added)
			hosts.push_back({ { "name", name },
					  { "served_by", { { "host", owner.name }, { "addr", owner.addr } } },
					  { "hcas", nlohmann::ordered_json::array() },
					  { "addresses", nlohmann::ordered_json::array() } });
		auto it = hosts.begin() + std::ptrdiff_t(slot->second);
		(*it)["hcas"].push_back({ { "node_desc", n->desc }, { "node_guid", guid } });
		for (unsigned port = 1; port <= n->numPorts; port++) {
			char v4[INET_ADDRSTRLEN];
			uint32_t a4 = host_->cma().ipv4Of(*n, port);
			if (!a4) /* a CA past the 256th */
				continue;
			inet_ntop(AF_INET, &a4, v4, sizeof v4);
			(*it)["addresses"].push_back({ { "address", std::string(v4) + "/16" },
						       { "node_guid", guid },
						       { "port", port } });
		}
	}
	return hosts;
}

nlohmann::ordered_json Daemon::describe() const
{
	nlohmann::ordered_json j;
	j["instance"] = inst_.name;
	j["pid"] = getpid();
	j["transport"] = cuse_ ? "cuse" : "fuse";
	/* how programs under `ibemu exec` reach the devices: "seccomp" (the
	 * filter's listener goes to the socket) or the device files */
	j["exec_transport"] = seccomp_ ? "seccomp" : cuse_ ? "cuse" : "fuse";
	if (seccomp_)
		j["seccomp_socket"] = seccompSocket();
	if (launchDoor_) { /* `ibemu exec` under `ibemu exec` (tools/daemon/launch_door.h) */
		j["launch_socket"] = launchSocket();
		/* the daemon's own (a container's listener, an exec's it was
		 * started under): only a caller under more takes the door */
		j["seccomp_filters"] = cuse_dev::seccomp::filterCount();
	}
	/* how FUSE requests reach the daemon: "io_uring" (a queue per CPU) or
	 * "/dev/fuse" */
	j["fuse_requests"] = fs_ && fs_->overIoUring() ? "io_uring" : "/dev/fuse";
	j["global"] = opts_.global; /* CUSE nodes under the standard names */
	/* who can use verbs and rdma_cm, or why nobody can and what to do */
	if (cuse_ || seccomp_) {
		j["verbs"] = { { "available", true },
			       { "where",
				 opts_.global    ? "every program on this host, through the CUSE device files"
					 : cuse_ ? "the CUSE device files"
						 : "programs under `ibemu exec` (seccomp)" } };
		if (opts_.global)
			j["verbs"]["warnings"] = globalVerbsWarnings();
		j["verbs_provider"] = verbsProvider_;
	} else
		j["verbs"] = { { "available", false },
			       { "why",
				 "the fuse transport serves umad and issm files only; uverbs and rdma_cm need "
				 "the seccomp transport or CUSE" },
			       { "fix", "ibemu down, then ibemu up --transport auto" } };
	j["hosts"] = hostsJson();
	if (!split_.hosts.empty())
		j["other_hosts"] = otherHostsJson();
	j["topology"] = !opts_.gen.empty() ? "gen " + opts_.gen
		: opts_.topology.empty()   ? "(built-in default)"
					   : opts_.topology;
	if (web_)
		j["web"] = web_->url();
	if (peers_)
		j["split"] = peers_->status();
	j["fabric"] = { { "switches", subnet_.numSwitches() },
			{ "cas", subnet_.numCas() },
			{ "routers", subnet_.numRouters() },
			{ "links", subnet_.numLinks() } };
	nlohmann::ordered_json devs = nlohmann::ordered_json::array();
	for (const auto &h : host_->hcas()) {
		nlohmann::ordered_json d;
		d["ibdev"] = h->name;
		d["node"] = h->node->desc;
		char guid[24];
		snprintf(guid, sizeof(guid), "0x%016" PRIx64, h->node->nodeGuid);
		d["node_guid"] = guid;
		nlohmann::ordered_json ports = nlohmann::ordered_json::array();
		for (size_t k = 0; k < h->umadPorts.size(); k++) {
			const emu::UmadPort &u = *h->umadPorts[k];
			char v4[INET_ADDRSTRLEN], v6[INET6_ADDRSTRLEN];
			uint32_t a4 = host_->cma().ipv4Of(*h->node, u.portNum());
			if (a4)
				inet_ntop(AF_INET, &a4, v4, sizeof v4);
			else
				v4[0] = '\0'; /* a CA past the 256th of a split subnet */
			inet_ntop(AF_INET6, emu::Cma::ipv6Of(h->madPorts[k]->port().guid).data(), v6, sizeof v6);
			ports.push_back({ { "port", u.portNum() },
					  { "umad", "/dev/infiniband/umad" + std::to_string(u.devNum()) },
					  { "issm", "/dev/infiniband/issm" + std::to_string(u.devNum()) },
					  { "ipv4", v4 },
					  { "ipv6", v6 } });
		}
		d["ports"] = ports;
		if (cuse_ || seccomp_)
			d["uverbs"] = "/dev/infiniband/uverbs" + std::to_string(h->verbsNum);
		devs.push_back(d);
	}
	j["devices"] = devs;
	if (cuse_ || seccomp_)
		j["rdma_cm"] = "/dev/infiniband/rdma_cm";
	if (sm_)
		j["sm"] = { { "pid", sm_->pid() },
			    { "state", sm_->state() },
			    { "log", sm_->logFile() },
			    { "output", sm_->outFile() } };
	return j;
}

/* What `ibemu status` shows: the description plus each port's state now. */
std::string Daemon::liveStatus() const
{
	nlohmann::ordered_json j = describe();
	size_t i = 0;
	for (const auto &h : host_->hcas()) {
		auto &ports = j["devices"][i++]["ports"];
		for (size_t k = 0; k < h->umadPorts.size(); k++) {
			const emu::UmadPort &u = *h->umadPorts[k];
			const emu::PortAttr a = emu::queryPort(*h->madPorts[k]);
			auto &o = ports[k];
			o["state"] = fabric::portStateName(a.state);
			o["phys_state"] = fabric::physStateName(a.physState);
			o["lid"] = a.lid;
			o["lmc"] = a.lmc;
			o["sm_lid"] = a.smLid;
			o["rate"] = fabric::rateString(a.activeWidth ? a.activeWidth : uint8_t(fabric::kWidth1x),
						       a.activeSpeed);
			char cap[16];
			snprintf(cap, sizeof(cap), "0x%08x", a.capMask);
			o["cap_mask"] = cap;
			o["issm_held"] = u.issmHeld();
			o["open_files"] = u.openFiles();
		}
	}
	i = 0;
	for (const auto &h : host_->hcas())
		j["devices"][i++]["verbs_open_files"] = h->verbs->openFiles();
	/* pinned memory per process, as the kernel's pinned_vm (VmPin) */
	nlohmann::ordered_json pinned = nlohmann::ordered_json::array();
	for (const auto &[pid, pages] : host_->pinned().all())
		pinned.push_back(
			{ { "pid", pid }, { "pinned_pages", pages }, { "pinned_bytes", pages * emu::kPageSize } });
	j["pinned"] = pinned;
	/* who holds the devices, by the process that opened them */
	std::map<pid_t, unsigned> openers;
	if (fs_)
		fs_->openers(openers);
	if (cuse_)
		cuse_->openers(openers);
	if (seccomp_)
		seccomp_->openers(openers);
	nlohmann::ordered_json clients = nlohmann::ordered_json::array();
	for (const auto &[pid, files] : openers)
		clients.push_back({ { "pid", pid }, { "files", files } });
	j["clients"] = clients;
	j["dropped_packets"] = subnet_.droppedPackets();
	if (web_) /* its connections, and how often it built the state */
		j["web_view"] = web_->stats();
	j["faults"] = control_->state();
	j["scenarios"] = scenarioStates();
	return jsonText(j) + "\n";
}

} /* namespace ibemu::tools */
