// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// Work queues in shared memory (emu/qp_ring.h, IBEMU_CMD_ATTACH_QP_RING):
// what ATTACH refuses, sends taken on the doorbell, receives taken when a
// message needs one, the doorbell asked for after an RNR NAK and in Error,
// the consumer indices, RESET, and slots written by a program that does
// not play by the rules. The "program" is this test: it writes the slots as
// the provider (tools/provider/provider_ring.cpp) does.
#include "tests/unit/verbs_helpers.h"
#include "tests/tools/send_fds.h"

#include "emu/ibemu_user_verbs.h"

#include <catch2/catch.hpp>

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>
#include <vector>

using namespace ibemu;
using namespace ibemu::test;

namespace {

/* A QP's ring as the provider makes it: a sealed memfd and a doorbell pair. */
struct Ring : ProviderMemfd {
	ibemu_attach_qp_ring geo{};
	int bell[2] = { -1, -1 }; /* [0] the device takes, [1] we ring */

	Ring(uint32_t sqEntries, uint32_t sqStride, uint32_t rqEntries, uint32_t rqStride, bool seal = true)
		: ProviderMemfd(ibemu_qp_ring_bytes(sqEntries, sqStride, rqEntries, rqStride), seal)
	{
		geo = { 0, -1, -1, sqEntries, sqStride, rqEntries, rqStride, 0 };
		REQUIRE(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, bell) == 0);
	}
	~Ring()
	{
		for (int f : bell)
			if (f >= 0)
				close(f);
	}
	int attach(Client &c, uint32_t qp)
	{
		ibemu_attach_qp_ring cmd = geo;
		cmd.qp_handle = qp;
		cmd.ring_fd = fd;
		cmd.doorbell_fd = bell[0];
		return c.cmd(IBEMU_CMD_ATTACH_QP_RING, cmd);
	}
	ibemu_qp_ring &hdr() { return *reinterpret_cast<ibemu_qp_ring *>(map); }
	uint8_t *sendSlot(uint32_t i) { return map + sizeof(ibemu_qp_ring) + (i % geo.sq_entries) * geo.sq_stride; }
	uint8_t *recvSlot(uint32_t i)
	{
		return map + sizeof(ibemu_qp_ring) + geo.sq_entries * geo.sq_stride +
			(i % geo.rq_entries) * geo.rq_stride;
	}
	void ring() { REQUIRE(::send(bell[1], "", 1, MSG_DONTWAIT) == 1); }
	void postRecv(uint64_t id, std::vector<ib_uverbs_sge> sges, uint32_t numSge = ~0u)
	{
		uint32_t i = hdr().rq_producer;
		ibemu_recv_wqe h{ id, numSge == ~0u ? uint32_t(sges.size()) : numSge, 0 };
		memcpy(recvSlot(i), &h, sizeof h);
		if (!sges.empty())
			memcpy(recvSlot(i) + sizeof h, sges.data(), sges.size() * sizeof(ib_uverbs_sge));
		hdr().rq_producer = i + 1;
	}
	/* h.num_sge 0: the SGEs given */
	void postSend(ibemu_send_wqe h, std::vector<ib_uverbs_sge> sges, const void *inl = nullptr)
	{
		if (!inl && !h.num_sge)
			h.num_sge = uint32_t(sges.size());
		uint32_t i = hdr().sq_producer;
		memcpy(sendSlot(i), &h, sizeof h);
		if (inl)
			memcpy(sendSlot(i) + sizeof h, inl, h.inline_len);
		else if (!sges.empty())
			memcpy(sendSlot(i) + sizeof h, sges.data(), sges.size() * sizeof(ib_uverbs_sge));
		hdr().sq_producer = i + 1;
	}
};

/* the provider's context on host2 for process C (tid 300), with one QP
 * connected to Pair's A; C's QP gets a ring before it leaves RESET */
