// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// rdma_cm addresses and routes: the socket addresses an ID takes
// (CmaAddr), the IPv4 and IPv6 addresses of every CA port (IPoIB's, as
// drivers/infiniband/core/addr.c resolves them), which local or far port
// has an address, rdma_resolve_addr() (rdma_resolve_ip(), addr.c) and
// rdma_resolve_route() / rdma_set_ib_path() (cma_resolve_ib_route() and
// cma_query_ib_route() in cma.c, a PathRecord query through
// emu/sa_query.h).
#include "emu/cma.h"

#include "emu/hca_attrs.h"
#include "emu/host.h"
#include "emu/work_queue.h"
#include "fabric/node.h"
#include "fabric/subnet.h"

#include <algorithm>
#include <arpa/inet.h>
#include <cerrno>
#include <cstring>

namespace ibemu::emu {

namespace {

constexpr uint32_t kSubnet = 0x0ac80000; /* 10.200.0.0/16 */

} /* namespace */

/* ---------------- addresses ---------------- */

uint16_t CmaAddr::family() const
{
	uint16_t f;
	memcpy(&f, ss.data, 2);
	return f;
}

uint16_t CmaAddr::port() const
{
	switch (family()) {
	case AF_INET:
		return ntohs(reinterpret_cast<const sockaddr_in *>(ss.data)->sin_port);
	case AF_INET6:
		return ntohs(reinterpret_cast<const sockaddr_in6 *>(ss.data)->sin6_port);
	case kAfIb:
		return uint16_t(be64toh(reinterpret_cast<const sockaddr_ib *>(ss.data)->sib_sid));
	default:
		return 0;
	}
}

void CmaAddr::setPort(uint16_t port)
{
	switch (family()) {
	case AF_INET:
		reinterpret_cast<sockaddr_in *>(ss.data)->sin_port = htons(port);
		break;
	case AF_INET6:
		reinterpret_cast<sockaddr_in6 *>(ss.data)->sin6_port = htons(port);
		break;
	case kAfIb: {
		auto *s = reinterpret_cast<sockaddr_ib *>(ss.data);
		s->sib_sid = htobe64((be64toh(s->sib_sid) & ~0xffffull) | port);
		s->sib_sid_mask = htobe64(~0ull);
		break;
	}
	default:
		break;
	}
}

namespace {

const uint8_t kLoopback16[16] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1 };

/* the 16 address bytes of an AF_INET6 or AF_IB address, else nullptr */
uint8_t *bytes16(CmaAddr &a)
{
	switch (a.family()) {
	case AF_INET6:
		return reinterpret_cast<sockaddr_in6 *>(a.ss.data)->sin6_addr.s6_addr;
	case kAfIb:
		return reinterpret_cast<sockaddr_ib *>(a.ss.data)->sib_addr;
	default:
		return nullptr;
	}
}

const uint8_t *bytes16(const CmaAddr &a)
{
	return bytes16(const_cast<CmaAddr &>(a));
}

uint32_t ipv4(const CmaAddr &a)
{
	return ntohl(reinterpret_cast<const sockaddr_in *>(a.ss.data)->sin_addr.s_addr);
}

} /* namespace */

bool CmaAddr::isZero() const
{
	if (family() == AF_INET)
		return ipv4(*this) == 0;
	static const uint8_t zero[16] = {};
	const uint8_t *a16 = bytes16(*this);
	return !a16 || memcmp(a16, zero, 16) == 0; /* an unknown family: none at all */
}

bool CmaAddr::isLoopback() const
{
	if (family() == AF_INET)
		return ipv4(*this) >> 24 == 127;
	const uint8_t *a16 = bytes16(*this);
	return a16 && memcmp(a16, kLoopback16, 16) == 0;
}

bool CmaAddr::isAny() const
{
	return isZero() || isLoopback();
}

void CmaAddr::setLoopback()
{
	if (family() == AF_INET)
		reinterpret_cast<sockaddr_in *>(ss.data)->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	else if (uint8_t *a16 = bytes16(*this))
		memcpy(a16, kLoopback16, 16);
}

size_t CmaAddr::size() const
{
	switch (family()) {
	case AF_INET:
		return sizeof(sockaddr_in);
	case AF_INET6:
		return sizeof(sockaddr_in6);
	case kAfIb:
		return sizeof(sockaddr_ib);
	default:
		return 0;
	}
}

