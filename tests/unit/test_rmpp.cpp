// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// RMPP between two local HCAs across the fabric: a GetTable-sized response,
// a lost segment, a multi-segment request, user RMPP and giving up.
#include "tests/unit/emu_helpers.h"

#include "emu/mad_rmpp.h"

#include <catch2/catch.hpp>

#include <cerrno>
#include <map>
#include <optional>
#include <set>

using namespace ibemu;
using namespace ibemu::test;
using emu::UmadFile;

namespace {

constexpr size_t hs = 64;
constexpr size_t kSaHdr = 56;

uint8_t pattern(size_t i)
{
	return static_cast<uint8_t>((i * 7 + 3) % 251);
}

struct SaPair : EmuFixture {
	UmadFile client{ umad1() };
	UmadFile sa{ umad2() };
	uint32_t c = 0, s = 0;
	std::vector<uint8_t> request; /* as the SA read it */

	SaPair()
	{
		REQUIRE(client.ioctl(IB_USER_MAD_ENABLE_PKEY, nullptr, 0) == 0);
		REQUIRE(sa.ioctl(IB_USER_MAD_ENABLE_PKEY, nullptr, 0) == 0);
		REQUIRE(regAgent(client, 1, IB_MGMT_CLASS_SUBN_ADM, 2, {}, 1, &c) == 0);
		REQUIRE(regAgent(sa, 1, IB_MGMT_CLASS_SUBN_ADM, 2, { IB_MGMT_METHOD_GET, IB_SA_METHOD_GET_TABLE, 0x14 },
				 1, &s) == 0);
	}

	void ask(uint8_t method = IB_SA_METHOD_GET_TABLE, uint32_t timeoutMs = 5000)
	{
		UmadMsg q(c, IB_MGMT_CLASS_SUBN_ADM, method, 0x11, 0x30);
		q.to(lid2(), 1).timeout(timeoutMs, 0);
		REQUIRE(q.writeTo(client) == ssize_t(hs + 256));
		drain();
		REQUIRE(readMad(sa, request) == ssize_t(hs + 256));
	}

	/* the SA answers with `len` bytes of records, RMPP active */
	void answer(size_t len, uint8_t method = 0x92)
	{
		std::vector<uint8_t> buf(hs + kSaHdr + len, 0);
		memcpy(buf.data(), request.data(), hs + kSaHdr);
		ib_user_mad_hdr &h = *reinterpret_cast<ib_user_mad_hdr *>(buf.data());
		h.id = s;
		h.timeout_ms = 0;
		h.retries = 3;
		buf[hs + 3] = method;
		buf[hs + 26] = emu::IB_MGMT_RMPP_FLAG_ACTIVE;
		buf[hs + 36 + 8 + 1] = 6; /* SA AttributeOffset: 48-byte records */
		for (size_t i = 0; i < len; i++)
			buf[hs + kSaHdr + i] = pattern(i);
		REQUIRE(sa.write(buf.data(), buf.size()) == ssize_t(buf.size()));
	}

	void checkMessage(const std::vector<uint8_t> &buf, size_t len)
	{
		REQUIRE(buf.size() == hs + kSaHdr + len);
		CHECK(hdrOf(buf).length == hs + kSaHdr + len);
		CHECK(buf[hs + 3] == 0x92);
		CHECK(buf[hs + 25] == emu::IB_MGMT_RMPP_TYPE_DATA);
		CHECK((buf[hs + 26] & 7) == (emu::IB_MGMT_RMPP_FLAG_ACTIVE | emu::IB_MGMT_RMPP_FLAG_FIRST));
		CHECK(overlay<be32>(buf.data() + hs + 28)->get() == 1);
		CHECK(buf[hs + 36 + 8 + 1] == 6);
		size_t bad = 0;
		for (size_t i = 0; i < len; i++)
			bad += buf[hs + kSaHdr + i] != pattern(i);
		CHECK(bad == 0);
	}
};

/* counts DATA segments leaving a port, by segment number */
struct SegmentWatch {
	std::map<uint32_t, int> sent;
	std::set<uint32_t> dropOnce;

