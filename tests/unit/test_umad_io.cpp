// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// umad read/write/poll: the errnos of ib_umad_read, ib_umad_write and
// ib_umad_poll (drivers/infiniband/core/user_mad.c), the TID rewrite,
// timeouts and retries, routing of responses and unsolicited MADs, the
// kernel's answers, and both header layouts.
#include "tests/unit/emu_helpers.h"

#include "emu/mad_port.h"
#include "fabric/pma.h"
#include "fabric/smp_attrs.h"

#include <catch2/catch.hpp>

#include <cerrno>
#include <map>
#include <poll.h>

using namespace ibemu;
using namespace ibemu::test;
using emu::UmadFile;

namespace {

constexpr uint8_t kPing = 0x32; /* ibping's vendor class */
constexpr uint32_t kOpenIbOui = 0x001405;

/* A file with the new header layout and a GSI agent of the given class. */
uint32_t gsiAgent(UmadFile &f, uint8_t mgmtClass = 0, std::initializer_list<unsigned> methods = {}, uint8_t rmpp = 0,
		  uint32_t oui = 0)
{
	uint32_t id = 99;
	if (!f.outstanding() && f.hdrSize() == 56)
		f.ioctl(IB_USER_MAD_ENABLE_PKEY, nullptr, 0);
	REQUIRE(regAgent(f, 1, mgmtClass, mgmtClass == IB_MGMT_CLASS_SUBN_ADM ? 2 : 1, methods, rmpp, &id, oui) == 0);
	return id;
}

void vendorOui(UmadMsg &m, uint32_t oui)
{
	m.mad[37] = static_cast<uint8_t>(oui >> 16);
	m.mad[38] = static_cast<uint8_t>(oui >> 8);
	m.mad[39] = static_cast<uint8_t>(oui);
}

uint64_t tidIn(const std::vector<uint8_t> &buf, size_t hs)
{
	return overlay<ib_mad_hdr>(buf.data() + hs)->tid.get();
}

/* Where MadClients' cycle is, a private member. Running the cycle to its
 * end by alloc/free takes 16M steps, 16 s in a debug ASan build; access
 * checks do not apply to the arguments of an explicit instantiation
 * ([temp.spec.general]), which lets the test move it instead. */
template <uint32_t emu::MadClients::*Next> struct CycleOf {
	friend uint32_t &cycleOf(emu::MadClients &c) { return c.*Next; }
};
template struct CycleOf<&emu::MadClients::next_>;
uint32_t &cycleOf(emu::MadClients &c);

} /* namespace */

