// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// Verbs across daemons (emu/verbs_req.cpp, verbs_resp.cpp and verbs_comp.cpp, "the far side"): a process on
// h1, simulated by one daemon, and one on h2, simulated by the other, on
// a subnet split between them (SplitSubnet). Their messages cross as
// packets, the responder runs in the other daemon, and the reply comes
// back; the same results as within one daemon.
#include "tests/unit/verbs_helpers.h"

#include <catch2/catch.hpp>

#include <cstring>
#include <numeric>

using namespace ibemu;
using namespace ibemu::test;

namespace {

/* Process A (tid 100) on h1 in daemon a, process B (tid 200) on h2 in
 * daemon b, brought up by a test SM in a; each with a PD, a CQ, an 8 KiB
 * buffer and one QP of `type`, connected. */
struct FarPair {
	boost::asio::io_context io;
	SplitSubnet net{ &io };
	FakeAccess ua;
	std::unique_ptr<emu::Host> hostA, hostB;
	emu::Hca *h1 = nullptr, *h2 = nullptr;
	std::unique_ptr<Client> a, b;
	alignas(4096) uint8_t bufA[8192]{};
	alignas(4096) uint8_t bufB[8192]{};
	uint32_t pdA = 0, pdB = 0, cqA = 0, cqB = 0;
	ib_uverbs_reg_mr_resp mrA{}, mrB{};
	ib_uverbs_create_qp_resp qpA{}, qpB{};

	explicit FarPair(uint8_t type = IB_QPT_RC, uint32_t accessB = kAll)
	{
		net.connect();
		MiniSm sm(net.a, SplitSubnet::port(net.a, "H1", 1));
		sm.run();
		hostA = std::make_unique<emu::Host>(io, net.a);
		hostB = std::make_unique<emu::Host>(io, net.b);
		hostA->setAccess(&ua);
		hostB->setAccess(&ua);
		h1 = hostA->addHca(*net.a.findNode("H1"), "ibemu0");
		h2 = hostB->addHca(*net.b.findNode("H2"), "ibemu0");
		REQUIRE(h1);
		REQUIRE(h2);
		a = std::make_unique<Client>(ua, *hostA, *h1->verbs, 100);
		b = std::make_unique<Client>(ua, *hostB, *h2->verbs, 200);
		REQUIRE(a->allocPd(pdA) == 0);
		REQUIRE(b->allocPd(pdB) == 0);
		REQUIRE(a->createCq(64, cqA) == 0);
		REQUIRE(b->createCq(64, cqB) == 0);
		REQUIRE(a->regMr(pdA, bufA, sizeof bufA, kAll, mrA) == 0);
		REQUIRE(b->regMr(pdB, bufB, sizeof bufB, accessB, mrB) == 0);
		REQUIRE(a->createQp(pdA, cqA, cqA, type, qpA) == 0);
		REQUIRE(b->createQp(pdB, cqB, cqB, type, qpB) == 0);
		a->connect(qpA.qp_handle, type, lid2(), qpB.qpn);
		b->connect(qpB.qp_handle, type, lid1(), qpA.qpn);
	}
	~FarPair()
	{
		a.reset();
		b.reset();
		hostA.reset();
		hostB.reset();
	}

	uint16_t lid1() { return SplitSubnet::port(net.a, "H1", 1).lid; }
	uint16_t lid2() { return SplitSubnet::port(net.b, "H2", 1).lid; }
	/* the network's turns: messages and replies cross */
	void run()
	{
		for (int i = 0; i < 100; i++) {
			io.restart();
			if (io.poll() == 0)
				return;
		}
	}
	void advance(unsigned ms)
	{
		ManualClock::advance(std::chrono::milliseconds(ms));
		run();
	}
	static ib_uverbs_send_wr wr(uint32_t opcode, uint64_t id = 1, uint32_t flags = IB_SEND_SIGNALED)
	{
		ib_uverbs_send_wr w{};
		w.wr_id = id;
		w.opcode = opcode;
		w.send_flags = flags;
		return w;
	}
};

} /* namespace */

