// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// A TUN device in a network namespace: the carrier of a port's IPoIB
// (emu/ipoib.h) to the programs of that namespace. The device is made by a
// helper thread that enters the namespace (setns), opens /dev/net/tun
// there (a TUN belongs to the namespace of the process that opens it) and
// sets it up; the descriptor it returns stays valid in the daemon's own
// namespace, and the device goes with its last descriptor.
#pragma once

#include <cstdint>
#include <string>

namespace ibemu::netdev {

struct TunConfig {
	std::string name; /* the interface name, "ib0" */
	uint32_t addr = 0; /* IPv4, network byte order; 0: none */
	unsigned prefixLen = 16;
	unsigned mtu = 2044;
};

/* A TUN device without packet information (IFF_TUN | IFF_NO_PI) named
 * cfg.name in the network namespace netnsFd, with the address, prefix and
 * broadcast address, the MTU and the link up. Returns its descriptor
 * (non-blocking, close-on-exec), or a negative errno with what failed in
 * *why. With inetSock, the AF_INET socket of the namespace that set it up
 * is kept there, for later interface ioctls (SIOCSIFMTU). */
int openTun(int netnsFd, const TunConfig &cfg, std::string *why, int *inetSock = nullptr);

} /* namespace ibemu::netdev */