TEST_CASE_METHOD(EmuFixture, "write: validation in the kernel's order", "[umad][write]")
{
	UmadFile f(umad1());
	uint32_t smi = 0, pma = gsiAgent(f), sa = gsiAgent(f, IB_MGMT_CLASS_SUBN_ADM, {}, 1);
	REQUIRE(regAgent(f, 0, IB_MGMT_CLASS_SUBN_DIRECTED_ROUTE, 1, {}, 0, &smi) == 0);
	const size_t hs = 64;
	REQUIRE(f.hdrSize() == hs);
	UmadMsg m(pma, IB_MGMT_CLASS_PERF_MGMT, IB_MGMT_METHOD_GET, IB_PMA_PORT_COUNTERS, 7);
	m.to(lid2(), 1);

	CHECK(m.writeTo(f, 35) == -EINVAL); /* count < hdr + 36 */
	CHECK(m.writeTo(f, 36) == ssize_t(hs + 36)); /* short MADs are zero-padded */
	UmadMsg bad = m;
	bad.hdr.id = 32;
	CHECK(bad.writeTo(f) == -EINVAL);
	bad.hdr.id = 17;
	CHECK(bad.writeTo(f) == -EIO); /* an empty slot (EIO since 4.x, once EINVAL) */

	UmadMsg grh = m;
	grh.hdr.grh_present = 1;
	grh.hdr.gid_index = 8; /* GIDCap is 8 */
	CHECK(grh.writeTo(f) == -EINVAL);
	grh.hdr.gid_index = 3; /* a GUIDInfo entry nobody set */
	CHECK(grh.writeTo(f) == -ENODATA);

	UmadMsg sam(sa, IB_MGMT_CLASS_SUBN_ADM, IB_MGMT_METHOD_GET, 0x11, 8);
	sam.to(lid2(), 1);
	CHECK(sam.writeTo(f, 40) == -EINVAL); /* SA header needs 56 bytes */
	CHECK(m.writeTo(f, 300) == -EINVAL); /* more than 256 bytes without RMPP */

	UmadMsg wrongClass(sa, IB_MGMT_CLASS_PERF_MGMT, IB_MGMT_METHOD_GET, IB_PMA_PORT_COUNTERS, 9);
	wrongClass.to(lid2(), 1);
	CHECK(wrongClass.writeTo(f) == -EINVAL); /* an RMPP agent sending a non-RMPP class */

	UmadMsg dr = drSmpMsg(smi, IB_SMP_ATTR_NODE_INFO, { 2, 7 }, 10); /* leaves by port 2: not ours */
	CHECK(dr.writeTo(f) == -EINVAL);

	/* duplicates: two outstanding requests with one TID and class */
	UmadMsg r1(pma, IB_MGMT_CLASS_PERF_MGMT, IB_MGMT_METHOD_GET, IB_PMA_PORT_COUNTERS, 0x77);
	r1.to(lid2(), 1).timeout(1000, 0);
	CHECK(r1.writeTo(f) == ssize_t(hs + 256));
	CHECK(r1.writeTo(f) == -EINVAL);
	UmadMsg r2 = r1;
	overlay<ib_mad_hdr>(r2.mad.data())->mgmt_class = kPing; /* other class: fine */
	vendorOui(r2, kOpenIbOui);
	CHECK(r2.writeTo(f) == ssize_t(hs + 256));
	/* responses collide only when going to the same destination */
	UmadMsg resp(pma, IB_MGMT_CLASS_PERF_MGMT, IB_MGMT_METHOD_GET_RESP, IB_PMA_PORT_COUNTERS, 0x88);
	resp.to(lid2(), 1);
	CHECK(resp.writeTo(f) == ssize_t(hs + 256));
	CHECK(resp.writeTo(f) == -EINVAL);
	resp.to(lid2() + 100, 1);
	CHECK(resp.writeTo(f) == ssize_t(hs + 256));
	poll();
}

TEST_CASE_METHOD(EmuFixture, "the TID's upper half becomes the agent's hi_tid; responses keep theirs", "[umad][write]")
{
	std::vector<uint64_t> wireTids;
	subnet.setDropFilter([&](const Port &out, const Packet &pkt) {
		if (&out == p1)
			wireTids.push_back(madHdr(pkt.mad)->tid.get());
		return false;
	});
	UmadFile f(umad1());
	uint32_t id = gsiAgent(f);
	uint32_t hiTid = 0;
	for (uint32_t t = 1; t < 16; t++)
		if (auto *a = host->clients().find(t); a && a->client() == &f)
			hiTid = t;
	REQUIRE(hiTid);
	UmadMsg req(id, IB_MGMT_CLASS_PERF_MGMT, IB_MGMT_METHOD_GET, IB_PMA_PORT_COUNTERS, 0xaaaaaaaa12345678ULL);
	req.to(lid2(), 1);
	REQUIRE(req.writeTo(f) > 0);
	UmadMsg resp(id, IB_MGMT_CLASS_PERF_MGMT, IB_MGMT_METHOD_GET_RESP, IB_PMA_PORT_COUNTERS, 0xaaaaaaaa12345679ULL);
	resp.to(lid2(), 1);
	REQUIRE(resp.writeTo(f) > 0);
	REQUIRE(wireTids.size() == 2);
	CHECK(wireTids[0] == (uint64_t(hiTid) << 32 | 0x12345678));
	CHECK(wireTids[1] == 0xaaaaaaaa12345679ULL);
	subnet.setDropFilter(nullptr);
	poll();
}