TEST_CASE("verbs across daemons: RC SEND with immediate", "[verbs][remote-cable]")
{
	FarPair p;
	std::iota(p.bufA, p.bufA + 3000, 0);
	REQUIRE(p.b->postRecv(p.qpB.qp_handle, 77, { sge(p.bufB, 4096, p.mrB.lkey) }) == 0);
	auto w = FarPair::wr(IB_WR_SEND_WITH_IMM, 5);
	w.ex = 0x12345678;
	REQUIRE(p.a->postSend(p.qpA.qp_handle, w, { sge(p.bufA, 3000, p.mrA.lkey) }) == 0);
	CHECK(p.a->poll(p.cqA).empty()); /* the reply is not back yet */
	p.run();
	auto sa = p.a->poll(p.cqA);
	REQUIRE(sa.size() == 1);
	CHECK(sa[0].wr_id == 5);
	CHECK(sa[0].status == IB_WC_SUCCESS);
	CHECK(sa[0].opcode == IB_WC_SEND);
	auto rb = p.b->poll(p.cqB);
	REQUIRE(rb.size() == 1);
	CHECK(rb[0].wr_id == 77);
	CHECK(rb[0].status == IB_WC_SUCCESS);
	CHECK(rb[0].opcode == IB_WC_RECV);
	CHECK(rb[0].byte_len == 3000);
	CHECK(rb[0].wc_flags == IB_WC_WITH_IMM);
	CHECK(rb[0].ex == 0x12345678);
	CHECK(rb[0].src_qp == p.qpA.qpn);
	CHECK(rb[0].slid == p.lid1());
	CHECK(memcmp(p.bufA, p.bufB, 3000) == 0);
	CHECK(p.net.toB.dataMessages == 1); /* the request, as 3 packets */
	CHECK(p.net.toA.dataMessages == 1); /* the ACK */
}

TEST_CASE("verbs across daemons: RDMA WRITE, READ and atomics", "[verbs][remote-cable]")
{
	FarPair p;
	const uint64_t remote = reinterpret_cast<uint64_t>(p.bufB);
	memset(p.bufA, 0xa5, 2048);
	auto w = FarPair::wr(IB_WR_RDMA_WRITE, 1);
	w.wr.rdma.remote_addr = remote + 100;
	w.wr.rdma.rkey = p.mrB.rkey;
	REQUIRE(p.a->postSend(p.qpA.qp_handle, w, { sge(p.bufA, 2048, p.mrA.lkey) }) == 0);
	p.run();
	auto c = p.a->poll(p.cqA);
	REQUIRE(c.size() == 1);
	CHECK(c[0].status == IB_WC_SUCCESS);
	CHECK(c[0].opcode == IB_WC_RDMA_WRITE);
	CHECK(p.bufB[100] == 0xa5);
	CHECK(p.bufB[2147] == 0xa5);
	CHECK(p.bufB[2148] == 0);

	for (int i = 0; i < 3000; i++)
		p.bufB[4096 + i] = static_cast<uint8_t>(i * 7);
	w = FarPair::wr(IB_WR_RDMA_READ, 3);
	w.wr.rdma.remote_addr = remote + 4096;
	w.wr.rdma.rkey = p.mrB.rkey;
	REQUIRE(p.a->postSend(p.qpA.qp_handle, w, { sge(p.bufA + 4096, 3000, p.mrA.lkey) }) == 0);
	p.run();
	c = p.a->poll(p.cqA);
	REQUIRE(c.size() == 1);
	CHECK(c[0].status == IB_WC_SUCCESS);
	CHECK(c[0].opcode == IB_WC_RDMA_READ);
	CHECK(c[0].byte_len == 3000);
	CHECK(memcmp(p.bufA + 4096, p.bufB + 4096, 3000) == 0);

	uint64_t v = 41, got = 0;
	memcpy(p.bufB + 8, &v, 8);
	w = FarPair::wr(IB_WR_ATOMIC_CMP_AND_SWP, 4);
	w.wr.atomic.remote_addr = remote + 8;
	w.wr.atomic.rkey = p.mrB.rkey;
	w.wr.atomic.compare_add = 41;
	w.wr.atomic.swap = 1000;
	REQUIRE(p.a->postSend(p.qpA.qp_handle, w, { sge(p.bufA + 8, 8, p.mrA.lkey) }) == 0);
	p.run();
	c = p.a->poll(p.cqA);
	REQUIRE(c.size() == 1);
	CHECK(c[0].status == IB_WC_SUCCESS);
	CHECK(c[0].opcode == IB_WC_COMP_SWAP);
	memcpy(&got, p.bufA + 8, 8);
	CHECK(got == 41);
	memcpy(&got, p.bufB + 8, 8);
	CHECK(got == 1000);

	w = FarPair::wr(IB_WR_ATOMIC_FETCH_AND_ADD, 5);
	w.wr.atomic.remote_addr = remote + 8;
	w.wr.atomic.rkey = p.mrB.rkey;
	w.wr.atomic.compare_add = 5;
	REQUIRE(p.a->postSend(p.qpA.qp_handle, w, { sge(p.bufA + 16, 8, p.mrA.lkey) }) == 0);
	p.run();
	c = p.a->poll(p.cqA);
	REQUIRE(c.size() == 1);
	CHECK(c[0].opcode == IB_WC_FETCH_ADD);
	memcpy(&got, p.bufA + 16, 8);
	CHECK(got == 1000);
	memcpy(&got, p.bufB + 8, 8);
	CHECK(got == 1005);
}

