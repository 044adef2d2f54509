// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// QP state transitions and modify_qp attribute checks (IBA 11.2.4.2,
// ib_modify_qp_is_ok, rvt_modify_qp).
#include "tests/unit/verbs_helpers.h"

#include "emu/verbs_qp.h"

#include <catch2/catch.hpp>

using namespace ibemu::test;

TEST_CASE("qp transitions: the table", "[qp]")
{
	const uint32_t initRc = IB_QP_PKEY_INDEX | IB_QP_PORT | IB_QP_ACCESS_FLAGS;
	const uint32_t initUd = IB_QP_PKEY_INDEX | IB_QP_PORT | IB_QP_QKEY;
	CHECK(qpTransitionOk(IB_QPS_RESET, IB_QPS_INIT, IB_QPT_RC, IB_QP_STATE | initRc));
	CHECK_FALSE(qpTransitionOk(IB_QPS_RESET, IB_QPS_INIT, IB_QPT_RC, IB_QP_STATE | initUd)); /* QKEY not RC's */
	CHECK_FALSE(qpTransitionOk(IB_QPS_RESET, IB_QPS_INIT, IB_QPT_RC, IB_QP_STATE | IB_QP_PORT)); /* missing */
	CHECK(qpTransitionOk(IB_QPS_RESET, IB_QPS_INIT, IB_QPT_UD, IB_QP_STATE | initUd));
	CHECK_FALSE(qpTransitionOk(IB_QPS_RESET, IB_QPS_RTR, IB_QPT_RC, IB_QP_STATE)); /* skips INIT */
	CHECK_FALSE(qpTransitionOk(IB_QPS_RESET, IB_QPS_ERR, IB_QPT_RC, IB_QP_STATE)); /* not from RESET */
	CHECK(qpTransitionOk(IB_QPS_RESET, IB_QPS_RESET, IB_QPT_RC, IB_QP_STATE));

	const uint32_t rtrRc = IB_QP_AV | IB_QP_PATH_MTU | IB_QP_DEST_QPN | IB_QP_RQ_PSN | IB_QP_MAX_DEST_RD_ATOMIC |
		IB_QP_MIN_RNR_TIMER;
	CHECK(qpTransitionOk(IB_QPS_INIT, IB_QPS_RTR, IB_QPT_RC, IB_QP_STATE | rtrRc));
	CHECK_FALSE(qpTransitionOk(IB_QPS_INIT, IB_QPS_RTR, IB_QPT_RC, IB_QP_STATE | (rtrRc & ~IB_QP_MIN_RNR_TIMER)));
	CHECK(qpTransitionOk(IB_QPS_INIT, IB_QPS_RTR, IB_QPT_UC,
			     IB_QP_STATE | (rtrRc & ~(IB_QP_MIN_RNR_TIMER | IB_QP_MAX_DEST_RD_ATOMIC))));
	CHECK_FALSE(qpTransitionOk(IB_QPS_INIT, IB_QPS_RTR, IB_QPT_UC, IB_QP_STATE | rtrRc)); /* extra attrs */
	CHECK(qpTransitionOk(IB_QPS_INIT, IB_QPS_RTR, IB_QPT_UD, IB_QP_STATE));

	const uint32_t rtsRc = IB_QP_TIMEOUT | IB_QP_RETRY_CNT | IB_QP_RNR_RETRY | IB_QP_SQ_PSN |
		IB_QP_MAX_QP_RD_ATOMIC;
	CHECK(qpTransitionOk(IB_QPS_RTR, IB_QPS_RTS, IB_QPT_RC, IB_QP_STATE | rtsRc));
	CHECK(qpTransitionOk(IB_QPS_RTR, IB_QPS_RTS, IB_QPT_RC, IB_QP_STATE | rtsRc | IB_QP_CUR_STATE));
	CHECK_FALSE(qpTransitionOk(IB_QPS_RTR, IB_QPS_RTS, IB_QPT_UD, IB_QP_STATE | rtsRc));
	CHECK(qpTransitionOk(IB_QPS_RTR, IB_QPS_RTS, IB_QPT_UD, IB_QP_STATE | IB_QP_SQ_PSN));
	CHECK_FALSE(qpTransitionOk(IB_QPS_INIT, IB_QPS_INIT, IB_QPT_RC, IB_QP_CUR_STATE)); /* CUR_STATE from INIT */

	CHECK(qpTransitionOk(IB_QPS_RTS, IB_QPS_SQD, IB_QPT_RC, IB_QP_STATE | IB_QP_EN_SQD_ASYNC_NOTIFY));
	CHECK(qpTransitionOk(IB_QPS_SQD, IB_QPS_RTS, IB_QPT_RC, IB_QP_STATE));
	CHECK(qpTransitionOk(IB_QPS_SQE, IB_QPS_RTS, IB_QPT_UD, IB_QP_STATE | IB_QP_QKEY));
	CHECK_FALSE(qpTransitionOk(IB_QPS_SQE, IB_QPS_RTS, IB_QPT_RC, IB_QP_STATE));
	CHECK_FALSE(qpTransitionOk(IB_QPS_RTS, IB_QPS_RTR, IB_QPT_RC, IB_QP_STATE)); /* no way back */
	for (QpState s : { IB_QPS_INIT, IB_QPS_RTR, IB_QPS_RTS, IB_QPS_SQD, IB_QPS_SQE, IB_QPS_ERR }) {
		CHECK(qpTransitionOk(s, IB_QPS_RESET, IB_QPT_RC, IB_QP_STATE));
		CHECK(qpTransitionOk(s, IB_QPS_ERR, IB_QPT_RC, IB_QP_STATE));
		CHECK_FALSE(qpTransitionOk(s, IB_QPS_ERR, IB_QPT_RC, IB_QP_STATE | IB_QP_QKEY));
	}
	CHECK_FALSE(qpTransitionOk(IB_QPS_ERR, IB_QPS_RTS, IB_QPT_RC, IB_QP_STATE));
}

