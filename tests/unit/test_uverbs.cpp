// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// The uverbs write() ABI, handle tables and teardown (ib_uverbs_write in
// drivers/infiniband/core/uverbs_main.c, the handlers of uverbs_cmd.c,
// uverbs_destroy_ufile_hw in rdma_core.c).
#include "tests/unit/verbs_helpers.h"

#include <catch2/catch.hpp>

#include <cstring>
#include <poll.h>

using namespace ibemu::test;

namespace {

std::vector<uint8_t> raw(uint32_t command, uint16_t inWords, uint16_t outWords, size_t count)
{
	std::vector<uint8_t> b(count, 0);
	ib_uverbs_cmd_hdr h{ command, inWords, outWords };
	memcpy(b.data(), &h, std::min(count, sizeof h));
	return b;
}

} /* namespace */

TEST_CASE("uverbs write: header checks in ib_uverbs_write's order", "[uverbs]")
{
	VerbsFixture fx;
	Client c(fx, fx.dev1(), 100, false);
	auto w = [&](std::vector<uint8_t> b) { return c.file->write(c.tid, b.data(), b.size()); };

	CHECK(w(raw(CMD_QUERY_DEVICE, 1, 0, 4)) == -EINVAL); /* count < 8 */
	CHECK(w(raw(0x40000001, 4, 44, 16)) == -EINVAL); /* bits outside 0x800000ff */
	CHECK(w(raw(CMD_OPEN_QP + 1, 4, 0, 16)) == -EOPNOTSUPP); /* unknown */
	CHECK(w(raw(CMD_BIND_MW, 4, 4, 16)) == -EOPNOTSUPP); /* not on this device */
	CHECK(w(raw(CMD_QUERY_DEVICE, 5, 44, 16)) == -EINVAL); /* in_words*4 != count */
	CHECK(w(raw(CMD_QUERY_PORT, 3, 10, 12)) == -ENOSPC); /* request too short */
	CHECK(w(raw(CMD_QUERY_DEVICE, 4, 43, 16)) == -ENOSPC); /* response too short */
	CHECK(w(raw(CMD_QUERY_DEVICE, 4, 44, 16)) == -EINVAL); /* no ucontext yet */
	CHECK(c.file->ioctl(RDMA_VERBS_IOCTL) == -ENOTTY);

	/* extended header */
	CHECK(w(raw(IB_USER_VERBS_CMD_FLAG_EXTENDED | EX_CMD_QUERY_DEVICE, 1, 38, 16)) == -EINVAL); /* < 24 */
	auto ex = [&](uint16_t in, uint16_t out, uint64_t resp, uint16_t pin, uint16_t pout, uint32_t rsvd,
		      size_t body) {
		auto b = raw(IB_USER_VERBS_CMD_FLAG_EXTENDED | EX_CMD_QUERY_DEVICE, in, out, 24 + body);
		ib_uverbs_ex_cmd_hdr eh{ resp, pin, pout, rsvd };
		memcpy(b.data() + 8, &eh, sizeof eh);
		return w(b);
	};
	ib_uverbs_ex_query_device_resp exr{};
	uint64_t rp = reinterpret_cast<uint64_t>(&exr);
	CHECK(ex(2, 38, rp, 0, 0, 0, 8) == -EINVAL); /* words do not add up */
	CHECK(ex(0, 38, rp, 0, 0, 0, 0) == -ENOSPC); /* request shorter than the method's */
	CHECK(ex(1, 38, rp, 0, 0, 1, 8) == -EINVAL); /* reserved */
	CHECK(ex(1, 0, rp, 0, 0, 0, 8) == -EINVAL); /* response but no room */
	CHECK(ex(1, 1, rp, 0, 0, 0, 8) == -ENOSPC); /* room too small */
	CHECK(ex(1, 38, 0, 0, 0, 0, 8) == -EINVAL); /* room but no response */
	CHECK(ex(1, 38, rp, 0, 0, 0, 8) == -EINVAL); /* fine, but no ucontext */

	REQUIRE(c.getContext() == 0);
	CHECK(c.getContext() == -EINVAL); /* a second context */
	CHECK(ex(1, 38, rp, 0, 0, 0, 8) == 32);
	CHECK(exr.response_length == 304);
	CHECK(exr.base.phys_port_cnt == 1);
	CHECK(exr.base.node_guid == __builtin_bswap64(fx.hca1->node->nodeGuid));
	ib_uverbs_ex_query_device_resp small{};
	memset(&small, 0xee, sizeof small);
	CHECK(ex(1, 23, reinterpret_cast<uint64_t>(&small), 0, 0, 0, 8) == 32); /* 184 bytes */
	CHECK(small.response_length == 184);
	CHECK(reinterpret_cast<uint8_t *>(&small)[184] == 0xee); /* not written past the room */
}

