// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// A TUN device made inside a network namespace by a thread of its own.
#include "tools/netdev/tun_device.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <linux/if_tun.h>
#include <net/if.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <thread>

namespace ibemu::netdev {

namespace {

struct Made {
	int fd = -1;
	int sock = -1;
	int err = 0;
	std::string why;
};

/* on the helper thread, which is in the namespace: the device, then its
 * address, MTU and flags through an AF_INET socket of that namespace */
void make(const TunConfig &cfg, Made &m)
{
	auto fail = [&](const char *what) {
		m.err = -errno;
		m.why = std::string(what) + ": " + strerror(errno);
	};
	int fd = open("/dev/net/tun", O_RDWR | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return fail("open /dev/net/tun");
	ifreq ifr{};
	ifr.ifr_flags = IFF_TUN | IFF_NO_PI;
	strncpy(ifr.ifr_name, cfg.name.c_str(), IFNAMSIZ - 1);
	if (ioctl(fd, TUNSETIFF, &ifr) != 0) {
		fail("TUNSETIFF");
		close(fd);
		return;
	}
	int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (s < 0) {
		fail("socket");
		close(fd);
		return;
	}
	auto set = [&](unsigned long req, const char *what) {
		if (ioctl(s, req, &ifr) == 0)
			return true;
		fail(what);
		return false;
	};
	auto inet = [&](uint32_t a) {
		sockaddr_in sin{};
		sin.sin_family = AF_INET;
		sin.sin_addr.s_addr = a;
		memcpy(&ifr.ifr_addr, &sin, sizeof sin);
	};
	bool ok = true;
	if (cfg.addr) {
		inet(cfg.addr);
		ok = set(SIOCSIFADDR, "SIOCSIFADDR");
		inet(cfg.prefixLen ? htonl(~uint32_t(0) << (32 - cfg.prefixLen)) : 0);
		ok = ok && set(SIOCSIFNETMASK, "SIOCSIFNETMASK");
		if (cfg.prefixLen < 31) { /* so that the subnet's broadcast is sent */
			inet(cfg.addr | htonl(~uint32_t(0) >> cfg.prefixLen));
			ok = ok && set(SIOCSIFBRDADDR, "SIOCSIFBRDADDR");
		}
	}
	ifr.ifr_mtu = static_cast<int>(cfg.mtu);
	ok = ok && set(SIOCSIFMTU, "SIOCSIFMTU");
	ok = ok && set(SIOCGIFFLAGS, "SIOCGIFFLAGS");
	ifr.ifr_flags |= IFF_UP | IFF_RUNNING;
	ok = ok && set(SIOCSIFFLAGS, "SIOCSIFFLAGS");
	if (!ok) {
		close(s);
		close(fd);
		return;
	}
	m.fd = fd;
	m.sock = s;
}

} /* namespace */

int openTun(int netnsFd, const TunConfig &cfg, std::string *why, int *inetSock)
{
	if (cfg.name.empty() || cfg.name.size() >= IFNAMSIZ) {
		if (why)
			*why = "bad interface name";
		return -EINVAL;
	}
	Made m;
	/* a network namespace is a thread's own: the thread enters it and
	 * ends there, the daemon's threads stay where they are */
	std::thread t([&] {
		if (setns(netnsFd, CLONE_NEWNET) != 0) {
			m.err = -errno;
			m.why = std::string("setns: ") + strerror(errno);
			return;
		}
		make(cfg, m);
	});
	t.join();
	if (m.fd < 0 && why)
		*why = m.why;
	if (inetSock)
		*inetSock = m.sock;
	else if (m.sock >= 0)
		close(m.sock);
	return m.fd >= 0 ? m.fd : m.err;
}

} /* namespace ibemu::netdev */
