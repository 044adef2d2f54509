// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// IPoIB on the cluster hosts (docs/cluster.md, docs/ipoib.md): once the
// hosts' namespaces exist (Daemon::ready()), each host's network namespace
// gets an interface per port of its HCAs, as a node's kernel makes them:
// ib0, ib1, ... numbered across the host's HCA ports in order, each on the
// address rdma_cm gives the port (a port without one keeps its number and
// gets no interface). A host without a network namespace of its own
// (--global) gets none, and the log says so.
#include "tools/daemon/daemon.h"

#include <spdlog/spdlog.h>

#include <arpa/inet.h>
#include <unistd.h>

namespace ibemu::tools {

namespace {

constexpr unsigned kPrefix = 16; /* rdma_cm's 10.200.0.0/16 (docs/rdma-cm.md) */

std::string dotted(uint32_t addr)
{
	char a[INET_ADDRSTRLEN] = "";
	inet_ntop(AF_INET, &addr, a, sizeof a);
	return a;
}

} /* namespace */

/* On the io thread, from ready(): createNetdev() blocks briefly per port. */
void Daemon::startIpoib()
{
	std::map<std::string, unsigned> next; /* the next ibN of each host */
	for (const auto &h : host_->hcas()) {
		int ns = hostNs_.netns(h->hostName);
		for (unsigned port = 1; port <= h->madPorts.size(); port++) {
			const std::string name = "ib" + std::to_string(next[h->hostName]++);
			const uint32_t addr = host_->cma().ipv4Of(*h->node, port);
			if (ns < 0) {
				spdlog::info("ipoib: host {} has no network namespace of its own{}: no {} for {} port {}",
					     h->hostName, opts_.global ? " (--global)" : "", name, h->name, port);
				continue;
			}
			if (addr == 0) {
				spdlog::info("ipoib: {} port {} has no rdma_cm address: no {} on host {}", h->name,
					     port, name, h->hostName);
				continue;
			}
			std::string why;
			auto dev = netdev::createNetdev(ns, { name, addr, kPrefix }, *host_, *h, port, &why);
			if (!dev) {
				spdlog::error("ipoib: {} port {}: no {} on host {}: {}", h->name, port, name,
					      h->hostName, why);
				continue;
			}
			spdlog::info("ipoib: host {}: {} {}/{} on {} port {} (QPN {:#x})", h->hostName, name,
				     dotted(addr), kPrefix, h->name, port, dev->ipoib().qpn());
			ipoib_.push_back({ h->hostName, h->name, port, addr, std::move(dev) });
		}
	}
}

/* A host's interfaces for `ibemu hosts`: name, address/prefix, HCA, port. */
nlohmann::ordered_json Daemon::ipoibJson(const std::string &hostName) const
{
	nlohmann::ordered_json a = nlohmann::ordered_json::array();
	for (const auto &i : ipoib_)
		if (i.host == hostName)
			a.push_back({ { "name", i.dev->name() },
				      { "address", dotted(i.addr) + "/" + std::to_string(kPrefix) },
				      { "hca", i.hca },
				      { "port", i.port } });
	return a;
}

} /* namespace ibemu::tools */