TEST_CASE("uverbs write: the size a command's header declares", "[uverbs]")
{
	using ibemu::emu::UverbsFile;
	auto b = raw(CMD_QUERY_DEVICE, 4, 44, 16);
	CHECK(UverbsFile::commandSize(b.data(), 16) == 16);
	CHECK(UverbsFile::commandSize(b.data(), 8) == 16); /* a head of it */
	CHECK(UverbsFile::commandSize(b.data(), 7) == 0); /* no whole header */
	b = raw(CMD_QUERY_DEVICE, 0, 0, 8);
	CHECK(UverbsFile::commandSize(b.data(), 8) == 0); /* in_words 0: no write() is that size */
	/* extended: 24 bytes of headers and both word counts in 8-byte words */
	b = raw(IB_USER_VERBS_CMD_FLAG_EXTENDED | EX_CMD_QUERY_DEVICE, 1, 38, 40);
	ib_uverbs_ex_cmd_hdr eh{ 0, 2, 0, 0 };
	memcpy(b.data() + 8, &eh, sizeof eh);
	CHECK(UverbsFile::commandSize(b.data(), 40) == 48);
	CHECK(UverbsFile::commandSize(b.data(), 23) == 0); /* no whole extended header */

	/* a head of the write() readable, the rest in a hole: the headers' own
	 * errno, -EFAULT where they need the rest, 0 where they are fine */
	b = raw(CMD_QUERY_DEVICE, 4, 0, 16);
	CHECK(UverbsFile::headerErrno(b.data(), 8, 16) == -ENOSPC); /* no room for the response */
	b = raw(CMD_QUERY_DEVICE, 4, 44, 16);
	CHECK(UverbsFile::headerErrno(b.data(), 8, 16) == 0);
	CHECK(UverbsFile::headerErrno(b.data(), 8, 24) == -EINVAL); /* longer than it says */
	CHECK(UverbsFile::headerErrno(b.data(), 4, 16) == -EFAULT); /* the header itself cut */
	b = raw(CMD_QUERY_AH, 4, 0, 16);
	CHECK(UverbsFile::headerErrno(b.data(), 8, 16) == -EOPNOTSUPP); /* ib_uverbs_notsupp reads nothing */
	b = raw(IB_USER_VERBS_CMD_FLAG_EXTENDED | EX_CMD_QUERY_DEVICE, 1, 38, 32);
	CHECK(UverbsFile::headerErrno(b.data(), 16, 32) == -EFAULT); /* the extended header cut */
}

TEST_CASE("uverbs: responses are zero-filled and land in the caller's memory", "[uverbs]")
{
	VerbsFixture fx;
	Client c(fx, fx.dev1(), 100);
	/* a response buffer bigger than the struct: the tail is cleared */
	uint8_t buf[64];
	memset(buf, 0xab, sizeof buf);
	ib_uverbs_query_port q{};
	q.port_num = 1;
	REQUIRE(c.cmd(CMD_QUERY_PORT, &q, sizeof q, buf, sizeof buf) == 0);
	ib_uverbs_query_port_resp pr;
	memcpy(&pr, buf, sizeof pr);
	CHECK(pr.lid == fx.lid1());
	CHECK(pr.state == 4);
	CHECK(pr.link_layer == 1);
	CHECK(pr.sm_lid == fx.p1->smLid);
	for (size_t i = sizeof pr; i < sizeof buf; i++)
		CHECK(buf[i] == 0);
	q.port_num = 2;
	CHECK(c.cmd(CMD_QUERY_PORT, &q, sizeof q, buf, sizeof buf) == -EINVAL);
	/* a response pointer the caller cannot write */
	fx.ua.proc(100).unmapped.push_back({ 0x1000, 0x2000 });
	q.port_num = 1;
	CHECK(c.cmd(CMD_QUERY_PORT, &q, sizeof q, reinterpret_cast<void *>(0x1000), sizeof pr) == -EFAULT);
}