CmaAddr CmaAddr::from(const void *p, size_t len)
{
	CmaAddr a;
	memcpy(a.ss.data, p, std::min(len, sizeof a.ss.data));
	return a;
}

uint32_t Cma::ipv4Of(const fabric::Node &ca, unsigned port) const
{
	const fabric::Subnet &subnet = host_.subnet();
	long n = -1;
	if (subnet.split()) { /* the CA's position among the subnet's CAs */
		n = 0;
		for (const auto &node : subnet.nodes()) {
			if (node.get() == &ca)
				break;
			n += node->type == fabric::NodeType::CA;
		}
	} else {
		for (const auto &h : host_.hcas())
			if (h->node == &ca)
				n = h->verbsNum;
	}
	if (n < 0 || n > 0xff || ca.type != fabric::NodeType::CA || port == 0 || port > 0xff)
		return 0;
	return htonl(kSubnet | uint32_t(n) << 8 | port);
}

std::array<uint8_t, 16> Cma::ipv6Of(uint64_t portGuid)
{
	std::array<uint8_t, 16> a{ 0xfe, 0x80 };
	uint64_t iid = portGuid | 0x0200000000000000ull; /* the universal/local bit, as IPoIB sets it */
	for (int i = 0; i < 8; i++)
		a[size_t(8 + i)] = uint8_t(iid >> (56 - 8 * i));
	return a;
}

bool CmaAddr::isMulticast() const
{
	if (family() == AF_INET)
		return (ntohl(reinterpret_cast<const sockaddr_in *>(ss.data)->sin_addr.s_addr) >> 28) == 0xe;
	if (family() == AF_INET6)
		return reinterpret_cast<const sockaddr_in6 *>(ss.data)->sin6_addr.s6_addr[0] == 0xff;
	return false;
}

bool Cma::localPort(const CmaAddr &addr, Hca *&hca, uint8_t &port, const std::string &scope) const
{
	for (const auto &h : host_.hcas()) {
		if (!scope.empty() && h->hostName != scope)
			continue;
		for (unsigned p = 1; p <= h->madPorts.size(); p++) {
			const MadPort &mp = *h->madPorts[p - 1];
			bool match = false;
			if (addr.family() == AF_INET) {
				match = reinterpret_cast<const sockaddr_in *>(addr.ss.data)->sin_addr.s_addr ==
					ipv4Of(*h->node, p);
			} else if (addr.family() == AF_INET6) {
				match = memcmp(&reinterpret_cast<const sockaddr_in6 *>(addr.ss.data)->sin6_addr,
					       ipv6Of(mp.port().guid).data(), 16) == 0;
			} else if (addr.family() == kAfIb) {
				fabric::Gid g;
				match = mp.gid(0, g) &&
					memcmp(reinterpret_cast<const sockaddr_ib *>(addr.ss.data)->sib_addr, g.data(),
					       16) == 0;
			}
			if (match) {
				hca = h.get();
				port = uint8_t(p);
				return true;
			}
		}
	}
	return false;
}

const fabric::Port *Cma::farPort(const CmaAddr &addr) const
{
	const fabric::Subnet &subnet = host_.subnet();
	if (!subnet.split())
		return nullptr;
	const fabric::Port *port = nullptr;
	if (addr.family() == AF_INET) {
		uint32_t a = ntohl(reinterpret_cast<const sockaddr_in *>(addr.ss.data)->sin_addr.s_addr);
		if ((a & 0xffff0000) != kSubnet || (a & 0xff) == 0)
			return nullptr;
		uint32_t n = (a >> 8) & 0xff;
		for (const auto &node : subnet.nodes()) {
			if (node->type != fabric::NodeType::CA)
				continue;
			if (n-- == 0) {
				if ((a & 0xff) <= node->numPorts)
					port = &node->port(a & 0xff);
				break;
			}
		}
	} else if (addr.family() == AF_INET6) {
		const uint8_t *a = reinterpret_cast<const sockaddr_in6 *>(addr.ss.data)->sin6_addr.s6_addr;
		uint64_t iid = 0;
		for (int i = 8; i < 16; i++)
			iid = iid << 8 | a[i];
		/* the universal/local bit is set in the address: the GUID had it
		 * clear, or already set */
		for (uint64_t guid : { iid & ~uint64_t(0x0200000000000000), iid }) {
			const fabric::Port *p = subnet.findPortByGuid(guid);
			if (p && memcmp(ipv6Of(p->guid).data(), a, 16) == 0) {
				port = p;
				break;
			}
		}
	}
	if (!port || !port->node->foreign || port->node->type != fabric::NodeType::CA)
		return nullptr;
	return port;
}

