// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// rdma_cm IDs (the core of the kernel's drivers/infiniband/core/cma.c):
// creating, finding, moving and destroying them, their indexes by owner,
// IB CM ID and port number, binding to an address and a port of a port
// space (cma_bind_addr(), cma_get_port()), and the events that go to an
// ID's file. Addresses and route resolution are in cma_addr.cpp,
// connections through the IB CM in cma_conn.cpp, multicast joins in
// cma_multicast.cpp.
#include "emu/cma.h"

#include "emu/hca_attrs.h"
#include "emu/host.h"
#include "fabric/node.h"

#include <cerrno>
#include <cstring>
#include <random>
#include <vector>

namespace ibemu::emu {

namespace {

constexpr uint16_t kEphemeralLo = 32768, kEphemeralHi = 60999;

std::mt19937 &rng()
{
	static std::mt19937 r{ std::random_device{}() };
	return r;
}

} /* namespace */

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
	bool resolved = id.state != CmaState::Idle && id.state != CmaState::AddrBound;
	if (resolved && id.dst.size() && id.dst.isAny()) { /* cma_resolve_loopback() */
		dgid = sgid;
	} else if (id.dst.family() == kAfIb) {
		memcpy(dgid.data(), reinterpret_cast<const sockaddr_ib *>(id.dst.ss.data)->sib_addr, 16);
	} else if (resolved) {
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

int Cma::portConflict(const CmaId &id, uint16_t port) const
{
	auto [from, to] = byPort_.equal_range(portKey(id.ps, port));
	for (auto it = from; it != to; ++it) {
		const CmaId *o = it->second;
		if (o == &id)
			continue;
		if (apart(*o, id))
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
		/* cma_check_port(): a wildcard on either side is not the
		 * address in use, two equal addresses are */
		return o->src.isAny() || id.src.isAny() ? -EADDRNOTAVAIL : -EADDRINUSE;
	}
	return 0;
}

int Cma::bindPort(CmaId &id)
{
	if (uint16_t port = id.src.port())
		return portConflict(id, port);
	unsigned range = kEphemeralHi - kEphemeralLo + 1;
	unsigned start = rng()() % range;
	for (unsigned i = 0; i < range; i++) {
		uint16_t p = uint16_t(kEphemeralLo + (start + i) % range);
		if (!portConflict(id, p)) {
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
		if (!localPort(addr, h, p, id.hostScope)) /* another host's address: not ours to bind */
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

} /* namespace ibemu::emu */
