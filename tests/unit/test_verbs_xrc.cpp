// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// XRC in the device: what the kernel and mlx5 refuse, refused the same
// way (tests/tools/verbs_xrc.cpp runs XRC end to end).
#include "tests/unit/verbs_helpers.h"

#include "cuse_dev/process_access.h"

#include <catch2/catch.hpp>

#include <cstdio>
#include <string>

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

namespace {

/* fdinfoInode() of a text: its answer, the numbers in mnt and ino */
int parseFdinfo(std::string text, uint64_t &mnt, uint64_t &ino)
{
	FILE *f = fmemopen(text.data(), text.size(), "r");
	REQUIRE(f);
	int rc = ibemu::cuse_dev::fdinfoInode(f, mnt, ino);
	fclose(f);
	return rc;
}

} /* namespace */

TEST_CASE("xrc: a domain's file from fdinfo: the first numbers, never a driver's lines, no O_PATH", "[verbs][xrc]")
{
	uint64_t mnt = 0, ino = 0;
	/* a dma-buf's name is the user's, printed after ino: */
	CHECK(parseFdinfo("pos:\t0\nflags:\t02000002\nmnt_id:\t15\nino:\t1234\nsize:\t4096\ncount:\t1\n"
			  "exp_name:\tsystem\nname:\tx\nmnt_id: 99\nino: 7\n",
			  mnt, ino) == 0);
	CHECK(mnt == 15);
	CHECK(ino == 1234);
	CHECK(parseFdinfo("pos:\t0\nflags:\t012000000\nmnt_id:\t15\nino:\t1234\n", mnt, ino) == -EBADF); /* O_PATH */
	CHECK(parseFdinfo("pos:\t0\nflags:\t02\nmnt_id:\t15\n", mnt, ino) == -EBADF); /* before 5.14: no ino: */
}

TEST_CASE_METHOD(XrcFixture, "xrc: CREATE_SRQ and CREATE_QP of handles the file lacks: EINVAL, as the kernel's",
		 "[verbs][xrc]")
{
	uint32_t srq = 0;
	CHECK(c.createSrq(pd + 40, 4, srq) == -EINVAL); /* __uverbs_create_xsrq(), a basic SRQ too */
	ib_uverbs_create_qp_resp qp{};
	CHECK(c.createQp(pd + 40, cq, cq, IB_QPT_XRC_INI, qp) == -EINVAL);
	CHECK(c.createQp(pd, cq + 40, cq + 40, IB_QPT_XRC_INI, qp) == -EINVAL);
	CHECK(c.createQp(pd, cq, cq + 40, IB_QPT_RC, qp) == -EINVAL);
	CHECK(c.createQp(pd, cq, cq, IB_QPT_RC, qp, 40) == -EINVAL);
}
