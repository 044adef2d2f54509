// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// One area per context (emu/ibemu_user_verbs.h, version 2): GET_CONTEXT
// maps the provider's memfd once, and CQ and QP rings live at offsets in it
// (IBEMU_RING_IN_AREA). What GET_CONTEXT refuses as an area, which offsets
// CREATE_CQ and ATTACH_QP_RING refuse, completions and receives through
// rings in the area, and a version 1 provider, which has none.
#include "tests/unit/verbs_helpers.h"

#include "emu/ibemu_user_verbs.h"

#include <catch2/catch.hpp>

#include <cerrno>
#include <cstring>
#include <sys/socket.h>
#include <unistd.h>

using namespace ibemu;
using namespace ibemu::test;

namespace {

/* The provider's area */
using Area = ProviderMemfd;

int createCqAt(Client &c, uint32_t cqe, int32_t ringFd, uint32_t offset, uint32_t &cq)
{
	ibemu_create_cq_resp drv{};
	int r = createRingCq(c, cqe, ringFd, cq, &drv, offset);
	if (r == 0)
		CHECK(drv.ring_entries == (ringFd == IBEMU_RING_IN_AREA ? ibemu_cq_ring_entries(cqe) : 0));
	return r;
}

/* a QP's rings of 16 sends and 16 receives of 2 SGEs (Client::createQp's
 * capabilities), at offset in the area */
constexpr uint32_t kSqStride = 80 + 32, kRqStride = 16 + 32;

int attachAt(Client &c, uint32_t qp, int32_t ringFd, uint32_t offset, int bell)
{
	ibemu_attach_qp_ring cmd{ qp, ringFd, bell, 16, kSqStride, 16, kRqStride, offset };
	return c.cmd(IBEMU_CMD_ATTACH_QP_RING, cmd);
}

} /* namespace */

TEST_CASE("ring area: GET_CONTEXT takes a sealed memfd of at most 16 MiB, once", "[verbs][ring]")
{
	VerbsFixture fx;
	ibemu_get_context_resp drv{};
	{
		Client c(fx, fx.dev1(), 100, false);
		Area loose(65536, false);
		CHECK(providerContext(c, {}, &drv, loose.fd) == -EINVAL);
		Area huge(IBEMU_AREA_MAX_BYTES + 4096);
		CHECK(providerContext(c, {}, &drv, huge.fd) == -EINVAL);
		int sv[2];
		REQUIRE(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0);
		CHECK(providerContext(c, {}, &drv, sv[0]) == -EINVAL);
		CHECK(providerContext(c, {}, &drv, 1000000) == -EBADF);
		close(sv[0]);
		close(sv[1]);
		/* refused, it left no context: this one is taken */
		Area area(65536);
		REQUIRE(providerContext(c, {}, &drv, area.fd) == 0);
		CHECK(drv.area_bytes == 65536);
		CHECK(drv.version == IBEMU_UVERBS_VERSION);
	}
	{
		/* version 1 sent 0 where area_fd is now: no area, and rings in
		 * one are refused */
		Client c(fx, fx.dev1(), 100, false);
		struct {
			ib_uverbs_get_context core;
			ibemu_get_context_req drv;
		} req{};
		req.drv.magic = IBEMU_UVERBS_MAGIC;
		req.drv.version = 1;
		struct {
			ib_uverbs_get_context_resp core;
			ibemu_get_context_resp drv;
		} resp{};
		REQUIRE(c.cmd(CMD_GET_CONTEXT, req, resp) == 0);
		CHECK(resp.drv.area_bytes == 0);
		uint32_t cq;
		CHECK(createCqAt(c, 8, IBEMU_RING_IN_AREA, 0, cq) == -EINVAL);
		CHECK(createCqAt(c, 8, -1, 0, cq) == 0); /* no ring at all */
	}
}