struct RingPair : Pair {
	Client c{ *this, dev2(), 300, false };
	uint32_t pdC = 0, cqC = 0;
	ib_uverbs_reg_mr_resp mrC{};
	ib_uverbs_create_qp_resp qpC{};
	alignas(4096) uint8_t bufC[4096]{};
	uint8_t type;
	/* 16 WRs of 2 SGEs or 64 inline bytes (or what sqStride holds); 16
	 * receives of 2 SGEs */
	Ring ring;

	explicit RingPair(uint8_t qpType = IB_QPT_RC, uint32_t sqStride = 80 + 64)
		: Pair(qpType, kAll, -1), type(qpType), ring(16, sqStride, 16, 16 + 32)
	{
		REQUIRE(providerContext(c, {}) == 0);
		REQUIRE(c.allocPd(pdC) == 0);
		REQUIRE(c.createCq(64, cqC) == 0);
		REQUIRE(c.regMr(pdC, bufC, sizeof bufC, kAll, mrC) == 0);
		/* max_send_sge and max_recv_sge are 2 in Client::createQp */
		REQUIRE(c.createQp(pdC, cqC, cqC, type, qpC, -1, 15, 15, 64) == 0);
	}
	void connect()
	{
		a.connect(qpA.qp_handle, type, lid2(), qpC.qpn);
		c.connect(qpC.qp_handle, type, lid1(), qpA.qpn);
	}
	ibemu_send_wqe send(uint32_t opcode, uint64_t id)
	{
		ibemu_send_wqe h{};
		h.wr_id = id;
		h.opcode = opcode;
		h.send_flags = IB_SEND_SIGNALED;
		return h;
	}
};

} /* namespace */

TEST_CASE("QP rings: what ATTACH_QP_RING refuses", "[verbs][ring]")
{
	RingPair p;
	auto attachWith = [&](Ring &r) { return r.attach(p.c, p.qpC.qp_handle); };
	Ring small{ 16, 80 + 16, 16, 48 }; /* room for 1 SGE of 2 */
	CHECK(attachWith(small) == -EINVAL);
	Ring few{ 8, 144, 16, 48 }; /* fewer slots than max_send_wr */
	CHECK(attachWith(few) == -EINVAL);
	Ring odd{ 24, 144, 16, 48 }; /* not a power of two */
	CHECK(attachWith(odd) == -EINVAL);
	Ring loose{ 16, 144, 16, 48, false }; /* not sealed */
	CHECK(attachWith(loose) == -EINVAL);
	Ring notSock{ 16, 144, 16, 48 };
	notSock.geo.doorbell_fd = -1;
	{
		ibemu_attach_qp_ring cmd = notSock.geo;
		cmd.qp_handle = p.qpC.qp_handle;
		cmd.ring_fd = notSock.fd;
		cmd.doorbell_fd = notSock.fd; /* a memfd is no doorbell */
		CHECK(p.c.cmd(IBEMU_CMD_ATTACH_QP_RING, cmd) == -EINVAL);
	}
	/* not a provider context: the command is not there */
	CHECK(p.ring.attach(p.b, p.qpB.qp_handle) == -EOPNOTSUPP);

	Ring more{ 32, 144, 16, 48 }; /* more slots than the QP's WRs */
	CHECK(attachWith(more) == -EINVAL);

	REQUIRE(attachWith(p.ring) == 0);
	CHECK(attachWith(p.ring) == -EINVAL); /* once */
	/* the write() commands are refused for a ring QP */
	p.connect();
	CHECK(p.c.postRecv(p.qpC.qp_handle, 1, { sge(p.bufC, 16, p.mrC.lkey) }) == -EINVAL);
	CHECK(p.c.postSend(p.qpC.qp_handle, p.wr(IB_WR_SEND, 1), { sge(p.bufC, 16, p.mrC.lkey) }) == -EINVAL);

	/* a QP out of RESET takes no ring, even a good one */
	ib_uverbs_create_qp_resp q2{};
	REQUIRE(p.c.createQp(p.pdC, p.cqC, p.cqC, IB_QPT_RC, q2, -1, 15, 15, 64) == 0);
	p.c.connect(q2.qp_handle, IB_QPT_RC, p.lid1(), p.qpA.qpn);
	Ring good{ 16, 144, 16, 48 };
	CHECK(good.attach(p.c, q2.qp_handle) == -EINVAL);
}

