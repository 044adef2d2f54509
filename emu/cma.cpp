// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// rdma_cm IDs: addresses, routes and connections (cma.c, addr.c).
#include "emu/cma.h"

#include "emu/hca_attrs.h"
#include "emu/host.h"
#include "emu/verbs_device.h"
#include "emu/verbs_enums.h"
#include "emu/work_queue.h"
#include "fabric/node.h"
#include "fabric/subnet.h"

#include <algorithm>
#include <arpa/inet.h>
#include <cerrno>
#include <cstring>
#include <random>
#include <vector>

namespace ibemu::emu {

namespace {

constexpr uint32_t kSubnet = 0x0ac80000; /* 10.200.0.0/16 */
constexpr uint8_t kCmResponseTimeout = 20; /* CMA_CM_RESPONSE_TIMEOUT */
constexpr uint8_t kMaxCmRetries = 15; /* CMA_MAX_CM_RETRIES */
constexpr uint8_t kMraSetting = 24; /* CMA_CM_MRA_SETTING */
constexpr size_t kCmaHdr = 36; /* struct cma_hdr in a REQ's private data */
constexpr uint16_t kEphemeralLo = 32768, kEphemeralHi = 60999;
constexpr uint32_t kUdpQkey = 0x01234567; /* RDMA_UDP_QKEY */

std::mt19937 &rng()
{
	static std::mt19937 r{ std::random_device{}() };
	return r;
}

/* the 16-byte form of an address in a cma_hdr (IPv4 in the last 4) */
void hdrAddr(const CmaAddr &a, uint8_t *out)
{
	memset(out, 0, 16);
	if (a.family() == AF_INET)
		memcpy(out + 12, &reinterpret_cast<const sockaddr_in *>(a.ss.data)->sin_addr, 4);
	else if (a.family() == AF_INET6)
		memcpy(out, &reinterpret_cast<const sockaddr_in6 *>(a.ss.data)->sin6_addr, 16);
}

CmaAddr addrFromHdr(const uint8_t *in, bool v6, uint16_t port)
{
	CmaAddr a;
	if (v6) {
		auto *s = reinterpret_cast<sockaddr_in6 *>(a.ss.data);
		s->sin6_family = AF_INET6;
		memcpy(&s->sin6_addr, in, 16);
	} else {
		auto *s = reinterpret_cast<sockaddr_in *>(a.ss.data);
		s->sin_family = AF_INET;
		memcpy(&s->sin_addr, in + 12, 4);
	}
	a.setPort(port);
	return a;
}

/* the P_Key table index of pkey on a port (its membership bit aside) */
uint16_t pkeyIndexOf(const MadPort &mp, uint16_t pkey)
{
	unsigned n = queryPort(mp).pkeyTblLen;
	for (unsigned i = 0; i < n; i++)
		if ((queryPkey(mp, i) & 0x7fff) == (pkey & 0x7fff))
			return uint16_t(i);
	return 0;
}

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

bool CmaAddr::isAny() const
{
	static const uint8_t zero[16] = {};
	switch (family()) {
	case AF_INET:
		return reinterpret_cast<const sockaddr_in *>(ss.data)->sin_addr.s_addr == 0;
	case AF_INET6:
		return memcmp(&reinterpret_cast<const sockaddr_in6 *>(ss.data)->sin6_addr, zero, 16) == 0;
	case kAfIb:
		return memcmp(reinterpret_cast<const sockaddr_ib *>(ss.data)->sib_addr, zero, 16) == 0;
	default:
		return true;
	}
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

bool Cma::localPort(const CmaAddr &addr, Hca *&hca, uint8_t &port) const
{
	for (const auto &h : host_.hcas()) {
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

bool Cma::activePort(Hca *&hca, uint8_t &port) const
{
	for (const auto &h : host_.hcas())
		for (unsigned p = 1; p <= h->madPorts.size(); p++)
			if (queryPort(*h->madPorts[p - 1]).state == fabric::PortState::Active) {
				hca = h.get();
				port = uint8_t(p);
				return true;
			}
	return false;
}

/* ---------------- IDs ---------------- */

Cma::Cma(boost::asio::io_context &io, Host &host, IbCm &cm, SaClient &sa, SaMulticast &mcast)
	: io_(io), host_(host), cm_(cm), sa_(sa), mcast_(mcast)
{}

Cma::~Cma()
{
	*alive_ = false;
	while (!ids_.empty())
		destroy(ids_.begin()->second.get());
}

void Cma::deviceRemoved(const Hca &hca)
{
	for (const auto &[h, id] : ids_) {
		if (id->hca != &hca)
			continue;
		if (id->saQuery)
			sa_.cancel(id->saQuery);
		id->saQuery = 0;
		id->addrTimer.reset();
		if (id->cm)
			cm_.destroy(id->cm);
		setCm(*id, nullptr);
		id->hca = nullptr;
		id->portNum = 0;
		post(*id, RDMA_CM_EVENT_DEVICE_REMOVAL, 0);
	}
}

CmaId *Cma::create(CmaSink *sink, void *owner, uint64_t uid, uint16_t ps, uint8_t qpType)
{
	uint32_t h; /* the lowest free handle, as the kernel's xa_alloc */
	if (!freeHandles_.empty()) {
		h = *freeHandles_.begin();
		freeHandles_.erase(freeHandles_.begin());
	} else {
		h = nextHandle_++;
	}
	auto id = std::make_unique<CmaId>();
	id->handle = h;
	id->sink = sink;
	id->owner = owner;
	id->uid = uid;
	id->ps = ps;
	id->qpType = qpType;
	id->seqNum = rng()() & 0xffffff;
	CmaId *raw = id.get();
	ids_[h] = std::move(id);
	byOwner_[owner].insert(raw);
	return raw;
}

CmaId *Cma::find(uint32_t handle) const
{
	auto it = ids_.find(handle);
	return it == ids_.end() ? nullptr : it->second.get();
}

size_t Cma::countOf(const void *owner) const
{
	auto it = byOwner_.find(owner);
	return it == byOwner_.end() ? 0 : it->second.size();
}

CmaId *Cma::firstOf(const void *owner) const
{
	auto it = byOwner_.find(owner);
	if (it != byOwner_.end())
		for (CmaId *id : it->second)
			if (!id->listener)
				return id;
	return nullptr;
}

void Cma::moveTo(CmaId &id, CmaSink *sink, void *owner)
{
	auto it = byOwner_.find(id.owner);
	if (it != byOwner_.end() && it->second.erase(&id) && it->second.empty())
		byOwner_.erase(it);
	if (!id.mcs.empty()) {
		if ((mcsOf_[id.owner] -= id.mcs.size()) == 0)
			mcsOf_.erase(id.owner);
		mcsOf_[owner] += id.mcs.size();
	}
	id.owner = owner;
	id.sink = sink;
	byOwner_[owner].insert(&id);
}

void Cma::setCm(CmaId &id, CmId *cm)
{
	if (id.cm)
		byCm_.erase(id.cm);
	id.cm = cm;
	if (cm)
		byCm_[cm] = &id;
}

CmaId *Cma::byCm(const CmId &cm) const
{
	auto it = byCm_.find(&cm);
	return it == byCm_.end() ? nullptr : it->second;
}

void Cma::stopListen(CmaId &id)
{
	auto it = cmListens_.find(serviceId(id, id.src));
	if (it != cmListens_.end() && --it->second.second == 0) {
		cm_.destroy(it->second.first);
		cmListens_.erase(it);
	}
}

/* rdma_destroy_id(): what is under way stops; the peer hears what the IB
 * CM sends for the connection's state */
void Cma::destroy(CmaId *id)
{
	while (!id->mcs.empty()) /* cma_leave_mc_groups() */
		leave(id->mcs.back());
	if (id->saQuery)
		sa_.cancel(id->saQuery);
	id->addrTimer.reset();
	if (id->state == CmaState::Listen)
		stopListen(*id);
	if (id->cm)
		cm_.destroy(id->cm);
	setCm(*id, nullptr);
	/* requests on a listener that no one read go with it (they are its
	 * owner's IDs) */
	std::vector<CmaId *> children;
	if (id->state == CmaState::Listen)
		for (CmaId *o : byOwner_[id->owner])
			if (o->listener == id)
				children.push_back(o);
	for (CmaId *child : children) {
		child->listener = nullptr;
		destroy(child);
	}
	auto [from, to] = byPort_.equal_range(portKey(id->ps, id->src.port()));
	for (auto it = from; it != to; ++it)
		if (it->second == id) {
			byPort_.erase(it);
			break;
		}
	auto own = byOwner_.find(id->owner);
	if (own != byOwner_.end() && own->second.erase(id) && own->second.empty())
		byOwner_.erase(own);
	freeHandles_.insert(id->handle);
	ids_.erase(id->handle);
}

MadPort *Cma::madPort(const CmaId &id) const
{
	if (!id.hca || !id.portNum || id.portNum > id.hca->madPorts.size())
		return nullptr;
	return id.hca->madPorts[id.portNum - 1].get();
}

uint64_t Cma::nodeGuid(const CmaId &id) const
{
	return id.hca ? queryDevice(*id.hca).nodeGuid : 0;
}

uint32_t Cma::deviceIndex(const CmaId &id) const
{
	return id.hca ? id.hca->verbsNum + 1 : 0;
}

void Cma::gids(const CmaId &id, fabric::Gid &sgid, fabric::Gid &dgid) const
{
	sgid.fill(0);
	dgid.fill(0);
	if (MadPort *mp = madPort(id))
		mp->gid(0, sgid);
	if (id.havePath) {
		dgid = id.path.dgid;
		return;
	}
	Hca *h;
	uint8_t p;
	if (id.dst.family() == kAfIb) {
		memcpy(dgid.data(), reinterpret_cast<const sockaddr_ib *>(id.dst.ss.data)->sib_addr, 16);
	} else if (id.state != CmaState::Idle && id.state != CmaState::AddrBound) {
		if (localPort(id.dst, h, p)) {
			h->madPorts[p - 1]->gid(0, dgid);
		} else if (const fabric::Port *far = farPort(id.dst)) {
			/* the subnet's prefix, as the local port has it, and its GUID */
			dgid = sgid;
			for (int i = 0; i < 8; i++)
				dgid[size_t(8 + i)] = uint8_t(far->guid >> (56 - 8 * i));
		}
	}
}

uint64_t Cma::serviceId(const CmaId &id, const CmaAddr &addr) const
{
	if (addr.family() == kAfIb)
		return be64toh(reinterpret_cast<const sockaddr_ib *>(addr.ss.data)->sib_sid);
	return uint64_t(id.ps) << 16 | addr.port();
}

/* ---------------- binding ---------------- */

bool Cma::portInUse(const CmaId &id, uint16_t port) const
{
	auto [from, to] = byPort_.equal_range(portKey(id.ps, port));
	for (auto it = from; it != to; ++it) {
		const CmaId *o = it->second;
		if (o == &id)
			continue;
		bool overlap;
		if (o->src.family() != id.src.family()) { /* an IPv6 wildcard takes IPv4 too, unless AFONLY */
			const CmaId *v6 = o->src.family() == AF_INET6 ? o : &id;
			overlap = v6->src.isAny() && !v6->afonly;
		} else {
			overlap = o->src.isAny() || id.src.isAny() ||
				memcmp(o->src.ss.data, id.src.ss.data, o->src.size()) == 0;
		}
		if (!overlap)
			continue;
		if (id.reuseaddr && o->reuseaddr && o->state != CmaState::Listen)
			continue;
		return true;
	}
	return false;
}

int Cma::bindPort(CmaId &id)
{
	if (uint16_t port = id.src.port())
		return portInUse(id, port) ? -EADDRINUSE : 0;
	unsigned range = kEphemeralHi - kEphemeralLo + 1;
	unsigned start = rng()() % range;
	for (unsigned i = 0; i < range; i++) {
		uint16_t p = uint16_t(kEphemeralLo + (start + i) % range);
		if (!portInUse(id, p)) {
			id.src.setPort(p);
			return 0;
		}
	}
	return -EADDRNOTAVAIL;
}

/* rdma_bind_addr() */
int Cma::bind(CmaId &id, const CmaAddr &addr)
{
	if (id.state != CmaState::Idle)
		return -EINVAL;
	if (!addr.size())
		return -EAFNOSUPPORT;
	id.src = addr;
	if (!addr.isAny()) {
		Hca *h;
		uint8_t p;
		if (!localPort(addr, h, p))
			return -EADDRNOTAVAIL;
		id.hca = h;
		id.portNum = p;
	}
	if (int rc = bindPort(id)) {
		id.hca = nullptr;
		id.portNum = 0;
		return rc;
	}
	byPort_.emplace(portKey(id.ps, id.src.port()), &id);
	id.state = CmaState::AddrBound;
	return 0;
}

/* ---------------- events ---------------- */

void Cma::send(CmaId &id, rdma_ucm_event_resp ev, CmaId *connReq)
{
	if (id.sink)
		id.sink->cmaEvent(id, ev, connReq);
}

void Cma::post(CmaId &id, uint32_t event, int status)
{
	rdma_ucm_event_resp ev{};
	ev.uid = id.uid;
	ev.id = id.handle;
	ev.event = event;
	ev.status = uint32_t(status);
	send(id, ev);
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
	bool onSubnet = dst.family() != AF_INET ||
		(ntohl(reinterpret_cast<const sockaddr_in *>(dst.ss.data)->sin_addr.s_addr) & 0xffff0000) == kSubnet;
	if (!onSubnet) /* no route to it: the kernel's rdma_resolve_ip() fails at once */
		return -ENETUNREACH;
	id.dst = dst;
	id.state = CmaState::AddrQuery;

	Hca *h = nullptr;
	uint8_t p = 0;
	bool found = localPort(dst, h, p);
	if (found && queryPort(*h->madPorts[p - 1]).state != fabric::PortState::Active)
		found = false;
	if (!found && dst.family() == kAfIb) /* AF_IB needs no ARP: an active port will do */
		found = activePort(h, p);
	if (!found && farPort(dst)) {
		/* another daemon's CA: answered from the topology, through the
		 * ID's port, or the first active one as the route out of the
		 * host's first IPoIB interface would go */
		if (id.hca) {
			h = id.hca;
			p = id.portNum;
			found = queryPort(*h->madPorts[p - 1]).state == fabric::PortState::Active;
		} else {
			found = activePort(h, p);
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

/* ---------------- connections ---------------- */

int Cma::listen(CmaId &id, uint32_t backlog)
{
	if (id.state == CmaState::Idle) { /* rdma_listen() binds an idle ID to any IPv4 address */
		CmaAddr any;
		uint16_t f = AF_INET;
		memcpy(any.ss.data, &f, 2);
		if (int rc = bind(id, any))
			return rc;
	}
	if (id.state != CmaState::AddrBound)
		return -EINVAL;
	auto [from, to] = byPort_.equal_range(portKey(id.ps, id.src.port()));
	for (auto it = from; it != to; ++it) { /* a second listener on the port */
		const CmaId *o = it->second;
		if (o == &id || o->state != CmaState::Listen)
			continue;
		if (o->src.isAny() || id.src.isAny() || memcmp(o->src.ss.data, id.src.ss.data, id.src.size()) == 0)
			return -EADDRINUSE;
	}
	uint64_t sid = serviceId(id, id.src);
	auto it = cmListens_.find(sid);
	if (it == cmListens_.end()) {
		CmId *c = cm_.create(this);
		if (int rc = cm_.listen(*c, sid, ~0ull)) {
			cm_.destroy(c);
			return rc;
		}
		it = cmListens_.emplace(sid, std::make_pair(c, 0u)).first;
	}
	it->second.second++;
	id.backlog = backlog;
	id.state = CmaState::Listen;
	return 0;
}

/* rdma_connect(): cma_connect_ib() */
int Cma::connect(CmaId &id, const rdma_ucm_conn_param &p)
{
	if (id.state != CmaState::RouteResolved)
		return -EINVAL;
	size_t off = id.dst.family() == kAfIb ? 0 : kCmaHdr;
	size_t room = id.qpType == IB_QPT_UD ? cm::kSidrReqPrivate : cm::kReqPrivate;
	if (p.private_data_len > room - off)
		return -EINVAL;
	MadPort *mp = madPort(id);
	if (!mp)
		return -EINVAL;
	const PathRecord &path = id.path;
	uint8_t hdr[kCmaHdr] = {};
	if (off) { /* struct cma_hdr: version, IP version, our port, both addresses */
		hdr[1] = uint8_t((id.dst.family() == AF_INET6 ? 6 : 4) << 4);
		hdr[2] = uint8_t(id.src.port() >> 8);
		hdr[3] = uint8_t(id.src.port());
		hdrAddr(id.src, hdr + 4);
		hdrAddr(id.dst, hdr + 20);
	}
	MadAddress av;
	av.lid = path.dlid;
	av.sl = path.sl;
	av.pkeyIndex = pkeyIndexOf(*mp, path.pkey);
	if (id.qpType == IB_QPT_UD) { /* cma_resolve_ib_udp(): a SIDR_REQ */
		cm::SidrReq sreq;
		sreq.serviceId = serviceId(id, id.dst);
		sreq.pkey = path.pkey;
		memcpy(sreq.privateData.data(), hdr, off);
		memcpy(sreq.privateData.data() + off, p.private_data, p.private_data_len);
		setCm(id, cm_.create(this));
		if (int rc = cm_.sendSidrReq(*id.cm, *mp, av, sreq, cm::timeToMs(kCmResponseTimeout), kMaxCmRetries)) {
			cm_.destroy(id.cm);
			setCm(id, nullptr);
			return rc;
		}
		id.state = CmaState::Connect;
		return 0;
	}
	cm::Req req;
	req.serviceId = serviceId(id, id.dst);
	req.localCaGuid = nodeGuid(id);
	req.localQpn = p.qp_num;
	req.responderResources = p.responder_resources;
	req.initiatorDepth = p.initiator_depth;
	req.remoteCmResponseTimeout = kCmResponseTimeout;
	req.localCmResponseTimeout = kCmResponseTimeout;
	req.transportType = id.qpType == IB_QPT_UC ? 1 : 0;
	req.endToEndFlowControl = p.flow_control;
	req.startingPsn = id.seqNum;
	req.retryCount = p.retry_count & 7;
	req.rnrRetryCount = p.rnr_retry_count & 7;
	req.maxCmRetries = kMaxCmRetries;
	req.srq = p.srq;
	req.pkey = path.pkey;
	req.pathMtu = path.mtu;
	req.primary.localLid = path.slid;
	req.primary.remoteLid = path.dlid;
	req.primary.localGid = path.sgid;
	req.primary.remoteGid = path.dgid;
	req.primary.flowLabel = path.flowLabel;
	req.primary.packetRate = path.rate;
	req.primary.trafficClass = path.trafficClass;
	req.primary.hopLimit = path.hopLimit;
	req.primary.sl = path.sl;
	req.primary.subnetLocal = path.hopLimit <= 1;
	req.primary.localAckTimeout = uint8_t(std::min(31, path.packetLifeTime + 1));
	memcpy(req.privateData.data(), hdr, off);
	memcpy(req.privateData.data() + off, p.private_data, p.private_data_len);
	setCm(id, cm_.create(this));
	id.qpNum = p.qp_num;
	id.peer.retryCount = req.retryCount;
	id.peer.ackTimeout = req.primary.localAckTimeout;
	if (int rc = cm_.sendReq(*id.cm, *mp, av, req)) {
		cm_.destroy(id.cm);
		setCm(id, nullptr);
		return rc;
	}
	id.state = CmaState::Connect;
	return 0;
}

/* rdma_accept(): the passive side's REP, or (p null) the active side's
 * RTU once its program has moved its QP to RTS */
int Cma::accept(CmaId &id, const rdma_ucm_conn_param *p)
{
	if (id.state != CmaState::Connect || !id.cm)
		return -EINVAL;
	if (id.qpType == IB_QPT_UD) { /* cma_send_sidr_rep(): our QP and its Q_Key */
		cm::SidrRep rep;
		if (p && p->private_data_len > cm::kSidrRepPrivate)
			return -EINVAL;
		if (p) {
			id.qpNum = p->qp_num;
			memcpy(rep.privateData.data(), p->private_data, p->private_data_len);
		}
		rep.status = cm::SIDR_SUCCESS;
		rep.qpn = id.qpNum;
		rep.qkey = p && p->qkey ? p->qkey : kUdpQkey;
		return cm_.sendSidrRep(*id.cm, rep);
	}
	if (!p) {
		if (int rc = cm_.sendRtu(*id.cm))
			return rc;
		id.state = CmaState::Established;
		return 0;
	}
	if (p->private_data_len > cm::kRepPrivate)
		return -EINVAL;
	cm::Rep rep;
	rep.localQpn = p->qp_num;
	rep.startingPsn = id.seqNum;
	rep.responderResources = p->responder_resources;
	rep.initiatorDepth = p->initiator_depth;
	rep.targetAckDelay = kCmResponseTimeout;
	rep.endToEndFlowControl = p->flow_control;
	rep.rnrRetryCount = std::min<uint8_t>(7, p->rnr_retry_count);
	rep.srq = p->srq;
	rep.localCaGuid = nodeGuid(id);
	memcpy(rep.privateData.data(), p->private_data, p->private_data_len);
	id.qpNum = p->qp_num;
	/* what INIT_QP_ATTR gives for RTR and RTS from now on */
	id.peer.responderResources = p->responder_resources;
	id.peer.initiatorDepth = p->initiator_depth;
	return cm_.sendRep(*id.cm, rep);
}

int Cma::reject(CmaId &id, uint8_t reason, const uint8_t *priv, size_t len)
{
	if (!id.cm)
		return -EINVAL;
	if (id.qpType == IB_QPT_UD) {
		if (len > cm::kSidrRepPrivate)
			return -EINVAL;
		cm::SidrRep rep;
		rep.status = cm::SIDR_REJECT;
		memcpy(rep.privateData.data(), priv, len);
		return cm_.sendSidrRep(*id.cm, rep);
	}
	if (len > cm::kRejPrivate)
		return -EINVAL;
	return cm_.sendRej(*id.cm, reason, priv, len);
}

/* rdma_disconnect(): start a disconnection, or answer the peer's */
int Cma::disconnect(CmaId &id)
{
	if (!id.cm)
		return -EINVAL;
	if (cm_.sendDreq(*id.cm) != 0)
		cm_.sendDrep(*id.cm);
	return 0;
}

int Cma::notify(CmaId &id, uint32_t)
{
	return id.cm ? 0 : -EINVAL;
}

/* rdma_init_qp_attr(): cma_ib_init_qp_attr() before a connection,
 * ib_cm_init_qp_attr() during one */
int Cma::initQpAttr(const CmaId &id, uint32_t state, ib_uverbs_qp_attr &a) const
{
	MadPort *mp = madPort(id);
	if (!mp)
		return -EINVAL;
	a = {};
	a.qp_state = state;
	bool connected = id.cm && id.qpType != IB_QPT_UD;
	switch (state) {
	case IB_QPS_INIT:
		a.qp_attr_mask = IB_QP_STATE | IB_QP_PKEY_INDEX | IB_QP_PORT;
		a.pkey_index = pkeyIndexOf(*mp, id.havePath ? id.path.pkey : id.pkey);
		a.port_num = id.portNum;
		if (id.qpType == IB_QPT_UD) {
			a.qp_attr_mask |= IB_QP_QKEY;
			a.qkey = kUdpQkey;
		} else {
			a.qp_attr_mask |= IB_QP_ACCESS_FLAGS;
			if (connected) {
				a.qp_access_flags = IB_ACCESS_REMOTE_WRITE;
				if (id.peer.responderResources)
					a.qp_access_flags |= IB_ACCESS_REMOTE_READ | IB_ACCESS_REMOTE_ATOMIC;
			}
		}
		return 0;
	case IB_QPS_RTR:
		if (!connected) {
			if (id.qpType != IB_QPT_UD)
				return -EINVAL;
			a.qp_attr_mask = IB_QP_STATE;
			return 0;
		}
		a.qp_attr_mask = IB_QP_STATE | IB_QP_AV | IB_QP_PATH_MTU | IB_QP_DEST_QPN | IB_QP_RQ_PSN |
			IB_QP_MAX_DEST_RD_ATOMIC | IB_QP_MIN_RNR_TIMER;
		a.ah_attr.dlid = id.path.dlid;
		a.ah_attr.sl = id.path.sl;
		a.ah_attr.static_rate = id.path.rate;
		a.ah_attr.port_num = id.portNum;
		a.path_mtu = id.path.mtu;
		a.dest_qp_num = id.peer.qpn;
		a.rq_psn = id.seqNum;
		a.max_dest_rd_atomic = id.peer.responderResources;
		return 0;
	case IB_QPS_RTS:
		if (!connected) {
			if (id.qpType != IB_QPT_UD)
				return -EINVAL;
			a.qp_attr_mask = IB_QP_STATE | IB_QP_SQ_PSN;
			return 0;
		}
		a.qp_attr_mask = IB_QP_STATE | IB_QP_SQ_PSN | IB_QP_TIMEOUT | IB_QP_RETRY_CNT | IB_QP_RNR_RETRY |
			IB_QP_MAX_QP_RD_ATOMIC;
		a.sq_psn = id.peer.psn;
		a.timeout = id.ackTimeoutSet ? id.ackTimeout : id.peer.ackTimeout;
		a.retry_cnt = id.peer.retryCount;
		a.rnr_retry = id.peer.rnrRetryCount;
		a.max_rd_atomic = id.peer.initiatorDepth;
		return 0;
	default:
		return -EINVAL;
	}
}

/* ---------------- IB CM events ---------------- */

/* cma_ib_req_handler(): a new ID for the listener the REQ is for */
void Cma::onRequest(const CmEvent &ev)
{
	const cm::Req &req = ev.req;
	bool sidr = ev.type == CmEventType::SidrReqReceived;
	CmId *newCm = ev.newId;
	uint64_t sid = sidr ? ev.sidrReq.serviceId : req.serviceId;
	uint16_t port = uint16_t(sid);
	uint16_t ps = uint16_t(sid >> 16);
	const uint8_t *hdr = sidr ? ev.sidrReq.privateData.data() : req.privateData.data();
	bool v6 = (hdr[1] >> 4) == 6;
	Hca *rxHca = nullptr;
	uint8_t rxPort = 0;
	for (const auto &h : host_.hcas())
		for (unsigned p = 1; p <= h->madPorts.size(); p++)
			if (h->madPorts[p - 1].get() == newCm->port) {
				rxHca = h.get();
				rxPort = uint8_t(p);
			}
	CmaId *listener = nullptr;
	auto [from, to] = byPort_.equal_range(portKey(ps, port));
	for (auto it = from; it != to; ++it) {
		CmaId *o = it->second;
		if (o->state != CmaState::Listen)
			continue;
		if (o->hca && (o->hca != rxHca || o->portNum != rxPort))
			continue;
		listener = o;
		if (!o->src.isAny())
			break; /* the specific address wins over the wildcard */
	}
	if (!listener || listener->backlog == 0 || !rxHca) {
		if (!sidr)
			cm_.sendRej(*newCm, cm::REJ_CONSUMER_DEFINED, nullptr, 0);
		cm_.destroy(newCm); /* a SIDR_REQ: SIDR_REP "rejected" */
		return;
	}
	CmaId *id = create(listener->sink, listener->owner, 0, listener->ps, listener->qpType);
	id->listener = listener;
	id->visible = false;
	id->hca = rxHca;
	id->portNum = rxPort;
	id->src = addrFromHdr(hdr + 20, v6, port);
	id->dst = addrFromHdr(hdr + 4, v6, uint16_t(hdr[2] << 8 | hdr[3]));
	setCm(*id, newCm);
	newCm->handler = this;
	listener->backlog--;
	id->state = CmaState::Connect;
	if (sidr) { /* cma_ib_req_handler() for UD: the private data, nothing else */
		id->pkey = ev.sidrReq.pkey;
		rdma_ucm_event_resp e{};
		e.uid = listener->uid;
		e.id = id->handle;
		e.event = RDMA_CM_EVENT_CONNECT_REQUEST;
		e.param.ud.private_data_len = uint8_t(cm::kSidrReqPrivate - kCmaHdr);
		memcpy(e.param.ud.private_data, hdr + kCmaHdr, e.param.ud.private_data_len);
		return send(*listener, e, id);
	}
	/* the route is the REQ's primary path, seen from this end */
	PathRecord &p = id->path;
	p.slid = req.primary.remoteLid;
	p.dlid = req.primary.localLid;
	p.sgid = req.primary.remoteGid;
	p.dgid = req.primary.localGid;
	p.flowLabel = req.primary.flowLabel;
	p.rate = req.primary.packetRate;
	p.trafficClass = req.primary.trafficClass;
	p.hopLimit = req.primary.hopLimit;
	p.sl = req.primary.sl;
	p.pkey = req.pkey;
	p.mtu = req.pathMtu;
	p.packetLifeTime = uint8_t(req.primary.localAckTimeout ? req.primary.localAckTimeout - 1 : 0);
	p.numbPath = 1;
	p.reversible = true;
	id->havePath = true;
	id->pkey = req.pkey;
	id->peer.qpn = req.localQpn;
	id->peer.psn = req.startingPsn;
	id->peer.retryCount = req.retryCount;
	id->peer.rnrRetryCount = req.rnrRetryCount;
	id->peer.ackTimeout = req.primary.localAckTimeout;
	id->peer.responderResources = req.initiatorDepth;
	id->peer.initiatorDepth = req.responderResources;

	rdma_ucm_event_resp e{};
	e.uid = listener->uid;
	e.id = id->handle;
	e.event = RDMA_CM_EVENT_CONNECT_REQUEST;
	rdma_ucm_conn_param &c = e.param.conn;
	c.private_data_len = uint8_t(cm::kReqPrivate - kCmaHdr);
	memcpy(c.private_data, req.privateData.data() + kCmaHdr, c.private_data_len);
	c.responder_resources = req.initiatorDepth;
	c.initiator_depth = req.responderResources;
	c.flow_control = req.endToEndFlowControl;
	c.retry_count = req.retryCount;
	c.rnr_retry_count = req.rnrRetryCount;
	c.srq = req.srq;
	c.qp_num = req.localQpn;
	send(*listener, e, id);
	/* the program answers later: the requester is asked to wait */
	cm_.sendMra(*newCm, kMraSetting);
}

void Cma::cmEvent(CmId &cm, const CmEvent &ev)
{
	if (ev.type == CmEventType::ReqReceived || ev.type == CmEventType::SidrReqReceived)
		return onRequest(ev);
	CmaId *id = byCm(cm);
	if (!id)
		return;
	rdma_ucm_event_resp e{};
	e.uid = id->uid;
	e.id = id->handle;
	rdma_ucm_conn_param &c = e.param.conn;
	switch (ev.type) {
	case CmEventType::RepReceived:
		id->peer.qpn = ev.rep.localQpn;
		id->peer.psn = ev.rep.startingPsn;
		id->peer.rnrRetryCount = ev.rep.rnrRetryCount;
		id->peer.responderResources = ev.rep.initiatorDepth;
		id->peer.initiatorDepth = ev.rep.responderResources;
		e.event = RDMA_CM_EVENT_CONNECT_RESPONSE;
		c.private_data_len = uint8_t(cm::kRepPrivate);
		memcpy(c.private_data, ev.rep.privateData.data(), cm::kRepPrivate);
		c.responder_resources = ev.rep.responderResources;
		c.initiator_depth = ev.rep.initiatorDepth;
		c.flow_control = ev.rep.endToEndFlowControl;
		c.rnr_retry_count = ev.rep.rnrRetryCount;
		c.srq = ev.rep.srq;
		c.qp_num = ev.rep.localQpn;
		break;
	case CmEventType::RtuReceived:
		id->state = CmaState::Established;
		e.event = RDMA_CM_EVENT_ESTABLISHED;
		break;
	case CmEventType::RejReceived:
		e.event = RDMA_CM_EVENT_REJECTED;
		e.status = ev.rej.reason;
		c.private_data_len = uint8_t(cm::kRejPrivate);
		memcpy(c.private_data, ev.rej.privateData.data(), cm::kRejPrivate);
		break;
	case CmEventType::ReqError:
	case CmEventType::RepError:
		e.event = RDMA_CM_EVENT_UNREACHABLE;
		e.status = uint32_t(-ETIMEDOUT);
		break;
	case CmEventType::DreqReceived:
	case CmEventType::DrepReceived:
	case CmEventType::DreqError:
		id->state = CmaState::Disconnect;
		e.event = RDMA_CM_EVENT_DISCONNECTED;
		break;
	case CmEventType::TimewaitExit:
		e.event = RDMA_CM_EVENT_TIMEWAIT_EXIT;
		break;
	case CmEventType::SidrRepReceived: /* cma_sidr_rep_handler() */
		if (ev.sidrRep.status != cm::SIDR_SUCCESS) {
			e.event = RDMA_CM_EVENT_UNREACHABLE;
			e.status = ev.sidrRep.status;
			break;
		}
		e.event = RDMA_CM_EVENT_ESTABLISHED;
		e.param.ud.qp_num = ev.sidrRep.qpn;
		e.param.ud.qkey = ev.sidrRep.qkey;
		e.param.ud.ah_attr.dlid = id->path.dlid;
		e.param.ud.ah_attr.sl = id->path.sl;
		e.param.ud.ah_attr.static_rate = id->path.rate;
		e.param.ud.ah_attr.port_num = id->portNum;
		e.param.ud.private_data_len = uint8_t(cm::kSidrRepPrivate);
		memcpy(e.param.ud.private_data, ev.sidrRep.privateData.data(), cm::kSidrRepPrivate);
		break;
	case CmEventType::SidrReqError:
		e.event = RDMA_CM_EVENT_UNREACHABLE;
		e.status = uint32_t(-ETIMEDOUT);
		break;
	default:
		return;
	}
	send(*id, e);
}

/* ---------------- multicast ---------------- */

/* cma_set_mgid(): an SA-assigned MGID as an IPv6 address or an AF_IB GID
 * as it is; otherwise IPoIB's mapping of the IP group (ip_ib_mc_map(),
 * ipv6_ib_mc_map()) under the broadcast address's scope and P_Key, with the
 * RDMA CM's signature for the UDP port space. A wildcard asks the SA for a
 * new group (zero MGID). */
fabric::Gid Cma::mgidOf(const CmaAddr &addr, uint16_t ps, uint16_t pkey)
{
	fabric::Gid g{};
	if (addr.isAny())
		return g;
	if (addr.family() == kAfIb) {
		memcpy(g.data(), reinterpret_cast<const sockaddr_ib *>(addr.ss.data)->sib_addr, 16);
		return g;
	}
	if (addr.family() == AF_INET6) {
		const uint8_t *a = reinterpret_cast<const sockaddr_in6 *>(addr.ss.data)->sin6_addr.s6_addr;
		if (a[0] == 0xff && (a[1] & 0xf0) == 0x10 && a[2] == 0xa0 && a[3] == 0x1b) {
			memcpy(g.data(), a, 16); /* ff1x:a01b::/32, assigned by the SA */
			return g;
		}
		memcpy(g.data() + 6, a + 6, 10);
		g[2] = 0x60;
	} else {
		uint32_t ip = ntohl(reinterpret_cast<const sockaddr_in *>(addr.ss.data)->sin_addr.s_addr);
		g[2] = 0x40;
		g[12] = uint8_t((ip >> 24) & 0x0f);
		g[13] = uint8_t(ip >> 16);
		g[14] = uint8_t(ip >> 8);
		g[15] = uint8_t(ip);
	}
	g[0] = 0xff;
	g[1] = 0x12; /* link-local scope, IPoIB's broadcast group's */
	g[3] = ps == RDMA_PS_UDP ? 0x01 : 0x1b;
	g[4] = uint8_t((pkey | 0x8000) >> 8);
	g[5] = uint8_t(pkey);
	return g;
}

/* cma_join_ib_multicast(). The record's SL, flow label and traffic class
 * come from the IPoIB broadcast group in the kernel; ibemu's ports are on
 * no IPoIB interface and take that group's defaults as OpenSM creates it
 * (all zero). */
int Cma::join(CmaId &id, const CmaAddr &addr, uint8_t joinState, uint64_t uid, CmaMc *&out)
{
	MadPort *mp = madPort(id);
	if (!mp || (id.state != CmaState::AddrBound && id.state != CmaState::AddrResolved) || id.qpType != IB_QPT_UD)
		return -EINVAL;
	while (mcs_.count(nextMc_))
		nextMc_++;
	auto mc = std::make_unique<CmaMc>();
	mc->handle = nextMc_++;
	mc->id = &id;
	mc->uid = uid;

	McMemberRecord rec;
	rec.mgid = mgidOf(addr, id.ps, id.pkey);
	fabric::Gid dgid;
	gids(id, rec.portGid, dgid);
	rec.qkey = kUdpQkey; /* cma_set_qkey() for the UDP and IB port spaces */
	rec.pkey = uint16_t(id.pkey | 0x8000);
	rec.joinState = joinState;
	uint64_t mask = MCR_MGID | MCR_PORT_GID | MCR_PKEY | MCR_JOIN_STATE | MCR_QKEY | MCR_SL | MCR_FLOW_LABEL |
		MCR_TCLASS;
	uint32_t handle = mc->handle;
	int64_t member = mcast_.join(*mp, rec, mask, [this, handle](int status, const McMemberRecord &r) {
		auto it = mcs_.find(handle);
		if (it == mcs_.end())
			return;
		CmaMc &m = *it->second;
		rdma_ucm_event_resp ev{};
		ev.uid = m.uid;
		ev.id = m.handle;
		if (!status && r.qkey != kUdpQkey)
			status = -EINVAL; /* cma_set_qkey(): the group's Q_Key is not the ID's */
		if (status) {
			ev.event = RDMA_CM_EVENT_MULTICAST_ERROR;
			ev.status = uint32_t(status);
		} else { /* cma_make_mc_event(), ib_init_ah_from_mcmember() */
			ev.event = RDMA_CM_EVENT_MULTICAST_JOIN;
			ib_uverbs_ah_attr &ah = ev.param.ud.ah_attr;
			ah.dlid = r.mlid;
			ah.sl = r.sl;
			ah.static_rate = r.rate;
			ah.port_num = m.id->portNum;
			ah.is_global = 1;
			memcpy(ah.grh.dgid, r.mgid.data(), 16);
			ah.grh.flow_label = r.flowLabel;
			ah.grh.hop_limit = r.hopLimit;
			ah.grh.traffic_class = r.trafficClass;
			ah.grh.sgid_index = 0;
			ev.param.ud.qp_num = kMulticastQpn;
			ev.param.ud.qkey = kUdpQkey;
		}
		if (m.id->sink)
			m.id->sink->cmaMcEvent(m, ev);
	});
	mc->member = member;
	id.mcs.push_back(mc.get());
	mcsOf_[id.owner]++;
	out = mc.get();
	mcs_[mc->handle] = std::move(mc);
	return 0;
}

CmaMc *Cma::findMc(uint32_t handle) const
{
	auto it = mcs_.find(handle);
	return it == mcs_.end() ? nullptr : it->second.get();
}

size_t Cma::mcCountOf(const void *owner) const
{
	auto it = mcsOf_.find(owner);
	return it == mcsOf_.end() ? 0 : it->second;
}

void Cma::leave(CmaMc *mc)
{
	mcast_.leave(mc->member);
	std::erase(mc->id->mcs, mc);
	if (--mcsOf_[mc->id->owner] == 0)
		mcsOf_.erase(mc->id->owner);
	mcs_.erase(mc->handle);
}

} /* namespace ibemu::emu */
