// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// The data path: each opcode's data movement and completions through the
// fabric, and the error completions (IBA 9.7, 10.8, 11.6).
#include "tests/unit/verbs_helpers.h"

#include <catch2/catch.hpp>

#include <cstring>
#include <numeric>

using namespace ibemu::test;

TEST_CASE("verbs RC: SEND with immediate crosses both switches", "[verbs]")
{
	Pair p;
	std::iota(p.bufA, p.bufA + 3000, 0);
	REQUIRE(p.b.postRecv(p.qpB.qp_handle, 77, { sge(p.bufB, 4096, p.mrB.lkey) }) == 0);
	uint64_t rcvBefore = p.p2->counters.extRcvPkts;
	Port *sw1Out = p.p1->peer;
	uint64_t swBefore = sw1Out->counters.extRcvPkts;

	auto w = p.wr(IB_WR_SEND_WITH_IMM, 5);
	w.ex = 0x12345678;
	REQUIRE(p.a.postSend(p.qpA.qp_handle, w, { sge(p.bufA, 3000, p.mrA.lkey) }) == 0);

	auto sa = p.a.poll(p.cqA);
	REQUIRE(sa.size() == 1);
	CHECK(sa[0].wr_id == 5);
	CHECK(sa[0].status == IB_WC_SUCCESS);
	CHECK(sa[0].opcode == IB_WC_SEND);
	CHECK(sa[0].qp_num == p.qpA.qpn);
	auto rb = p.b.poll(p.cqB);
	REQUIRE(rb.size() == 1);
	CHECK(rb[0].wr_id == 77);
	CHECK(rb[0].status == IB_WC_SUCCESS);
	CHECK(rb[0].opcode == IB_WC_RECV);
	CHECK(rb[0].byte_len == 3000);
	CHECK(rb[0].wc_flags == IB_WC_WITH_IMM);
	CHECK(rb[0].ex == 0x12345678);
	CHECK(rb[0].src_qp == p.qpA.qpn);
	CHECK(rb[0].qp_num == p.qpB.qpn);
	CHECK(rb[0].slid == p.lid1());
	CHECK(memcmp(p.bufA, p.bufB, 3000) == 0);
	/* 3000 bytes at MTU 1024: 3 packets through sw1 and into host2 */
	CHECK(sw1Out->counters.extRcvPkts - swBefore == 3);
	CHECK(p.p2->counters.extRcvPkts - rcvBefore == 3);

	/* unsignaled: no completion at the requester, one at the responder */
	REQUIRE(p.b.postRecv(p.qpB.qp_handle, 78, { sge(p.bufB, 4096, p.mrB.lkey) }) == 0);
	REQUIRE(p.a.postSend(p.qpA.qp_handle, p.wr(IB_WR_SEND, 6, 0), { sge(p.bufA, 10, p.mrA.lkey) }) == 0);
	CHECK(p.a.poll(p.cqA).empty());
	CHECK(p.b.poll(p.cqB).size() == 1);
}

