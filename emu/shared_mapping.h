// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// Memory a program shares with the device: its memfd, mapped into the
// daemon (what rxe's rxe_queue_buf is to the kernel). The program can write
// any of it at any time, so the device reads what it needs once, into its
// own memory, and never takes an address or a size from it.
//
// A ring's memory is a memfd of its own, or a window into its context's
// area (emu/ibemu_user_verbs.h), which the window keeps mapped.
//
// Lifetime: unmapped when the owner (a ring, or a uverbs file's area and
// the last window into it) goes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

namespace ibemu::emu {

class SharedMapping;

/* Where a ring's memory is: fd, the device's copy of a memfd of its own,
 * or offset in area. */
struct RingMemory {
	int fd = -1;
	std::shared_ptr<const SharedMapping> area;
	uint64_t offset = 0;
};

class SharedMapping {
public:
	SharedMapping() = default;
	/* Maps the first len bytes of fd (the device's copy of the program's
	 * descriptor; it stays the caller's): a tmpfs memfd sealed against
	 * shrinking, at least len long, or a truncate could SIGBUS the
	 * daemon. 0 or -EINVAL. */
	int map(int fd, uint64_t len);
	/* All of fd, as map() checks it; at most maxLen bytes. 0 or -EINVAL. */
	int mapAll(int fd, uint64_t maxLen);
	/* len bytes at offset (a multiple of IBEMU_RING_ALIGN) in area, which
	 * stays mapped while this lives. 0 or -EINVAL. */
	int window(std::shared_ptr<const SharedMapping> area, uint64_t offset, uint64_t len);
	/* map() or window(), as m says */
	int attach(const RingMemory &m, uint64_t len);
	~SharedMapping();
	SharedMapping(const SharedMapping &) = delete;
	SharedMapping &operator=(const SharedMapping &) = delete;

	uint8_t *at(size_t offset) const { return base_ + offset; }
	size_t size() const { return len_; }
	/* a 32-bit index or flag that one side writes and the other reads */
	uint32_t load(size_t offset) const;
	void store(size_t offset, uint32_t v) const;

private:
	uint8_t *base_ = nullptr;
	size_t len_ = 0;
	std::shared_ptr<const SharedMapping> area_; /* a window's: nothing of ours to unmap */
};

} /* namespace ibemu::emu */
