// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// Pinned-memory accounting of REG_MR (ib_umem_get and ib_umem_release in
// drivers/infiniband/core/umem.c).
#include "tests/unit/verbs_helpers.h"

#include <catch2/catch.hpp>

using namespace ibemu::test;

namespace {

alignas(4096) char arena[16 * 4096];

struct PinFixture : VerbsFixture {
	Client c{ *this, dev1(), 100 };
	uint32_t pd = 0;
	PinFixture() { REQUIRE(c.allocPd(pd) == 0); }
	int reg(uint64_t off, uint64_t len, uint32_t access = IB_ACCESS_LOCAL_WRITE, uint32_t *h = nullptr)
	{
		ib_uverbs_reg_mr_resp r{};
		int rc = c.regMr(pd, arena + off, len, access, r);
		if (h)
			*h = r.mr_handle;
		return rc;
	}
	uint64_t pinned() { return host->pinned().pinnedPages(100); }
};

} /* namespace */

TEST_CASE("pinning: every page touched counts, each time it is pinned", "[pinning]")
{
	PinFixture fx;
	REQUIRE(fx.reg(0, 4096) == 0);
	CHECK(fx.pinned() == 1);
	REQUIRE(fx.reg(4095, 2) == 0); /* 2 bytes across a page boundary: 2 pages */
	CHECK(fx.pinned() == 3);
	REQUIRE(fx.reg(0, 4096) == 0); /* the same page again: counted again */
	CHECK(fx.pinned() == 4);
	REQUIRE(fx.reg(100, 3 * 4096) == 0); /* partial first and last pages */
	CHECK(fx.pinned() == 8);
}

TEST_CASE("pinning: RLIMIT_MEMLOCK, strictly greater fails, charge undone", "[pinning]")
{
	PinFixture fx;
	fx.ua.proc(100).memlock = 4 * 4096;
	REQUIRE(fx.reg(0, 3 * 4096) == 0);
	CHECK(fx.reg(0, 2 * 4096) == -ENOMEM); /* 5 > 4 */
	CHECK(fx.pinned() == 3); /* the failed charge is removed */
	uint32_t h = ~0u;
	REQUIRE(fx.reg(0, 4096, IB_ACCESS_LOCAL_WRITE, &h) == 0); /* exactly 4: allowed */
	CHECK(fx.pinned() == 4);
	REQUIRE(fx.c.destroy(CMD_DEREG_MR, h) == 0); /* dereg uncharges */
	CHECK(fx.pinned() == 3);
	/* the limit is per process: another process has its own total */
	Client other(fx, fx.dev1(), 200);
	uint32_t pd2;
	REQUIRE(other.allocPd(pd2) == 0);
	fx.ua.proc(200).memlock = 4096;
	ib_uverbs_reg_mr_resp r{};
	CHECK(other.regMr(pd2, arena, 4096, 0, r) == 0);
	CHECK(other.regMr(pd2, arena, 4096, 0, r) == -ENOMEM);
	CHECK(fx.host->pinned().pinnedPages(200) == 1);
}

TEST_CASE("pinning: threads of one process share its total", "[pinning]")
{
	PinFixture fx;
	fx.ua.proc(101).pid = 100; /* tid 101 is a thread of process 100 */
	fx.ua.proc(101).memlock = 2 * 4096;
	fx.ua.proc(100).memlock = 2 * 4096;
	Client t(fx, fx.dev1(), 101);
	uint32_t pd2;
	REQUIRE(t.allocPd(pd2) == 0);
	REQUIRE(fx.reg(0, 4096) == 0);
	ib_uverbs_reg_mr_resp r{};
	REQUIRE(t.regMr(pd2, arena, 4096, 0, r) == 0);
	CHECK(fx.pinned() == 2);
	CHECK(t.regMr(pd2, arena, 4096, 0, r) == -ENOMEM);
}

TEST_CASE("pinning: no limit and no CAP_IPC_LOCK is EPERM; CAP_IPC_LOCK bypasses but still counts", "[pinning]")
{
	PinFixture fx;
	fx.ua.proc(100).memlock = 0;
	CHECK(fx.reg(0, 4096) == -EPERM);
	CHECK(fx.pinned() == 0);
	fx.ua.proc(100).capIpcLock = true;
	REQUIRE(fx.reg(0, 4096) == 0); /* limit 0, capable: fine */
	CHECK(fx.pinned() == 1);
	fx.ua.proc(100).memlock = 4096;
	REQUIRE(fx.reg(0, 8 * 4096) == 0); /* over the limit, capable: fine */
	CHECK(fx.pinned() == 9);
}