TEST_CASE("verbs RC: RDMA WRITE, WRITE with immediate, READ, atomics", "[verbs]")
{
	Pair p;
	uint64_t remote = reinterpret_cast<uint64_t>(p.bufB);
	memset(p.bufA, 0xa5, 2048);
	auto w = p.wr(IB_WR_RDMA_WRITE, 1);
	w.wr.rdma.remote_addr = remote + 100;
	w.wr.rdma.rkey = p.mrB.rkey;
	REQUIRE(p.a.postSend(p.qpA.qp_handle, w, { sge(p.bufA, 2048, p.mrA.lkey) }) == 0);
	auto c = p.a.poll(p.cqA);
	REQUIRE(c.size() == 1);
	CHECK(c[0].status == IB_WC_SUCCESS);
	CHECK(c[0].opcode == IB_WC_RDMA_WRITE);
	CHECK(p.bufB[100] == 0xa5);
	CHECK(p.bufB[2147] == 0xa5);
	CHECK(p.bufB[2148] == 0);
	CHECK(p.b.poll(p.cqB).empty()); /* a plain write consumes no receive */

	/* with immediate: consumes a receive, byte_len is the write's */
	REQUIRE(p.b.postRecv(p.qpB.qp_handle, 9, {}) == 0);
	w = p.wr(IB_WR_RDMA_WRITE_WITH_IMM, 2);
	w.ex = 0xabcd;
	w.wr.rdma.remote_addr = remote;
	w.wr.rdma.rkey = p.mrB.rkey;
	REQUIRE(p.a.postSend(p.qpA.qp_handle, w, { sge(p.bufA, 16, p.mrA.lkey) }) == 0);
	auto r = p.b.poll(p.cqB);
	REQUIRE(r.size() == 1);
	CHECK(r[0].opcode == IB_WC_RECV_RDMA_WITH_IMM);
	CHECK(r[0].byte_len == 16);
	CHECK(r[0].ex == 0xabcd);
	p.a.poll(p.cqA);

	/* READ */
	for (int i = 0; i < 64; i++)
		p.bufB[4096 + i] = static_cast<uint8_t>(i * 3);
	w = p.wr(IB_WR_RDMA_READ, 3);
	w.wr.rdma.remote_addr = remote + 4096;
	w.wr.rdma.rkey = p.mrB.rkey;
	REQUIRE(p.a.postSend(p.qpA.qp_handle, w, { sge(p.bufA + 4096, 64, p.mrA.lkey) }) == 0);
	c = p.a.poll(p.cqA);
	REQUIRE(c.size() == 1);
	CHECK(c[0].status == IB_WC_SUCCESS);
	CHECK(c[0].opcode == IB_WC_RDMA_READ);
	CHECK(c[0].byte_len == 64);
	CHECK(memcmp(p.bufA + 4096, p.bufB + 4096, 64) == 0);

	/* compare-and-swap: hit, then miss */
	uint64_t v = 41;
	memcpy(p.bufB + 8, &v, 8);
	w = p.wr(IB_WR_ATOMIC_CMP_AND_SWP, 4);
	w.wr.atomic.remote_addr = remote + 8;
	w.wr.atomic.rkey = p.mrB.rkey;
	w.wr.atomic.compare_add = 41;
	w.wr.atomic.swap = 1000;
	REQUIRE(p.a.postSend(p.qpA.qp_handle, w, { sge(p.bufA + 8, 8, p.mrA.lkey) }) == 0);
	c = p.a.poll(p.cqA);
	REQUIRE(c.size() == 1);
	CHECK(c[0].opcode == IB_WC_COMP_SWAP);
	uint64_t got;
	memcpy(&got, p.bufA + 8, 8);
	CHECK(got == 41);
	memcpy(&got, p.bufB + 8, 8);
	CHECK(got == 1000);
	REQUIRE(p.a.postSend(p.qpA.qp_handle, w, { sge(p.bufA + 8, 8, p.mrA.lkey) }) == 0);
	p.a.poll(p.cqA);
	memcpy(&got, p.bufA + 8, 8);
	CHECK(got == 1000); /* the original comes back */
	memcpy(&got, p.bufB + 8, 8);
	CHECK(got == 1000); /* unchanged: 1000 != 41 */

	/* fetch-and-add */
	w = p.wr(IB_WR_ATOMIC_FETCH_AND_ADD, 5);
	w.wr.atomic.remote_addr = remote + 8;
	w.wr.atomic.rkey = p.mrB.rkey;
	w.wr.atomic.compare_add = 5;
	REQUIRE(p.a.postSend(p.qpA.qp_handle, w, { sge(p.bufA + 16, 8, p.mrA.lkey) }) == 0);
	c = p.a.poll(p.cqA);
	REQUIRE(c.size() == 1);
	CHECK(c[0].opcode == IB_WC_FETCH_ADD);
	memcpy(&got, p.bufA + 16, 8);
	CHECK(got == 1000);
	memcpy(&got, p.bufB + 8, 8);
	CHECK(got == 1005);
}

TEST_CASE("verbs RC: remote access errors NAK and move both QPs to Error", "[verbs]")
{
	Pair p(IB_QPT_RC, IB_ACCESS_LOCAL_WRITE); /* B's MR allows no remote access */
	REQUIRE(p.b.postRecv(p.qpB.qp_handle, 1, { sge(p.bufB, 64, p.mrB.lkey) }) == 0);
	auto w = p.wr(IB_WR_RDMA_WRITE, 7);
	w.wr.rdma.remote_addr = reinterpret_cast<uint64_t>(p.bufB);
	w.wr.rdma.rkey = p.mrB.rkey;
	REQUIRE(p.a.postSend(p.qpA.qp_handle, w, { sge(p.bufA, 8, p.mrA.lkey) }) == 0);
	auto c = p.a.poll(p.cqA);
	REQUIRE(c.size() == 1);
	CHECK(c[0].status == IB_WC_REM_ACCESS_ERR);
	/* the responder: its receive flushed, an async event for its QP */
	auto r = p.b.poll(p.cqB);
	REQUIRE(r.size() == 1);
	CHECK(r[0].status == IB_WC_WR_FLUSH_ERR);
	uint8_t ev[16];
	REQUIRE(p.b.file->read(ev, 16) == 16);
	ib_uverbs_async_event_desc d;
	memcpy(&d, ev, 16);
	CHECK(d.event_type == IB_EVENT_QP_ACCESS_ERR);
	/* A is in Error: new work is flushed */
	REQUIRE(p.a.postSend(p.qpA.qp_handle, p.wr(IB_WR_SEND, 8, 0), {}) == 0);
	c = p.a.poll(p.cqA);
	REQUIRE(c.size() == 1);
	CHECK(c[0].status == IB_WC_WR_FLUSH_ERR);
	CHECK(c[0].wr_id == 8);
	/* an rkey that does not exist */
	Pair q;
	w.wr.rdma.rkey = q.mrB.rkey + 1;
	w.wr.rdma.remote_addr = reinterpret_cast<uint64_t>(q.bufB);
	REQUIRE(q.a.postSend(q.qpA.qp_handle, w, { sge(q.bufA, 8, q.mrA.lkey) }) == 0);
	CHECK(q.a.poll(q.cqA).at(0).status == IB_WC_REM_ACCESS_ERR);
	/* out of bounds */
	Pair o;
	w.wr.rdma.rkey = o.mrB.rkey;
	w.wr.rdma.remote_addr = reinterpret_cast<uint64_t>(o.bufB) + 8190;
	REQUIRE(o.a.postSend(o.qpA.qp_handle, w, { sge(o.bufA, 8, o.mrA.lkey) }) == 0);
	CHECK(o.a.poll(o.cqA).at(0).status == IB_WC_REM_ACCESS_ERR);
}

