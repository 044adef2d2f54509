// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// What a packet's VCRC costs (fabric/packet_format.cpp): ibemu's
// eight-bytes-a-step CRC-16 against boost's generic one (a table a byte,
// what it used before), and zlib's CRC-32 of the ICRC for scale, over
// packets of a MAD's size (LRH to ICRC of an SMP, 290 bytes) and of a
// 4 KiB MTU. Each is timed RUNS times, alternating; the medians are
// printed in ns per packet with their ratio to boost's.
//
// usage: packet_crc [PACKETS] [RUNS]
#include "fabric/packet_format.h"

#include <boost/crc.hpp>
#include <zlib.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <vector>

using namespace ibemu;

namespace {

double median(std::vector<double> v)
{
	std::sort(v.begin(), v.end());
	return v[v.size() / 2];
}

/* ns per packet of `packets` CRCs of buf, the results summed into sink */
double timeOne(const std::function<uint32_t(const std::vector<uint8_t> &)> &crc, const std::vector<uint8_t> &buf,
	       size_t packets, uint32_t &sink)
{
	auto t0 = std::chrono::steady_clock::now();
	for (size_t i = 0; i < packets; i++)
		sink += crc(buf);
	auto t1 = std::chrono::steady_clock::now();
	return std::chrono::duration<double, std::nano>(t1 - t0).count() / double(packets);
}

} /* namespace */

int main(int argc, char **argv)
{
	const size_t packets = argc > 1 ? strtoul(argv[1], nullptr, 0) : 20000;
	const int runs = argc > 2 ? atoi(argv[2]) : 5;
	if (packets == 0 || runs <= 0) {
		fprintf(stderr, "usage: packet_crc [PACKETS] [RUNS]\n");
		return 2;
	}
	auto ours = [](const std::vector<uint8_t> &b) -> uint32_t { return fabric::variantCrc(b); };
	auto generic = [](const std::vector<uint8_t> &b) -> uint32_t {
		boost::crc_optimal<16, 0x100b, 0xffff, 0xffff, true, true> c;
		c.process_bytes(b.data(), b.size());
		return c.checksum();
	};
	auto icrc = [](const std::vector<uint8_t> &b) -> uint32_t {
		return static_cast<uint32_t>(crc32(0, b.data(), static_cast<uInt>(b.size())));
	};
	uint32_t sink = 0;
	printf("%-10s %12s %12s %12s %12s\n", "packet", "boost ns", "ibemu ns", "ibemu/boost", "crc32 ns");
	for (size_t size : { size_t(290), size_t(4096 + 26 + 4) }) {
		std::vector<uint8_t> buf(size);
		for (size_t i = 0; i < size; i++)
			buf[i] = static_cast<uint8_t>(i * 131 + 7);
		if (ours(buf) != generic(buf)) {
			fprintf(stderr, "packet_crc: the two CRC-16s disagree\n");
			return 1;
		}
		std::vector<double> a, b, c;
		for (int r = 0; r < runs; r++) {
			a.push_back(timeOne(generic, buf, packets, sink));
			b.push_back(timeOne(ours, buf, packets, sink));
			c.push_back(timeOne(icrc, buf, packets, sink));
		}
		printf("%-10zu %12.1f %12.1f %12.3f %12.1f\n", size, median(a), median(b), median(b) / median(a),
		       median(c));
	}
	return sink == 0x12345678 ? 3 : 0; /* keeps the sums alive */
}
