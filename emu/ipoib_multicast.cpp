// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// IPoIB's broadcast group (ipoib_multicast.c): the join through the SA,
// the group's record taken as the port's (Q_Key, MLID, MTU, SL), the QP
// attached to it, joins again after a failure (with the kernel's backoff)
// or after a port event that cost the membership.
#include "emu/ipoib.h"

#include "emu/sa_multicast.h"
#include "fabric/node.h"

#include <boost/asio/post.hpp>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace ibemu::emu {

namespace {

constexpr unsigned kMaxBackoffSeconds = 16; /* IPOIB_MAX_BACKOFF_SECONDS */

} /* namespace */

fabric::Gid ipoibBroadcastMgid(uint16_t pkey)
{
	pkey |= 0x8000; /* the full-membership P_Key, as ipoib_ib_dev_up() sets it */
	return { 0xff, 0x12, 0x40, 0x1b, static_cast<uint8_t>(pkey >> 8), static_cast<uint8_t>(pkey),
		 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff };
}

/* ipoib_mcast_join() for priv->broadcast: MGID, PortGID, P_Key and
 * JoinState only; the group is the SM's, which sets everything else */
void Ipoib::startJoin()
{
	if (!hca_ || joining_ || joined_)
		return;
	McMemberRecord rec;
	rec.mgid = ipoibBroadcastMgid(cfg_.pkey);
	rec.portGid = portGid();
	rec.pkey = cfg_.pkey | 0x8000;
	rec.joinState = 1; /* full member */
	joining_ = true;
	member_ = host_.saMulticast().join(madPort(), rec, MCR_MGID | MCR_PORT_GID | MCR_PKEY | MCR_JOIN_STATE,
					   [this, alive = std::weak_ptr<bool>(alive_)](int status,
											const McMemberRecord &r) {
						   if (alive.expired())
							   return;
						   /* the membership may not be left from
						    * inside its own callback */
						   boost::asio::post(host_.io(), [this, alive, status, r] {
							   if (!alive.expired())
								   joinDone(status, r);
						   });
					   });
}

/* ipoib_mcast_join_complete() */
void Ipoib::joinDone(int status, const McMemberRecord &rec)
{
	if (!hca_)
		return;
	if (status == 0 && joining_)
		return joined(rec);
	/* failed, or (-ENETRESET) lost after the join: the membership goes */
	const bool reset = status == -ENETRESET;
	leaveBroadcast();
	if (reset) { /* ipoib_event() flushed the device: join again now */
		backoff_ = 1;
		startJoin();
	} else {
		scheduleJoin();
	}
}

/* ipoib_mcast_join_finish() for the broadcast group: the port's Q_Key
 * and MTU are the group's, and its QP hears the group */
void Ipoib::joined(const McMemberRecord &rec)
{
	joining_ = false;
	McastGroup g{ rec.mlid, {} };
	std::copy(rec.mgid.begin(), rec.mgid.end(), g.mgid.begin());
	if (!qp_ || qp_->dev->attachMcast(*qp_, g) != 0) {
		leaveBroadcast();
		return scheduleJoin();
	}
	bcast_ = rec;
	qp_->qkey = rec.qkey;
	backoff_ = 1;
	setCarrier(true);
}

/* netif_carrier_on() after the join, with dev_set_mtu() to the group's
 * MTU; netif_carrier_off() when the membership goes */
void Ipoib::setCarrier(bool up)
{
	if (joined_ == up)
		return;
	joined_ = up;
	if (carrierChanged_)
		carrierChanged_(up, mtu());
}

/* ipoib_mcast_leave(): the membership and the QP's attachment go */
void Ipoib::leaveBroadcast()
{
	if (member_)
		host_.saMulticast().leave(member_);
	member_ = 0;
	if (qp_ && joined_) {
		McastGroup g{ bcast_.mlid, {} };
		std::copy(bcast_.mgid.begin(), bcast_.mgid.end(), g.mgid.begin());
		qp_->dev->detachMcast(*qp_, g);
	}
	joining_ = false;
	setCarrier(false);
	flushPaths();
}

/* __ipoib_mcast_schedule_join_thread() with its backoff */
void Ipoib::scheduleJoin()
{
	joinTimer_.expires_after(std::chrono::seconds(backoff_));
	backoff_ = std::min(backoff_ * 2, kMaxBackoffSeconds);
	joinTimer_.async_wait([this, alive = std::weak_ptr<bool>(alive_)](const boost::system::error_code &ec) {
		if (!ec && !alive.expired())
			startJoin();
	});
}

} /* namespace ibemu::emu */