TEST_CASE("verbs: local protection, length errors, flushes", "[verbs]")
{
	Pair p;
	/* a bad lkey: LOC_PROT_ERR, the QP goes to Error, the rest is flushed */
	REQUIRE(p.a.postSend(p.qpA.qp_handle, p.wr(IB_WR_SEND, 1), { sge(p.bufA, 8, p.mrA.lkey ^ 0x100) }) == 0);
	auto c = p.a.poll(p.cqA);
	REQUIRE(c.size() == 1);
	CHECK(c[0].status == IB_WC_LOC_PROT_ERR);

	/* a receive buffer too small: responder LOC_LEN_ERR, requester REM_INV_REQ_ERR */
	Pair q;
	REQUIRE(q.b.postRecv(q.qpB.qp_handle, 3, { sge(q.bufB, 16, q.mrB.lkey) }) == 0);
	REQUIRE(q.b.postRecv(q.qpB.qp_handle, 4, { sge(q.bufB, 16, q.mrB.lkey) }) == 0);
	REQUIRE(q.a.postSend(q.qpA.qp_handle, q.wr(IB_WR_SEND, 2), { sge(q.bufA, 100, q.mrA.lkey) }) == 0);
	c = q.a.poll(q.cqA);
	REQUIRE(c.size() == 1);
	CHECK(c[0].status == IB_WC_REM_INV_REQ_ERR);
	auto r = q.b.poll(q.cqB);
	REQUIRE(r.size() == 2);
	CHECK(r[0].status == IB_WC_LOC_LEN_ERR);
	CHECK(r[0].wr_id == 3);
	CHECK(r[1].status == IB_WC_WR_FLUSH_ERR); /* the other receive */
	CHECK(r[1].wr_id == 4);
	/* post_recv in Error completes at once as flushed */
	REQUIRE(q.b.postRecv(q.qpB.qp_handle, 5, { sge(q.bufB, 16, q.mrB.lkey) }) == 0);
	CHECK(q.b.poll(q.cqB).at(0).status == IB_WC_WR_FLUSH_ERR);
}

TEST_CASE("verbs RC: RNR NAKs wait for a receive, or give up after rnr_retry", "[verbs]")
{
	Pair p; /* rnr_retry 7: for ever */
	REQUIRE(p.a.postSend(p.qpA.qp_handle, p.wr(IB_WR_SEND, 1), { sge(p.bufA, 8, p.mrA.lkey) }) == 0);
	p.advance(1000);
	CHECK(p.a.poll(p.cqA).empty()); /* still waiting */
	REQUIRE(p.b.postRecv(p.qpB.qp_handle, 2, { sge(p.bufB, 64, p.mrB.lkey) }) == 0);
	p.poll(); /* the waiting requester retries in a turn of its own */
	auto c = p.a.poll(p.cqA);
	REQUIRE(c.size() == 1);
	CHECK(c[0].status == IB_WC_SUCCESS);

	Pair q;
	/* rebuild A with rnr_retry 2 */
	REQUIRE(q.a.destroy(CMD_DESTROY_QP, q.qpA.qp_handle) == 0);
	REQUIRE(q.a.createQp(q.pdA, q.cqA, q.cqA, IB_QPT_RC, q.qpA) == 0);
	q.a.connect(q.qpA.qp_handle, IB_QPT_RC, q.lid2(), q.qpB.qpn, 7, 2);
	/* B still points at the old QPN: only A's requests matter here */
	REQUIRE(q.a.postSend(q.qpA.qp_handle, q.wr(IB_WR_SEND, 1), { sge(q.bufA, 8, q.mrA.lkey) }) == 0);
	CHECK(q.a.poll(q.cqA).empty());
	q.advance(1); /* B's min_rnr_timer 12: 0.64 ms */
	CHECK(q.a.poll(q.cqA).empty());
	q.advance(1);
	c = q.a.poll(q.cqA);
	REQUIRE(c.size() == 1);
	CHECK(c[0].status == IB_WC_RNR_RETRY_EXC_ERR);
}

