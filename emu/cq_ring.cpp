// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
#include "emu/cq_ring.h"

#include "emu/ibemu_user_verbs.h"

#include <cstring>

namespace ibemu::emu {

static_assert(sizeof(ib_uverbs_wc) == IBEMU_CQ_RING_WC_SIZE);

int CqRing::adopt(const RingMemory &mem, uint32_t cqe, std::unique_ptr<CqRing> &out)
{
	std::unique_ptr<CqRing> ring(new CqRing(ibemu_cq_ring_entries(cqe)));
	if (int ret = ring->mem_.attach(mem, ibemu_cq_ring_bytes(cqe)))
		return ret;
	/* the program created it zeroed; start from the device's own zero */
	ring->mem_.store(offsetof(ibemu_cq_ring, producer), 0);
	out = std::move(ring);
	return 0;
}

uint32_t CqRing::used() const
{
	uint32_t used = producer_ - mem_.load(offsetof(ibemu_cq_ring, consumer));
	return used > entries_ ? entries_ : used;
}

void CqRing::push(const ib_uverbs_wc &wc)
{
	memcpy(mem_.at(sizeof(ibemu_cq_ring) + size_t(producer_ & (entries_ - 1)) * sizeof wc), &wc, sizeof wc);
	producer_++;
	mem_.store(offsetof(ibemu_cq_ring, producer), producer_);
}

bool CqRing::pop(ib_uverbs_wc &out)
{
	uint32_t c = mem_.load(offsetof(ibemu_cq_ring, consumer));
	if (uint32_t(producer_ - c) == 0 || uint32_t(producer_ - c) > entries_)
		return false;
	memcpy(&out, mem_.at(sizeof(ibemu_cq_ring) + size_t(c & (entries_ - 1)) * sizeof out), sizeof out);
	mem_.store(offsetof(ibemu_cq_ring, consumer), c + 1);
	return true;
}

void CqRing::takeFrom(CqRing &old)
{
	ib_uverbs_wc wc;
	while (used() < entries_ && old.pop(wc))
		push(wc);
}

} /* namespace ibemu::emu */