	bool operator()(const Port &out, const Packet &pkt, const Port &from)
	{
		if (&out != &from || pkt.mad[1] != IB_MGMT_CLASS_SUBN_ADM || pkt.mad[25] != emu::IB_MGMT_RMPP_TYPE_DATA)
			return false;
		uint32_t seg = overlay<be32>(pkt.mad.data() + 28)->get();
		sent[seg]++;
		return dropOnce.erase(seg) > 0;
	}
};

} /* namespace */

TEST_CASE_METHOD(SaPair, "a 300 KiB GetTable response crosses the fabric intact", "[rmpp]")
{
	SegmentWatch watch;
	subnet.setDropFilter([&](const Port &o, const Packet &p) { return watch(o, p, *p2); });
	const size_t len = 300 * 1024;
	ask();
	answer(len);
	drain();

	CHECK(watch.sent.size() == (len + 199) / 200); /* 200 data bytes a segment */
	for (auto &[seg, n] : watch.sent)
		REQUIRE(n == 1);
	std::vector<uint8_t> buf;
	/* first a buffer for one MAD: ENOSPC, the header says how much is needed */
	REQUIRE(readMad(client, buf, hs + 256) == -ENOSPC);
	CHECK(hdrOf(buf).length == hs + kSaHdr + len);
	CHECK(hdrOf(buf).id == c);
	CHECK(buf[hs + 3] == 0x92);
	CHECK(client.queued() == 1); /* still there */
	CHECK(readMad(client, buf, hs + 255) == -EINVAL);
	REQUIRE(readMad(client, buf, hs + kSaHdr + len) == ssize_t(hs + kSaHdr + len));
	checkMessage(buf, len);
	CHECK(client.outstanding() == 0);
	CHECK(sa.outstanding() == 0); /* fully ACKed: done, and silently */
	CHECK(readMad(sa, buf) == -EAGAIN);
	subnet.setDropFilter(nullptr);
}

TEST_CASE_METHOD(SaPair, "a lost segment is sent again after the ACK timeout", "[rmpp]")
{
	SegmentWatch watch;
	watch.dropOnce = { 20 };
	subnet.setDropFilter([&](const Port &o, const Packet &p) { return watch(o, p, *p2); });
	const size_t len = 40 * 1024;
	ask();
	answer(len);
	drain();
	std::vector<uint8_t> buf;
	CHECK(readMad(client, buf, 1 << 20) == -EAGAIN); /* stuck behind segment 20 */
	CHECK(sa.outstanding() == 1);
	advance(1999);
	CHECK(watch.sent[20] == 1);
	advance(1); /* the 2 s ACK timer: go back to last_ack + 1 */
	drain();
	CHECK(watch.sent[20] == 2);
	CHECK(watch.sent[2] == 2); /* go-back-N from segment 2 */
	REQUIRE(readMad(client, buf, 1 << 20) == ssize_t(hs + kSaHdr + len));
	checkMessage(buf, len);
	CHECK(sa.outstanding() == 0);
	subnet.setDropFilter(nullptr);
}