TEST_CASE_METHOD(EmuFixture, "hi_tid wrap-around: 2^24-1, then round to the free ones", "[umad][write]")
{
	std::vector<uint64_t> wireTids;
	subnet.setDropFilter([&](const Port &out, const Packet &pkt) {
		if (&out == p1 && pkt.mad[1] == IB_MGMT_CLASS_PERF_MGMT && pkt.mad[3] == IB_MGMT_METHOD_GET)
			wireTids.push_back(madHdr(pkt.mad)->tid.get());
		return false;
	});
	constexpr uint32_t kMaxHiTid = (1u << 24) - 1;
	emu::MadClients &clients = host->clients();
	UmadFile f(umad1());
	uint32_t early = gsiAgent(f);
	REQUIRE(clients.find(9) != nullptr); /* 1-8: the kernel's agents (SMI, GSI, CM, SA) of the two ports */
	REQUIRE(clients.find(9)->client() == &f);

	/* near the end of the cycle; the last ids before it as alloc gives them */
	cycleOf(clients) = kMaxHiTid - 2;
	for (uint32_t want : { kMaxHiTid - 2, kMaxHiTid - 1 }) {
		uint32_t id = clients.alloc(nullptr);
		CHECK(id == want);
		clients.free(id);
	}
	uint32_t last = gsiAgent(f); /* the last hi_tid */
	uint32_t wrapped = gsiAgent(f); /* 1-9 are taken: 10 */
	REQUIRE(clients.find(kMaxHiTid) != nullptr);
	CHECK(clients.find(kMaxHiTid)->client() == &f);
	REQUIRE(clients.find(10) != nullptr);
	CHECK(clients.find(10)->client() == &f);
	CHECK(clients.find(11) == nullptr);

	/* one low TID for all three: only the hi_tid tells the answers apart */
	for (uint32_t agent : { early, last, wrapped }) {
		UmadMsg m(agent, IB_MGMT_CLASS_PERF_MGMT, IB_MGMT_METHOD_GET, IB_PMA_CLASS_PORT_INFO, 0x77);
		m.to(lid2(), 1).timeout(1000, 0);
		REQUIRE(m.writeTo(f) > 0);
	}
	REQUIRE(wireTids.size() == 3);
	CHECK(wireTids[0] == (uint64_t(9) << 32 | 0x77));
	CHECK(wireTids[1] == (uint64_t(kMaxHiTid) << 32 | 0x77));
	CHECK(wireTids[2] == (uint64_t(10) << 32 | 0x77));
	poll();
	std::map<uint32_t, uint64_t> answered; /* agent id -> TID of its answer */
	std::vector<uint8_t> buf;
	while (readMad(f, buf) == 64 + 256) {
		CHECK(buf[64 + 3] == IB_MGMT_METHOD_GET_RESP);
		answered[hdrOf(buf).id] = tidIn(buf, 64);
	}
	CHECK(answered.size() == 3);
	CHECK(answered[early] == wireTids[0]);
	CHECK(answered[last] == wireTids[1]);
	CHECK(answered[wrapped] == wireTids[2]);
	CHECK(f.outstanding() == 0);
	subnet.setDropFilter(nullptr);
}

TEST_CASE_METHOD(EmuFixture, "read: sizes, EAGAIN, no partial reads, poll", "[umad][read]")
{
	UmadFile f(umad1());
	uint32_t id = gsiAgent(f);
	std::vector<uint8_t> buf;
	CHECK(readMad(f, buf, 63) == -EINVAL); /* smaller than the 64-byte header */
	CHECK(readMad(f, buf) == -EAGAIN);
	CHECK(f.poll() == (POLLOUT | POLLWRNORM));

	int wakeups = 0;
	f.setWakeup([&] { wakeups++; });
	UmadMsg m(id, IB_MGMT_CLASS_PERF_MGMT, IB_MGMT_METHOD_GET, IB_PMA_PORT_COUNTERS, 5);
	m.to(lid2(), 1).timeout(500, 0);
	m.mad[kPmaDataOffset + 1] = 1;
	REQUIRE(m.writeTo(f) > 0);
	CHECK(f.queued() == 0); /* answers come from the loop, not inside write() */
	poll();
	CHECK(wakeups == 1);
	CHECK(f.poll() == (POLLIN | POLLRDNORM | POLLOUT | POLLWRNORM));
	CHECK(readMad(f, buf, 64 + 255) == -EINVAL); /* too small for the MAD: nothing copied */
	CHECK(f.queued() == 1);
	REQUIRE(readMad(f, buf) == 64 + 256);
	const ib_user_mad_hdr &h = hdrOf(buf);
	CHECK(h.id == id);
	CHECK(h.status == 0);
	CHECK(h.length == 64 + 256);
	CHECK(h.qpn.get() == 1);
	CHECK(h.qkey.get() == 0);
	CHECK(h.lid.get() == lid2());
	CHECK(h.grh_present == 0);
	CHECK(h.pkey_index == 0);
	CHECK(buf[64 + 3] == IB_MGMT_METHOD_GET_RESP);
	CHECK(madHdr(*reinterpret_cast<const Mad *>(buf.data() + 64))->status.get() == 0);
	CHECK(readMad(f, buf) == -EAGAIN);
	CHECK(f.outstanding() == 0); /* the answer completed the request */
}

