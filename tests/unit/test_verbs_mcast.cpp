// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// Multicast on the data path: ATTACH_MCAST and DETACH_MCAST with the
// kernel's checks and errnos, and UD sends to a multicast LID that the
// switches' MFTs carry to every attached QP (and back to the sender's own
// HCA).
#include "tests/unit/verbs_helpers.h"

#include "fabric/node.h"

#include <catch2/catch.hpp>

using namespace ibemu;
using namespace ibemu::emu;
using namespace ibemu::test;

TEST_CASE("verbs multicast: attach and detach with the kernel's checks", "[verbs][mcast]")
{
	Pair ud(IB_QPT_UD);
	uint32_t qp = ud.qpB.qp_handle;
	const uint8_t unicast[16] = { 0xfe, 0x80 };
	CHECK(attach(ud.b, qp, unicast, kMlid) == -EINVAL); /* not a multicast GID */
	CHECK(attach(ud.b, qp, kMgid, 0x0010) == -EINVAL); /* a unicast LID */
	CHECK(attach(ud.b, qp, kMgid, 0xffff) == -EINVAL); /* the permissive LID */
	CHECK(attach(ud.b, 999, kMgid, kMlid) == -EINVAL); /* no such QP */
	Pair rc(IB_QPT_RC);
	CHECK(attach(rc.b, rc.qpB.qp_handle, kMgid, kMlid) == -EINVAL); /* UD only */
	const uint8_t v4mapped[16] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 239, 1, 2, 3 };
	CHECK(attach(ud.b, qp, v4mapped, kMlid) == 0); /* an IPv4-mapped group is multicast too */
	CHECK(attach(ud.b, qp, v4mapped, kMlid, true) == 0);

	CHECK(attach(ud.b, qp, kMgid, kMlid) == 0);
	CHECK(attach(ud.b, qp, kMgid, kMlid) == 0); /* again: nothing more */
	CHECK(ud.b.destroy(CMD_DESTROY_QP, qp) == -EBUSY); /* still attached */
	CHECK(attach(ud.b, qp, kMgid, kMlid, true) == 0);
	CHECK(attach(ud.b, qp, kMgid, kMlid, true) == -EINVAL); /* once only */
	CHECK(attach(ud.b, qp, kMgid, 0xc002, true) == -EINVAL);
	CHECK(ud.b.destroy(CMD_DESTROY_QP, qp) == 0);

	/* QUERY_DEVICE reports the limits attach enforces */
	ib_uverbs_query_device_resp dev{};
	ud.dev1().queryDevice(dev);
	CHECK(dev.max_mcast_grp == ud.dev1().limits().maxMcastGrp);
	CHECK(dev.max_mcast_qp_attach == ud.dev1().limits().maxMcastQpAttach);
	CHECK(dev.max_mcast_grp > 0);
}

