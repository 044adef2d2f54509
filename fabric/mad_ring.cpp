// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
#include "fabric/mad_ring.h"

#include <algorithm>
#include <chrono>

namespace ibemu::fabric {

MadRing::MadRing() : ring_(kSize), sweep_(kSize)
{}

void MadRing::record(const Port &p, bool out, const Packet &pkt)
{
	recordAt(std::chrono::duration_cast<std::chrono::nanoseconds>(
			 std::chrono::system_clock::now().time_since_epoch())
			 .count(),
		 p, out, pkt);
}

void MadRing::recordAt(int64_t ns, const Port &p, bool out, const Packet &pkt)
{
	if (ns - lastNs_ >= kSweepGapNs) { /* a new burst: the last one ended */
		if (burstChanges_)
			keepBurst();
		burstStart_ = count_;
		burstChanges_ = false;
	}
	lastNs_ = ns;
	burstChanges_ = burstChanges_ || setsPortState(pkt);
	Entry &e = ring_[count_ % kSize];
	e.ns = ns;
	e.port = &p;
	e.out = out;
	e.pkt = pkt;
	count_++;
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
	if (seq >= count_ || count_ - seq > kSize)
		return nullptr;
	return &ring_[seq % kSize];
}

/* The burst that just ended, as far as the ring still holds it */
void MadRing::keepBurst()
{
	const uint64_t first = std::max(burstStart_, count_ > kSize ? count_ - kSize : 0);
	sweepLen_ = 0;
	for (uint64_t seq = first; seq < count_; seq++)
		sweep_[sweepLen_++] = ring_[seq % kSize];
	sweepEnd_ = count_;
}

void MadRing::lastSweep(const std::function<void(const Entry &)> &fn) const
{
	if (!burstChanges_) {
		for (size_t i = 0; i < sweepLen_; i++)
			fn(sweep_[i]);
		return;
	}
	for (uint64_t seq = std::max(burstStart_, count_ > kSize ? count_ - kSize : 0); seq < count_; seq++)
		fn(ring_[seq % kSize]);
}

} /* namespace ibemu::fabric */