TEST_CASE("verbs RC: a down link or a wrong LFT ends in RETRY_EXC_ERR", "[verbs]")
{
	Pair p;
	REQUIRE(p.b.postRecv(p.qpB.qp_handle, 1, { sge(p.bufB, 64, p.mrB.lkey) }) == 0);
	/* the port of sw1 whose LFT entry carries host1 -> host2 */
	Node *sw1 = p.p1->peer->node;
	Port *sw1Out = &sw1->port(sw1->sw->lftEntry(p.lid2()));
	p.subnet.setDisabled(*sw1Out, true);
	REQUIRE(p.a.postSend(p.qpA.qp_handle, p.wr(IB_WR_SEND, 1), { sge(p.bufA, 8, p.mrA.lkey) }) == 0);
	/* timeout 14: 67 ms per try, retry_cnt 7: eight tries */
	for (int i = 0; i < 7; i++)
		p.advance(68);
	CHECK(p.a.poll(p.cqA).empty());
	p.advance(68);
	auto c = p.a.poll(p.cqA);
	REQUIRE(c.size() == 1);
	CHECK(c[0].status == IB_WC_RETRY_EXC_ERR);
	CHECK(p.b.poll(p.cqB).empty());

	/* the link comes back within the retries: delivered once */
	Pair q;
	REQUIRE(q.b.postRecv(q.qpB.qp_handle, 1, { sge(q.bufB, 64, q.mrB.lkey) }) == 0);
	REQUIRE(q.b.postRecv(q.qpB.qp_handle, 2, { sge(q.bufB, 64, q.mrB.lkey) }) == 0);
	/* a wrong LFT entry on sw1 for host2's LID */
	Node *qsw1 = q.p1->peer->node;
	uint8_t saved = qsw1->sw->lft[q.lid2()];
	qsw1->sw->lft[q.lid2()] = 0xff;
	REQUIRE(q.a.postSend(q.qpA.qp_handle, q.wr(IB_WR_SEND, 1), { sge(q.bufA, 8, q.mrA.lkey) }) == 0);
	q.advance(68);
	q.advance(68);
	CHECK(q.a.poll(q.cqA).empty());
	qsw1->sw->lft[q.lid2()] = saved;
	q.advance(68);
	auto d = q.a.poll(q.cqA);
	REQUIRE(d.size() == 1);
	CHECK(d[0].status == IB_WC_SUCCESS);
	CHECK(q.b.poll(q.cqB).size() == 1);
}

/* A process killed mid-transfer loses its address space before its files
 * (do_exit: exit_mm, then exit_files): its QPs and MRs live on a moment.
 * A hardware HCA writes into the still-pinned pages then, and the peer's
 * SEND or RDMA WRITE succeeds; a READ or atomic ibemu cannot serve, so
 * it goes unanswered and the requester retries until it gives up. */
TEST_CASE("verbs RC: a responder whose process is gone takes writes, answers no reads", "[verbs]")
{
	Pair p;
	REQUIRE(p.b.postRecv(p.qpB.qp_handle, 1, { sge(p.bufB, 64, p.mrB.lkey) }) == 0);
	p.ua.proc(p.b.tid).gone = true;
	REQUIRE(p.a.postSend(p.qpA.qp_handle, p.wr(IB_WR_SEND, 1), { sge(p.bufA, 8, p.mrA.lkey) }) == 0);
	auto w = p.wr(IB_WR_RDMA_WRITE, 2);
	w.wr.rdma.remote_addr = reinterpret_cast<uint64_t>(p.bufB);
	w.wr.rdma.rkey = p.mrB.rkey;
	REQUIRE(p.a.postSend(p.qpA.qp_handle, w, { sge(p.bufA, 8, p.mrA.lkey) }) == 0);
	auto c = p.a.poll(p.cqA);
	REQUIRE(c.size() == 2);
	CHECK(c[0].status == IB_WC_SUCCESS);
	CHECK(c[1].status == IB_WC_SUCCESS);
	auto r = p.b.poll(p.cqB);
	REQUIRE(r.size() == 1); /* the receive was used, for nobody */
	CHECK(r[0].status == IB_WC_SUCCESS);

	w = p.wr(IB_WR_RDMA_READ, 3);
	w.wr.rdma.remote_addr = reinterpret_cast<uint64_t>(p.bufB);
	w.wr.rdma.rkey = p.mrB.rkey;
	REQUIRE(p.a.postSend(p.qpA.qp_handle, w, { sge(p.bufA, 8, p.mrA.lkey) }) == 0);
	for (int i = 0; i < 7; i++) /* timeout 14: 67 ms per try, eight tries */
		p.advance(68);
	CHECK(p.a.poll(p.cqA).empty());
	p.advance(68);
	c = p.a.poll(p.cqA);
	REQUIRE(c.size() == 1);
	CHECK(c[0].status == IB_WC_RETRY_EXC_ERR);

	Pair q; /* an atomic likewise */
	q.ua.proc(q.b.tid).gone = true;
	w = q.wr(IB_WR_ATOMIC_FETCH_AND_ADD, 4);
	w.wr.atomic.remote_addr = reinterpret_cast<uint64_t>(q.bufB);
	w.wr.atomic.rkey = q.mrB.rkey;
	w.wr.atomic.compare_add = 1;
	REQUIRE(q.a.postSend(q.qpA.qp_handle, w, { sge(q.bufA, 8, q.mrA.lkey) }) == 0);
	q.advance(68);
	CHECK(q.a.poll(q.cqA).empty());
	q.ua.proc(q.b.tid).gone = false; /* (not possible in life: to see that it was only waiting) */
	q.advance(68);
	c = q.a.poll(q.cqA);
	REQUIRE(c.size() == 1);
	CHECK(c[0].status == IB_WC_SUCCESS);
	CHECK(q.bufB[0] == 1);
}

