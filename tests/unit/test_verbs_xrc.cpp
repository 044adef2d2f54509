// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// XRC in the device: what the kernel and mlx5 refuse, refused the same
// way (tests/tools/verbs_xrc.cpp runs XRC end to end).
#include "tests/unit/verbs_helpers.h"

#include <catch2/catch.hpp>

using namespace ibemu::test;

namespace {

/* one process with a PD and a CQ on the first HCA */
struct XrcFixture : VerbsFixture {
	Client c{ *this, dev1(), 100 };
	uint32_t pd = 0, cq = 0;
	XrcFixture()
	{
		REQUIRE(c.allocPd(pd) == 0);
		REQUIRE(c.createCq(8, cq) == 0);
	}
};

} /* namespace */

TEST_CASE_METHOD(XrcFixture, "xrc: POST_SEND refuses an XRC initiator (its requests name an SRQ only a ring carries)",
		 "[verbs][xrc]")
{
	ib_uverbs_create_qp_resp ini{};
	REQUIRE(c.createQp(pd, cq, cq, IB_QPT_XRC_INI, ini) == 0);
	c.connect(ini.qp_handle, IB_QPT_XRC_INI, 1, 0x100);
	ib_uverbs_send_wr wr{};
	wr.opcode = IB_WR_SEND;
	CHECK(c.postSend(ini.qp_handle, wr, {}) == -EINVAL);
}
