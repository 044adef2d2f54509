// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// What ibemu's provider adds to the device, with the driver data it sends:
// completion channels (emu/comp_channel.h): the spares it hands over with
// GET_CONTEXT and ADD_SPARES, CREATE_COMP_CHANNEL, arming a CQ (next and
// solicited), the 8-byte events on the channel, and what DESTROY_CQ
// reports and takes back; and CQs whose completions go to a ring in a
// memfd (emu/cq_ring.h). The "program" is this test process: its spares
// are real socket pairs and its rings real memfds, which
// FakeAccess::takeDescriptor dup()s.
#include "tests/unit/verbs_helpers.h"
#include "tests/tools/send_fds.h"

#include "emu/ibemu_user_verbs.h"

#include <catch2/catch.hpp>

#include <cerrno>
#include <fcntl.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

using namespace ibemu;
using namespace ibemu::test;

namespace {

/* A spare as the provider makes it: both ends open in the "program". */
struct Spare {
	int fd[2] = { -1, -1 };
	Spare() { REQUIRE(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fd) == 0); }
	~Spare()
	{
		for (int f : fd)
			if (f >= 0)
				close(f);
	}
	ibemu_spare abi() const { return { fd[0], fd[1] }; }
};

int createChannel(Client &c, int &fd)
{
	ib_uverbs_create_comp_channel req{};
	ib_uverbs_create_comp_channel_resp resp{};
	int r = c.cmd(CMD_CREATE_COMP_CHANNEL, req, resp);
	fd = static_cast<int>(resp.fd);
	return r;
}

int createCq(Client &c, int channel, uint64_t userHandle, uint32_t &cq)
{
	ib_uverbs_create_cq req{};
	req.user_handle = userHandle;
	req.cqe = 64;
	req.comp_channel = channel;
	ib_uverbs_create_cq_resp resp{};
	int r = c.cmd(CMD_CREATE_CQ, req, resp);
	cq = resp.cq_handle;
	return r;
}

int arm(Client &c, uint32_t cq, bool solicitedOnly)
{
	return c.cmd(CMD_REQ_NOTIFY_CQ, ib_uverbs_req_notify_cq{ cq, solicitedOnly });
}

/* the events queued on the channel, read without waiting */
std::vector<uint64_t> events(int fd)
{
	std::vector<uint64_t> out;
	uint64_t ev;
	while (recv(fd, &ev, sizeof ev, MSG_DONTWAIT) == ssize_t(sizeof ev))
		out.push_back(ev);
	return out;
}

/* Pair's A sends to a QP of process C (tid 300, on host2), whose receive
 * CQ has a completion channel. */
struct ChannelPair : Pair {
	Client c{ *this, dev2(), 300, false };
	Spare spare;
	int channel = -1;
	uint32_t pdC = 0, cqC = 0;
	ib_uverbs_reg_mr_resp mrC{};
	ib_uverbs_create_qp_resp qpA2{}, qpC{};
	alignas(4096) uint8_t bufC[4096]{};
	static constexpr uint64_t kHandle = 0xc0ffee00;

	ChannelPair() : Pair(IB_QPT_RC, kAll, -1)
	{
		REQUIRE(providerContext(c, { spare.abi() }) == 0);
		REQUIRE(createChannel(c, channel) == 0);
		REQUIRE(channel == spare.fd[0]);
		REQUIRE(c.allocPd(pdC) == 0);
		REQUIRE(createCq(c, channel, kHandle, cqC) == 0);
		REQUIRE(c.regMr(pdC, bufC, sizeof bufC, kAll, mrC) == 0);
		REQUIRE(c.createQp(pdC, cqC, cqC, IB_QPT_RC, qpC) == 0);
		a.connect(qpA.qp_handle, IB_QPT_RC, lid2(), qpC.qpn);
		c.connect(qpC.qp_handle, IB_QPT_RC, lid1(), qpA.qpn);
	}
	/* one message from A; C completes it on cqC */
	void send(uint32_t flags = IB_SEND_SIGNALED)
	{
		REQUIRE(c.postRecv(qpC.qp_handle, 1, { sge(bufC, sizeof bufC, mrC.lkey) }) == 0);
		REQUIRE(a.postSend(qpA.qp_handle, wr(IB_WR_SEND, 1, flags), { sge(bufA, 16, mrA.lkey) }) == 0);
		REQUIRE(c.poll(cqC).size() == 1);
	}
};

} /* namespace */