/* The request arrives and executes, its ACK (or atomic response) is lost
 * on the way back: the requester retries after its ACK timeout and the
 * responder answers the duplicate without executing it again. */
TEST_CASE("verbs RC: a retry after a lost ACK is not executed twice", "[verbs]")
{
	Pair p;
	/* host2 -> host1 leaves sw2 by its LFT entry for host1's LID: without
	 * it requests still arrive, answers are lost */
	Node *sw2 = p.p2->peer->node;
	const uint8_t home = sw2->sw->lft[p.lid1()];
	auto loseAnswers = [&](bool lose) { sw2->sw->lft[p.lid1()] = lose ? 0xff : home; };
	auto tries = [&] { return p.p2->counters.extRcvPkts; }; /* requests reaching host2 */
	const uint64_t remote = reinterpret_cast<uint64_t>(p.bufB);
	uint64_t v = 100, got = 0;
	memcpy(p.bufB + 8, &v, 8);

	/* fetch-and-add: twice would leave 110 and answer 105 */
	auto w = p.wr(IB_WR_ATOMIC_FETCH_AND_ADD, 1);
	w.wr.atomic.remote_addr = remote + 8;
	w.wr.atomic.rkey = p.mrB.rkey;
	w.wr.atomic.compare_add = 5;
	uint64_t before = tries();
	loseAnswers(true);
	REQUIRE(p.a.postSend(p.qpA.qp_handle, w, { sge(p.bufA + 16, 8, p.mrA.lkey) }) == 0);
	CHECK(p.a.poll(p.cqA).empty());
	memcpy(&got, p.bufB + 8, 8);
	CHECK(got == 105); /* it did execute */
	loseAnswers(false);
	p.advance(68); /* timeout 14: 67 ms */
	auto c = p.a.poll(p.cqA);
	REQUIRE(c.size() == 1);
	CHECK(c[0].status == IB_WC_SUCCESS);
	CHECK(c[0].opcode == IB_WC_FETCH_ADD);
	CHECK(tries() - before == 2);
	memcpy(&got, p.bufA + 16, 8);
	CHECK(got == 100); /* the original value, from the first execution */
	memcpy(&got, p.bufB + 8, 8);
	CHECK(got == 105);

	/* compare-and-swap: twice would answer 7, the value it swapped in */
	w = p.wr(IB_WR_ATOMIC_CMP_AND_SWP, 2);
	w.wr.atomic.remote_addr = remote + 8;
	w.wr.atomic.rkey = p.mrB.rkey;
	w.wr.atomic.compare_add = 105;
	w.wr.atomic.swap = 7;
	before = tries();
	loseAnswers(true);
	REQUIRE(p.a.postSend(p.qpA.qp_handle, w, { sge(p.bufA + 24, 8, p.mrA.lkey) }) == 0);
	CHECK(p.a.poll(p.cqA).empty());
	loseAnswers(false);
	p.advance(68);
	c = p.a.poll(p.cqA);
	REQUIRE(c.size() == 1);
	CHECK(c[0].status == IB_WC_SUCCESS);
	CHECK(c[0].opcode == IB_WC_COMP_SWAP);
	CHECK(tries() - before == 2);
	memcpy(&got, p.bufA + 24, 8);
	CHECK(got == 105);
	memcpy(&got, p.bufB + 8, 8);
	CHECK(got == 7);

	/* SEND: one receive consumed, one completion at the responder */
	REQUIRE(p.b.postRecv(p.qpB.qp_handle, 11, { sge(p.bufB + 1024, 64, p.mrB.lkey) }) == 0);
	REQUIRE(p.b.postRecv(p.qpB.qp_handle, 12, { sge(p.bufB + 2048, 64, p.mrB.lkey) }) == 0);
	memset(p.bufA, 0x3c, 64);
	before = tries();
	loseAnswers(true);
	REQUIRE(p.a.postSend(p.qpA.qp_handle, p.wr(IB_WR_SEND, 3), { sge(p.bufA, 64, p.mrA.lkey) }) == 0);
	CHECK(p.a.poll(p.cqA).empty());
	loseAnswers(false);
	p.advance(68);
	c = p.a.poll(p.cqA);
	REQUIRE(c.size() == 1);
	CHECK(c[0].status == IB_WC_SUCCESS);
	CHECK(c[0].wr_id == 3);
	CHECK(tries() - before == 2);
	auto r = p.b.poll(p.cqB);
	REQUIRE(r.size() == 1);
	CHECK(r[0].wr_id == 11);
	CHECK(r[0].status == IB_WC_SUCCESS);
	CHECK(r[0].byte_len == 64);
	CHECK(p.bufB[1024 + 63] == 0x3c);
	/* the second receive is still there for the next message */
	REQUIRE(p.a.postSend(p.qpA.qp_handle, p.wr(IB_WR_SEND, 4), { sge(p.bufA, 8, p.mrA.lkey) }) == 0);
	r = p.b.poll(p.cqB);
	REQUIRE(r.size() == 1);
	CHECK(r[0].wr_id == 12);
}