/* As in one daemon (test_verbs_data.cpp): writes land, reads go unanswered */
TEST_CASE("verbs across daemons: a responder whose process is gone", "[verbs][remote-cable]")
{
	FarPair p;
	REQUIRE(p.b->postRecv(p.qpB.qp_handle, 1, { sge(p.bufB, 64, p.mrB.lkey) }) == 0);
	p.ua.proc(p.b->tid).gone = true;
	REQUIRE(p.a->postSend(p.qpA.qp_handle, FarPair::wr(IB_WR_SEND, 1), { sge(p.bufA, 8, p.mrA.lkey) }) == 0);
	auto w = FarPair::wr(IB_WR_RDMA_WRITE, 2);
	w.wr.rdma.remote_addr = reinterpret_cast<uint64_t>(p.bufB);
	w.wr.rdma.rkey = p.mrB.rkey;
	REQUIRE(p.a->postSend(p.qpA.qp_handle, w, { sge(p.bufA, 8, p.mrA.lkey) }) == 0);
	p.run();
	auto c = p.a->poll(p.cqA);
	REQUIRE(c.size() == 2);
	CHECK(c[0].status == IB_WC_SUCCESS);
	CHECK(c[1].status == IB_WC_SUCCESS);

	w = FarPair::wr(IB_WR_RDMA_READ, 3);
	w.wr.rdma.remote_addr = reinterpret_cast<uint64_t>(p.bufB);
	w.wr.rdma.rkey = p.mrB.rkey;
	REQUIRE(p.a->postSend(p.qpA.qp_handle, w, { sge(p.bufA, 8, p.mrA.lkey) }) == 0);
	p.run();
	CHECK(p.a->poll(p.cqA).empty());
	for (int i = 0; i < 8; i++) /* timeout 14: 67 ms per try, eight tries */
		p.advance(68);
	c = p.a->poll(p.cqA);
	REQUIRE(c.size() == 1);
	CHECK(c[0].status == IB_WC_RETRY_EXC_ERR);
}

