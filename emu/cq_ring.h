// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// A completion queue's entries in memory shared with the program (the ring
// of emu/ibemu_user_verbs.h; rxe's rxe_queue_buf plays this part): the
// device's side. Everything the program can write, its consumer index, is
// read once per use and only bounds how full the ring is, never an address.
//
// Lifetime: owned by its Cq; unmapped with it.
#pragma once

#include "emu/shared_mapping.h"
#include "emu/uverbs_abi.h"

#include <cstddef>
#include <cstdint>
#include <memory>

namespace ibemu::emu {

class CqRing {
public:
	/* The ring of a CQ asked for cqe completions, ibemu_cq_ring_bytes(cqe) of mem:
	 * a memfd (the device's copy of the program's; it stays the caller's)
	 * that must be a tmpfs memfd sealed against shrinking and at least that
	 * long, or a window of the context's area. 0 or -EINVAL. */
	static int adopt(const RingMemory &mem, uint32_t cqe, std::unique_ptr<CqRing> &out);
	CqRing(const CqRing &) = delete;
	CqRing &operator=(const CqRing &) = delete;

	uint32_t entries() const { return entries_; }
	/* completions written and not yet read by the program (its garbage
	 * consumer index counts as a full ring) */
	uint32_t used() const;
	/* Writes one completion; the caller has checked used() < capacity. */
	void push(const ib_uverbs_wc &wc);
	/* POLL_CQ on a ring CQ: the oldest unread completion, if any. */
	bool pop(ib_uverbs_wc &out);
	/* RESIZE_CQ: the completions old holds and the program has not read,
	 * oldest first, into this fresh ring (the caller has checked that
	 * they fit); old is left with none. */
	void takeFrom(CqRing &old);

private:
	explicit CqRing(uint32_t entries) : entries_(entries) {}
	SharedMapping mem_;
	uint32_t entries_;
	uint32_t producer_ = 0; /* ours: never read back from shared memory */
};

} /* namespace ibemu::emu */