TEST_CASE_METHOD(SaPair, "a transfer that cannot finish fails on both sides", "[rmpp]")
{
	/* every segment after the first is lost; RMPP ABORTs leaving host1 are kept */
	std::vector<std::vector<uint8_t>> aborts;
	subnet.setDropFilter([&](const Port &o, const Packet &p) {
		if (&o == p1 && p.mad[1] == IB_MGMT_CLASS_SUBN_ADM && p.mad[25] == emu::IB_MGMT_RMPP_TYPE_ABORT)
			aborts.emplace_back(p.mad.begin(), p.mad.end());
		return &o == p2 && p.mad[25] == emu::IB_MGMT_RMPP_TYPE_DATA &&
			overlay<be32>(p.mad.data() + 28)->get() > 1;
	});
	ask(IB_SA_METHOD_GET_TABLE, 100000);
	answer(10 * 1024);
	drain();
	/* the sender: the first window and three retries, 2 s each, then a
	 * timeout report (mad_rmpp.c sends no ABORT for it) */
	for (int i = 0; i < 3; i++)
		advance(2000);
	advance(1999);
	std::vector<uint8_t> buf;
	CHECK(readMad(sa, buf) == -EAGAIN);
	advance(1);
	REQUIRE(readMad(sa, buf) == ssize_t(hs + 24));
	CHECK(hdrOf(buf).status == ETIMEDOUT);
	CHECK(hdrOf(buf).id == s);
	CHECK(buf[hs + 3] == 0x92); /* the MAD header as sent */
	CHECK(sa.outstanding() == 0);
	CHECK(aborts.empty());

	/* the receiver: 40 s after segment 1, ABORT with status T2L to the SA */
	advance(40000 - 8000 - 1);
	CHECK(aborts.empty());
	advance(1);
	REQUIRE(aborts.size() == 1);
	const std::vector<uint8_t> &a = aborts[0];
	CHECK(a[3] == IB_SA_METHOD_GET_TABLE); /* the response bit flipped */
	CHECK(overlay<ib_mad_hdr>(a.data())->tid.get() == overlay<ib_mad_hdr>(request.data() + hs)->tid.get());
	CHECK(a[24] == emu::IB_MGMT_RMPP_VERSION);
	CHECK((a[26] & emu::IB_MGMT_RMPP_FLAG_ACTIVE) != 0);
	CHECK(a[27] == emu::IB_MGMT_RMPP_STATUS_T2L);
	drain();
	CHECK(readMad(client, buf, 1 << 20) == -EAGAIN); /* nothing delivered */
	CHECK(readMad(sa, buf) == -EAGAIN); /* its send was over already */
	advance(100000); /* the client's request was never answered */
	REQUIRE(readMad(client, buf) == ssize_t(hs + 24));
	CHECK(hdrOf(buf).status == ETIMEDOUT);
	CHECK(aborts.size() == 1);
	subnet.setDropFilter(nullptr);
}

TEST_CASE_METHOD(SaPair, "a multi-segment request is reassembled at the SA", "[rmpp]")
{
	const size_t len = 10 * 1024;
	std::vector<uint8_t> buf(hs + kSaHdr + len, 0);
	ib_user_mad_hdr &h = *reinterpret_cast<ib_user_mad_hdr *>(buf.data());
	h.id = c;
	h.lid = lid2();
	h.qpn = 1;
	h.timeout_ms = 3000;
	buf[hs] = 1;
	buf[hs + 1] = IB_MGMT_CLASS_SUBN_ADM;
	buf[hs + 2] = 2;
	buf[hs + 3] = 0x14; /* GetMulti */
	buf[hs + 26] = emu::IB_MGMT_RMPP_FLAG_ACTIVE;
	for (size_t i = 0; i < len; i++)
		buf[hs + kSaHdr + i] = pattern(i);
	REQUIRE(client.write(buf.data(), buf.size()) == ssize_t(buf.size()));
	drain();
	std::vector<uint8_t> got;
	REQUIRE(readMad(sa, got, 1 << 20) == ssize_t(hs + kSaHdr + len));
	CHECK(got[hs + 3] == 0x14);
	size_t bad = 0;
	for (size_t i = 0; i < len; i++)
		bad += got[hs + kSaHdr + i] != pattern(i);
	CHECK(bad == 0);
	CHECK(client.outstanding() == 1); /* all ACKed, now waiting for the answer */

	/* the answer: one plain MAD */
	std::vector<uint8_t> resp(got.begin(), got.begin() + hs + 256);
	reinterpret_cast<ib_user_mad_hdr *>(resp.data())->id = s;
	reinterpret_cast<ib_user_mad_hdr *>(resp.data())->timeout_ms = 0;
	resp[hs + 3] = 0x94;
	resp[hs + 26] = 0;
	REQUIRE(sa.write(resp.data(), resp.size()) == ssize_t(resp.size()));
	drain();
	REQUIRE(readMad(client, got) == ssize_t(hs + 256));
	CHECK(got[hs + 3] == 0x94);
	CHECK(client.outstanding() == 0);
}