TEST_CASE("verbs across daemons: a remote access error NAKs, both QPs to Error", "[verbs][remote-cable]")
{
	FarPair p(IB_QPT_RC, IB_ACCESS_LOCAL_WRITE); /* B's buffer: no remote access */
	auto w = FarPair::wr(IB_WR_RDMA_WRITE, 1);
	w.wr.rdma.remote_addr = reinterpret_cast<uint64_t>(p.bufB);
	w.wr.rdma.rkey = p.mrB.rkey;
	REQUIRE(p.a->postSend(p.qpA.qp_handle, w, { sge(p.bufA, 64, p.mrA.lkey) }) == 0);
	p.run();
	auto c = p.a->poll(p.cqA);
	REQUIRE(c.size() == 1);
	CHECK(c[0].status == IB_WC_REM_ACCESS_ERR);
	/* B's QP is in Error: a receive posted now flushes */
	REQUIRE(p.b->postRecv(p.qpB.qp_handle, 9, { sge(p.bufB, 64, p.mrB.lkey) }) == 0);
	p.run();
	auto r = p.b->poll(p.cqB);
	REQUIRE(r.size() == 1);
	CHECK(r[0].status == IB_WC_WR_FLUSH_ERR);
}

TEST_CASE("verbs across daemons: RNR NAK, then the receive comes", "[verbs][remote-cable]")
{
	FarPair p; /* rnr_retry 7 */
	REQUIRE(p.a->postSend(p.qpA.qp_handle, FarPair::wr(IB_WR_SEND, 1), { sge(p.bufA, 8, p.mrA.lkey) }) == 0);
	p.run();
	CHECK(p.a->poll(p.cqA).empty()); /* RNR NAK: waits for its timer */
	REQUIRE(p.b->postRecv(p.qpB.qp_handle, 2, { sge(p.bufB, 64, p.mrB.lkey) }) == 0);
	/* min_rnr_timer 12 is 0.64 ms, but retrying for ever (rnr_retry 7)
	 * waits 100 ms at least, as on one daemon */
	p.advance(50);
	CHECK(p.a->poll(p.cqA).empty());
	p.advance(51);
	auto c = p.a->poll(p.cqA);
	REQUIRE(c.size() == 1);
	CHECK(c[0].status == IB_WC_SUCCESS);
	CHECK(p.b->poll(p.cqB).size() == 1);
}

TEST_CASE("verbs across daemons: a lost reply is retried, executed once", "[verbs][remote-cable]")
{
	FarPair p;
	REQUIRE(p.b->postRecv(p.qpB.qp_handle, 1, { sge(p.bufB, 64, p.mrB.lkey) }) == 0);
	REQUIRE(p.b->postRecv(p.qpB.qp_handle, 2, { sge(p.bufB, 64, p.mrB.lkey) }) == 0);
	p.net.toA.cut = true; /* replies from b are lost */
	REQUIRE(p.a->postSend(p.qpA.qp_handle, FarPair::wr(IB_WR_SEND, 1), { sge(p.bufA, 8, p.mrA.lkey) }) == 0);
	p.run();
	CHECK(p.b->poll(p.cqB).size() == 1); /* executed */
	CHECK(p.a->poll(p.cqA).empty());
	p.net.toA.cut = false;
	p.advance(68); /* timeout 14: 67 ms; the retry is a duplicate */
	auto c = p.a->poll(p.cqA);
	REQUIRE(c.size() == 1);
	CHECK(c[0].status == IB_WC_SUCCESS);
	CHECK(p.b->poll(p.cqB).empty()); /* not executed twice */

	/* the other daemon gone for good: RETRY_EXC_ERR after retry_cnt */
	p.net.disconnect();
	REQUIRE(p.a->postSend(p.qpA.qp_handle, FarPair::wr(IB_WR_SEND, 2), { sge(p.bufA, 8, p.mrA.lkey) }) == 0);
	for (int i = 0; i < 8; i++)
		p.advance(68);
	c = p.a->poll(p.cqA);
	REQUIRE(c.size() == 1);
	CHECK(c[0].status == IB_WC_RETRY_EXC_ERR);
}

