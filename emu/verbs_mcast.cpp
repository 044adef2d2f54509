// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// Multicast attachments of a device's UD QPs (ib_attach_mcast() and
// ib_detach_mcast() in verbs.c, with a software driver's group table as
// rdmavt and rxe keep it). The responder (verbs_resp.cpp) looks groups up
// here when a multicast message reaches one of the device's ports.
#include "emu/verbs_device.h"

#include "fabric/mad.h"

#include <algorithm>
#include <cerrno>

namespace ibemu::emu {

namespace {

/* ib_attach_mcast()'s checks, for a port whose link layer is InfiniBand:
 * a multicast GID (ff00::/8, or an IPv4-mapped 224.0.0.0/4 address), a
 * multicast LID, and a UD QP */
bool validGroup(const Qp &qp, const McastGroup &g)
{
	const auto &m = g.mgid;
	bool mappedV4 = std::all_of(m.begin(), m.begin() + 10, [](uint8_t b) { return b == 0; }) && m[10] == 0xff &&
		m[11] == 0xff && (m[12] & 0xf0) == 0xe0;
	return (m[0] == 0xff || mappedV4) && qp.qpType == IB_QPT_UD && g.mlid >= IB_MULTICAST_LID_BASE &&
		g.mlid != IB_LID_PERMISSIVE;
}

} /* namespace */

int VerbsDevice::attachMcast(Qp &qp, const McastGroup &g)
{
	if (!validGroup(qp, g))
		return -EINVAL;
	if (std::find(qp.mcast.begin(), qp.mcast.end(), g) != qp.mcast.end())
		return 0; /* ib_uverbs_attach_mcast(): attached already */
	auto it = mcast_.find(g);
	if (it == mcast_.end() && mcast_.size() >= limits_.maxMcastGrp)
		return -ENOMEM;
	if (it != mcast_.end() && it->second.size() >= limits_.maxMcastQpAttach)
		return -ENOMEM;
	if (mcastAttached_ >= limits_.maxTotalMcastQpAttach)
		return -ENOMEM;
	mcast_[g].push_back(&qp);
	qp.mcast.push_back(g);
	qp.usecnt++; /* a QP with attachments cannot be destroyed (EBUSY) */
	mcastAttached_++;
	return 0;
}

int VerbsDevice::detachMcast(Qp &qp, const McastGroup &g)
{
	auto mine = std::find(qp.mcast.begin(), qp.mcast.end(), g);
	if (!validGroup(qp, g) || mine == qp.mcast.end())
		return -EINVAL;
	qp.mcast.erase(mine);
	auto it = mcast_.find(g); /* there, as long as qp.mcast names it */
	if (it != mcast_.end()) {
		std::erase(it->second, &qp);
		if (it->second.empty())
			mcast_.erase(it);
	}
	qp.usecnt--;
	mcastAttached_--;
	return 0;
}

void VerbsDevice::detachAllMcast(Qp &qp)
{
	while (!qp.mcast.empty()) {
		McastGroup g = qp.mcast.back(); /* a copy: detaching erases the element */
		detachMcast(qp, g);
	}
}

} /* namespace ibemu::emu */