TEST_CASE_METHOD(EmuFixture, "the old 56-byte layout", "[umad][read]")
{
	UmadFile f(umad1());
	uint32_t id;
	REQUIRE(regAgent(f, 1, 0, 0, {}, 0, &id) == 0); /* no ENABLE_PKEY */
	REQUIRE(f.hdrSize() == 56);
	UmadMsg m(id, IB_MGMT_CLASS_PERF_MGMT, IB_MGMT_METHOD_GET, IB_PMA_CLASS_PORT_INFO, 5);
	m.to(lid2(), 1).timeout(500, 0);
	auto bytes = m.bytes(56);
	REQUIRE(f.write(bytes.data(), bytes.size()) == 56 + 256);
	poll();
	std::vector<uint8_t> buf;
	CHECK(readMad(f, buf, 55) == -EINVAL);
	CHECK(readMad(f, buf, 56 + 255) == -EINVAL);
	REQUIRE(readMad(f, buf, 56 + 256) == 56 + 256);
	CHECK(hdrOf(buf).length == 56 + 256);
	CHECK(buf[56 + 1] == IB_MGMT_CLASS_PERF_MGMT); /* the MAD starts at 56 */
	CHECK(buf[56 + 3] == IB_MGMT_METHOD_GET_RESP);
}

TEST_CASE_METHOD(EmuFixture, "timeouts: resends with the same TID, then ETIMEDOUT", "[umad][timeout]")
{
	UmadFile f(umad1());
	uint32_t id = gsiAgent(f);
	uint32_t before = p2->counters.rcvPkts;
	/* a vendor Send nobody listens for: dropped silently at host2 */
	UmadMsg m(id, kPing, IB_MGMT_METHOD_SEND, 0, 0x1000000042ULL);
	vendorOui(m, kOpenIbOui);
	m.to(lid2(), 1).timeout(100, 2);
	m.hdr.length = 1234; /* whatever the user wrote comes back */
	REQUIRE(m.writeTo(f) > 0);
	poll();
	std::vector<uint8_t> buf;
	CHECK(readMad(f, buf) == -EAGAIN);
	CHECK(p2->counters.rcvPkts - before == 1);
	advance(99);
	CHECK(p2->counters.rcvPkts - before == 1);
	advance(1);
	CHECK(p2->counters.rcvPkts - before == 2);
	advance(100);
	CHECK(p2->counters.rcvPkts - before == 3);
	CHECK(readMad(f, buf) == -EAGAIN);
	advance(100);
	CHECK(p2->counters.rcvPkts - before == 3); /* 1 + 2 retries */
	CHECK(f.outstanding() == 0);

	CHECK(readMad(f, buf, 64 + 23) == -EINVAL);
	REQUIRE(readMad(f, buf, 64 + 23 + 1) == 64 + 24);
	const ib_user_mad_hdr &h = hdrOf(buf);
	CHECK(h.status == ETIMEDOUT);
	CHECK(h.id == id);
	CHECK(h.timeout_ms == 100);
	CHECK(h.retries == 2);
	CHECK(h.length == 1234);
	CHECK(h.lid.get() == lid2());
	uint32_t hiTid = static_cast<uint32_t>(tidIn(buf, 64) >> 32);
	CHECK(hiTid != 0);
	CHECK((tidIn(buf, 64) & 0xffffffff) == 0x42);
	CHECK(buf[64 + 1] == kPing);

	/* timeout 0: no answer expected, nothing reported */
	m.timeout(0, 0);
	REQUIRE(m.writeTo(f) > 0);
	advance(10000);
	CHECK(readMad(f, buf) == -EAGAIN);
	CHECK(f.outstanding() == 0);
}