TEST_CASE("verbs UC and UD: losses are silent; UD carries the GRH area and Q_Keys", "[verbs]")
{
	Pair uc(IB_QPT_UC);
	Node *sw1 = uc.p1->peer->node;
	uint8_t saved = sw1->sw->lft[uc.lid2()];
	sw1->sw->lft[uc.lid2()] = 0xff;
	REQUIRE(uc.b.postRecv(uc.qpB.qp_handle, 1, { sge(uc.bufB, 64, uc.mrB.lkey) }) == 0);
	REQUIRE(uc.a.postSend(uc.qpA.qp_handle, uc.wr(IB_WR_SEND, 1), { sge(uc.bufA, 8, uc.mrA.lkey) }) == 0);
	CHECK(uc.a.poll(uc.cqA).at(0).status == IB_WC_SUCCESS); /* nobody tells UC */
	CHECK(uc.b.poll(uc.cqB).empty());
	sw1->sw->lft[uc.lid2()] = saved;
	REQUIRE(uc.a.postSend(uc.qpA.qp_handle, uc.wr(IB_WR_SEND, 2), { sge(uc.bufA, 8, uc.mrA.lkey) }) == 0);
	CHECK(uc.b.poll(uc.cqB).size() == 1);
	/* UC has no READ */
	uint32_t bad = 0;
	CHECK(uc.a.postSend(uc.qpA.qp_handle, uc.wr(IB_WR_RDMA_READ, 3), {}, &bad) == -EINVAL);
	CHECK(bad == 1);

	Pair ud(IB_QPT_UD);
	uint32_t ah;
	REQUIRE(ud.a.createAh(ud.pdA, ud.lid2(), ah) == 0);
	memset(ud.bufA, 0x5a, 100);
	REQUIRE(ud.b.postRecv(ud.qpB.qp_handle, 1, { sge(ud.bufB, 40 + 100, ud.mrB.lkey) }) == 0);
	auto w = ud.wr(IB_WR_SEND, 4);
	w.wr.ud.ah = ah;
	w.wr.ud.remote_qpn = ud.qpB.qpn;
	w.wr.ud.remote_qkey = 0x11111111;
	REQUIRE(ud.a.postSend(ud.qpA.qp_handle, w, { sge(ud.bufA, 100, ud.mrA.lkey) }) == 0);
	auto r = ud.b.poll(ud.cqB);
	REQUIRE(r.size() == 1);
	CHECK(r[0].byte_len == 140);
	CHECK(r[0].src_qp == ud.qpA.qpn);
	CHECK(r[0].wc_flags == 0);
	CHECK(ud.bufB[40] == 0x5a);
	CHECK(ud.bufB[139] == 0x5a);
	CHECK(ud.bufB[39] == 0); /* no GRH: the area is left alone */

	/* wrong Q_Key: dropped and counted */
	uint16_t before = ud.p2->qkeyViolations;
	REQUIRE(ud.b.postRecv(ud.qpB.qp_handle, 2, { sge(ud.bufB, 40 + 100, ud.mrB.lkey) }) == 0);
	w.wr.ud.remote_qkey = 0x22222222;
	REQUIRE(ud.a.postSend(ud.qpA.qp_handle, w, { sge(ud.bufA, 100, ud.mrA.lkey) }) == 0);
	CHECK(ud.b.poll(ud.cqB).empty());
	CHECK(ud.p2->qkeyViolations == before + 1);
	CHECK(ud.a.poll(ud.cqA).size() == 2); /* both sends completed */
	/* bigger than the MTU: local length error */
	w.wr.ud.remote_qkey = 0x11111111;
	REQUIRE(ud.a.postSend(ud.qpA.qp_handle, w, { sge(ud.bufA, 4096, ud.mrA.lkey), sge(ud.bufA, 1, ud.mrA.lkey) }) ==
		0);
	CHECK(ud.a.poll(ud.cqA).at(0).status == IB_WC_LOC_LEN_ERR);
	/* only SEND on UD */
	w.opcode = IB_WR_RDMA_WRITE;
	CHECK(ud.a.postSend(ud.qpA.qp_handle, w, {}) == -EINVAL);
}

