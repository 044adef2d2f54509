// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// ib0: a TUN device pumped into and out of a port's IPoIB.
#include "tools/netdev/ipoib_netdev.h"

#include <unistd.h>

#include <cerrno>

namespace ibemu::netdev {

IpoibNetdev::IpoibNetdev(emu::Host &host, int tunFd, std::string name)
	: name_(std::move(name)), tun_(host.io(), tunFd)
{}

IpoibNetdev::~IpoibNetdev()
{
	alive_.reset();
	ipoib_.reset();
	boost::system::error_code ec;
	tun_.close(ec);
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
	const int fd = openTun(netnsFd, cfg, why);
	if (fd < 0)
		return nullptr;
	std::unique_ptr<IpoibNetdev> d(new IpoibNetdev(host, fd, cfg.name));
	/* what the port receives goes to the namespace's stack; a TUN
	 * whose queue is full drops it, as a congested device would */
	d->ipoib_ = std::make_unique<emu::Ipoib>(host, hca, portNum, emu::IpoibConfig{ cfg.addr, cfg.prefixLen },
						 [fd](std::span<const uint8_t> pkt) {
							 (void)!::write(fd, pkt.data(), pkt.size());
						 });
	d->readNext();
	return d;
}

} /* namespace ibemu::netdev */