bool Cma::activePort(Hca *&hca, uint8_t &port, const std::string &scope) const
{
	for (const auto &h : host_.hcas())
		for (unsigned p = 1; p <= h->madPorts.size() && (scope.empty() || h->hostName == scope); p++)
			if (queryPort(*h->madPorts[p - 1]).state == fabric::PortState::Active) {
				hca = h.get();
				port = uint8_t(p);
				return true;
			}
	return false;
}

void Cma::fillSource(CmaAddr &src, Hca &h, uint8_t p) const
{
	if (!src.isZero())
		return;
	const MadPort &mp = *h.madPorts[p - 1];
	fabric::Gid g;
	if (src.family() == AF_INET)
		reinterpret_cast<sockaddr_in *>(src.ss.data)->sin_addr.s_addr = ipv4Of(*h.node, p);
	else if (src.family() == AF_INET6)
		memcpy(&reinterpret_cast<sockaddr_in6 *>(src.ss.data)->sin6_addr, ipv6Of(mp.port().guid).data(), 16);
	else if (src.family() == kAfIb && mp.gid(0, g)) /* cma_resolve_ib_dev(): the port's GID */
		memcpy(reinterpret_cast<sockaddr_ib *>(src.ss.data)->sib_addr, g.data(), 16);
}

/* ---------------- address and route resolution ---------------- */

/* rdma_resolve_addr(): IPoIB's ARP, answered by the active port that has
 * the address; an address of the subnet no port has is never answered
 * (ADDR_ERROR, ETIMEDOUT), one off the subnet has no route (ENETUNREACH
 * from the command itself, as the kernel's) */
int Cma::resolveAddr(CmaId &id, const CmaAddr *src, const CmaAddr &dst, uint32_t timeoutMs)
{
	if (!dst.size())
		return -EAFNOSUPPORT;
	if (src && src->family() != dst.family())
		return -EINVAL;
	if (id.state == CmaState::Idle) {
		CmaAddr any;
		if (src)
			any = *src;
		else
			memcpy(any.ss.data, dst.ss.data, 2); /* any address of the destination's family */
		if (int rc = bind(id, any))
			return rc;
	}
	if (id.state != CmaState::AddrBound)
		return -EINVAL;
	if (dst.isMulticast()) {
		/* a multicast group leaves by the device that has the source
		 * address (ip_route_output_key's rule for multicast); with
		 * none, no route in the host's tables reaches ibemu's ports */
		if (!id.hca)
			return -ENETUNREACH;
		id.dst = dst;
		id.state = CmaState::AddrQuery;
		uint32_t handle = id.handle;
		queueWork(io_, [this, alive = std::weak_ptr<bool>(alive_), handle] {
			CmaId *i = alive.lock() ? find(handle) : nullptr;
			if (!i || i->state != CmaState::AddrQuery)
				return;
			i->state = CmaState::AddrResolved;
			post(*i, RDMA_CM_EVENT_ADDR_RESOLVED, 0);
		});
		return 0;
	}
	Hca *h = nullptr;
	uint8_t p = 0;
	bool found = false;
	if (dst.isAny()) {
		/* cma_resolve_loopback(): the ID's own port, else the first
		 * active one of its host, else its host's first HCA's port 1;
		 * the destination GID is the source's (gids()) */
		if (id.hca) {
			h = id.hca;
			p = id.portNum;
		} else if (!activePort(h, p, id.hostScope)) {
			auto first = std::find_if(host_.hcas().begin(), host_.hcas().end(), [&id](const auto &hca) {
				return id.hostScope.empty() || hca->hostName == id.hostScope;
			});
			if (first == host_.hcas().end())
				return -ENODEV;
			h = first->get();
			p = 1;
		}
		found = true;
	} else {
		bool onSubnet = dst.family() != AF_INET ||
			(ntohl(reinterpret_cast<const sockaddr_in *>(dst.ss.data)->sin_addr.s_addr) & 0xffff0000) ==
				kSubnet;
		if (!onSubnet) /* no route to it: the kernel's rdma_resolve_ip() fails at once */
			return -ENETUNREACH;
		found = localPort(dst, h, p);
		if (found && queryPort(*h->madPorts[p - 1]).state != fabric::PortState::Active)
			found = false;
	}
	id.dst = dst;
	id.state = CmaState::AddrQuery;
	if (!found && dst.family() == kAfIb) /* AF_IB needs no ARP: an active port will do */
		found = activePort(h, p, id.hostScope);
	bool elsewhere = found && !id.hostScope.empty() && h->hostName != id.hostScope;
	if ((!found && farPort(dst)) || elsewhere) {
		/* another daemon's CA, or another cluster host's of this daemon:
		 * answered from the topology, through the ID's port, or the
		 * first active one of its host, as the route out of the host's
		 * first IPoIB interface would go */
		if (id.hca) {
			h = id.hca;
			p = id.portNum;
			found = queryPort(*h->madPorts[p - 1]).state == fabric::PortState::Active;
		} else {
			found = activePort(h, p, id.hostScope);
		}
	}
	uint32_t handle = id.handle;
	std::weak_ptr<bool> alive = alive_;
	auto done = [this, alive, handle, h, p](int status) {
		if (!alive.lock())
			return;
		CmaId *i = find(handle);
		if (!i || i->state != CmaState::AddrQuery)
			return;
		i->addrTimer.reset();
		if (status) {
			i->state = CmaState::AddrBound;
			return post(*i, RDMA_CM_EVENT_ADDR_ERROR, status);
		}
		if (!i->hca) { /* bound to any address: the destination's port, as the kernel's loopback */
			i->hca = h;
			i->portNum = p;
			/* and its address as the source, the route's
			 * (libfabric's ofi_rxm sends it to its peers as its
			 * own); to a loopback destination the loopback address,
			 * its port kept (cma_bind_loopback()) */
			if (i->dst.isAny())
				i->src.setLoopback();
			else
				fillSource(i->src, *h, p);
		}
		i->state = CmaState::AddrResolved;
		post(*i, RDMA_CM_EVENT_ADDR_RESOLVED, 0);
	};
	if (found) {
		queueWork(io_, [done] { done(0); });
	} else {
		id.addrTimer = std::make_unique<Timer>(io_);
		id.addrTimer->expires_after(std::chrono::milliseconds(timeoutMs));
		id.addrTimer->async_wait([done](const boost::system::error_code &ec) {
			if (!ec)
				done(-ETIMEDOUT);
		});
	}
	return 0;
}

