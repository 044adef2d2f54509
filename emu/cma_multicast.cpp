// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// rdma_cm multicast: rdma_join_multicast() and rdma_leave_multicast() of a
// UD ID (cma_join_ib_multicast(), cma_leave_mc_groups() and cma_set_mgid()
// in drivers/infiniband/core/cma.c), an MCMemberRecord join at the SM
// through emu/sa_multicast.h (the kernel's multicast.c), whose answer
// becomes MULTICAST_JOIN with the group's address handle or
// MULTICAST_ERROR.
#include "emu/cma.h"

#include "emu/verbs_device.h"
#include "emu/verbs_enums.h"

#include <arpa/inet.h>
#include <cerrno>
#include <cstring>
#include <vector>

namespace ibemu::emu {

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