TEST_CASE("uverbs handles: one table for every type, lowest free first", "[uverbs]")
{
	VerbsFixture fx;
	Client c(fx, fx.dev1(), 100);
	uint32_t pd0, pd1, cq, pd3;
	REQUIRE(c.allocPd(pd0) == 0);
	REQUIRE(c.allocPd(pd1) == 0);
	REQUIRE(c.createCq(8, cq) == 0);
	CHECK(pd0 == 0);
	CHECK(pd1 == 1);
	CHECK(cq == 2); /* shared with PDs */
	REQUIRE(c.destroy(CMD_DEALLOC_PD, pd1) == 0);
	REQUIRE(c.allocPd(pd3) == 0);
	CHECK(pd3 == 1); /* the freed handle comes back first */

	/* a failed create gives its handle back */
	uint32_t bad;
	CHECK(c.createCq(0, bad) == -EINVAL);
	ib_uverbs_reg_mr_resp mr{};
	static char buf[64];
	CHECK(c.regMr(77, buf, sizeof buf, 0, mr) == -ENOENT); /* no such PD */
	uint32_t next;
	REQUIRE(c.allocPd(next) == 0);
	CHECK(next == 3);

	/* wrong type: EINVAL; missing: ENOENT (6.1 passes the lookup's error on) */
	CHECK(c.destroy(CMD_DEALLOC_PD, cq) == -EINVAL);
	CHECK(c.destroy(CMD_DEALLOC_PD, 99) == -ENOENT);
	CHECK(c.destroy(CMD_DESTROY_CQ, pd0) == -EINVAL);
	ib_uverbs_req_notify_cq rn{ pd0, 0 };
	CHECK(c.cmd(CMD_REQ_NOTIFY_CQ, rn) == -EINVAL);
	rn.cq_handle = 99;
	CHECK(c.cmd(CMD_REQ_NOTIFY_CQ, rn) == -ENOENT);
	ib_uverbs_create_qp_resp qr{};
	CHECK(c.createQp(cq, cq, cq, IB_QPT_RC, qr) == -EINVAL); /* a CQ as the PD */
}

TEST_CASE("uverbs handles: another process's handles mean nothing here", "[uverbs]")
{
	VerbsFixture fx;
	Client a(fx, fx.dev1(), 100);
	Client b(fx, fx.dev1(), 200);
	uint32_t pdA, cqA, pdB;
	REQUIRE(a.allocPd(pdA) == 0);
	REQUIRE(a.createCq(8, cqA) == 0);
	REQUIRE(b.allocPd(pdB) == 0);
	CHECK(pdB == 0); /* b's table is its own */
	/* b uses a's CQ handle: not in b's table */
	CHECK(b.destroy(CMD_DESTROY_CQ, cqA) == -ENOENT);
	ib_uverbs_create_qp_resp qr{};
	CHECK(b.createQp(pdB, cqA, cqA, IB_QPT_RC, qr) == -EINVAL); /* create_qp()'s lookups: EINVAL */
	auto wcs = [&] {
		ib_uverbs_poll_cq req{ 0, cqA, 1 };
		uint8_t out[64];
		return b.cmd(CMD_POLL_CQ, &req, sizeof req, out, sizeof out);
	}();
	CHECK(wcs == -ENOENT);
	/* and a's objects are untouched */
	CHECK(a.destroy(CMD_DESTROY_CQ, cqA) == 0);
	CHECK(a.destroy(CMD_DEALLOC_PD, pdA) == 0);
}

