// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// ib0 (tools/netdev/ipoib_netdev.h) for real: two network namespaces this
// test makes, each with an ib0 on one of the default fabric's HCAs, and a
// ping from one to the other through their kernels' stacks, the TUN
// devices and IPoIB over the emulated switches. Root only (a TUN and
// namespaces); without root it says so and checks nothing.
#include "tests/unit/sa_helpers.h"
#include "tests/unit/verbs_helpers.h"

#include "fabric/node.h"
#include "tools/netdev/ipoib_netdev.h"
#include "tests/unit/netns_helpers.h"

#include <catch2/catch.hpp>

#include <arpa/inet.h>
#include <linux/ethtool.h>
#include <linux/sockios.h>
#include <fcntl.h>
#include <net/if.h>
#include <netinet/ip_icmp.h>
#include <poll.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <thread>

using namespace ibemu;
using namespace ibemu::test;

namespace {

uint16_t checksum(const uint8_t *p, size_t n)
{
	uint32_t sum = 0;
	for (size_t i = 0; i + 1 < n; i += 2)
		sum += uint32_t(p[i]) << 8 | p[i + 1];
	if (n & 1)
		sum += uint32_t(p[n - 1]) << 8;
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return uint16_t(~sum);
}

/* In namespace netns, on a thread of its own while the test runs the
 * daemon's io_context: one ICMP echo to `to`, and the reply's ICMP
 * bytes (none after `waits` tenths of a second) */
struct Ping {
	std::atomic<bool> done{ false };
	std::vector<uint8_t> reply;
	std::thread thread;

	Ping(int netns, uint32_t to, const std::vector<uint8_t> &echo, int waits = 50)
	{
		thread = std::thread([this, netns, to, echo, waits] {
			run(netns, to, echo, waits);
			done = true;
		});
	}
	~Ping() { thread.join(); }

	void run(int netns, uint32_t to, const std::vector<uint8_t> &echo, int waits)
	{
		if (setns(netns, CLONE_NEWNET) != 0)
			return;
		int s = socket(AF_INET, SOCK_RAW | SOCK_CLOEXEC, IPPROTO_ICMP);
		if (s < 0)
			return;
		sockaddr_in dst{};
		dst.sin_family = AF_INET;
		dst.sin_addr.s_addr = to;
		if (sendto(s, echo.data(), echo.size(), 0, reinterpret_cast<sockaddr *>(&dst), sizeof dst) < 0) {
			close(s);
			return;
		}
		for (int tries = 0; tries < waits && reply.empty(); tries++) {
			pollfd p{ s, POLLIN, 0 };
			if (poll(&p, 1, 100) <= 0)
				continue;
			uint8_t buf[2048];
			ssize_t n = recv(s, buf, sizeof buf, 0);
			size_t ihl = n > 0 ? (buf[0] & 0xf) * 4u : 0;
			if (n > 0 && size_t(n) > ihl && buf[ihl] == ICMP_ECHOREPLY)
				reply.assign(buf + ihl, buf + n);
		}
		close(s);
	}
};

/* an echo request: id, sequence 1, the payload */
std::vector<uint8_t> echoRequest(uint16_t id, const std::string &payload)
{
	std::vector<uint8_t> e(8 + payload.size(), 0);
	e[0] = ICMP_ECHO;
	e[4] = uint8_t(id >> 8);
	e[5] = uint8_t(id);
	e[7] = 1;
	memcpy(e.data() + 8, payload.data(), payload.size());
	uint16_t c = checksum(e.data(), e.size());
	e[2] = uint8_t(c >> 8);
	e[3] = uint8_t(c);
	return e;
}

/* an interface's flags, MTU and link type, seen from inside netns */
struct LinkSeen {
	short flags = 0;
	int mtu = 0;
	unsigned short hwType = 0xffff;
	int carrier = -1; /* ethtool's link: netif_carrier_ok() */
	uint32_t broadcast = 0;
};

LinkSeen linkIn(int netns, const char *name)
{
	LinkSeen l;
	std::thread t([&] {
		if (setns(netns, CLONE_NEWNET) != 0)
			return;
		int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
		ifreq ifr{};
		strncpy(ifr.ifr_name, name, IFNAMSIZ - 1);
		if (ioctl(s, SIOCGIFFLAGS, &ifr) == 0)
			l.flags = ifr.ifr_flags;
		if (ioctl(s, SIOCGIFMTU, &ifr) == 0)
			l.mtu = ifr.ifr_mtu;
		if (ioctl(s, SIOCGIFHWADDR, &ifr) == 0)
			l.hwType = ifr.ifr_hwaddr.sa_family;
		ethtool_value link{ ETHTOOL_GLINK, 0 };
		ifr.ifr_data = reinterpret_cast<char *>(&link);
		if (ioctl(s, SIOCETHTOOL, &ifr) == 0)
			l.carrier = link.data != 0;
		if (ioctl(s, SIOCGIFBRDADDR, &ifr) == 0)
			l.broadcast = reinterpret_cast<sockaddr_in *>(&ifr.ifr_broadaddr)->sin_addr.s_addr;
		close(s);
	});
	t.join();
	return l;
}

} /* namespace */