TEST_CASE("ring area: CQ and QP rings at offsets, completions and receives through them", "[verbs][ring]")
{
	Pair p(IB_QPT_RC, kAll, -1);
	Client c{ p, p.dev2(), 300, false };
	Area area(65536);
	REQUIRE(providerContext(c, {}, nullptr, area.fd) == 0);
	uint32_t pd = 0, cq = 0, bad = 0;
	REQUIRE(c.allocPd(pd) == 0);

	/* offsets: aligned to 64, the ring within the area; an offset only
	 * with IBEMU_RING_IN_AREA */
	CHECK(createCqAt(c, 8, IBEMU_RING_IN_AREA, 4100, bad) == -EINVAL);
	CHECK(createCqAt(c, 8, IBEMU_RING_IN_AREA, 65536 - 64, bad) == -EINVAL);
	CHECK(createCqAt(c, 8, IBEMU_RING_IN_AREA, 0xffffffc0u, bad) == -EINVAL);
	CHECK(createCqAt(c, 8, -1, 4096, bad) == -EINVAL);
	REQUIRE(createCqAt(c, 6, IBEMU_RING_IN_AREA, 4096, cq) == 0);

	ib_uverbs_reg_mr_resp mr{};
	alignas(64) uint8_t buf[256]{};
	REQUIRE(c.regMr(pd, buf, sizeof buf, kAll, mr) == 0);
	ib_uverbs_create_qp_resp qp{};
	REQUIRE(c.createQp(pd, cq, cq, IB_QPT_RC, qp) == 0);
	int bell[2];
	REQUIRE(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, bell) == 0);
	size_t qpBytes = ibemu_qp_ring_bytes(16, kSqStride, 16, kRqStride);
	CHECK(attachAt(c, qp.qp_handle, IBEMU_RING_IN_AREA, uint32_t(65536 - qpBytes + 64), bell[0]) == -EINVAL);
	CHECK(attachAt(c, qp.qp_handle, -1, 8192, bell[0]) == -EINVAL);
	REQUIRE(attachAt(c, qp.qp_handle, IBEMU_RING_IN_AREA, 8192, bell[0]) == 0);
	close(bell[0]); /* the device has its own */
	p.a.connect(p.qpA.qp_handle, IB_QPT_RC, p.lid2(), qp.qpn);
	c.connect(qp.qp_handle, IB_QPT_RC, p.lid1(), p.qpA.qpn);

	/* a receive posted in the QP's ring at 8192, a send from A: the
	 * completion lands in the CQ's ring at 4096 */
	auto &qhdr = area.at<ibemu_qp_ring>(8192);
	uint8_t *slot = area.map + 8192 + sizeof(ibemu_qp_ring) + 16 * kSqStride;
	ibemu_recv_wqe h{ 77, 1, 0 };
	ib_uverbs_sge s = sge(buf, sizeof buf, mr.lkey);
	memcpy(slot, &h, sizeof h);
	memcpy(slot + sizeof h, &s, sizeof s);
	qhdr.rq_producer = 1;
	REQUIRE(p.a.postSend(p.qpA.qp_handle, p.wr(IB_WR_SEND, 5), { sge(p.bufA, 16, p.mrA.lkey) }) == 0);
	auto &chdr = area.at<ibemu_cq_ring>(4096);
	CHECK(chdr.producer == 1);
	ib_uverbs_wc wc;
	memcpy(&wc, area.map + 4096 + sizeof(ibemu_cq_ring), sizeof wc);
	CHECK(wc.wr_id == 77);
	CHECK(wc.byte_len == 16);
	CHECK(wc.qp_num == qp.qpn);
	CHECK(qhdr.rq_consumer == 1);

	/* the area outlives its rings: after they go, a new CQ at the same
	 * offset starts from its own zero */
	REQUIRE(c.destroy(CMD_DESTROY_QP, qp.qp_handle) == 0);
	ib_uverbs_destroy_cq_resp dr{};
	REQUIRE(c.cmd(CMD_DESTROY_CQ, ib_uverbs_destroy_cq{ 0, cq, 0 }, dr) == 0);
	REQUIRE(createCqAt(c, 6, IBEMU_RING_IN_AREA, 4096, cq) == 0);
	CHECK(chdr.producer == 0);
	close(bell[1]);
}