TEST_CASE("verbs SRQ: QPs share one receive queue; the limit event fires once", "[verbs]")
{
	Pair p(IB_QPT_RC, kAll, -1); /* B's QPs come below */
	uint32_t srq;
	REQUIRE(p.b.createSrq(p.pdB, 8, srq, 2) == 0);
	ib_uverbs_create_qp_resp b1{}, b2{};
	REQUIRE(p.b.createQp(p.pdB, p.cqB, p.cqB, IB_QPT_RC, b1, int(srq)) == 0);
	REQUIRE(p.b.createQp(p.pdB, p.cqB, p.cqB, IB_QPT_RC, b2, int(srq)) == 0);
	ib_uverbs_create_qp_resp a2{};
	REQUIRE(p.a.createQp(p.pdA, p.cqA, p.cqA, IB_QPT_RC, a2) == 0);
	p.a.connect(p.qpA.qp_handle, IB_QPT_RC, p.lid2(), b1.qpn);
	p.a.connect(a2.qp_handle, IB_QPT_RC, p.lid2(), b2.qpn);
	p.b.connect(b1.qp_handle, IB_QPT_RC, p.lid1(), p.qpA.qpn);
	p.b.connect(b2.qp_handle, IB_QPT_RC, p.lid1(), a2.qpn);
	CHECK(p.b.postRecv(b1.qp_handle, 1, {}) == -EINVAL); /* a QP with an SRQ has no RQ */
	for (uint64_t id = 10; id < 13; id++)
		REQUIRE(p.b.postRecv(srq, id, { sge(p.bufB + (id - 10) * 64, 64, p.mrB.lkey) }, true) == 0);
	REQUIRE(p.a.postSend(p.qpA.qp_handle, p.wr(IB_WR_SEND, 1), { sge(p.bufA, 8, p.mrA.lkey) }) == 0);
	REQUIRE(p.a.postSend(a2.qp_handle, p.wr(IB_WR_SEND, 2), { sge(p.bufA, 8, p.mrA.lkey) }) == 0);
	auto r = p.b.poll(p.cqB);
	REQUIRE(r.size() == 2);
	CHECK(r[0].wr_id == 10);
	CHECK(r[0].qp_num == b1.qpn);
	CHECK(r[1].wr_id == 11);
	CHECK(r[1].qp_num == b2.qpn);
	/* one WQE left, below the limit of 2: SRQ_LIMIT_REACHED, once */
	uint8_t ev[16];
	REQUIRE(p.b.file->read(ev, 16) == 16);
	ib_uverbs_async_event_desc d;
	memcpy(&d, ev, 16);
	CHECK(d.event_type == IB_EVENT_SRQ_LIMIT_REACHED);
	CHECK(p.b.file->read(ev, 16) == -EAGAIN);
	/* DESTROY_SRQ reports the event the application read */
	REQUIRE(p.b.destroy(CMD_DESTROY_QP, b1.qp_handle) == 0);
	REQUIRE(p.b.destroy(CMD_DESTROY_QP, b2.qp_handle) == 0);
	ib_uverbs_destroy_srq req{};
	req.srq_handle = srq;
	ib_uverbs_destroy_srq_resp resp{};
	REQUIRE(p.b.cmd(CMD_DESTROY_SRQ, req, resp) == 0);
	CHECK(resp.events_reported == 1);
}

TEST_CASE("verbs: P_Key mismatch drops RC traffic", "[verbs]")
{
	Pair p;
	p.p2->pkeys[0] = 0x8001; /* host2's port in another partition */
	REQUIRE(p.b.postRecv(p.qpB.qp_handle, 1, { sge(p.bufB, 64, p.mrB.lkey) }) == 0);
	uint16_t before = p.p2->pkeyViolations;
	REQUIRE(p.a.postSend(p.qpA.qp_handle, p.wr(IB_WR_SEND, 1), { sge(p.bufA, 8, p.mrA.lkey) }) == 0);
	for (int i = 0; i < 8; i++)
		p.advance(68);
	CHECK(p.a.poll(p.cqA).at(0).status == IB_WC_RETRY_EXC_ERR);
	CHECK(p.p2->pkeyViolations == before + 8);
	CHECK(p.b.poll(p.cqB).empty());
}

