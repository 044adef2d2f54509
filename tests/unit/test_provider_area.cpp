// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// The provider's ring area (tools/provider/provider_area.cpp): a sealed
// memfd of RingArea::bytes(), rings in whole pages, first fit, zeroed when
// handed out again, and nothing handed out once dropped.
#include "tools/provider/provider.h"

#include "emu/ibemu_user_verbs.h"

#include <catch2/catch.hpp>

#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

using ibemu::provider::RingArea;

TEST_CASE("provider ring area: sealed memfd, pages first fit, zeroed on reuse", "[verbs][ring]")
{
	RingArea area;
	int fd = area.create();
	REQUIRE(fd >= 0);
	struct stat st;
	REQUIRE(fstat(fd, &st) == 0);
	CHECK(size_t(st.st_size) == RingArea::bytes());
	int seals = fcntl(fd, F_GET_SEALS);
	CHECK((seals & (F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL)) == (F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL));
	close(fd); /* the mapping stays */

	uint32_t a = 1, b = 1, c = 1;
	auto *ra = static_cast<uint8_t *>(area.take(100, a));
	auto *rb = static_cast<uint8_t *>(area.take(5000, b));
	auto *rc = static_cast<uint8_t *>(area.take(1, c));
	REQUIRE((ra && rb && rc));
	CHECK(a == 0);
	CHECK(b == 4096); /* two pages */
	CHECK(c == 3 * 4096);
	CHECK(rb == ra + 4096);

	memset(ra, 0xab, 4096);
	CHECK(area.give(ra, 100));
	uint32_t d = 1;
	auto *rd = static_cast<uint8_t *>(area.take(4096, d));
	REQUIRE(rd == ra);
	CHECK(d == 0);
	uint8_t zero[4096]{};
	CHECK(memcmp(rd, zero, sizeof zero) == 0);

	/* what does not fit, or is not the area's */
	uint32_t e = 0;
	CHECK(area.take(RingArea::bytes() + 1, e) == nullptr);
	CHECK(area.take(0, e) == nullptr);
	uint8_t outside[16];
	CHECK_FALSE(area.give(outside, sizeof outside));
	size_t pages = 0;
	while (area.take(4096, e))
		pages++;
	CHECK(pages == RingArea::bytes() / 4096 - 4);
	CHECK(area.give(rc, 1));
	CHECK(area.take(4096, e) == rc);

	/* ring(): from the area while it has room, else a memfd of its own */
	CHECK(area.give(rb, 5000));
	int rfd = -1;
	uint32_t off = 1;
	void *inArea = area.ring(4096, "ibemu-test", rfd, off);
	CHECK(inArea == rb);
	CHECK(rfd == IBEMU_RING_IN_AREA);
	CHECK(off == 4096);
	area.release(inArea, 4096);

	area.drop();
	CHECK(area.take(64, e) == nullptr);
	CHECK_FALSE(area.give(rb, 5000));
	void *own = area.ring(100, "ibemu-test", rfd, off);
	REQUIRE(own != nullptr);
	REQUIRE(rfd >= 0);
	CHECK(fstat(rfd, &st) == 0);
	CHECK(st.st_size == 100);
	CHECK((fcntl(rfd, F_GET_SEALS) & F_SEAL_SHRINK) != 0);
	memset(own, 0x5a, 100); /* mapped, writable */
	close(rfd);
	area.release(own, 100);
}
