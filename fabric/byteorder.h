// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// Big-endian field types for wire layouts.
//
// InfiniBand MADs are big-endian and not naturally aligned (PortInfo has a
// 64-bit M_Key at offset 0 but a 16-bit LID at 16 and nibble fields at 32).
// These byte-array types have alignment 1, so a struct built from them has
// exactly the layout the spec gives and can be overlaid on a MAD buffer.
#pragma once

#include <cstdint>
#include <cstring>

namespace ibemu {

template <typename T, unsigned N> struct BigEndian {
	uint8_t b[N];

	constexpr T get() const
	{
		T v = 0;
		for (unsigned i = 0; i < N; i++)
			v = static_cast<T>((v << 8) | b[i]);
		return v;
	}
	constexpr void set(T v)
	{
		for (unsigned i = N; i-- > 0;) {
			b[i] = static_cast<uint8_t>(v & 0xff);
			v = static_cast<T>(v >> 8);
		}
	}
	constexpr operator T() const { return get(); }
	constexpr BigEndian &operator=(T v)
	{
		set(v);
		return *this;
	}
};

using be16 = BigEndian<uint16_t, 2>;
using be24 = BigEndian<uint32_t, 3>;
using be32 = BigEndian<uint32_t, 4>;
using be64 = BigEndian<uint64_t, 8>;

static_assert(sizeof(be16) == 2 && alignof(be16) == 1);
static_assert(sizeof(be24) == 3 && alignof(be24) == 1);
static_assert(sizeof(be32) == 4 && alignof(be32) == 1);
static_assert(sizeof(be64) == 8 && alignof(be64) == 1);

/* Nibble helpers for the many 4-bit field pairs in SMP attributes. */
constexpr uint8_t hiNibble(uint8_t b)
{
	return b >> 4;
}
constexpr uint8_t loNibble(uint8_t b)
{
	return b & 0x0f;
}
constexpr uint8_t nibbles(unsigned hi, unsigned lo)
{
	return static_cast<uint8_t>(((hi & 0xf) << 4) | (lo & 0xf));
}

/* Overlay a wire struct on a byte buffer; the structs all have alignment 1. */
template <typename T> T *overlay(uint8_t *p)
{
	static_assert(alignof(T) == 1);
	return reinterpret_cast<T *>(p);
}
template <typename T> const T *overlay(const uint8_t *p)
{
	static_assert(alignof(T) == 1);
	return reinterpret_cast<const T *>(p);
}

} /* namespace ibemu */
