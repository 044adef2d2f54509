// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// Memory a program shares with the device: its memfd, mapped into the
// daemon (what rxe's rxe_queue_buf is to the kernel). The program can write
// any of it at any time, so the device reads what it needs once, into its
// own memory, and never takes an address or a size from it.
//
// Lifetime: unmapped when the owner (a CQ's or a QP's ring) goes.
#pragma once

#include <cstddef>
#include <cstdint>

namespace ibemu::emu {

class SharedMapping {
public:
	SharedMapping() = default;
	/* Maps the first len bytes of fd (the device's copy of the program's
	 * descriptor; it stays the caller's): a tmpfs memfd sealed against
	 * shrinking, at least len long, or a truncate could SIGBUS the
	 * daemon. 0 or -EINVAL. */
	int map(int fd, uint64_t len);
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
};

} /* namespace ibemu::emu */