TEST_CASE("completion channels: spares, CREATE_COMP_CHANNEL, ADD_SPARES", "[verbs][channel]")
{
	VerbsFixture fx;
	Spare s1, s2, s3;
	Client c(fx, fx.dev1(), 100, false);
	ibemu_get_context_resp drv{};
	REQUIRE(providerContext(c, { s1.abi(), s2.abi() }, &drv) == 0);
	CHECK(drv.magic == IBEMU_UVERBS_MAGIC);
	CHECK(drv.spares_taken == 2);
	/* the provider closes its copies of the sending ends: the device has its own */
	close(s1.fd[1]);
	s1.fd[1] = -1;

	int fd = -1;
	REQUIRE(createChannel(c, fd) == 0);
	CHECK(fd == s1.fd[0]);
	REQUIRE(createChannel(c, fd) == 0);
	CHECK(fd == s2.fd[0]);
	CHECK(createChannel(c, fd) == -EMFILE); /* out of spares */

	ibemu_add_spares add{};
	add.nspares = 1;
	add.spares[0] = s3.abi();
	ibemu_add_spares_resp held{};
	REQUIRE(c.cmd(IBEMU_CMD_ADD_SPARES, add, held) == 0);
	CHECK(held.spares_held == 1);
	REQUIRE(createChannel(c, fd) == 0);
	CHECK(fd == s3.fd[0]);

	/* a CQ's channel must be one: another descriptor is EINVAL */
	uint32_t cq = 0;
	CHECK(createCq(c, s1.fd[0], 1, cq) == 0);
	CHECK(createCq(c, STDERR_FILENO, 1, cq) == -EINVAL);
	CHECK(createCq(c, 1000000, 1, cq) == -EINVAL);
}

TEST_CASE("completion channels: spares that are not a connected pair are refused", "[verbs][channel]")
{
	VerbsFixture fx;
	Spare a, b, good;
	Client c(fx, fx.dev1(), 100, false);
	/* two pairs' ends (the probe the device sends is left in b: the
	 * program's own mistake) */
	CHECK(providerContext(c, { { a.fd[0], b.fd[1] } }) == -EINVAL);
	int p[2];
	REQUIRE(pipe2(p, O_CLOEXEC) == 0);
	CHECK(providerContext(c, { { p[0], p[1] } }) == -EINVAL); /* not a socket */
	close(p[0]);
	close(p[1]);
	CHECK(providerContext(c, { { 1000000, a.fd[1] } }) == -EBADF);
	uint64_t junk = 1;
	REQUIRE(send(a.fd[1], &junk, sizeof junk, 0) == sizeof junk);
	CHECK(providerContext(c, { a.abi() }) == -EINVAL); /* something already queued */
	/* the other way: the program's end sent into the one the device
	 * keeps, a descriptor with it, which our last close would release */
	Spare loaded;
	REQUIRE(sendFds(loaded.fd[0], { STDIN_FILENO }) == 0);
	CHECK(providerContext(c, { loaded.abi() }) == -EINVAL);
	/* a refused GET_CONTEXT leaves no context: a good one still works */
	CHECK(providerContext(c, { good.abi() }) == 0);

	/* a client of another provider (no driver data) has no channels */
	Client stock(fx, fx.dev1(), 200);
	int fd;
	CHECK(createChannel(stock, fd) == -EOPNOTSUPP);
	ibemu_add_spares add{};
	ibemu_add_spares_resp held{};
	CHECK(stock.cmd(IBEMU_CMD_ADD_SPARES, add, held) == -EOPNOTSUPP);
}

TEST_CASE("completion channels: an armed CQ sends one event per arming", "[verbs][channel]")
{
	ChannelPair p;
	p.send();
	CHECK(events(p.channel).empty()); /* not armed */

	REQUIRE(arm(p.c, p.cqC, false) == 0);
	p.send();
	CHECK(events(p.channel) == std::vector<uint64_t>{ ChannelPair::kHandle });
	p.send();
	CHECK(events(p.channel).empty()); /* one event, then disarmed */

	REQUIRE(arm(p.c, p.cqC, true) == 0);
	p.send();
	CHECK(events(p.channel).empty()); /* armed for solicited only */
	p.send(IB_SEND_SIGNALED | IB_SEND_SOLICITED);
	CHECK(events(p.channel) == std::vector<uint64_t>{ ChannelPair::kHandle });

	/* arming for solicited does not narrow an arming for the next */
	REQUIRE(arm(p.c, p.cqC, false) == 0);
	REQUIRE(arm(p.c, p.cqC, true) == 0);
	p.send();
	CHECK(events(p.channel).size() == 1);
}