TEST_CASE("modify_qp: the command and driver checks", "[qp]")
{
	VerbsFixture fx;
	Client c(fx, fx.dev1(), 100);
	uint32_t pd, cq;
	REQUIRE(c.allocPd(pd) == 0);
	REQUIRE(c.createCq(16, cq) == 0);
	ib_uverbs_create_qp_resp qp{};
	REQUIRE(c.createQp(pd, cq, cq, IB_QPT_RC, qp) == 0);
	CHECK(qp.qpn >= 2);
	CHECK(qp.max_send_wr == 15);

	ib_uverbs_modify_qp a{};
	a.qp_state = IB_QPS_INIT;
	a.port_num = 1;
	const uint32_t init = IB_QP_STATE | IB_QP_PKEY_INDEX | IB_QP_PORT | IB_QP_ACCESS_FLAGS;
	CHECK(c.modify(qp.qp_handle, init | (1u << 25), a) == -EOPNOTSUPP); /* past the legacy mask */
	a.port_num = 2;
	CHECK(c.modify(qp.qp_handle, init, a) == -EINVAL); /* no port 2 */
	a.port_num = 1;
	a.qp_state = 7;
	CHECK(c.modify(qp.qp_handle, init, a) == -EINVAL); /* state past ERR */
	a.qp_state = IB_QPS_RTR;
	CHECK(c.modify(qp.qp_handle, init, a) == -EINVAL); /* RESET -> RTR */
	a.qp_state = IB_QPS_INIT;
	a.pkey_index = 500;
	CHECK(c.modify(qp.qp_handle, init, a) == -EINVAL); /* past the P_Key table */
	a.pkey_index = 0;
	REQUIRE(c.modify(qp.qp_handle, init, a) == 0);

	/* RTR: the AV and the ranges */
	a.qp_state = IB_QPS_RTR;
	a.dest.dlid = fx.lid2();
	a.dest.port_num = 1;
	a.path_mtu = kMtu1024;
	a.dest_qp_num = 0x1234;
	a.min_rnr_timer = 12;
	a.max_dest_rd_atomic = 1;
	const uint32_t rtr = IB_QP_STATE | IB_QP_AV | IB_QP_PATH_MTU | IB_QP_DEST_QPN | IB_QP_RQ_PSN |
		IB_QP_MAX_DEST_RD_ATOMIC | IB_QP_MIN_RNR_TIMER;
	a.min_rnr_timer = 32;
	CHECK(c.modify(qp.qp_handle, rtr, a) == -EINVAL);
	a.min_rnr_timer = 12;
	a.path_mtu = 6;
	CHECK(c.modify(qp.qp_handle, rtr, a) == -EINVAL);
	a.path_mtu = kMtu1024;
	a.dest.dlid = 0xc001;
	CHECK(c.modify(qp.qp_handle, rtr, a) == -EINVAL); /* multicast DLID on RC */
	a.dest.dlid = fx.lid2();
	a.dest_qp_num = 1u << 24;
	CHECK(c.modify(qp.qp_handle, rtr, a) == -EINVAL);
	a.dest_qp_num = 0x1234;
	REQUIRE(c.modify(qp.qp_handle, rtr, a) == 0);

	a.qp_state = IB_QPS_RTS;
	a.timeout = 14;
	a.retry_cnt = 8;
	a.rnr_retry = 7;
	const uint32_t rts = IB_QP_STATE | IB_QP_TIMEOUT | IB_QP_RETRY_CNT | IB_QP_RNR_RETRY | IB_QP_SQ_PSN |
		IB_QP_MAX_QP_RD_ATOMIC;
	CHECK(c.modify(qp.qp_handle, rts, a) == -EINVAL);
	a.retry_cnt = 7;
	REQUIRE(c.modify(qp.qp_handle, rts, a) == 0);

	/* QUERY_QP reads back what was set */
	ib_uverbs_query_qp q{};
	q.qp_handle = qp.qp_handle;
	q.attr_mask = IB_QP_STATE;
	ib_uverbs_query_qp_resp r{};
	REQUIRE(c.cmd(CMD_QUERY_QP, q, r) == 0);
	CHECK(r.qp_state == IB_QPS_RTS);
	CHECK(r.dest.dlid == fx.lid2());
	CHECK(r.dest_qp_num == 0x1234);
	CHECK(r.timeout == 14);
	CHECK(r.min_rnr_timer == 12);
	CHECK(r.path_mtu == kMtu1024);

	/* SQD and back, ERR, RESET */
	a.qp_state = IB_QPS_SQD;
	REQUIRE(c.modify(qp.qp_handle, IB_QP_STATE, a) == 0);
	a.qp_state = IB_QPS_RTS;
	REQUIRE(c.modify(qp.qp_handle, IB_QP_STATE, a) == 0);
	a.qp_state = IB_QPS_ERR;
	REQUIRE(c.modify(qp.qp_handle, IB_QP_STATE, a) == 0);
	a.qp_state = IB_QPS_RTS;
	CHECK(c.modify(qp.qp_handle, IB_QP_STATE, a) == -EINVAL);
	a.qp_state = IB_QPS_RESET;
	REQUIRE(c.modify(qp.qp_handle, IB_QP_STATE, a) == 0);
	REQUIRE(c.cmd(CMD_QUERY_QP, q, r) == 0);
	CHECK(r.qp_state == IB_QPS_RESET);
}