TEST_CASE("verbs multicast: a UD send reaches every attached QP through the MFTs", "[verbs][mcast]")
{
	Pair ud(IB_QPT_UD);
	programMfts(ud.subnet, kMlid);
	/* receivers: B's QP on host2, and a second QP on A's own HCA */
	ib_uverbs_create_qp_resp a2{};
	REQUIRE(ud.a.createQp(ud.pdA, ud.cqA, ud.cqA, IB_QPT_UD, a2) == 0);
	ud.a.connect(a2.qp_handle, IB_QPT_UD, 0, 0);
	REQUIRE(attach(ud.b, ud.qpB.qp_handle, kMgid, kMlid) == 0);
	REQUIRE(attach(ud.a, a2.qp_handle, kMgid, kMlid) == 0);
	REQUIRE(ud.b.postRecv(ud.qpB.qp_handle, 1, { sge(ud.bufB, 40 + 64, ud.mrB.lkey) }) == 0);
	REQUIRE(ud.a.postRecv(a2.qp_handle, 2, { sge(ud.bufA + 4096, 40 + 64, ud.mrA.lkey) }) == 0);

	uint32_t ah = 0;
	REQUIRE(createMcastAh(ud.a, ud.pdA, ah) == 0);
	memset(ud.bufA, 0x6b, 64);
	auto w = ud.wr(IB_WR_SEND, 9);
	w.wr.ud.ah = ah;
	w.wr.ud.remote_qpn = kMulticastQpn;
	w.wr.ud.remote_qkey = 0x11111111;
	fabric::PortCounters c1 = ud.p1->counters, c2 = ud.p2->counters;
	REQUIRE(ud.a.postSend(ud.qpA.qp_handle, w, { sge(ud.bufA, 64, ud.mrA.lkey) }) == 0);

	auto r = ud.b.poll(ud.cqB);
	REQUIRE(r.size() == 1);
	CHECK(r[0].status == IB_WC_SUCCESS);
	CHECK(r[0].byte_len == 40 + 64);
	CHECK(r[0].src_qp == ud.qpA.qpn);
	CHECK(r[0].slid == ud.lid1());
	CHECK((r[0].wc_flags & IB_WC_GRH) != 0);
	CHECK(memcmp(ud.bufB + 24, kMgid, 16) == 0); /* the GRH's destination is the group */
	CHECK(ud.bufB[40] == 0x6b);
	CHECK(ud.bufB[103] == 0x6b);
	/* A's CQ: the second QP's copy (loopback) and the send */
	auto a = ud.a.poll(ud.cqA);
	REQUIRE(a.size() == 2);
	CHECK(a[0].qp_num == a2.qpn);
	CHECK(a[0].opcode == IB_WC_RECV);
	CHECK(a[1].opcode == IB_WC_SEND);
	/* counted as multicast at both CA ports: one packet out, one in */
	CHECK(ud.p1->counters.extMulticastXmitPkts - c1.extMulticastXmitPkts == 1);
	CHECK(ud.p2->counters.extMulticastRcvPkts - c2.extMulticastRcvPkts == 1);
	CHECK(ud.p2->counters.extUnicastRcvPkts == c2.extUnicastRcvPkts);

	/* a send to another QPN than 0xFFFFFF is dropped by every receiver */
	REQUIRE(ud.b.postRecv(ud.qpB.qp_handle, 3, { sge(ud.bufB, 40 + 64, ud.mrB.lkey) }) == 0);
	w.wr.ud.remote_qpn = ud.qpB.qpn;
	REQUIRE(ud.a.postSend(ud.qpA.qp_handle, w, { sge(ud.bufA, 64, ud.mrA.lkey) }) == 0);
	CHECK(ud.b.poll(ud.cqB).empty());
	CHECK(ud.a.poll(ud.cqA).size() == 1); /* the send only */

	/* detached: the receive waits on */
	w.wr.ud.remote_qpn = kMulticastQpn;
	REQUIRE(attach(ud.b, ud.qpB.qp_handle, kMgid, kMlid, true) == 0);
	REQUIRE(ud.a.postSend(ud.qpA.qp_handle, w, { sge(ud.bufA, 64, ud.mrA.lkey) }) == 0);
	CHECK(ud.b.poll(ud.cqB).empty());
	/* attached again, but the switch towards host2 has no MFT entry:
	 * dropped there and counted as a relay error */
	REQUIRE(attach(ud.b, ud.qpB.qp_handle, kMgid, kMlid) == 0);
	uint16_t relayErrors = ud.p1->peer->counters.rcvSwitchRelayErrors;
	for (const auto &n : ud.subnet.nodes())
		if (n->isSwitch())
			n->sw->mft.clear();
	REQUIRE(ud.a.postSend(ud.qpA.qp_handle, w, { sge(ud.bufA, 64, ud.mrA.lkey) }) == 0);
	CHECK(ud.b.poll(ud.cqB).empty());
	CHECK(ud.p1->peer->counters.rcvSwitchRelayErrors == relayErrors + 1);
	/* the file's close detaches: the QP goes with it */
	ud.b.file.reset();
}