TEST_CASE_METHOD(EmuFixture, "responses go back by TID, to the agent and file that asked", "[umad][routing]")
{
	/* rdma-core >= 56 opens every umad device twice (SMI and GSI) */
	UmadFile smiFile(umad1()), gsiFile(umad1());
	uint32_t smi;
	smiFile.ioctl(IB_USER_MAD_ENABLE_PKEY, nullptr, 0);
	REQUIRE(regAgent(smiFile, 0, IB_MGMT_CLASS_SUBN_LID_ROUTED, 1, {}, 0, &smi) == 0);
	uint32_t gsi1 = gsiAgent(gsiFile);
	uint32_t gsi2 = gsiAgent(gsiFile);
	REQUIRE(gsi2 == 1);

	UmadMsg a(gsi1, IB_MGMT_CLASS_PERF_MGMT, IB_MGMT_METHOD_GET, IB_PMA_CLASS_PORT_INFO, 0x55);
	a.to(lid2(), 1).timeout(500, 0);
	UmadMsg b(gsi2, IB_MGMT_CLASS_PERF_MGMT, IB_MGMT_METHOD_GET, IB_PMA_CLASS_PORT_INFO, 0x55);
	b.to(lid1(), 1).timeout(500, 0); /* our own port: looped back by the HCA */
	UmadMsg c(smi, IB_MGMT_CLASS_SUBN_LID_ROUTED, IB_MGMT_METHOD_GET, IB_SMP_ATTR_NODE_INFO, 0x55);
	c.to(sm->lidOf(*p2->peer), 0).timeout(500, 0); /* sw2, LID-routed */
	REQUIRE(a.writeTo(gsiFile) > 0);
	REQUIRE(b.writeTo(gsiFile) > 0);
	REQUIRE(c.writeTo(smiFile) > 0);
	poll();

	std::vector<uint8_t> buf;
	REQUIRE(readMad(gsiFile, buf) == 64 + 256);
	CHECK(hdrOf(buf).id == gsi1);
	CHECK(hdrOf(buf).lid.get() == lid2());
	REQUIRE(readMad(gsiFile, buf) == 64 + 256);
	CHECK(hdrOf(buf).id == gsi2);
	CHECK(hdrOf(buf).lid.get() == lid1());
	CHECK(readMad(gsiFile, buf) == -EAGAIN);
	REQUIRE(readMad(smiFile, buf) == 64 + 256);
	CHECK(hdrOf(buf).id == smi);
	CHECK(hdrOf(buf).qpn.get() == 0);
	CHECK(overlay<ib_node_info>(buf.data() + 64 + 64)->node_guid.get() == 0x2c90200000002);
}

TEST_CASE_METHOD(EmuFixture, "DR SMPs: hop count 0 answered locally, others through the fabric", "[umad][dr]")
{
	UmadFile f(umad1());
	f.ioctl(IB_USER_MAD_ENABLE_PKEY, nullptr, 0);
	uint32_t smi;
	REQUIRE(regAgent(f, 0, IB_MGMT_CLASS_SUBN_DIRECTED_ROUTE, 1, {}, 0, &smi) == 0);
	uint32_t before = p1->counters.xmitPkts;

	UmadMsg local = drSmpMsg(smi, IB_SMP_ATTR_NODE_INFO, {}, 1);
	local.hdr.pkey_index = 0;
	local.timeout(1000, 3);
	REQUIRE(local.writeTo(f) == 64 + 256);
	poll();
	std::vector<uint8_t> buf;
	REQUIRE(readMad(f, buf) == 64 + 256);
	const ib_user_mad_hdr &h = hdrOf(buf);
	CHECK(h.lid.get() == 0xffff); /* build_smp_wc() */
	CHECK(h.qpn.get() == 0);
	CHECK(h.sl == 0);
	const ib_smp &s = *overlay<ib_smp>(buf.data() + 64);
	CHECK(s.method == IB_MGMT_METHOD_GET_RESP);
	CHECK(s.status.get() == IB_SMP_DIRECTION);
	CHECK(overlay<ib_node_info>(s.data)->node_guid.get() == 0x2c90300000100);
	CHECK(p1->counters.xmitPkts == before); /* never on the wire */
	CHECK(f.outstanding() == 0);

	/* two hops: sw1, then sw2 through port 7 */
	UmadMsg far = drSmpMsg(smi, IB_SMP_ATTR_NODE_DESC, { 1, 7 }, 2);
	far.timeout(1000, 0);
	REQUIRE(far.writeTo(f) > 0);
	poll();
	REQUIRE(readMad(f, buf) == 64 + 256);
	CHECK(std::string(reinterpret_cast<const char *>(buf.data() + 64 + 64)) == "ibemu-sw2");
	CHECK(overlay<ib_smp>(buf.data() + 64)->hop_ptr == 0);
}