TEST_CASE_METHOD(EmuFixture, "user-RMPP agents see raw segments and do their own ACKs", "[rmpp]")
{
	UmadFile client(umad1()), sa(umad2());
	uint32_t c, s;
	REQUIRE(regAgent2(client, 1, IB_MGMT_CLASS_SUBN_ADM, 2, {}, IB_USER_MAD_USER_RMPP, 1, &c) == 0);
	REQUIRE(regAgent2(sa, 1, IB_MGMT_CLASS_SUBN_ADM, 2, { IB_SA_METHOD_GET_TABLE }, 0, 1, &s) == 0);
	UmadMsg q(c, IB_MGMT_CLASS_SUBN_ADM, IB_SA_METHOD_GET_TABLE, 0x11, 0x31);
	q.to(lid2(), 1).timeout(5000, 0);
	REQUIRE(q.writeTo(client) > 0);
	drain();
	std::vector<uint8_t> req;
	REQUIRE(readMad(sa, req) == ssize_t(hs + 256));

	const size_t len = 3 * 200 - 50; /* three segments */
	std::vector<uint8_t> buf(hs + kSaHdr + len, 0);
	memcpy(buf.data(), req.data(), hs + kSaHdr);
	reinterpret_cast<ib_user_mad_hdr *>(buf.data())->id = s;
	reinterpret_cast<ib_user_mad_hdr *>(buf.data())->timeout_ms = 0;
	buf[hs + 3] = 0x92;
	buf[hs + 26] = emu::IB_MGMT_RMPP_FLAG_ACTIVE;
	REQUIRE(sa.write(buf.data(), buf.size()) == ssize_t(buf.size()));
	drain();

	auto segOf = [](const std::vector<uint8_t> &b) { return overlay<be32>(b.data() + hs + 28)->get(); };
	std::vector<uint8_t> got;
	REQUIRE(readMad(client, got) == ssize_t(hs + 256)); /* one 256-byte segment, no reassembly */
	CHECK(segOf(got) == 1);
	CHECK((got[hs + 26] & 7) == (emu::IB_MGMT_RMPP_FLAG_ACTIVE | emu::IB_MGMT_RMPP_FLAG_FIRST));
	CHECK(overlay<be32>(got.data() + hs + 32)->get() == 3 * 220 - 50);
	std::vector<uint8_t> none;
	CHECK(readMad(client, none) == -EAGAIN); /* the sender waits for our ACK */

	auto ack = [&](uint32_t seg, uint32_t newwin) {
		std::vector<uint8_t> a(hs + 256, 0);
		memcpy(a.data(), got.data(), hs + kSaHdr);
		reinterpret_cast<ib_user_mad_hdr *>(a.data())->id = c;
		reinterpret_cast<ib_user_mad_hdr *>(a.data())->timeout_ms = 0;
		reinterpret_cast<ib_user_mad_hdr *>(a.data())->lid = lid2();
		a[hs + 3] = IB_SA_METHOD_GET_TABLE; /* the response bit flipped */
		a[hs + 25] = emu::IB_MGMT_RMPP_TYPE_ACK;
		a[hs + 26] = emu::IB_MGMT_RMPP_FLAG_ACTIVE;
		overlay<be32>(a.data() + hs + 28)->set(seg);
		overlay<be32>(a.data() + hs + 32)->set(newwin);
		REQUIRE(client.write(a.data(), a.size()) == ssize_t(a.size()));
		drain();
	};
	ack(1, 3);
	REQUIRE(readMad(client, got) == ssize_t(hs + 256)); /* unsolicited, delivered anyway */
	CHECK(segOf(got) == 2);
	REQUIRE(readMad(client, got) == ssize_t(hs + 256));
	CHECK(segOf(got) == 3);
	CHECK((got[hs + 26] & emu::IB_MGMT_RMPP_FLAG_LAST) != 0);
	CHECK(overlay<be32>(got.data() + hs + 32)->get() == 220 - 50);
	CHECK(sa.outstanding() == 1);
	ack(3, 3);
	CHECK(sa.outstanding() == 0);
}

