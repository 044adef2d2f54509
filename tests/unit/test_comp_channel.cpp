// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// Completion channels (emu/comp_channel.h): the spares ibemu's provider
// hands over with GET_CONTEXT and ADD_SPARES, CREATE_COMP_CHANNEL, arming
// a CQ (next and solicited), the 8-byte events on the channel, and what
// DESTROY_CQ reports and takes back. The "program" is this test process:
// its spares are real socket pairs, and FakeAccess::takeDescriptor dup()s.
#include "tests/unit/verbs_helpers.h"

#include "emu/ibemu_user_verbs.h"

#include <catch2/catch.hpp>

#include <cerrno>
#include <fcntl.h>
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

int providerContext(Client &c, std::vector<ibemu_spare> spares, ibemu_get_context_resp *out = nullptr)
{
	struct {
		ib_uverbs_get_context core;
		ibemu_get_context_req drv;
	} req{};
	req.drv.magic = IBEMU_UVERBS_MAGIC;
	req.drv.version = IBEMU_UVERBS_VERSION;
	req.drv.nspares = static_cast<uint32_t>(spares.size());
	std::copy(spares.begin(), spares.end(), req.drv.spares);
	struct {
		ib_uverbs_get_context_resp core;
		ibemu_get_context_resp drv;
	} resp{};
	int r = c.cmd(CMD_GET_CONTEXT, req, resp);
	if (out)
		*out = resp.drv;
	return r;
}

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
