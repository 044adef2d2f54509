// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// umad ioctls: REGISTER_AGENT(2), UNREGISTER_AGENT, ENABLE_PKEY, and the
// header layout switch (ib_umad_reg_agent, ib_umad_reg_agent2,
// ib_umad_unreg_agent and ib_umad_enable_pkey in
// drivers/infiniband/core/user_mad.c).
#include "tests/unit/emu_helpers.h"

#include <catch2/catch.hpp>

#include <cerrno>

using namespace ibemu;
using namespace ibemu::test;
using emu::UmadFile;

TEST_CASE_METHOD(EmuFixture, "REGISTER_AGENT: ids, qpn and slot checks", "[umad][ioctl]")
{
	UmadFile f(umad1());
	uint32_t id = 99;
	/* libibumad's first calls: ENABLE_PKEY, then agents for SMI and SMI-DR */
	CHECK(f.ioctl(IB_USER_MAD_ENABLE_PKEY, nullptr, 0) == 0);
	CHECK(f.ioctl(IB_USER_MAD_ENABLE_PKEY, nullptr, 0) == 0); /* repeatable before registering */
	CHECK(regAgent(f, 0, IB_MGMT_CLASS_SUBN_LID_ROUTED, 1, { 1, 2 }, 0, &id) == 0);
	CHECK(id == 0);
	CHECK(regAgent(f, 0, IB_MGMT_CLASS_SUBN_DIRECTED_ROUTE, 1, { 1, 2 }, 0, &id) == 0);
	CHECK(id == 1);
	CHECK(f.hdrSize() == 64);
	CHECK(f.ioctl(IB_USER_MAD_ENABLE_PKEY, nullptr, 0) == -EINVAL); /* after a registration */

	CHECK(regAgent(f, 2, IB_MGMT_CLASS_PERF_MGMT, 1, { 1 }) == -EINVAL); /* qpn not 0 or 1 */
	CHECK(regAgent2(f, 7, IB_MGMT_CLASS_PERF_MGMT, 1, { 1 }) == -EINVAL);

	/* 32 slots, lowest free first */
	for (uint32_t i = 2; i < 32; i++) {
		CHECK(regAgent(f, 1, 0, 0, {}, 0, &id) == 0);
		CHECK(id == i);
	}
	CHECK(regAgent(f, 1, 0, 0, {}) == -ENOMEM);
	CHECK(regAgent2(f, 1, 0, 0, {}) == -ENOMEM);
	/* the slot is searched before the OUI is checked */
	CHECK(regAgent2(f, 1, 0x32, 1, { 1 }, 0, 0, nullptr, 0x1000000) == -ENOMEM);
	uint32_t five = 5;
	CHECK(f.ioctl(IB_USER_MAD_UNREGISTER_AGENT, reinterpret_cast<uint8_t *>(&five), 4) == 0);
	CHECK(regAgent(f, 1, 0, 0, {}, 0, &id) == 0);
	CHECK(id == 5);
}

