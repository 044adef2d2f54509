// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// ib0: a TUN device pumped into and out of a port's IPoIB.
#include "tools/netdev/ipoib_netdev.h"

#include <linux/if_tun.h>
#include <net/if.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace ibemu::netdev {

IpoibNetdev::IpoibNetdev(emu::Host &host, int tunFd, int inetSock, std::string name)
	: name_(std::move(name)), tun_(host.io(), tunFd), sock_(inetSock)
{}

IpoibNetdev::~IpoibNetdev()
{
	alive_.reset();
	ipoib_.reset();
	boost::system::error_code ec;
	tun_.close(ec);
	if (sock_ >= 0)
		close(sock_);
}

/* netif_carrier_on/off(); on the join the MTU the group allows */
void IpoibNetdev::carrier(bool up, uint32_t mtu)
{
	if (up && sock_ >= 0) {
		ifreq ifr{};
		strncpy(ifr.ifr_name, name_.c_str(), IFNAMSIZ - 1);
		ifr.ifr_mtu = static_cast<int>(std::min<uint32_t>(mtu, maxMtu_));
		(void)!ioctl(sock_, SIOCSIFMTU, &ifr);
	}
	int on = up;
	(void)!ioctl(tun_.native_handle(), TUNSETCARRIER, &on);
}

/* one read, one packet (IFF_TUN without packet information) */
void IpoibNetdev::readNext()
{
	tun_.async_read_some(boost::asio::buffer(buf_),
			     [this, alive = std::weak_ptr<bool>(alive_)](const boost::system::error_code &ec, size_t n) {
				     if (alive.expired() || ec == boost::asio::error::operation_aborted)
					     return;
				     if (!ec && ipoib_->transmit(std::span<const uint8_t>(buf_.data(), n)) != 0)
					     txDropped_++;
				     if (!ec || ec == boost::asio::error::would_block || ec == boost::asio::error::interrupted)
					     readNext();
			     });
}

std::unique_ptr<IpoibNetdev> createNetdev(int netnsFd, const TunConfig &cfg, emu::Host &host, emu::Hca &hca,
					  unsigned portNum, std::string *why)
{
	if (portNum < 1 || portNum > hca.madPorts.size()) {
		if (why)
			*why = "no such port";
		return nullptr;
	}
	int sock = -1;
	const int fd = openTun(netnsFd, cfg, why, &sock);
	if (fd < 0)
		return nullptr;
	std::unique_ptr<IpoibNetdev> d(new IpoibNetdev(host, fd, sock, cfg.name));
	d->maxMtu_ = cfg.mtu;
	d->carrier(false, 0); /* until the join */
	/* what the port receives goes to the namespace's stack; a TUN
	 * whose queue is full drops it, as a congested device would */
	d->ipoib_ = std::make_unique<emu::Ipoib>(host, hca, portNum, emu::IpoibConfig{ cfg.addr, cfg.prefixLen },
						 [fd](std::span<const uint8_t> pkt) {
							 (void)!::write(fd, pkt.data(), pkt.size());
						 });
	d->ipoib_->onCarrier([dev = d.get()](bool up, uint32_t mtu) { dev->carrier(up, mtu); });
	d->readNext();
	return d;
}

} /* namespace ibemu::netdev */