TEST_CASE("completion channels: DESTROY_CQ reports the events read and takes the unread back", "[verbs][channel]")
{
	ChannelPair p;
	/* a second CQ on the same channel, behind a second pair of QPs */
	uint32_t other = 0;
	constexpr uint64_t kOther = 42;
	REQUIRE(createCq(p.c, p.channel, kOther, other) == 0);
	ib_uverbs_create_qp_resp qpA2{}, qpC2{};
	REQUIRE(p.a.createQp(p.pdA, p.cqA, p.cqA, IB_QPT_RC, qpA2) == 0);
	REQUIRE(p.c.createQp(p.pdC, other, other, IB_QPT_RC, qpC2) == 0);
	p.a.connect(qpA2.qp_handle, IB_QPT_RC, p.lid2(), qpC2.qpn);
	p.c.connect(qpC2.qp_handle, IB_QPT_RC, p.lid1(), qpA2.qpn);
	auto sendOther = [&] {
		REQUIRE(arm(p.c, other, false) == 0);
		REQUIRE(p.c.postRecv(qpC2.qp_handle, 2, { sge(p.bufC, 64, p.mrC.lkey) }) == 0);
		REQUIRE(p.a.postSend(qpA2.qp_handle, p.wr(IB_WR_SEND, 2), { sge(p.bufA, 8, p.mrA.lkey) }) == 0);
		REQUIRE(p.c.poll(other).size() == 1);
	};

	/* on the channel: C, other, C, other; the program reads the first */
	for (int i = 0; i < 2; i++) {
		REQUIRE(arm(p.c, p.cqC, false) == 0);
		p.send();
		sendOther();
	}
	uint64_t ev;
	REQUIRE(recv(p.channel, &ev, sizeof ev, MSG_DONTWAIT) == sizeof ev);
	CHECK(ev == ChannelPair::kHandle);

	REQUIRE(p.c.destroy(CMD_DESTROY_QP, p.qpC.qp_handle) == 0);
	ib_uverbs_destroy_cq_resp resp{};
	REQUIRE(p.c.cmd(CMD_DESTROY_CQ, ib_uverbs_destroy_cq{ 0, p.cqC, 0 }, resp) == 0);
	CHECK(resp.comp_events_reported == 1);
	/* its unread event went with it; the other CQ's stay, in order */
	CHECK(events(p.channel) == std::vector<uint64_t>{ kOther, kOther });

	REQUIRE(p.c.destroy(CMD_DESTROY_QP, qpC2.qp_handle) == 0);
	ib_uverbs_destroy_cq_resp resp2{};
	REQUIRE(p.c.cmd(CMD_DESTROY_CQ, ib_uverbs_destroy_cq{ 0, other, 0 }, resp2) == 0);
	CHECK(resp2.comp_events_reported == 2);
}

TEST_CASE("completion channels: events to a channel the program closed are dropped", "[verbs][channel]")
{
	ChannelPair p;
	close(p.spare.fd[0]); /* ibv_destroy_comp_channel(), or the process is gone */
	p.spare.fd[0] = -1;
	close(p.spare.fd[1]);
	p.spare.fd[1] = -1;
	REQUIRE(arm(p.c, p.cqC, false) == 0);
	p.send(); /* EPIPE inside: nothing breaks */
	REQUIRE(arm(p.c, p.cqC, false) == 0);
	p.send();
	REQUIRE(p.c.destroy(CMD_DESTROY_QP, p.qpC.qp_handle) == 0);
	ib_uverbs_destroy_cq_resp resp{};
	REQUIRE(p.c.cmd(CMD_DESTROY_CQ, ib_uverbs_destroy_cq{ 0, p.cqC, 0 }, resp) == 0);
	CHECK(resp.comp_events_reported == 0);
}

