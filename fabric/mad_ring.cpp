// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
#include "fabric/mad_ring.h"

#include <algorithm>
#include <chrono>
#include <utility>

namespace ibemu::fabric {

MadRing::MadRing() = default;

void MadRing::record(const Port &p, bool out, const Packet &pkt)
{
	recordAt(std::chrono::duration_cast<std::chrono::nanoseconds>(
			 std::chrono::steady_clock::now().time_since_epoch())
			 .count(),
		 p, out, pkt);
}

void MadRing::recordAt(int64_t ns, const Port &p, bool out, const Packet &pkt)
{
	Entry &e = all_.next();
	e.ns = ns;
	e.port = &p;
	e.out = out;
	e.pkt = pkt;
	if (!isSmpClass(pkt.mad[1]))
		return;
	if (ns - lastSmpNs_ >= kSweepGapNs) { /* a new burst: the last one ended */
		if (burstChanges_) {
			std::swap(burst_, kept_);
			keptEnd_ = burstEnd_;
		}
		burst_.count = 0;
		burstChanges_ = false;
	}
	lastSmpNs_ = ns;
	burstChanges_ = burstChanges_ || setsPortState(pkt);
	burst_.next() = e;
	burstEnd_ = all_.count;
}

bool MadRing::setsPortState(const Packet &pkt)
{
	const uint8_t *mad = pkt.mad.data();
	/* the header's class, method and attribute; PortInfo's PortState is
	 * the low nibble of its byte 32, the SMP's data at byte 64 */
	return isSmpClass(mad[1]) && mad[3] == IB_MGMT_METHOD_SET && mad[16] == (IB_SMP_ATTR_PORT_INFO >> 8) &&
		mad[17] == (IB_SMP_ATTR_PORT_INFO & 0xff) && (mad[64 + 32] & 0x0f) != 0;
}

const MadRing::Entry *MadRing::find(uint64_t seq) const
{
	if (seq >= all_.count || all_.count - seq > kSize)
		return nullptr;
	return &all_.entry[seq % kSize];
}

void MadRing::Slots::each(const std::function<void(const Entry &)> &fn) const
{
	for (uint64_t seq = count - std::min<uint64_t>(count, kSize); seq < count; seq++)
		fn(entry[seq % kSize]);
}

void MadRing::lastSweep(const std::function<void(const Entry &)> &fn) const
{
	(burstChanges_ ? burst_ : kept_).each(fn);
}

} /* namespace ibemu::fabric */