TEST_CASE("pinning: bad ranges and unmapped memory", "[pinning]")
{
	PinFixture fx;
	CHECK(fx.reg(0, 0) == -EINVAL); /* 0 pages */
	ib_uverbs_reg_mr req{};
	req.pd_handle = fx.pd;
	req.start = req.hca_va = ~uint64_t(0) - 10; /* wraps */
	req.length = 100;
	ib_uverbs_reg_mr_resp r{};
	CHECK(fx.c.cmd(CMD_REG_MR, req, r) == -EINVAL);
	req.start = 0x10000;
	req.hca_va = 0x20010; /* page offsets differ */
	req.length = 16;
	CHECK(fx.c.cmd(CMD_REG_MR, req, r) == -EINVAL);
	CHECK(fx.reg(0, 16, IB_ACCESS_REMOTE_WRITE) == -EINVAL); /* remote write without local write */
	CHECK(fx.reg(0, 16, IB_ACCESS_ON_DEMAND | IB_ACCESS_LOCAL_WRITE) == -EINVAL);
	CHECK(fx.reg(0, 16, 1u << 12) == -EINVAL); /* unknown access bit */

	uint64_t a = reinterpret_cast<uint64_t>(arena);
	fx.ua.proc(100).unmapped.push_back({ a + 4096, a + 2 * 4096 });
	CHECK(fx.reg(0, 3 * 4096) == -EFAULT);
	CHECK(fx.pinned() == 0); /* uncharged */
	fx.ua.proc(100).unmapped.clear();
	fx.ua.proc(100).readOnly.push_back({ a, a + 4096 });
	CHECK(fx.reg(0, 4096, IB_ACCESS_LOCAL_WRITE) == -EFAULT); /* writable MR on read-only memory */
	CHECK(fx.reg(0, 4096, IB_ACCESS_REMOTE_READ) == 0); /* read-only MR: FOLL_FORCE */
	CHECK(fx.pinned() == 1);
}

TEST_CASE("pinning: closing the file uncharges every MR", "[pinning]")
{
	VerbsFixture fx;
	{
		Client c(fx, fx.dev1(), 100);
		uint32_t pd;
		REQUIRE(c.allocPd(pd) == 0);
		ib_uverbs_reg_mr_resp r{};
		REQUIRE(c.regMr(pd, arena, 5 * 4096, IB_ACCESS_LOCAL_WRITE, r) == 0);
		REQUIRE(c.regMr(pd, arena, 4096, 0, r) == 0);
		CHECK(fx.host->pinned().pinnedPages(100) == 6);
		CHECK(fx.host->pinned().all().size() == 1);
		CHECK(fx.ua.openMems == 1); /* one address-space handle for the process's MRs */
	}
	CHECK(fx.host->pinned().pinnedPages(100) == 0);
	CHECK(fx.host->pinned().all().empty());
	CHECK(fx.ua.openMems == 0); /* and every address-space handle is closed */
}

namespace {

/* pages of a CQ of cqe entries */
uint64_t cqPages(uint32_t cqe)
{
	return (ibemu_cq_ring_bytes(cqe) + kPageSize - 1) / kPageSize;
}

/* process 100 through ibemu's provider, whose CQs may have a ring */
struct RingClient {
	Client c;
	explicit RingClient(VerbsFixture &fx) : c(fx, fx.dev1(), 100, false) { REQUIRE(providerContext(c, {}) == 0); }
	/* RESIZE_CQ to a new ring in the memfd ringFd, or none (-1) */
	int resize(uint32_t cq, uint32_t cqe, int ringFd)
	{
		struct {
			ib_uverbs_resize_cq core;
			ibemu_resize_cq_req drv;
		} req{ { 0, cq, cqe }, { ringFd, 0 } };
		struct {
			ib_uverbs_resize_cq_resp core;
			ibemu_resize_cq_resp drv;
		} resp{};
		return c.cmd(CMD_RESIZE_CQ, req, resp);
	}
};

} /* namespace */

/* A CQ's memory is its creator's, charged as mlx5 charges the CQ buffer
 * it pins: ibemu_cq_ring_bytes() of the size asked for, against
 * RLIMIT_MEMLOCK. ofi_rxm asks for 262,144 entries (24 MiB): the caller
 * pays, not the daemon, and its provider's ring (its memfd) holds them. */