TEST_CASE("QP rings: receives are taken when a message needs one, sends on the doorbell", "[verbs][ring]")
{
	RingPair p;
	REQUIRE(p.ring.attach(p.c, p.qpC.qp_handle) == 0);
	p.connect();
	ibemu_qp_ring &h = p.ring.hdr();

	/* A sends to C: C's receive comes from the ring, without a doorbell */
	p.ring.postRecv(7, { sge(p.bufC, 64, p.mrC.lkey) });
	memcpy(p.bufA, "ring!", 5);
	REQUIRE(p.a.postSend(p.qpA.qp_handle, p.wr(IB_WR_SEND, 1), { sge(p.bufA, 5, p.mrA.lkey) }) == 0);
	REQUIRE(p.a.poll(p.cqA).size() == 1);
	auto wc = p.c.poll(p.cqC);
	REQUIRE(wc.size() == 1);
	CHECK(wc[0].wr_id == 7);
	CHECK(wc[0].status == IB_WC_SUCCESS);
	CHECK(wc[0].byte_len == 5);
	CHECK(memcmp(p.bufC, "ring!", 5) == 0);
	CHECK(h.rq_consumer == 1);
	CHECK(h.rq_notify == 0);

	/* C sends to A from its ring: nothing happens until the doorbell */
	REQUIRE(p.a.postRecv(p.qpA.qp_handle, 9, { sge(p.bufA + 4096, 4096, p.mrA.lkey) }) == 0);
	memcpy(p.bufC + 100, "back", 4);
	p.ring.postSend(p.send(IB_WR_SEND, 21), { sge(p.bufC + 100, 4, p.mrC.lkey) });
	p.poll();
	CHECK(p.a.poll(p.cqA).empty());
	CHECK(h.sq_consumer == 0);
	p.ring.ring();
	p.poll();
	wc = p.a.poll(p.cqA);
	REQUIRE(wc.size() == 1);
	CHECK(wc[0].wr_id == 9);
	CHECK(wc[0].byte_len == 4);
	CHECK(memcmp(p.bufA + 4096, "back", 4) == 0);
	wc = p.c.poll(p.cqC);
	REQUIRE(wc.size() == 1);
	CHECK(wc[0].wr_id == 21);
	CHECK(wc[0].opcode == IB_WC_SEND);
	CHECK(h.sq_consumer == 1);

	/* inline data travels in the slot; an RDMA WRITE, unsignaled, retires too */
	REQUIRE(p.a.postRecv(p.qpA.qp_handle, 10, { sge(p.bufA + 4096, 4096, p.mrA.lkey) }) == 0);
	ibemu_send_wqe in = p.send(IB_WR_SEND, 22);
	in.send_flags |= IB_SEND_INLINE;
	in.inline_len = 6;
	p.ring.postSend(in, {}, "inline");
	ibemu_send_wqe wr = p.send(IB_WR_RDMA_WRITE, 23);
	wr.send_flags = 0;
	wr.remote_addr = reinterpret_cast<uint64_t>(p.bufA + 200);
	wr.rkey = p.mrA.rkey;
	p.ring.postSend(wr, { sge(p.bufC + 100, 4, p.mrC.lkey) });
	p.ring.ring();
	p.poll();
	wc = p.a.poll(p.cqA);
	REQUIRE(wc.size() == 1);
	CHECK(memcmp(p.bufA + 4096, "inline", 6) == 0);
	CHECK(memcmp(p.bufA + 200, "back", 4) == 0);
	CHECK(p.c.poll(p.cqC).size() == 1); /* the signaled one */
	CHECK(h.sq_consumer == 3);
}

