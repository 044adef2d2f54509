// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// --ipoib, a temporary rule until the hosts of an instance have network
// namespaces of their own (issue 41): every local HCA gets a network
// namespace that the daemon holds, with ib0 (ib1 for a second port) on
// the address rdma_cm gives the port (docs/ipoib.md). The namespace is
// reached through the daemon's descriptor, which the log names:
//   nsenter --net=/proc/<ibemud's pid>/fd/<N> ping 10.200.1.1
#include "tools/daemon/daemon.h"

#include <spdlog/spdlog.h>

#include <arpa/inet.h>
#include <fcntl.h>
#include <sched.h>
#include <unistd.h>

#include <thread>

namespace ibemu::tools {

namespace {

/* a network namespace of its own, made by a thread that ends there */
int newNetns(std::string &why)
{
	int fd = -1;
	std::thread t([&] {
		if (unshare(CLONE_NEWNET) != 0)
			why = std::string("unshare(CLONE_NEWNET): ") + strerror(errno);
		else if ((fd = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC)) < 0)
			why = std::string("/proc/thread-self/ns/net: ") + strerror(errno);
	});
	t.join();
	return fd;
}

} /* namespace */

bool Daemon::startIpoib()
{
	if (!opts_.ipoib)
		return true;
	for (const auto &h : host_->hcas()) {
		std::string why;
		int ns = newNetns(why);
		if (ns < 0) {
			spdlog::error("--ipoib: {}", why);
			return false;
		}
		ipoibNetns_.push_back(ns);
		for (unsigned port = 1; port <= h->madPorts.size(); port++) {
			const uint32_t addr = host_->cma().ipv4Of(*h->node, port);
			netdev::TunConfig cfg{ "ib" + std::to_string(port - 1), addr, 16 };
			auto dev = netdev::createNetdev(ns, cfg, *host_, *h, port, &why);
			if (!dev) {
				spdlog::error("--ipoib: {} port {}: {}", h->name, port, why);
				return false;
			}
			char a[INET_ADDRSTRLEN] = "";
			inet_ntop(AF_INET, &addr, a, sizeof a);
			spdlog::info("--ipoib: {} port {}: {} {}/16 (QPN {:#x}) in the network namespace /proc/{}/fd/{}",
				     h->name, port, cfg.name, a, dev->ipoib().qpn(), getpid(), ns);
			ipoib_.push_back(std::move(dev));
		}
	}
	return true;
}

void Daemon::stopIpoib()
{
	ipoib_.clear();
	for (int fd : ipoibNetns_)
		close(fd);
	ipoibNetns_.clear();
}

} /* namespace ibemu::tools */
