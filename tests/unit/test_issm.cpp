// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// issmN: the single IsSM claim of a port and what it shows (ib_umad_sm_open
// and ib_umad_sm_close in drivers/infiniband/core/user_mad.c), and SMInfo
// reaching the SM through it.
#include "tests/unit/emu_helpers.h"

#include "emu/umad_port.h"
#include "fabric/capability.h"
#include "fabric/smp_attrs.h"

#include <catch2/catch.hpp>

#include <cerrno>
#include <poll.h>

using namespace ibemu;
using namespace ibemu::test;
using emu::UmadFile;

TEST_CASE_METHOD(EmuFixture, "issm: one holder, IsSM set while held", "[issm]")
{
	REQUIRE((p1->capMask & fabric::IB_PORT_SM) == 0);
	int released = 0;
	umad1().watchIssm([&] { released++; });
	CHECK(umad1().issmOpen() == 0);
	CHECK((p1->capMask & fabric::IB_PORT_SM) != 0);
	CHECK(umad1().issmOpen() == -EAGAIN); /* a blocking open waits for the release */
	CHECK(umad2().issmOpen() == 0); /* another port: its own claim */

	/* PortInfo:CapabilityMask through an SMP shows it too */
	UmadFile f(umad1());
	uint32_t smi;
	f.ioctl(IB_USER_MAD_ENABLE_PKEY, nullptr, 0);
	REQUIRE(regAgent(f, 0, IB_MGMT_CLASS_SUBN_DIRECTED_ROUTE, 1, {}, 0, &smi) == 0);
	REQUIRE(drSmpMsg(smi, IB_SMP_ATTR_PORT_INFO, {}, 1).writeTo(f) > 0);
	drain();
	std::vector<uint8_t> buf;
	REQUIRE(readMad(f, buf) == 64 + 256);
	CHECK((overlay<ib_port_info>(buf.data() + 64 + 64)->cap_mask.get() & fabric::IB_PORT_SM) != 0);

	umad1().issmRelease();
	CHECK(released == 1);
	CHECK((p1->capMask & fabric::IB_PORT_SM) == 0);
	CHECK(umad1().issmOpen() == 0);
	umad1().issmRelease();
	umad2().issmRelease();
}

TEST_CASE("issm file operations do what the kernel's umad_sm_fops do", "[issm]")
{
	CHECK(emu::issm::readOrWrite() == -EINVAL);
	CHECK(emu::issm::ioctl() == -ENOTTY);
	CHECK(emu::issm::llseek() == -ESPIPE);
	CHECK(emu::issm::poll() == (POLLIN | POLLOUT | POLLRDNORM | POLLWRNORM));
}

TEST_CASE_METHOD(EmuFixture, "SMInfo reaches the SM on the port holding issm, by directed route", "[issm]")
{
	/* OpenSM on host1: issm held, SMI agents for SubnGet/SubnSet */
	UmadFile sm1(umad1()), prober(umad2());
	uint32_t smAgent, probe;
	sm1.ioctl(IB_USER_MAD_ENABLE_PKEY, nullptr, 0);
	prober.ioctl(IB_USER_MAD_ENABLE_PKEY, nullptr, 0);
	REQUIRE(regAgent(sm1, 0, IB_MGMT_CLASS_SUBN_DIRECTED_ROUTE, 1, { IB_MGMT_METHOD_GET, IB_MGMT_METHOD_SET }, 0,
			 &smAgent) == 0);
	REQUIRE(regAgent(prober, 0, IB_MGMT_CLASS_SUBN_DIRECTED_ROUTE, 1, {}, 0, &probe) == 0);

	/* host2 -> sw2 -> (port 7) sw1 -> (port 1) host1 */
	UmadMsg q = drSmpMsg(probe, IB_SMP_ATTR_SM_INFO, { 1, 7, 1 }, 0x77);
	q.timeout(1000, 0);
	REQUIRE(q.writeTo(prober) > 0);
	drain();
	std::vector<uint8_t> buf;
	REQUIRE(readMad(prober, buf) == 64 + 256); /* no SM: the SMA says unsupported */
	CHECK((overlay<ib_smp>(buf.data() + 64)->status.get() & 0x7fff) ==
	      IB_MGMT_MAD_STATUS_UNSUPPORTED_METHOD_ATTRIB);

	REQUIRE(umad1().issmOpen() == 0);
	overlay<ib_mad_hdr>(q.mad.data())->tid = 0x78;
	REQUIRE(q.writeTo(prober) > 0);
	drain();
	REQUIRE(readMad(sm1, buf) == 64 + 256);
	CHECK(hdrOf(buf).id == smAgent);
	const ib_smp &in = *overlay<ib_smp>(buf.data() + 64);
	CHECK(in.attr_id.get() == IB_SMP_ATTR_SM_INFO);
	CHECK(in.hop_ptr == 4); /* hop_cnt + 1 at the destination */
	CHECK(in.return_path[3] == 1);

	/* OpenSM answers along the return path */
	std::vector<uint8_t> resp(buf);
	ib_smp &r = *overlay<ib_smp>(resp.data() + 64);
	r.method = IB_MGMT_METHOD_GET_RESP;
	r.status = IB_SMP_DIRECTION;
	overlay<be64>(r.data)->set(0x2c90300000101); /* SMInfo:GUID */
	r.data[20] = 0x13; /* priority 1, MASTER */
	reinterpret_cast<ib_user_mad_hdr *>(resp.data())->id = smAgent;
	REQUIRE(sm1.write(resp.data(), resp.size()) == 64 + 256);
	drain();
	REQUIRE(readMad(prober, buf) == 64 + 256);
	const ib_smp &a = *overlay<ib_smp>(buf.data() + 64);
	CHECK(a.method == IB_MGMT_METHOD_GET_RESP);
	CHECK(a.status.get() == IB_SMP_DIRECTION);
	CHECK(a.hop_ptr == 0);
	CHECK(overlay<be64>(a.data)->get() == 0x2c90300000101);
	CHECK(a.data[20] == 0x13);
	umad1().issmRelease();
}