TEST_CASE("QP rings: an RNR NAK asks for the doorbell, and the receive wakes the requester", "[verbs][ring]")
{
	RingPair p;
	REQUIRE(p.ring.attach(p.c, p.qpC.qp_handle) == 0);
	p.connect();
	ibemu_qp_ring &h = p.ring.hdr();
	REQUIRE(p.a.postSend(p.qpA.qp_handle, p.wr(IB_WR_SEND, 1), { sge(p.bufA, 8, p.mrA.lkey) }) == 0);
	p.poll();
	CHECK(p.a.poll(p.cqA).empty()); /* waiting: C has no receive */
	CHECK(h.rq_notify == 1);
	p.ring.postRecv(5, { sge(p.bufC, 64, p.mrC.lkey) });
	p.ring.ring(); /* the provider rings because rq_notify said so */
	p.poll();
	auto wc = p.c.poll(p.cqC);
	REQUIRE(wc.size() == 1);
	CHECK(wc[0].wr_id == 5);
	CHECK(wc[0].status == IB_WC_SUCCESS);
	REQUIRE(p.a.poll(p.cqA).size() == 1);
	CHECK(h.rq_notify == 0);
}

TEST_CASE("QP rings: Error flushes what the rings hold and what is posted after", "[verbs][ring]")
{
	RingPair p;
	REQUIRE(p.ring.attach(p.c, p.qpC.qp_handle) == 0);
	p.connect();
	ibemu_qp_ring &h = p.ring.hdr();
	p.ring.postRecv(1, { sge(p.bufC, 64, p.mrC.lkey) });
	p.ring.postRecv(2, { sge(p.bufC, 64, p.mrC.lkey) });
	ib_uverbs_modify_qp m{};
	m.qp_state = IB_QPS_ERR;
	REQUIRE(p.c.modify(p.qpC.qp_handle, IB_QP_STATE, m) == 0);
	auto wc = p.c.poll(p.cqC);
	REQUIRE(wc.size() == 2);
	CHECK(wc[0].wr_id == 1);
	CHECK(wc[1].status == IB_WC_WR_FLUSH_ERR);
	CHECK(h.rq_consumer == 2);
	CHECK(h.rq_notify == 1);
	/* posted in Error: a receive (it rings, as rq_notify asks) and a send */
	p.ring.postRecv(3, { sge(p.bufC, 64, p.mrC.lkey) });
	p.ring.postSend(p.send(IB_WR_SEND, 4), { sge(p.bufC, 8, p.mrC.lkey) });
	p.ring.ring();
	p.poll();
	wc = p.c.poll(p.cqC);
	REQUIRE(wc.size() == 2);
	CHECK(wc[0].status == IB_WC_WR_FLUSH_ERR);
	CHECK(wc[1].status == IB_WC_WR_FLUSH_ERR);
	CHECK(h.rq_consumer == 3);
	CHECK(h.sq_consumer == 1);

	/* RESET drops whatever the rings hold, unseen, and starts from the
	 * program's producers */
	p.ring.postRecv(5, { sge(p.bufC, 64, p.mrC.lkey) });
	m.qp_state = IB_QPS_RESET;
	REQUIRE(p.c.modify(p.qpC.qp_handle, IB_QP_STATE, m) == 0);
	CHECK(h.rq_consumer == 4);
	CHECK(h.rq_notify == 0);
	CHECK(p.c.poll(p.cqC).empty());
}