TEST_CASE_METHOD(EmuFixture, "registration validation (ib_register_mad_agent)", "[umad][ioctl]")
{
	UmadFile f(umad1());
	CHECK(regAgent(f, 1, IB_MGMT_CLASS_PERF_MGMT, 0x83, { 1 }) == -EINVAL); /* version */
	CHECK(regAgent(f, 1, 0x50, 1, { 1 }) == -EINVAL); /* class */
	CHECK(regAgent(f, 1, 0x32, 1, { 1 }, 0, nullptr, 0) == -EINVAL); /* vendor class, OUI 0 */
	CHECK(regAgent(f, 1, IB_MGMT_CLASS_PERF_MGMT, 1, { 1 }, 1) == -EINVAL); /* RMPP on a non-RMPP class */
	CHECK(regAgent(f, 1, IB_MGMT_CLASS_SUBN_ADM, 2, { 1 }, 2) == -EINVAL); /* RMPP version 2 */
	CHECK(regAgent(f, 0, IB_MGMT_CLASS_PERF_MGMT, 1, { 1 }) == -EINVAL); /* GMP class on QP0 */
	CHECK(regAgent(f, 1, IB_MGMT_CLASS_SUBN_LID_ROUTED, 1, { 1 }) == -EINVAL); /* SMP class on QP1 */
	CHECK(regAgent2(f, 1, 0, 0, {}, IB_USER_MAD_USER_RMPP) == -EINVAL); /* user RMPP, no class */
	CHECK(regAgent2(f, 1, 0x32, 1, { 1 }, 0, 0, nullptr, 0x1000000) == -EINVAL);
	/* nothing was registered: the layout can still change */
	CHECK(f.ioctl(IB_USER_MAD_ENABLE_PKEY, nullptr, 0) == 0);

	/* what the kernel does not check */
	uint32_t id;
	CHECK(regAgent(f, 1, IB_MGMT_CLASS_PERF_MGMT, 1, {}, 0, &id) == 0); /* empty method mask */
	CHECK(regAgent(f, 1, IB_MGMT_CLASS_BM, 1, { 1 }, 0, &id, 0xabcdef) == 0); /* OUI of a non-vendor class */
	CHECK(regAgent(f, 1, 0x09, 1, { 1 }, 0, &id) == 0);
}

TEST_CASE_METHOD(EmuFixture, "method conflicts across files, and vendor OUI slots", "[umad][ioctl]")
{
	UmadFile a(umad1()), b(umad1()), other(umad2());
	CHECK(regAgent(a, 1, IB_MGMT_CLASS_SUBN_ADM, 2, { IB_MGMT_METHOD_GET, IB_SA_METHOD_GET_TABLE }, 1) == 0);
	CHECK(regAgent(b, 1, IB_MGMT_CLASS_SUBN_ADM, 2, { IB_SA_METHOD_GET_TABLE }, 1) == -EINVAL);
	CHECK(regAgent(b, 1, IB_MGMT_CLASS_SUBN_ADM, 2, { IB_MGMT_METHOD_SET }, 1) == 0);
	CHECK(regAgent(b, 1, IB_MGMT_CLASS_SUBN_ADM, 1, { IB_SA_METHOD_GET_TABLE }, 1) == 0); /* other version */
	CHECK(regAgent(other, 1, IB_MGMT_CLASS_SUBN_ADM, 2, { IB_SA_METHOD_GET_TABLE }, 1) == 0); /* other port */
	/* 0x81 and 0x01 are separate tables */
	CHECK(regAgent(a, 0, IB_MGMT_CLASS_SUBN_LID_ROUTED, 1, { 1 }) == 0);
	CHECK(regAgent(b, 0, IB_MGMT_CLASS_SUBN_DIRECTED_ROUTE, 1, { 1 }) == 0);

	/* vendor range 2: one method table per OUI, at most 8 OUIs per class */
	for (uint32_t oui = 1; oui <= 8; oui++)
		CHECK(regAgent(a, 1, 0x32, 1, { 1 }, 0, nullptr, oui) == 0);
	CHECK(regAgent(b, 1, 0x32, 1, { 1 }, 0, nullptr, 9) == -ENOMEM);
	CHECK(regAgent(b, 1, 0x32, 1, { 2 }, 0, nullptr, 3) == 0);
	CHECK(regAgent(b, 1, 0x32, 1, { 1 }, 0, nullptr, 3) == -EINVAL);

	/* closing a file frees its methods */
	UmadFile *c = new UmadFile(umad1());
	CHECK(regAgent(*c, 1, IB_MGMT_CLASS_PERF_MGMT, 1, { IB_MGMT_METHOD_GET }) == 0);
	CHECK(regAgent(a, 1, IB_MGMT_CLASS_PERF_MGMT, 1, { IB_MGMT_METHOD_GET }) == -EINVAL);
	delete c;
	CHECK(regAgent(a, 1, IB_MGMT_CLASS_PERF_MGMT, 1, { IB_MGMT_METHOD_GET }) == 0);
}