namespace {

/* The SA side sends raw segments (user RMPP), so the test decides which
 * segments the client's kernel reassembly sees and when, and the SA reads
 * the ACKs and ABORTs that reassembly sends back. */
struct RawSa : EmuFixture {
	UmadFile client{ umad1() };
	UmadFile sa{ umad2() };
	uint32_t c = 0, s = 0;
	std::vector<uint8_t> request;

	struct Control {
		uint8_t type, status;
		uint32_t seg, newwin;
	};

	RawSa()
	{
		REQUIRE(client.ioctl(IB_USER_MAD_ENABLE_PKEY, nullptr, 0) == 0);
		REQUIRE(sa.ioctl(IB_USER_MAD_ENABLE_PKEY, nullptr, 0) == 0);
		REQUIRE(regAgent(client, 1, IB_MGMT_CLASS_SUBN_ADM, 2, {}, 1, &c) == 0);
		REQUIRE(regAgent2(sa, 1, IB_MGMT_CLASS_SUBN_ADM, 2, { IB_SA_METHOD_GET_TABLE }, IB_USER_MAD_USER_RMPP,
				  1, &s) == 0);
		UmadMsg q(c, IB_MGMT_CLASS_SUBN_ADM, IB_SA_METHOD_GET_TABLE, 0x11, 0x40);
		q.to(lid2(), 1).timeout(1000000, 0); /* outlives every timer here */
		REQUIRE(q.writeTo(client) == ssize_t(hs + 256));
		drain();
		REQUIRE(readMad(sa, request) == ssize_t(hs + 256));
	}

	/* DATA segment n of a GetTableResp of `count` full segments */
	void segment(uint32_t n, uint32_t count = 3)
	{
		std::vector<uint8_t> b(hs + 256, 0);
		memcpy(b.data(), request.data(), hs + kSaHdr);
		ib_user_mad_hdr &h = *reinterpret_cast<ib_user_mad_hdr *>(b.data());
		h.id = s;
		h.timeout_ms = 0;
		b[hs + 3] = 0x92;
		b[hs + 24] = emu::IB_MGMT_RMPP_VERSION;
		b[hs + 25] = emu::IB_MGMT_RMPP_TYPE_DATA;
		b[hs + 26] = static_cast<uint8_t>(emu::IB_MGMT_RMPP_FLAG_ACTIVE |
						  (n == 1 ? emu::IB_MGMT_RMPP_FLAG_FIRST : 0) |
						  (n == count ? emu::IB_MGMT_RMPP_FLAG_LAST : 0));
		overlay<be32>(b.data() + hs + 28)->set(n);
		overlay<be32>(b.data() + hs + 32)->set(n == 1 ? count * 220 : n == count ? 220 : 0);
		for (size_t i = 0; i < 200; i++)
			b[hs + kSaHdr + i] = pattern((n - 1) * 200 + i);
		REQUIRE(sa.write(b.data(), b.size()) == ssize_t(b.size()));
		drain();
	}

	/* the next RMPP control MAD the client sent the SA, if any */
	std::optional<Control> control()
	{
		std::vector<uint8_t> b;
		if (readMad(sa, b) != ssize_t(hs + 256))
			return std::nullopt;
		CHECK(b[hs + 3] == IB_SA_METHOD_GET_TABLE); /* GetTableResp with the response bit flipped */
		CHECK(overlay<ib_mad_hdr>(b.data() + hs)->tid.get() ==
		      overlay<ib_mad_hdr>(request.data() + hs)->tid.get());
		return Control{ b[hs + 25], b[hs + 27], overlay<be32>(b.data() + hs + 28)->get(),
				overlay<be32>(b.data() + hs + 32)->get() };
	}
	bool acked(uint32_t seg, uint32_t newwin)
	{
		auto ctl = control();
		return ctl && ctl->type == emu::IB_MGMT_RMPP_TYPE_ACK && ctl->status == 0 && ctl->seg == seg &&
			ctl->newwin == newwin;
	}
};

} /* namespace */