TEST_CASE("verbs: a QP connected to itself survives its own NAKs", "[verbs]")
{
	Pair p;
	ib_uverbs_create_qp_resp self{};
	REQUIRE(p.a.createQp(p.pdA, p.cqA, p.cqA, IB_QPT_RC, self) == 0);
	p.a.connect(self.qp_handle, IB_QPT_RC, p.lid1(), self.qpn);
	/* a write to itself with a bad rkey: the requester and the responder
	 * are one QP, which goes to Error once */
	auto w = p.wr(IB_WR_RDMA_WRITE, 1);
	w.wr.rdma.remote_addr = reinterpret_cast<uint64_t>(p.bufA);
	w.wr.rdma.rkey = p.mrA.rkey ^ 0x100;
	REQUIRE(p.a.postSend(self.qp_handle, w, { sge(p.bufA, 8, p.mrA.lkey) }) == 0);
	REQUIRE(p.a.postSend(self.qp_handle, p.wr(IB_WR_SEND, 2), { sge(p.bufA, 8, p.mrA.lkey) }) == 0);
	auto c = p.a.poll(p.cqA);
	REQUIRE(c.size() == 2);
	CHECK(c[0].status == IB_WC_REM_ACCESS_ERR);
	CHECK(c[1].status == IB_WC_WR_FLUSH_ERR);

	/* UD to its own QPN with a receive too small for the GRH area */
	Pair ud(IB_QPT_UD);
	uint32_t ah;
	REQUIRE(ud.a.createAh(ud.pdA, ud.lid1(), ah) == 0);
	ib_uverbs_create_qp_resp uself{};
	REQUIRE(ud.a.createQp(ud.pdA, ud.cqA, ud.cqA, IB_QPT_UD, uself) == 0);
	ud.a.connect(uself.qp_handle, IB_QPT_UD, 0, 0);
	REQUIRE(ud.a.postRecv(uself.qp_handle, 7, { sge(ud.bufA, 16, ud.mrA.lkey) }) == 0);
	auto u = ud.wr(IB_WR_SEND, 8);
	u.wr.ud.ah = ah;
	u.wr.ud.remote_qpn = uself.qpn;
	u.wr.ud.remote_qkey = 0x11111111;
	REQUIRE(ud.a.postSend(uself.qp_handle, u, { sge(ud.bufA + 100, 8, ud.mrA.lkey) }) == 0);
	auto d = ud.a.poll(ud.cqA);
	REQUIRE(d.size() == 2);
	CHECK(d[0].status == IB_WC_LOC_LEN_ERR); /* the receive */
	CHECK(d[1].status == IB_WC_SUCCESS); /* the send: UD never hears */
}

TEST_CASE("verbs: post counts that overflow the request are ENOSPC, not a crash", "[verbs]")
{
	Pair p;
	ib_uverbs_post_send req{};
	req.qp_handle = p.qpA.qp_handle;
	req.wr_count = 0xffffffff;
	req.wqe_size = 0xffffffff;
	req.sge_count = 0x1fffffff;
	ib_uverbs_post_send_resp resp{};
	CHECK(p.a.cmd(CMD_POST_SEND, req, resp) == -ENOSPC);
	ib_uverbs_post_recv rreq{};
	rreq.qp_handle = p.qpB.qp_handle;
	rreq.wr_count = 0xffffffff;
	rreq.wqe_size = 0xffffffff;
	rreq.sge_count = 0x1fffffff;
	ib_uverbs_post_recv_resp rresp{};
	CHECK(p.b.cmd(CMD_POST_RECV, rreq, rresp) == -ENOSPC);
	req.wr_count = 1;
	req.wqe_size = 56;
	req.sge_count = 1; /* claims a WR and an SGE the request does not have */
	CHECK(p.a.cmd(CMD_POST_SEND, req, resp) == -ENOSPC);
	/* atomics need an 8-byte aligned target and an 8-byte result buffer */
	auto w = p.wr(IB_WR_ATOMIC_FETCH_AND_ADD, 1);
	w.wr.atomic.remote_addr = reinterpret_cast<uint64_t>(p.bufB) + 4;
	w.wr.atomic.rkey = p.mrB.rkey;
	uint32_t bad = 0;
	CHECK(p.a.postSend(p.qpA.qp_handle, w, { sge(p.bufA, 8, p.mrA.lkey) }, &bad) == -EINVAL);
	CHECK(bad == 1);
	w.wr.atomic.remote_addr -= 4;
	CHECK(p.a.postSend(p.qpA.qp_handle, w, { sge(p.bufA, 4, p.mrA.lkey) }, &bad) == -EINVAL);
	w.send_flags |= IB_SEND_INLINE; /* inline data is only ever sent */
	CHECK(p.a.postSend(p.qpA.qp_handle, w, { sge(p.bufA, 8, p.mrA.lkey) }, &bad) == -EINVAL);
	w.send_flags &= ~IB_SEND_INLINE;
	CHECK(p.a.postSend(p.qpA.qp_handle, w, { sge(p.bufA, 8, p.mrA.lkey) }, &bad) == 0);
}