TEST_CASE_METHOD(EmuFixture, "REGISTER_AGENT2: flags write-back and the new layout", "[umad][ioctl]")
{
	UmadFile f(umad1());
	uint32_t id, flags = 0;
	CHECK(regAgent2(f, 1, IB_MGMT_CLASS_PERF_MGMT, 1, { 1 }, 0x6, 0, &id, 0, &flags) == -EINVAL);
	CHECK(flags == IB_USER_MAD_REG_FLAGS_CAP);
	CHECK(f.hdrSize() == 56);
	CHECK(regAgent2(f, 1, IB_MGMT_CLASS_SUBN_ADM, 2, { 0x12 }, IB_USER_MAD_USER_RMPP, 1, &id) == 0);
	CHECK(id == 0);
	CHECK(f.hdrSize() == 64); /* the first registration was REGISTER_AGENT2 */
	CHECK(f.ioctl(IB_USER_MAD_ENABLE_PKEY, nullptr, 0) == -EINVAL);

	/* an old REGISTER_AGENT first freezes the old layout, even if a
	 * REGISTER_AGENT2 follows */
	UmadFile g(umad1());
	CHECK(regAgent(g, 1, IB_MGMT_CLASS_PERF_MGMT, 1, {}) == 0);
	CHECK(regAgent2(g, 1, IB_MGMT_CLASS_PERF_MGMT, 1, {}) == 0);
	CHECK(g.hdrSize() == 56);
	CHECK(g.ioctl(IB_USER_MAD_ENABLE_PKEY, nullptr, 0) == -EINVAL);
}

TEST_CASE_METHOD(EmuFixture, "UNREGISTER_AGENT and unknown ioctls", "[umad][ioctl]")
{
	UmadFile f(umad1());
	uint32_t id = 32;
	CHECK(f.ioctl(IB_USER_MAD_UNREGISTER_AGENT, reinterpret_cast<uint8_t *>(&id), 4) == -EINVAL);
	id = 0;
	CHECK(f.ioctl(IB_USER_MAD_UNREGISTER_AGENT, reinterpret_cast<uint8_t *>(&id), 4) == -EINVAL);
	REQUIRE(regAgent(f, 1, IB_MGMT_CLASS_PERF_MGMT, 1, {}, 0, &id) == 0);
	CHECK(f.ioctl(IB_USER_MAD_UNREGISTER_AGENT, reinterpret_cast<uint8_t *>(&id), 4) == 0);
	CHECK(f.ioctl(IB_USER_MAD_UNREGISTER_AGENT, reinterpret_cast<uint8_t *>(&id), 4) == -EINVAL);

	uint8_t arg[64] = {};
	CHECK(f.ioctl(0x1234, arg, 0) == -ENOTTY);
	CHECK(f.ioctl(iocEncode(IOC_READ | IOC_WRITE, 0x1b, 9, 8), arg, 8) == -ENOTTY);
	CHECK(f.ioctl(0xc0181b01 /* RDMA_VERBS_IOCTL */, arg, 24) == -ENOTTY);
}