namespace {

/* A CQ's ring as the provider makes it */
struct Ring : ProviderMemfd {
	explicit Ring(uint32_t cqe, bool seal = true, size_t shrinkBy = 0)
		: ProviderMemfd(ibemu_cq_ring_bytes(cqe) - shrinkBy, seal)
	{}
	ibemu_cq_ring &hdr() { return at<ibemu_cq_ring>(0); }
	ib_uverbs_wc entry(uint32_t i)
	{
		ib_uverbs_wc wc;
		uint32_t n = uint32_t((len - sizeof(ibemu_cq_ring)) / sizeof wc);
		memcpy(&wc, map + sizeof(ibemu_cq_ring) + (i % n) * sizeof wc, sizeof wc);
		return wc;
	}
};

} /* namespace */

TEST_CASE("CQ rings: completions go to the program's memfd", "[verbs][ring]")
{
	Pair p(IB_QPT_RC, kAll, -1);
	Client c{ p, p.dev2(), 300, false };
	Spare spare;
	REQUIRE(providerContext(c, { spare.abi() }) == 0);
	uint32_t pd = 0, cq = 0;
	REQUIRE(c.allocPd(pd) == 0);

	/* what is refused: not sealed, too short, not a memfd at all */
	Ring loose(8, false), shorty(8, true, 48);
	CHECK(createRingCq(c, 8, loose.fd, cq) == -EINVAL);
	CHECK(createRingCq(c, 8, shorty.fd, cq) == -EINVAL);
	CHECK(createRingCq(c, 8, spare.fd[0], cq) == -EINVAL);
	CHECK(createRingCq(c, 8, 1000000, cq) == -EBADF);

	Ring ring(6);
	ibemu_create_cq_resp drv{};
	REQUIRE(createRingCq(c, 6, ring.fd, cq, &drv) == 0);
	CHECK(drv.ring_entries == 8);
	ib_uverbs_reg_mr_resp mr{};
	alignas(64) uint8_t buf[256]{};
	REQUIRE(c.regMr(pd, buf, sizeof buf, kAll, mr) == 0);
	ib_uverbs_create_qp_resp qp{};
	REQUIRE(c.createQp(pd, cq, cq, IB_QPT_RC, qp) == 0);
	p.a.connect(p.qpA.qp_handle, IB_QPT_RC, p.lid2(), qp.qpn);
	c.connect(qp.qp_handle, IB_QPT_RC, p.lid1(), p.qpA.qpn);

	auto send = [&](uint64_t id) {
		REQUIRE(c.postRecv(qp.qp_handle, id, { sge(buf, sizeof buf, mr.lkey) }) == 0);
		REQUIRE(p.a.postSend(p.qpA.qp_handle, p.wr(IB_WR_SEND, id), { sge(p.bufA, 16, p.mrA.lkey) }) == 0);
	};
	send(11);
	send(12);
	CHECK(ring.hdr().producer == 2);
	CHECK(ring.entry(0).wr_id == 11);
	CHECK(ring.entry(1).wr_id == 12);
	CHECK(ring.entry(1).byte_len == 16);
	CHECK(ring.entry(1).qp_num == qp.qpn);
	/* POLL_CQ reads the ring too, and moves the consumer index */
	auto polled = c.poll(cq);
	REQUIRE(polled.size() == 2);
	CHECK(polled[0].wr_id == 11);
	CHECK(ring.hdr().consumer == 2);

	/* the program consumes by moving its index; 7 unread is the CQ's
	 * capacity (6 rounded as rxe rounds it): the 8th is an overrun,
	 * raised once */
	for (uint64_t id = 20; id < 27; id++)
		send(id);
	CHECK(ring.hdr().producer == 9);
	CHECK(ring.entry(0).wr_id == 26);
	send(27);
	CHECK(ring.hdr().producer == 9);
	uint8_t ev[16];
	REQUIRE(c.file->read(ev, sizeof ev) == sizeof(ib_uverbs_async_event_desc));
	ib_uverbs_async_event_desc desc;
	memcpy(&desc, ev, sizeof desc);
	CHECK(desc.event_type == IB_EVENT_CQ_ERR);

	/* a garbage consumer index counts as a full ring: nothing is written
	 * outside it, and nothing more arrives */
	ring.hdr().consumer = 0x80000000u;
	send(30);
	CHECK(ring.hdr().producer == 9);

	/* RESIZE_CQ without a new ring stays within this one: 8 holds 15 */
	ib_uverbs_resize_cq_resp rr{};
	CHECK(c.cmd(CMD_RESIZE_CQ, ib_uverbs_resize_cq{ 0, cq, 8 }, rr) == -EINVAL);
	ring.hdr().consumer = 9;
	CHECK(c.cmd(CMD_RESIZE_CQ, ib_uverbs_resize_cq{ 0, cq, 7 }, rr) == 0);
	CHECK(rr.cqe == 7);

	/* RESIZE_CQ to a new ring: what the program has not read moves to its
	 * start, in order, and later completions follow it there */
	send(40);
	send(41);
	send(42);
	Ring big(20);
	struct {
		ib_uverbs_resize_cq core;
		ibemu_resize_cq_req drv;
	} req{ { 0, cq, 20 }, { big.fd, 0 } };
	struct {
		ib_uverbs_resize_cq_resp core;
		ibemu_resize_cq_resp drv;
	} resp{};
	req.core.cqe = 2; /* below the 3 unread */
	CHECK(c.cmd(CMD_RESIZE_CQ, req, resp) == -EINVAL);
	req.core.cqe = 20;
	REQUIRE(c.cmd(CMD_RESIZE_CQ, req, resp) == 0);
	CHECK(resp.core.cqe == 31);
	CHECK(resp.drv.ring_entries == 32);
	CHECK(big.hdr().producer == 3);
	CHECK(big.entry(0).wr_id == 40);
	CHECK(big.entry(2).wr_id == 42);
	send(43);
	CHECK(big.hdr().producer == 4);
	CHECK(big.entry(3).wr_id == 43);
	CHECK(ring.hdr().producer == 12); /* the old ring is left */
	polled = c.poll(cq);
	REQUIRE(polled.size() == 4);
	CHECK(polled[3].wr_id == 43);
}