TEST_CASE("verbs across daemons: the ACK timer runs from when the packets have left", "[verbs][remote-cable]")
{
	FarPair p;
	p.net.toB.cut = true; /* nothing arrives, so nothing comes back */
	p.net.toB.hold = true; /* and the packets are slow to leave */
	REQUIRE(p.a->postSend(p.qpA.qp_handle, FarPair::wr(IB_WR_SEND, 1), { sge(p.bufA, 8, p.mrA.lkey) }) == 0);
	for (int i = 0; i < 10; i++) /* more than retry_cnt timeouts: no retry yet */
		p.advance(68);
	CHECK(p.a->poll(p.cqA).empty());
	REQUIRE(p.net.toB.held.size() == 1);
	p.net.toB.hold = false;
	p.net.toB.held.front()(true); /* out now: the timer starts */
	p.run();
	for (int i = 0; i < 7; i++)
		p.advance(68);
	CHECK(p.a->poll(p.cqA).empty());
	p.advance(68);
	auto c = p.a->poll(p.cqA);
	REQUIRE(c.size() == 1);
	CHECK(c[0].status == IB_WC_RETRY_EXC_ERR);
}

TEST_CASE("verbs across daemons: UD SEND", "[verbs][remote-cable]")
{
	FarPair p(IB_QPT_UD);
	uint32_t ah = 0;
	REQUIRE(p.a->createAh(p.pdA, p.lid2(), ah) == 0);
	REQUIRE(p.b->postRecv(p.qpB.qp_handle, 3, { sge(p.bufB, 4096, p.mrB.lkey) }) == 0);
	memset(p.bufA, 0x5a, 100);
	auto w = FarPair::wr(IB_WR_SEND, 7);
	w.wr.ud.ah = ah;
	w.wr.ud.remote_qpn = p.qpB.qpn;
	w.wr.ud.remote_qkey = 0x11111111;
	REQUIRE(p.a->postSend(p.qpA.qp_handle, w, { sge(p.bufA, 100, p.mrA.lkey) }) == 0);
	auto c = p.a->poll(p.cqA); /* unreliable: done when sent */
	REQUIRE(c.size() == 1);
	CHECK(c[0].status == IB_WC_SUCCESS);
	p.run();
	auto r = p.b->poll(p.cqB);
	REQUIRE(r.size() == 1);
	CHECK(r[0].status == IB_WC_SUCCESS);
	CHECK(r[0].byte_len == 140); /* the GRH's 40 bytes, and the message */
	CHECK(r[0].src_qp == p.qpA.qpn);
	CHECK(r[0].slid == p.lid1());
	CHECK(p.bufB[40] == 0x5a);
	CHECK(p.bufB[139] == 0x5a);

	/* a wrong Q_Key: dropped at b, counted there */
	auto &port2 = SplitSubnet::port(p.net.b, "H2", 1);
	const uint16_t before = port2.qkeyViolations;
	REQUIRE(p.b->postRecv(p.qpB.qp_handle, 4, { sge(p.bufB, 4096, p.mrB.lkey) }) == 0);
	w.wr.ud.remote_qkey = 0x22222222;
	REQUIRE(p.a->postSend(p.qpA.qp_handle, w, { sge(p.bufA, 100, p.mrA.lkey) }) == 0);
	p.run();
	CHECK(p.b->poll(p.cqB).empty());
	CHECK(port2.qkeyViolations == before + 1);
}