/* rdma_resolve_route(): a PathRecord from the SM (cma_query_ib_route) */
int Cma::resolveRoute(CmaId &id, uint32_t timeoutMs)
{
	if (id.state != CmaState::AddrResolved)
		return -EINVAL;
	MadPort *mp = madPort(id);
	if (!mp)
		return -EINVAL;
	PathRecord rec;
	gids(id, rec.sgid, rec.dgid);
	rec.pkey = id.pkey;
	rec.numbPath = 1;
	rec.reversible = true;
	rec.serviceId = serviceId(id, id.dst);
	uint64_t mask = PR_DGID | PR_SGID | PR_PKEY | PR_NUMB_PATH | PR_REVERSIBLE | PR_SERVICE_ID;
	if (id.dst.family() == AF_INET) {
		rec.qosClass = id.tos;
		mask |= PR_QOS_CLASS;
	} else {
		rec.trafficClass = id.tos;
		mask |= PR_TCLASS;
	}
	uint32_t handle = id.handle;
	std::weak_ptr<bool> alive = alive_;
	int64_t q = sa_.pathRecGet(*mp, rec, mask, timeoutMs,
				   [this, alive, handle](int status, const PathRecord &path) {
					   if (!alive.lock())
						   return;
					   CmaId *i = find(handle);
					   if (!i || i->state != CmaState::RouteQuery)
						   return;
					   i->saQuery = 0;
					   if (status) {
						   i->state = CmaState::AddrResolved;
						   return post(*i, RDMA_CM_EVENT_ROUTE_ERROR, status);
					   }
					   i->path = path;
					   i->havePath = true;
					   i->state = CmaState::RouteResolved;
					   post(*i, RDMA_CM_EVENT_ROUTE_RESOLVED, 0);
				   });
	if (q < 0)
		return int(q);
	id.saQuery = q;
	id.state = CmaState::RouteQuery;
	return 0;
}

int Cma::setIbPath(CmaId &id, const PathRecord &path)
{
	if (!id.hca || id.state != CmaState::AddrResolved)
		return -EINVAL;
	id.path = path;
	id.havePath = true;
	id.state = CmaState::RouteResolved;
	post(id, RDMA_CM_EVENT_ROUTE_RESOLVED, 0);
	return 0;
}

} /* namespace ibemu::emu */