TEST_CASE("uverbs: in-use objects are EBUSY; close tears down dependants first", "[uverbs]")
{
	VerbsFixture fx;
	alignas(4096) static char buf[8192];
	uint32_t qpn;
	{
		Client c(fx, fx.dev1(), 100);
		uint32_t pd, cq, srq, ah;
		REQUIRE(c.allocPd(pd) == 0); /* 0 */
		REQUIRE(c.createCq(8, cq) == 0); /* 1 */
		ib_uverbs_reg_mr_resp mr{};
		REQUIRE(c.regMr(pd, buf, sizeof buf, IB_ACCESS_LOCAL_WRITE, mr) == 0); /* 2 */
		REQUIRE(c.createSrq(pd, 4, srq) == 0); /* 3 */
		ib_uverbs_create_qp_resp qp{};
		REQUIRE(c.createQp(pd, cq, cq, IB_QPT_RC, qp, int(srq)) == 0); /* 4 */
		REQUIRE(c.createAh(pd, fx.lid2(), ah) == 0); /* 5 */
		CHECK(fx.host->pinned().pinnedPages(100) == 3); /* the MR's 2, the CQ's 1 */

		CHECK(c.destroy(CMD_DEALLOC_PD, pd) == -EBUSY);
		CHECK(c.destroy(CMD_DESTROY_CQ, cq) == -EBUSY);
		CHECK(c.destroy(CMD_DESTROY_SRQ, srq) == -EBUSY);
		qpn = qp.qpn;
		CHECK(fx.dev1().qp(qpn) != nullptr);
	} /* close */
	/* Everything went. Each destroy drops its use of what it depends on
	 * (mr.pd->usecnt--, the QP's CQs and SRQ), so a parent freed before a
	 * dependant is a use after free, which the ASan build reports here. */
	CHECK(fx.dev1().qp(qpn) == nullptr);
	CHECK(fx.host->pinned().pinnedPages(100) == 0);
	CHECK(fx.dev1().openFiles() == 0);
}

TEST_CASE("uverbs: the async event file is the uverbs file", "[uverbs]")
{
	VerbsFixture fx;
	Client c(fx, fx.dev1(), 100, false);
	ib_uverbs_get_context req{};
	ib_uverbs_get_context_resp resp{};
	REQUIRE(c.cmd(CMD_GET_CONTEXT, req, resp) == 0);
	CHECK(resp.async_fd == uint32_t(fx.ua.fds[c.file.get()]));
	CHECK(resp.num_comp_vectors == 1);
	/* completion channels would be new files: not possible over CUSE */
	ib_uverbs_create_comp_channel cc{};
	ib_uverbs_create_comp_channel_resp ccr{};
	CHECK(c.cmd(CMD_CREATE_COMP_CHANNEL, cc, ccr) == -EOPNOTSUPP);

	uint8_t ev[16];
	CHECK(c.file->read(ev, sizeof ev) == -EAGAIN);
	CHECK(c.file->poll() == 0);
	fx.dev1().portEvent(1, IB_EVENT_PORT_ERR);
	CHECK(c.file->poll() == (POLLIN | POLLRDNORM));
	CHECK(c.file->read(ev, 8) == -EINVAL); /* too small: stays queued */
	REQUIRE(c.file->read(ev, sizeof ev) == 16);
	ib_uverbs_async_event_desc d;
	memcpy(&d, ev, sizeof d);
	CHECK(d.element == 1);
	CHECK(d.event_type == IB_EVENT_PORT_ERR);
	fx.host->removeHca(fx.hca1);
	CHECK(c.file->poll() == POLLERR);
	CHECK(c.file->read(ev, sizeof ev) == -EIO);
	uint32_t pd;
	CHECK(c.allocPd(pd) == -EIO);
}

TEST_CASE("uverbs: port changes in the fabric become async events", "[uverbs]")
{
	VerbsFixture fx;
	Client c(fx, fx.dev1(), 100);
	auto next = [&]() -> std::pair<uint32_t, uint64_t> {
		uint8_t ev[16];
		if (c.file->read(ev, sizeof ev) != 16)
			return { ~0u, 0 };
		ib_uverbs_async_event_desc d;
		memcpy(&d, ev, sizeof d);
		return { d.event_type, d.element };
	};
	fx.subnet.setDisabled(*fx.p1->peer, true); /* the switch side goes away */
	CHECK(next() == std::make_pair(uint32_t(IB_EVENT_PORT_ERR), uint64_t(1)));
	CHECK(next().first == ~0u); /* once */
	fx.subnet.setDisabled(*fx.p1->peer, false); /* trains to Init: not active yet */
	CHECK(next().first == ~0u);
	fx.subnet.setLogicalState(*fx.p1, PortState::Active);
	CHECK(next() == std::make_pair(uint32_t(IB_EVENT_PORT_ACTIVE), uint64_t(1)));
	fx.p1->lid = 77;
	fx.p1->pkeys.push_back(0x8001);
	fx.subnet.portChanged(*fx.p1, true);
	CHECK(next().first == IB_EVENT_LID_CHANGE);
	CHECK(next().first == IB_EVENT_PKEY_CHANGE);
	CHECK(next().first == IB_EVENT_CLIENT_REREGISTER);
	CHECK(next().first == ~0u);
}