TEST_CASE("ipoib netdev: ping between two namespaces' ib0 over the emulated fabric", "[ipoib][netdev][root]")
{
	if (geteuid() != 0 || access("/dev/net/tun", R_OK | W_OK) != 0) {
		WARN("needs root and /dev/net/tun: not run");
		return;
	}
	const int ns1 = netdev::newNetns(), ns2 = netdev::newNetns();
	if (ns1 < 0 || ns2 < 0) {
		WARN("no network namespace could be made: not run");
		return;
	}
	std::string why;
	if (int probe = netdev::openTun(ns1, { "probe0" }, &why); probe < 0) {
		WARN("no TUN device can be made (" + why + "): not run");
		close(ns1);
		close(ns2);
		return;
	} else {
		close(probe);
	}
	VerbsFixture f;
	TestSa sa(f);
	sa.groupQkey = 0x0b1b;
	programMfts(f.subnet, 0xc001);
	const uint32_t a1 = inet_addr("10.200.0.1"), a2 = inet_addr("10.200.1.1");
	auto ib1 = netdev::createNetdev(ns1, { "ib0", a1, 16 }, *f.host, *f.hca1, 1, &why);
	INFO(why);
	REQUIRE(ib1);
	auto ib2 = netdev::createNetdev(ns2, { "ib0", a2, 16 }, *f.host, *f.hca2, 1, &why);
	REQUIRE(ib2);
	CHECK(linkIn(ns1, "ib0").carrier == 0); /* no carrier before the join */
	f.drain();
	REQUIRE(ib1->ipoib().up());
	REQUIRE(ib2->ipoib().up());

	/* what `ip link` says of it: up, MTU 2044, a TUN's link type */
	LinkSeen l = linkIn(ns1, "ib0");
	CHECK((l.flags & IFF_UP) != 0);
	CHECK(l.mtu == 2044);
	CHECK(l.hwType == 0xfffe); /* ARPHRD_NONE, not ARPHRD_INFINIBAND */
	CHECK(l.carrier == 1);
	CHECK(l.broadcast == inet_addr("10.200.255.255"));

	const fabric::PortCounters before = f.subnet.findNodeByGuid(0x2c90200000002)->port(1).counters;
	const std::vector<uint8_t> echo = echoRequest(0x1b1b, "ibemu ipoib ping");
	auto ping = [&](int waits) {
		Ping p(ns1, a2, echo, waits);
		while (!p.done) {
			f.poll();
			usleep(1000);
		}
		return p.reply;
	};
	std::vector<uint8_t> reply = ping(50);
	REQUIRE(reply.size() == echo.size());
	CHECK(reply[0] == ICMP_ECHOREPLY);
	CHECK(std::equal(echo.begin() + 4, echo.end(), reply.begin() + 4)); /* id, sequence, payload */
	CHECK(ib1->ipoib().neighbour(a2) == ib2->ipoib().hwAddr());
	const fabric::PortCounters &after = f.subnet.findNodeByGuid(0x2c90200000002)->port(1).counters;
	CHECK(after.extUnicastXmitPkts > before.extUnicastXmitPkts); /* the echo to host2 */
	CHECK(after.extUnicastRcvPkts > before.extUnicastRcvPkts); /* and its reply */

	/* host2's cable pulled: no answer any more */
	REQUIRE(f.subnet.pullCable(*f.p2) == 0);
	f.drain();
	CHECK(ping(10).empty());
	/* host2's HCA gone: its ib0 has no carrier */
	f.host->removeHca(f.hca2);
	f.hca2 = nullptr;
	CHECK(linkIn(ns2, "ib0").carrier == 0);
	ib1.reset();
	ib2.reset();
	close(ns1);
	close(ns2);
}