TEST_CASE("QP rings: slots from a program that does not play by the rules", "[verbs][ring]")
{
	SECTION("a send with more SGEs than the slot holds fails alone, the QP goes to Error")
	{
		RingPair p;
		REQUIRE(p.ring.attach(p.c, p.qpC.qp_handle) == 0);
		p.connect();
		ibemu_send_wqe bad = p.send(IB_WR_SEND, 1);
		bad.num_sge = 1000000;
		p.ring.postSend(bad, {});
		p.ring.postSend(p.send(IB_WR_SEND, 2), { sge(p.bufC, 8, p.mrC.lkey) });
		p.ring.ring();
		p.poll();
		auto wc = p.c.poll(p.cqC);
		REQUIRE(wc.size() == 2);
		CHECK(wc[0].wr_id == 1);
		CHECK(wc[0].status == IB_WC_LOC_QP_OP_ERR);
		CHECK(wc[1].status == IB_WC_WR_FLUSH_ERR);
		ib_uverbs_query_qp_resp q{};
		CHECK(p.c.cmd(CMD_QUERY_QP, ib_uverbs_query_qp{ 0, p.qpC.qp_handle, IB_QP_STATE }, q) == 0);
		CHECK(q.qp_state == IB_QPS_ERR);
	}
	SECTION("POST_SEND's checks: an opcode, SGEs beyond max_send_sge, inline beyond max_inline, an "
		"atomic at an unaligned address")
	{
		for (int kind = 0; kind < 4; kind++) {
			RingPair p(IB_QPT_RC, 80 + 128); /* room for 128 inline bytes, the QP takes 64 */
			REQUIRE(p.ring.attach(p.c, p.qpC.qp_handle) == 0);
			p.connect();
			ibemu_send_wqe w = p.send(kind == 0           ? 99u
							  : kind == 3 ? IB_WR_ATOMIC_FETCH_AND_ADD
								      : IB_WR_SEND,
						  1);
			w.remote_addr = 3;
			ib_uverbs_sge one = sge(p.bufC, 8, p.mrC.lkey);
			std::vector<ib_uverbs_sge> sges{ one };
			if (kind == 1)
				sges = { one, one, one, one, one }; /* the slot holds 8, the QP 4 (its 64 inline bytes' room) */
			if (kind == 2) {
				w.send_flags |= IB_SEND_INLINE;
				w.inline_len = 65;
			}
			p.ring.postSend(w, sges, kind == 2 ? p.bufC : nullptr);
			p.ring.ring();
			p.poll();
			auto wc = p.c.poll(p.cqC);
			INFO("kind " << kind);
			REQUIRE(wc.size() == 1);
			CHECK(wc[0].status == IB_WC_LOC_QP_OP_ERR);
		}
	}
	SECTION("a producer index that runs ahead of the ring")
	{
		RingPair p;
		REQUIRE(p.ring.attach(p.c, p.qpC.qp_handle) == 0);
		p.connect();
		p.ring.hdr().sq_producer = 0x7fffffff;
		p.ring.ring();
		p.poll();
		auto wc = p.c.poll(p.cqC);
		REQUIRE(wc.size() == 1);
		CHECK(wc[0].status == IB_WC_LOC_QP_OP_ERR);
		/* and a receive ring gone wrong fails the message that needed it */
		RingPair q;
		REQUIRE(q.ring.attach(q.c, q.qpC.qp_handle) == 0);
		q.connect();
		q.ring.hdr().rq_producer = 0x40000000;
		REQUIRE(q.a.postSend(q.qpA.qp_handle, q.wr(IB_WR_SEND, 1), { sge(q.bufA, 8, q.mrA.lkey) }) == 0);
		wc = q.a.poll(q.cqA);
		REQUIRE(wc.size() == 1);
		CHECK(wc[0].status == IB_WC_REM_OP_ERR);
		wc = q.c.poll(q.cqC);
		REQUIRE(!wc.empty());
		CHECK(wc[0].status == IB_WC_LOC_QP_OP_ERR);
	}
	SECTION("an SGE with another process's lkey reaches nothing")
	{
		RingPair p;
		REQUIRE(p.ring.attach(p.c, p.qpC.qp_handle) == 0);
		p.connect();
		REQUIRE(p.a.postRecv(p.qpA.qp_handle, 9, { sge(p.bufA, 64, p.mrA.lkey) }) == 0);
		/* B's MR on the same device, not C's */
		p.ring.postSend(p.send(IB_WR_SEND, 1), { sge(p.bufB, 8, p.mrB.lkey) });
		p.ring.ring();
		p.poll();
		auto wc = p.c.poll(p.cqC);
		REQUIRE(wc.size() == 1);
		CHECK(wc[0].status == IB_WC_LOC_PROT_ERR);
	}
	SECTION("the program closes its doorbell: the device stops watching, the QP still goes")
	{
		RingPair p;
		REQUIRE(p.ring.attach(p.c, p.qpC.qp_handle) == 0);
		close(p.ring.bell[1]);
		p.ring.bell[1] = -1;
		p.poll();
		CHECK(p.c.destroy(CMD_DESTROY_QP, p.qpC.qp_handle) == 0);
	}
	SECTION("a QP destroyed with a ring not yet served: the doorbell goes with it, unread")
	{
		RingPair p;
		REQUIRE(p.ring.attach(p.c, p.qpC.qp_handle) == 0);
		p.connect();
		p.ring.postSend(p.send(IB_WR_SEND, 1), { sge(p.bufC, 8, p.mrC.lkey) });
		p.ring.ring();
		CHECK(p.c.destroy(CMD_DESTROY_QP, p.qpC.qp_handle) == 0);
		CHECK(p.ua.discarded == 1); /* the doorbell, closed off the io thread */
		p.poll();
		CHECK(p.c.poll(p.cqC).empty());
	}
	SECTION("descriptors passed on the doorbell are closed off the io thread; the ring still works")
	{
		RingPair p;
		/* queued before the device takes the doorbell: as many as one
		 * message carries, every one taken (what does not fit, the kernel
		 * releases inside the daemon's recvmsg) */
		std::vector<int> many(emu::kMaxFdsPerMessage, STDIN_FILENO);
		many.back() = p.ring.fd;
		REQUIRE(sendFds(p.ring.bell[1], many) == 0);
		REQUIRE(p.ring.attach(p.c, p.qpC.qp_handle) == 0);
		p.connect();
		REQUIRE(p.a.postRecv(p.qpA.qp_handle, 9, { sge(p.bufA, 64, p.mrA.lkey) }) == 0);
		p.ring.postSend(p.send(IB_WR_SEND, 1), { sge(p.bufC, 8, p.mrC.lkey) });
		/* after: refused where the kernel can (SO_PASSRIGHTS, 6.16) */
		int after = sendFds(p.ring.bell[1], { STDIN_FILENO, p.ring.fd });
		CHECK((after == 0 || after == EPERM));
		p.poll();
		CHECK(p.ua.discarded == int(many.size()) + (after == 0 ? 2 : 0));
		auto wc = p.c.poll(p.cqC);
		REQUIRE(wc.size() == 1);
		CHECK(wc[0].status == IB_WC_SUCCESS);
	}
}