TEST_CASE_METHOD(EmuFixture, "hi_tid: cyclic, global across ports, never reused at once", "[umad][ioctl]")
{
	UmadFile a(umad1()), b(umad2());
	/* hi_tids 1-8 went to the kernel's own agents of the two ports: SMI,
	 * GSI, the IB CM's and the SA client's */
	CHECK(host->clients().find(1) == nullptr);
	REQUIRE(regAgent(a, 1, 0, 0, {}) == 0);
	REQUIRE(regAgent(b, 1, 0, 0, {}) == 0);
	REQUIRE(regAgent(a, 1, 0, 0, {}) == 0);
	CHECK(host->clients().find(9));
	CHECK(&host->clients().find(10)->port() == hca2->madPorts[0].get());
	CHECK(host->clients().find(11));
	CHECK_FALSE(host->clients().find(12));
	uint32_t zero = 0;
	CHECK(a.ioctl(IB_USER_MAD_UNREGISTER_AGENT, reinterpret_cast<uint8_t *>(&zero), 4) == 0);
	CHECK_FALSE(host->clients().find(9));
	REQUIRE(regAgent(a, 1, 0, 0, {}) == 0);
	CHECK_FALSE(host->clients().find(9)); /* cyclic: 12 comes next, not the freed 9 */
	CHECK(host->clients().find(12));
	/* a failed registration (method conflict) uses up a number too */
	REQUIRE(regAgent(a, 1, IB_MGMT_CLASS_PERF_MGMT, 1, { 1 }) == 0);
	CHECK(regAgent(b, 1, IB_MGMT_CLASS_PERF_MGMT, 1, { 1 }) == 0); /* other port: fine, 14 */
	CHECK(regAgent(a, 1, IB_MGMT_CLASS_PERF_MGMT, 1, { 1 }) == -EINVAL); /* took and freed 15 */
	REQUIRE(regAgent(a, 1, 0, 0, {}) == 0);
	CHECK_FALSE(host->clients().find(15));
	CHECK(host->clients().find(16));
}

TEST_CASE_METHOD(EmuFixture, "a dead port: ENXIO, EPIPE, EIO and POLLERR", "[umad][ioctl]")
{
	UmadFile f(umad1());
	uint32_t id;
	REQUIRE(regAgent(f, 1, IB_MGMT_CLASS_PERF_MGMT, 1, {}, 0, &id) == 0);
	bool woken = false;
	f.setWakeup([&] { woken = true; });
	umad1().kill();
	CHECK(woken);
	CHECK(umad1().openCheck() == -ENXIO);
	CHECK(regAgent(f, 1, IB_MGMT_CLASS_PERF_MGMT, 1, {}) == -EPIPE);
	CHECK(regAgent2(f, 1, IB_MGMT_CLASS_PERF_MGMT, 1, {}) == -EPIPE);
	std::vector<uint8_t> buf;
	CHECK(readMad(f, buf) == -EIO);
	CHECK(readMad(f, buf, 10) == -EINVAL); /* the size check comes first */
	UmadMsg m(id, IB_MGMT_CLASS_PERF_MGMT, IB_MGMT_METHOD_GET, 0x12, 1);
	CHECK(m.writeTo(f) == -EIO);
	CHECK(f.poll() == POLLERR);
	CHECK(f.ioctl(IB_USER_MAD_UNREGISTER_AGENT, reinterpret_cast<uint8_t *>(&id), 4) == -EINVAL);
	CHECK(umad1().issmOpen() == -ENXIO);
}

TEST_CASE_METHOD(EmuFixture, "unplugging an HCA: open files outlive it, numbers are reused", "[umad][ioctl]")
{
	unsigned dev = umad1().devNum();
	fabric::Node *node = hca1->node;
	auto f = std::make_unique<UmadFile>(umad1());
	uint32_t id;
	REQUIRE(regAgent(*f, 1, IB_MGMT_CLASS_PERF_MGMT, 1, {}, 0, &id) == 0);
	host->removeHca(hca1);
	hca1 = nullptr;
	CHECK(host->umadPort(dev) == nullptr);
	CHECK(p1->host == nullptr); /* the fabric no longer delivers to it */
	/* the file still works as a file on a dead port (ASan checks the rest) */
	std::vector<uint8_t> buf;
	CHECK(readMad(*f, buf) == -EIO);
	CHECK(f->poll() == POLLERR);

	emu::Hca *again = host->addHca(*node, "mlx5_0");
	REQUIRE(again);
	CHECK(again->umadPorts[0]->devNum() == dev);
	CHECK(p1->host == again->madPorts[0].get());
	f.reset(); /* the last close of the old port */
	host->reapRetired();
	CHECK(p1->host == again->madPorts[0].get());
}
