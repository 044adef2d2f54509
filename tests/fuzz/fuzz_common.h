// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// What the fuzz targets share: reading the input, the default fabric built
// fresh for every input, and a fast equivalent of the unit tests'
// EmuFixture.
//
// Every target starts each input from the same state, so that a crash
// reproduces from its input file alone: a new Subnet (and Host, io_context
// and files) per input, and the test clock (tests/unit/manual_clock.h) moved back to where it was
// once the input is done.
#pragma once

#include "tests/unit/emu_helpers.h"

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <vector>

namespace ibemu::fuzz {

/* Reads the fuzzer's bytes front to back. Past the end every read gives
 * zeros, so a truncated input is still a valid one. */
class Input {
public:
	Input(const uint8_t *data, size_t size) : p_(data), n_(size) {}
	bool empty() const { return n_ == 0; }
	size_t left() const { return n_; }
	uint8_t u8()
	{
		if (!n_)
			return 0;
		n_--;
		return *p_++;
	}
	/* little-endian, as the structures the harnesses fill are host order */
	uint16_t u16() { return static_cast<uint16_t>(u8() | u8() << 8); }
	uint32_t u32() { return u16() | uint32_t(u16()) << 16; }
	uint64_t u64() { return u32() | uint64_t(u32()) << 32; }
	/* up to n bytes, fewer when the input ends first */
	std::vector<uint8_t> bytes(size_t n)
	{
		n = n < n_ ? n : n_;
		std::vector<uint8_t> out(p_, p_ + n);
		p_ += n;
		n_ -= n;
		return out;
	}
	/* exactly n bytes, zero-padded */
	void fill(uint8_t *out, size_t n)
	{
		size_t k = n < n_ ? n : n_;
		for (size_t i = 0; i < k; i++)
			out[i] = p_[i];
		for (size_t i = k; i < n; i++)
			out[i] = 0;
		p_ += k;
		n_ -= k;
	}

private:
	const uint8_t *p_;
	size_t n_;
};

/* The little-endian 32-bit value at p[at..at+3], zeros past p's end. */
inline uint32_t le32(const std::vector<uint8_t> &p, size_t at)
{
	uint32_t v = 0;
	for (size_t i = 0; i < 4; i++)
		if (at + i < p.size())
			v |= uint32_t(p[at + i]) << (8 * i);
	return v;
}

/* Builds the built-in default fabric (fabric::defaultTopology()) into an
 * empty subnet. The text is parsed once per process. */
void buildDefault(fabric::Subnet &subnet);

/*
 * Brings a freshly built default subnet to exactly the state the unit tests'
 * MiniSm leaves it in (LIDs, SM LIDs, LFTs, LinearFDBTop, ports Active, and
 * the counters its SMPs moved), by copying that state from a subnet MiniSm
 * brought up once per process. MiniSm needs a few hundred SMPs; this takes a
 * few microseconds. checkBringUp() proves the two equal.
 */
void bringUp(fabric::Subnet &subnet);

/*
 * Compares a subnet built with buildDefault() + bringUp() with one brought up
 * by MiniSm, through the nodes' own agents: every SMA attribute of every
 * node, asked on every port, and every PMA attribute. Aborts with the first
 * difference. Each target runs it once, from LLVMFuzzerInitialize.
 */
void checkBringUp();

/* Notes where the test clock stands and sets it back there when destroyed
 * (after everything holding a timer is gone), so every input starts at the
 * same time and the clock cannot run away over millions of inputs. */
struct ClockRewind {
	ClockRewind();
	~ClockRewind();
	ClockRewind(const ClockRewind &) = delete;
	ClockRewind &operator=(const ClockRewind &) = delete;
	emu::Clock::time_point start;
};

/* buildDefault() + bringUp(): what Fixture gives EmuFixture instead of the
 * MiniSm */
void buildAndBringUp(fabric::Subnet &subnet);

/*
 * test::EmuFixture with the subnet brought up by bringUp() instead of a
 * MiniSm run per construction: the default fabric, two local HCAs (host1
 * behind sw1 as hca1, host2 behind sw2 as hca2), a test clock that is
 * set back when the fixture goes. Files opened on its ports must be closed
 * before it is destroyed, as with EmuFixture.
 */
struct Fixture : ClockRewind, test::EmuFixture { /* ClockRewind first: it acts last */
	Fixture() : test::EmuFixture(&buildAndBringUp) {}
};

/* Once per process, from LLVMFuzzerInitialize: brings
 * the template subnet up and runs checkBringUp(). */
void initOnce();

/* IBEMU_FUZZ_TRACE=1: the targets print every operation and its result to
 * stderr (for writing seeds and reading reproducers). */
bool tracing();

} /* namespace ibemu::fuzz */

#define FUZZ_TRACE(...)                               \
	do {                                          \
		if (::ibemu::fuzz::tracing())         \
			fprintf(stderr, __VA_ARGS__); \
	} while (0)