TEST_CASE_METHOD(EmuFixture, "unsolicited requests reach the agent registered for them", "[umad][routing]")
{
	/* ibping: the server registers the OpenIB ping class with its OUI */
	UmadFile client(umad1()), server(umad2());
	uint32_t c = gsiAgent(client);
	uint32_t s = gsiAgent(server, kPing, { IB_MGMT_METHOD_GET }, 0, kOpenIbOui);

	UmadMsg ping(c, kPing, IB_MGMT_METHOD_GET, 0, 0x99);
	vendorOui(ping, kOpenIbOui);
	memcpy(ping.mad.data() + 40, "hello", 5);
	ping.to(lid2(), 1).timeout(1000, 0);
	ping.hdr.sl = 3;
	REQUIRE(ping.writeTo(client) > 0);
	poll();
	std::vector<uint8_t> buf;
	REQUIRE(readMad(server, buf) == 64 + 256);
	ib_user_mad_hdr h = hdrOf(buf);
	CHECK(h.id == s);
	CHECK(h.lid.get() == lid1());
	CHECK(h.sl == 3);
	CHECK(h.qpn.get() == 1);
	CHECK(memcmp(buf.data() + 64 + 40, "hello", 5) == 0);

	/* the server answers to where the request came from */
	std::vector<uint8_t> reply(buf);
	ib_user_mad_hdr &rh = *reinterpret_cast<ib_user_mad_hdr *>(reply.data());
	rh.id = s;
	rh.timeout_ms = 0;
	reply[64 + 3] = IB_MGMT_METHOD_GET_RESP;
	REQUIRE(server.write(reply.data(), reply.size()) == 64 + 256);
	poll();
	REQUIRE(readMad(client, buf) == 64 + 256);
	CHECK(hdrOf(buf).id == c);
	CHECK(buf[64 + 3] == IB_MGMT_METHOD_GET_RESP);
	CHECK((tidIn(buf, 64) & 0xffffffff) == 0x99);
	CHECK(memcmp(buf.data() + 64 + 40, "hello", 5) == 0);

	/* a Get for a class nobody registered: the kernel answers 0x000c */
	UmadMsg other(c, 0x33, IB_MGMT_METHOD_GET, 0, 0x9a);
	vendorOui(other, kOpenIbOui);
	other.to(lid2(), 1).timeout(1000, 0);
	REQUIRE(other.writeTo(client) > 0);
	poll();
	REQUIRE(readMad(client, buf) == 64 + 256);
	CHECK(buf[64 + 3] == IB_MGMT_METHOD_GET_RESP);
	CHECK(overlay<ib_mad_hdr>(buf.data() + 64)->status.get() == IB_MGMT_MAD_STATUS_UNSUPPORTED_METHOD_ATTRIB);
}

TEST_CASE_METHOD(EmuFixture, "PerfMgt: the simulated PMA, unless a user agent claims the class", "[umad][routing]")
{
	UmadFile client(umad1());
	uint32_t c = gsiAgent(client);
	UmadMsg get(c, IB_MGMT_CLASS_PERF_MGMT, IB_MGMT_METHOD_GET, IB_PMA_PORT_COUNTERS, 0x10);
	get.mad[kPmaDataOffset + 1] = 1;
	get.to(lid2(), 1).timeout(1000, 0);
	REQUIRE(get.writeTo(client) > 0);
	poll();
	std::vector<uint8_t> buf;
	REQUIRE(readMad(client, buf) == 64 + 256);
	CHECK(overlay<ib_pma_portcounters>(buf.data() + 64 + 64)->port_rcv_packets.get() == p2->counters.rcvPkts);

	UmadFile perfmgr(umad2());
	uint32_t pm = gsiAgent(perfmgr, IB_MGMT_CLASS_PERF_MGMT, { IB_MGMT_METHOD_GET });
	overlay<ib_mad_hdr>(get.mad.data())->tid = 0x11;
	REQUIRE(get.writeTo(client) > 0);
	poll();
	CHECK(readMad(client, buf) == -EAGAIN);
	REQUIRE(readMad(perfmgr, buf) == 64 + 256);
	CHECK(hdrOf(buf).id == pm);
}