TEST_CASE("create_qp: types and capabilities", "[qp]")
{
	VerbsFixture fx;
	Client c(fx, fx.dev1(), 100);
	uint32_t pd, cq;
	REQUIRE(c.allocPd(pd) == 0);
	REQUIRE(c.createCq(16, cq) == 0);
	ib_uverbs_create_qp_resp qp{};
	CHECK(c.createQp(pd, cq, cq, 0 /* SMI */, qp) == -EINVAL);
	CHECK(c.createQp(pd, cq, cq, 8 /* RAW_PACKET */, qp) == -EOPNOTSUPP);
	CHECK(c.createQp(pd, cq, cq, IB_QPT_XRC_TGT, qp) == -EINVAL); /* a PD's handle, not an XRCD's */
	CHECK(c.createQp(pd, cq, cq, IB_QPT_RC, qp, -1, 1u << 20) == -EINVAL); /* max_send_wr */
	CHECK(c.createQp(pd, cq, cq, IB_QPT_RC, qp, -1, 16, 16, 4096) == -EINVAL); /* inline */
	CHECK(c.createQp(pd, cq, cq, IB_QPT_UD, qp) == 0);
	CHECK(c.createQp(pd, cq, cq, IB_QPT_RC, qp) == 0);
	/* post before RTS: EINVAL with bad_wr 1 */
	ib_uverbs_send_wr wr{};
	wr.opcode = IB_WR_SEND;
	uint32_t bad = 0;
	CHECK(c.postSend(qp.qp_handle, wr, {}, &bad) == -EINVAL);
	CHECK(bad == 1);
	CHECK(c.postRecv(qp.qp_handle, 1, {}) == -EINVAL); /* RESET */
}
