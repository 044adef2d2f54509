// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// ib0 in a network namespace: a port's IPoIB (emu/ipoib.h) carried by a TUN
// device (tun_device.h). IPv4 packets the namespace's stack sends out of
// the TUN go to Ipoib::transmit(); those the port receives are written to
// the TUN. Both directions run on the daemon's io_context, whose handlers
// hold the state lock (docs/architecture.md, "Threads: one lock"), as
// every other door into emu/ does.
//
// Lifetime rules: an IpoibNetdev owns its Ipoib and the TUN's descriptor;
// destroying it removes the interface (the last descriptor of a TUN that
// is not persistent takes the device with it). It must go before the
// emu::Host, like the Ipoib.
#pragma once

#include "emu/ipoib.h"
#include "tools/netdev/tun_device.h"

#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>

#include <array>
#include <memory>
#include <string>

namespace ibemu::netdev {

class IpoibNetdev {
public:
	~IpoibNetdev();
	IpoibNetdev(const IpoibNetdev &) = delete;
	IpoibNetdev &operator=(const IpoibNetdev &) = delete;

	emu::Ipoib &ipoib() { return *ipoib_; }
	const std::string &name() const { return name_; }
	/* packets the TUN gave that IPoIB could not send (no carrier yet, no
	 * route, too large) */
	uint64_t txDropped() const { return txDropped_; }

private:
	friend std::unique_ptr<IpoibNetdev> createNetdev(int, const TunConfig &, emu::Host &, emu::Hca &, unsigned,
							 std::string *);
	IpoibNetdev(emu::Host &host, int tunFd, int inetSock, std::string name);
	void carrier(bool up, uint32_t mtu);
	void readNext();

	std::string name_;
	boost::asio::posix::stream_descriptor tun_;
	std::unique_ptr<emu::Ipoib> ipoib_;
	std::array<uint8_t, 65536> buf_{};
	uint64_t txDropped_ = 0;
	int sock_ = -1; /* AF_INET, in the namespace */
	unsigned maxMtu_ = 0;
	std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
};

/* ib0 for port portNum of hca in the network namespace netnsFd (the
 * caller keeps its descriptor): a TUN named cfg.name with cfg's address,
 * prefix and MTU (2044 by default), IPoIB on the port with the same
 * address, packets pumped on the Host's io_context. Null, with what
 * failed in *why, when the TUN cannot be made. Call it under the state
 * lock, at setup or from a handler of the io_context: it may block
 * briefly (a thread of its own enters the namespace, and its ioctls take
 * the kernel's RTNL). The TUN's carrier is off until the port has joined
 * the broadcast group (TUNSETCARRIER follows Ipoib::up()), and on the
 * join its MTU is lowered to the group's, as the kernel's dev_set_mtu(). */
std::unique_ptr<IpoibNetdev> createNetdev(int netnsFd, const TunConfig &cfg, emu::Host &host, emu::Hca &hca,
					  unsigned portNum, std::string *why);

} /* namespace ibemu::netdev */