TEST_CASE("QP rings: a UD send resolves its AH before DESTROY_AH frees the handle", "[verbs][ring]")
{
	RingPair p(IB_QPT_UD);
	REQUIRE(p.ring.attach(p.c, p.qpC.qp_handle) == 0);
	p.connect();
	uint32_t ah = 0, other = 0;
	REQUIRE(p.c.createAh(p.pdC, p.lid1(), ah) == 0);
	REQUIRE(p.a.postRecv(p.qpA.qp_handle, 9, { sge(p.bufA, 256, p.mrA.lkey) }) == 0);
	ibemu_send_wqe w = p.send(IB_WR_SEND, 1);
	w.ah = ah;
	w.remote_qpn = p.qpA.qpn;
	w.remote_qkey = 0x11111111;
	/* posted, not yet rung; then the AH goes and its handle is reused
	 * for an address nobody has */
	p.ring.postSend(w, { sge(p.bufC, 8, p.mrC.lkey) });
	REQUIRE(p.c.destroy(CMD_DESTROY_AH, ah) == 0);
	REQUIRE(p.c.createAh(p.pdC, 0xbfff, other) == 0);
	REQUIRE(other == ah);
	p.ring.ring();
	p.poll();
	auto wc = p.a.poll(p.cqA);
	REQUIRE(wc.size() == 1);
	CHECK(wc[0].wr_id == 9);
	CHECK(wc[0].byte_len == 40 + 8);
	wc = p.c.poll(p.cqC);
	REQUIRE(wc.size() == 1);
	CHECK(wc[0].status == IB_WC_SUCCESS);
}