TEST_CASE_METHOD(RawSa, "RMPP receiver: ABORT T2L after 40 s, and the record is gone", "[rmpp]")
{
	segment(1);
	CHECK(acked(1, 1 + 64));
	advance(39999);
	CHECK_FALSE(control());
	advance(1);
	auto abort = control();
	REQUIRE(abort);
	CHECK(abort->type == emu::IB_MGMT_RMPP_TYPE_ABORT);
	CHECK(abort->status == emu::IB_MGMT_RMPP_STATUS_T2L);
	CHECK_FALSE(control());
	/* nothing left of the transfer: segment 2 finds no record and is
	 * dropped; segment 1 starts a new one (a record kept in the timed-out
	 * state would swallow it) */
	segment(2);
	CHECK_FALSE(control());
	segment(1);
	CHECK(acked(1, 1 + 64));
	std::vector<uint8_t> buf;
	CHECK(readMad(client, buf, 1 << 20) == -EAGAIN);
}

TEST_CASE_METHOD(RawSa, "RMPP receiver: a finished transfer re-ACKs its last segment for 10 s", "[rmpp]")
{
	segment(1);
	CHECK(acked(1, 1 + 64));
	segment(2);
	CHECK_FALSE(control()); /* neither a window end nor the last */
	segment(3);
	CHECK(acked(3, 1 + 64));
	std::vector<uint8_t> buf;
	REQUIRE(readMad(client, buf, 1 << 20) == ssize_t(hs + kSaHdr + 600));
	size_t bad = 0;
	for (size_t i = 0; i < 600; i++)
		bad += buf[hs + kSaHdr + i] != pattern(i);
	CHECK(bad == 0);
	CHECK(client.outstanding() == 0);

	advance(9999);
	segment(3); /* the sender missed our ACK: tell it again, deliver nothing */
	CHECK(acked(3, 1 + 64));
	CHECK(readMad(client, buf, 1 << 20) == -EAGAIN);
	advance(1);
	segment(3); /* the record is gone: ignored */
	CHECK_FALSE(control());
	CHECK(readMad(client, buf, 1 << 20) == -EAGAIN);
}

TEST_CASE_METHOD(SaPair, "RMPP sender: a timeout under 2 s is the ACK timeout", "[rmpp]")
{
	/* count the client's DATA segments; lose the SA's first ACK */
	SegmentWatch watch;
	int acks = 0;
	subnet.setDropFilter([&](const Port &o, const Packet &p) {
		if (&o == p2 && p.mad[1] == IB_MGMT_CLASS_SUBN_ADM && p.mad[25] == emu::IB_MGMT_RMPP_TYPE_ACK)
			return ++acks == 1;
		return watch(o, p, *p1);
	});
	const size_t len = 10 * 1024;
	std::vector<uint8_t> buf(hs + kSaHdr + len, 0);
	ib_user_mad_hdr &h = *reinterpret_cast<ib_user_mad_hdr *>(buf.data());
	h.id = c;
	h.lid = lid2();
	h.qpn = 1;
	h.timeout_ms = 500;
	h.retries = 2;
	buf[hs] = 1;
	buf[hs + 1] = IB_MGMT_CLASS_SUBN_ADM;
	buf[hs + 2] = 2;
	buf[hs + 3] = 0x14; /* GetMulti */
	buf[hs + 26] = emu::IB_MGMT_RMPP_FLAG_ACTIVE;
	for (size_t i = 0; i < len; i++)
		buf[hs + kSaHdr + i] = pattern(i);
	REQUIRE(client.write(buf.data(), buf.size()) == ssize_t(buf.size()));
	drain();
	CHECK(acks == 1);
	CHECK(watch.sent.size() == 1); /* segment 1 alone, its ACK lost */
	advance(499);
	CHECK(watch.sent[1] == 1);
	advance(1); /* 500 ms, not 2 s: segment 1 again */
	drain();
	CHECK(watch.sent[1] == 2);
	CHECK(acks >= 2);
	CHECK(watch.sent.size() == (len + 199) / 200); /* the rest followed its ACK */
	std::vector<uint8_t> got;
	REQUIRE(readMad(sa, got, 1 << 20) == ssize_t(hs + kSaHdr + len));
	CHECK(client.outstanding() == 1); /* all ACKed, waiting for the answer */
	subnet.setDropFilter(nullptr);
}