TEST_CASE_METHOD(EmuFixture, "SA requests reach the agent where the SM runs", "[umad][routing]")
{
	UmadFile client(umad1()), sm2(umad2());
	uint32_t c = gsiAgent(client, IB_MGMT_CLASS_SUBN_ADM, {}, 1);
	uint32_t s = gsiAgent(sm2, IB_MGMT_CLASS_SUBN_ADM, { IB_MGMT_METHOD_GET, IB_SA_METHOD_GET_TABLE }, 1);
	UmadMsg q(c, IB_MGMT_CLASS_SUBN_ADM, IB_SA_METHOD_GET_TABLE, 0x11, 0x20);
	q.mad[36 + 8 + 7] = 0x42; /* something in the SA header (ComponentMask) */
	q.to(lid2(), 1).timeout(1000, 0);
	REQUIRE(q.writeTo(client) > 0);
	poll();
	std::vector<uint8_t> buf;
	REQUIRE(readMad(sm2, buf) == 64 + 256);
	CHECK(hdrOf(buf).id == s);
	CHECK(buf[64 + 36 + 8 + 7] == 0x42);
	CHECK(buf[64 + 24] == 0); /* RMPP header not active */
}

TEST_CASE_METHOD(EmuFixture, "close and unregister: queues, late answers", "[umad][close]")
{
	/* the PerfMgt Gets host1 sends, and the answers that come back to it */
	std::vector<uint64_t> gets, answers;
	subnet.setDropFilter([&](const Port &out, const Packet &pkt) {
		if (pkt.mad[1] != IB_MGMT_CLASS_PERF_MGMT)
			return false;
		uint64_t tid = madHdr(pkt.mad)->tid.get();
		if (&out == p1->peer && pkt.mad[3] == IB_MGMT_METHOD_GET_RESP)
			answers.push_back(tid);
		if (&out != p1 || pkt.mad[3] != IB_MGMT_METHOD_GET)
			return false;
		gets.push_back(tid);
		return gets.size() == 2; /* h's request is lost: only g's answer can reach h */
	});

	/* g asks and closes; h registers before the answer is back and asks the
	 * same. Were g's hi_tid handed to h, the two TIDs would be equal and g's
	 * answer would complete h's request. */
	{
		UmadFile g(umad1());
		uint32_t gid = gsiAgent(g);
		UmadMsg q(gid, IB_MGMT_CLASS_PERF_MGMT, IB_MGMT_METHOD_GET, IB_PMA_CLASS_PORT_INFO, 2);
		q.to(lid2(), 1).timeout(1000, 3);
		REQUIRE(q.writeTo(g) > 0);
	}
	UmadFile h(umad1());
	uint32_t hid = gsiAgent(h, IB_MGMT_CLASS_PERF_MGMT, { IB_MGMT_METHOD_GET }); /* the class's agent, too */
	UmadMsg same(hid, IB_MGMT_CLASS_PERF_MGMT, IB_MGMT_METHOD_GET, IB_PMA_CLASS_PORT_INFO, 2);
	same.to(lid2(), 1).timeout(1000, 0);
	REQUIRE(same.writeTo(h) > 0);
	REQUIRE(gets.size() == 2);
	CHECK(gets[0] >> 32 != gets[1] >> 32);
	uint32_t rcvBefore = p1->counters.rcvPkts;
	poll();
	/* the PMA answered g, and the answer reached host1 */
	REQUIRE(answers.size() == 1);
	CHECK(answers[0] == gets[0]);
	CHECK(p1->counters.rcvPkts - rcvBefore == 1);
	std::vector<uint8_t> buf;
	CHECK(readMad(h, buf) == -EAGAIN); /* dropped, not given to h */
	advance(1000);
	REQUIRE(readMad(h, buf) == 64 + 24); /* h's own request, unanswered */
	CHECK(hdrOf(buf).status == ETIMEDOUT);
	CHECK(hdrOf(buf).id == hid);
	advance(5000);
	CHECK(gets.size() == 2); /* g's retries went with it */
	CHECK(answers.size() == 1);
	CHECK(readMad(h, buf) == -EAGAIN);
	subnet.setDropFilter(nullptr);

	/* unregistering keeps what is already queued, with the old id */
	UmadFile f(umad1());
	uint32_t id = gsiAgent(f);
	UmadMsg m(id, IB_MGMT_CLASS_PERF_MGMT, IB_MGMT_METHOD_GET, IB_PMA_CLASS_PORT_INFO, 1);
	m.to(lid2(), 1).timeout(1000, 0);
	REQUIRE(m.writeTo(f) > 0);
	poll();
	REQUIRE(f.queued() == 1);
	REQUIRE(f.ioctl(IB_USER_MAD_UNREGISTER_AGENT, reinterpret_cast<uint8_t *>(&id), 4) == 0);
	REQUIRE(readMad(f, buf) == 64 + 256);
	CHECK(hdrOf(buf).id == id);
	CHECK(buf[64 + 3] == IB_MGMT_METHOD_GET_RESP);
	CHECK(readMad(f, buf) == -EAGAIN);
}