TEST_CASE("pinning: a CQ's entries are charged to its creator", "[pinning]")
{
	PinFixture fx;
	RingClient rc(fx);
	uint64_t small = cqPages(8), big = cqPages(262144);
	REQUIRE(big > 3000);
	ProviderMemfd ring1(ibemu_cq_ring_bytes(262144)), ring2(ibemu_cq_ring_bytes(262144));
	uint32_t cq, cq2;
	REQUIRE(fx.c.createCq(8, cq) == 0);
	CHECK(fx.pinned() == small);
	REQUIRE(createRingCq(rc.c, 262144, ring1.fd, cq2) == 0);
	CHECK(fx.pinned() == small + big);
	REQUIRE(rc.c.destroy(CMD_DESTROY_CQ, cq2) == 0);
	CHECK(fx.pinned() == small);

	/* past the limit: ENOMEM and nothing stays charged; 0 without
	 * CAP_IPC_LOCK: EPERM */
	fx.ua.proc(100).memlock = (small + 10) * kPageSize;
	CHECK(createRingCq(rc.c, 262144, ring1.fd, cq2) == -ENOMEM);
	CHECK(fx.pinned() == small);
	REQUIRE(createRingCq(rc.c, 8, -1, cq2) == 0);
	CHECK(fx.pinned() == 2 * small);

	/* RESIZE_CQ to a new ring charges the new size and lets the old go */
	CHECK(rc.resize(cq2, 262144, ring2.fd) == -EINVAL); /* no ring to begin with */
	REQUIRE(createRingCq(rc.c, 8, ring1.fd, cq2) == 0);
	CHECK(fx.pinned() == 3 * small);
	CHECK(rc.resize(cq2, 262144, ring2.fd) == -ENOMEM);
	CHECK(fx.pinned() == 3 * small);
	fx.ua.proc(100).memlock = ~uint64_t(0);
	REQUIRE(rc.resize(cq2, 262144, ring2.fd) == 0);
	CHECK(fx.pinned() == 2 * small + big);
	fx.ua.proc(100).memlock = 0;
	CHECK(fx.c.createCq(8, cq2) == -EPERM);
}

/* Shrinking a ring CQ without a new ring keeps the ring, and the ring
 * keeps its charge; a CQ without a ring is charged its new size. */
TEST_CASE("pinning: RESIZE_CQ that keeps its ring keeps its charge", "[pinning]")
{
	PinFixture fx;
	RingClient rc(fx);
	ProviderMemfd ring(ibemu_cq_ring_bytes(262144));
	uint32_t cq, plain;
	REQUIRE(createRingCq(rc.c, 262144, ring.fd, cq) == 0);
	REQUIRE(fx.pinned() == cqPages(262144));
	REQUIRE(rc.resize(cq, 8, -1) == 0);
	CHECK(fx.pinned() == cqPages(262144));
	REQUIRE(rc.c.destroy(CMD_DESTROY_CQ, cq) == 0);
	CHECK(fx.pinned() == 0);

	REQUIRE(fx.c.createCq(8, plain) == 0);
	ib_uverbs_resize_cq_resp rr{};
	REQUIRE(fx.c.cmd(CMD_RESIZE_CQ, ib_uverbs_resize_cq{ 0, plain, 1000 }, rr) == 0);
	CHECK(fx.pinned() == cqPages(1000));
	REQUIRE(fx.c.cmd(CMD_RESIZE_CQ, ib_uverbs_resize_cq{ 0, plain, 8 }, rr) == 0);
	CHECK(fx.pinned() == cqPages(8));
}

/* A CQ without a ring keeps its completions in the daemon: at most 65,536
 * entries (EINVAL past it, created or resized), whatever the caller's
 * RLIMIT_MEMLOCK; larger ones need the provider's ring. */
TEST_CASE("pinning: a CQ without a ring is at most 65,536 entries", "[pinning]")
{
	PinFixture fx;
	RingClient rc(fx);
	ProviderMemfd ring(ibemu_cq_ring_bytes(65537));
	uint32_t cq;
	CHECK(fx.c.createCq(65537, cq) == -EINVAL);
	CHECK(createRingCq(rc.c, 65537, -1, cq) == -EINVAL);
	CHECK(fx.pinned() == 0);
	REQUIRE(fx.c.createCq(65536, cq) == 0);
	ib_uverbs_resize_cq_resp rr{};
	CHECK(fx.c.cmd(CMD_RESIZE_CQ, ib_uverbs_resize_cq{ 0, cq, 65537 }, rr) == -EINVAL);
	CHECK(fx.pinned() == cqPages(65536));
	REQUIRE(createRingCq(rc.c, 65537, ring.fd, cq) == 0);
	CHECK(fx.pinned() == cqPages(65536) + cqPages(65537));
}

TEST_CASE("pinning: closing the file uncharges its CQs", "[pinning]")
{
	VerbsFixture fx;
	{
		RingClient rc(fx);
		ProviderMemfd ring(ibemu_cq_ring_bytes(262144));
		uint32_t cq;
		REQUIRE(createRingCq(rc.c, 262144, ring.fd, cq) == 0);
		CHECK(fx.host->pinned().pinnedPages(100) > 3000);
	}
	CHECK(fx.host->pinned().pinnedPages(100) == 0);
}
