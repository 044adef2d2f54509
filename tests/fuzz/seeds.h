// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// What the seed writers (make_seeds.cpp, seeds_*.cpp) share: bytes in each
// target's input format, and where they go.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace ibemu::fuzz::seeds {

using Bytes = std::vector<uint8_t>;

/* Writes b as <seeds dir>/<target>/<name>; exits on an error. */
void put(const std::string &target, const std::string &name, const Bytes &b);

template <typename T> void append(Bytes &b, const T &v)
{
	const auto *p = reinterpret_cast<const uint8_t *>(&v);
	b.insert(b.end(), p, p + sizeof v);
}
inline void append(Bytes &b, const Bytes &v)
{
	b.insert(b.end(), v.begin(), v.end());
}
inline void le16(Bytes &b, uint16_t v)
{
	b.push_back(uint8_t(v));
	b.push_back(uint8_t(v >> 8));
}
inline void le32(Bytes &b, uint32_t v)
{
	le16(b, uint16_t(v));
	le16(b, uint16_t(v >> 16));
}
inline void be32(Bytes &b, uint32_t v)
{
	for (int i = 3; i >= 0; i--)
		b.push_back(uint8_t(v >> (8 * i)));
}

/* one per target */
void topologySeeds();
void madSeeds();
void umadSeeds();
void rmppSeeds();
void uverbsSeeds();
void ucmaSeeds();
void controlSeeds();

} /* namespace ibemu::fuzz::seeds */