TEST_CASE_METHOD(EmuFixture, "GRH: sent with the local GID, received with the source GID", "[umad][read]")
{
	UmadFile client(umad1()), server(umad2());
	uint32_t c = gsiAgent(client);
	uint32_t s = gsiAgent(server, kPing, { IB_MGMT_METHOD_GET }, 0, kOpenIbOui);
	UmadMsg m(c, kPing, IB_MGMT_METHOD_GET, 0, 0x42);
	vendorOui(m, kOpenIbOui);
	m.to(lid2(), 1).timeout(1000, 0);
	m.hdr.grh_present = 1;
	m.hdr.gid_index = 0;
	m.hdr.hop_limit = 7;
	m.hdr.traffic_class = 0x20;
	m.hdr.flow_label = 0x12345;
	fabric::Gid dgid;
	REQUIRE(hca2->madPorts[0]->gid(0, dgid));
	memcpy(m.hdr.gid, dgid.data(), 16);
	REQUIRE(m.writeTo(client) > 0);
	poll();
	std::vector<uint8_t> buf;
	REQUIRE(readMad(server, buf) == 64 + 256);
	const ib_user_mad_hdr &h = hdrOf(buf);
	CHECK(h.id == s);
	CHECK(h.grh_present == 1);
	CHECK(h.gid_index == 0); /* the local GID the packet was sent to */
	CHECK(h.hop_limit == 7);
	CHECK(h.traffic_class == 0x20);
	CHECK(h.flow_label.get() == 0x12345);
	fabric::Gid sgid;
	REQUIRE(hca1->madPorts[0]->gid(0, sgid));
	CHECK(memcmp(h.gid, sgid.data(), 16) == 0); /* the sender's GID */
	CHECK(h.pkey_index == 0);
	CHECK(h.sl == 0);
}

/* rcv_has_same_gid(): a response to our request matches on the path bits of
 * the LID it arrived at, not on the LID it came from. Host 1 answers itself
 * (HCA loopback) with LMC 1, base LID 0x40. */
TEST_CASE_METHOD(EmuFixture, "responses match by destination path bits under LMC", "[umad][routing]")
{
	p1->lid = 0x40;
	p1->lmc = 1;
	UmadFile client(umad1()), perfmgr(umad1());
	uint32_t c = gsiAgent(client);
	uint32_t pm = gsiAgent(perfmgr, IB_MGMT_CLASS_PERF_MGMT, { IB_MGMT_METHOD_GET });
	UmadMsg get(c, IB_MGMT_CLASS_PERF_MGMT, IB_MGMT_METHOD_GET, IB_PMA_CLASS_PORT_INFO, 0x31);
	get.to(0x40, 1).timeout(1000, 0); /* path bits 0: sent from 0x40 */
	REQUIRE(get.writeTo(client) > 0);
	poll();
	std::vector<uint8_t> buf;
	REQUIRE(readMad(perfmgr, buf) == 64 + 256);
	CHECK(hdrOf(buf).lid.get() == 0x40);
	uint64_t tid = overlay<ib_mad_hdr>(buf.data() + 64)->tid.get();

	auto answer = [&](uint16_t dlid, uint8_t pathBits) {
		UmadMsg resp(pm, IB_MGMT_CLASS_PERF_MGMT, IB_MGMT_METHOD_GET_RESP, IB_PMA_CLASS_PORT_INFO, tid);
		resp.to(dlid, 1);
		resp.hdr.path_bits = pathBits;
		REQUIRE(resp.writeTo(perfmgr) > 0);
		poll();
	};
	answer(0x41, 0); /* to the other path: not ours, dropped */
	CHECK(readMad(client, buf) == -EAGAIN);
	answer(0x40, 1); /* from 0x41 to 0x40: matches although 0x41 was never asked */
	REQUIRE(readMad(client, buf) == 64 + 256);
	CHECK(hdrOf(buf).id == c);
	CHECK(hdrOf(buf).lid.get() == 0x41);
	CHECK(hdrOf(buf).path_bits == 0);
	answer(0x40, 0); /* the send is complete: a second answer is dropped */
	CHECK(readMad(client, buf) == -EAGAIN);
}