TEST_CASE("verbs across daemons: a multicast send reaches the other daemon's members once", "[verbs][remote-cable]")
{
	/* every switch forwards the group out of every port: the two cables
	 * between S1 (daemon a) and S2 (daemon b) make a loop that crosses
	 * the daemons, which must end with one copy per member */
	FarPair p(IB_QPT_UD);
	programMfts(p.net.a, kMlid);
	programMfts(p.net.b, kMlid);
	REQUIRE(attach(*p.b, p.qpB.qp_handle, kMgid, kMlid) == 0);
	for (uint64_t id = 1; id <= 3; id++)
		REQUIRE(p.b->postRecv(p.qpB.qp_handle, id, { sge(p.bufB + 128 * id, 40 + 64, p.mrB.lkey) }) == 0);
	uint32_t ah = 0;
	REQUIRE(createMcastAh(*p.a, p.pdA, ah) == 0);
	memset(p.bufA, 0x6b, 64);
	auto w = FarPair::wr(IB_WR_SEND, 9);
	w.wr.ud.ah = ah;
	w.wr.ud.remote_qpn = kMulticastQpn;
	w.wr.ud.remote_qkey = 0x11111111;
	auto &s2In = SplitSubnet::port(p.net.b, "S2", 7);
	const uint64_t before = s2In.counters.extMulticastRcvPkts +
		SplitSubnet::port(p.net.b, "S2", 8).counters.extMulticastRcvPkts;
	REQUIRE(p.a->postSend(p.qpA.qp_handle, w, { sge(p.bufA, 64, p.mrA.lkey) }) == 0);
	p.run();

	auto rb = p.b->poll(p.cqB);
	REQUIRE(rb.size() == 1);
	CHECK(rb[0].wr_id == 1);
	CHECK(rb[0].status == IB_WC_SUCCESS);
	CHECK(rb[0].byte_len == 40 + 64);
	CHECK(rb[0].src_qp == p.qpA.qpn);
	CHECK(rb[0].slid == p.lid1());
	CHECK((rb[0].wc_flags & IB_WC_GRH) != 0);
	CHECK(memcmp(p.bufB + 128 + 24, kMgid, 16) == 0); /* the GRH's destination is the group */
	CHECK(p.bufB[128 + 40] == 0x6b);
	CHECK(p.bufB[128 + 103] == 0x6b);
	auto sa = p.a->poll(p.cqA);
	REQUIRE(sa.size() == 1);
	CHECK(sa[0].opcode == IB_WC_SEND);
	/* S1 sent a copy down each cable to S2; S2 relayed the first only */
	const uint64_t after = s2In.counters.extMulticastRcvPkts +
		SplitSubnet::port(p.net.b, "S2", 8).counters.extMulticastRcvPkts;
	CHECK(after - before == 2);

	/* a multicast message of more than one packet is no HCA's: the far
	 * daemon drops it before copying it anywhere */
	REQUIRE(p.net.toB.lastData.size() == 1);
	REQUIRE(p.net.toB.lastFrom);
	for (uint64_t id = 4; id <= 5; id++)
		REQUIRE(p.b->postRecv(p.qpB.qp_handle, id, { sge(p.bufB + 128 * id, 40 + 64, p.mrB.lkey) }) == 0);
	const uint64_t dropped = p.net.b.droppedPackets();
	fabric::DataPackets twice{ p.net.toB.lastData[0], p.net.toB.lastData[0] };
	p.net.b.arriveDataFromFar(*p.net.toB.lastFrom, twice, 1);
	p.run();
	CHECK(p.b->poll(p.cqB).empty());
	CHECK(p.net.b.droppedPackets() - dropped == 2);
	/* the same message again, as a loop would bring it: S2 relayed it
	 * already and does not again */
	p.net.b.arriveDataFromFar(*p.net.toB.lastFrom, { p.net.toB.lastData[0] }, 1);
	p.run();
	CHECK(p.b->poll(p.cqB).empty());
	/* unless a daemon connected anew since: one that restarted sends the
	 * same bytes again (QPN and PSN), and they are no loop's */
	p.net.b.forgetRelayed();
	p.net.b.arriveDataFromFar(*p.net.toB.lastFrom, { p.net.toB.lastData[0] }, 1);
	p.run();
	CHECK(p.b->poll(p.cqB).size() == 1);

	/* a member that left hears nothing more */
	REQUIRE(attach(*p.b, p.qpB.qp_handle, kMgid, kMlid, true) == 0);
	REQUIRE(p.a->postSend(p.qpA.qp_handle, w, { sge(p.bufA, 64, p.mrA.lkey) }) == 0);
	p.run();
	CHECK(p.b->poll(p.cqB).empty());
}