TEST_CASE("completion channels: at most 32 per file, those the program closed let go", "[verbs][channel]")
{
	VerbsFixture fx;
	Client c(fx, fx.dev1(), 100, false);
	std::vector<std::unique_ptr<Spare>> spares;
	auto batch = [&](unsigned n) {
		std::vector<ibemu_spare> v;
		for (unsigned i = 0; i < n; i++) {
			spares.push_back(std::make_unique<Spare>());
			v.push_back(spares.back()->abi());
		}
		return v;
	};
	auto add = [&](std::vector<ibemu_spare> v) {
		ibemu_add_spares cmd{};
		cmd.nspares = uint32_t(v.size());
		std::copy(v.begin(), v.end(), cmd.spares);
		ibemu_add_spares_resp resp{};
		return c.cmd(IBEMU_CMD_ADD_SPARES, cmd, resp);
	};
	REQUIRE(providerContext(c, batch(8)) == 0);
	for (int i = 0; i < 3; i++)
		REQUIRE(add(batch(8)) == 0);
	CHECK(add(batch(1)) == -EMFILE);
	/* the program closes two spares it will not use: their room comes back */
	for (int i = 0; i < 2; i++) {
		close(spares[i]->fd[0]);
		spares[i]->fd[0] = -1;
	}
	CHECK(add(batch(2)) == 0);
	CHECK(add(batch(1)) == -EMFILE);
}

TEST_CASE("completion channels: events beyond what the socket holds wait, in order", "[verbs][channel]")
{
	ChannelPair p;
	/* arm and complete until the socket is full, and some more */
	size_t sent = 0;
	for (; sent < 2000; sent++) {
		REQUIRE(arm(p.c, p.cqC, false) == 0);
		p.send();
	}
	int queued = 0; /* the socket took a few hundred; the rest wait */
	REQUIRE(ioctl(p.channel, FIONREAD, &queued) == 0);
	CHECK(size_t(queued) / 8 < sent / 2);
	/* the program reads all it can, the daemon refills as room appears */
	size_t got = 0;
	for (int round = 0; round < 100 && got < sent; round++) {
		auto evs = events(p.channel);
		for (uint64_t e : evs)
			REQUIRE(e == ChannelPair::kHandle);
		got += evs.size();
		p.poll(); /* the daemon's io_context: the wait for room fires */
	}
	CHECK(got == sent);
	REQUIRE(p.c.destroy(CMD_DESTROY_QP, p.qpC.qp_handle) == 0);
	ib_uverbs_destroy_cq_resp resp{};
	REQUIRE(p.c.cmd(CMD_DESTROY_CQ, ib_uverbs_destroy_cq{ 0, p.cqC, 0 }, resp) == 0);
	CHECK(resp.comp_events_reported == sent);
}
