// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// Packet capture: the bytes a port sends and receives (fabric/packet_format,
// the Subnet's tap, emu/verbs_packets), the daemon's capture streams
// (tools/observe/packet_capture) and the text trace (tools/observe/packet_text).
#include "tests/unit/fabric_helpers.h"
#include "tests/unit/verbs_helpers.h"

#include "emu/verbs_packets.h"
#include "fabric/packet_format.h"
#include "fabric/smp_attrs.h"
#include "tools/observe/packet_capture.h"
#include "tools/observe/packet_text.h"

#include <boost/crc.hpp>
#include <catch2/catch.hpp>

using namespace ibemu;
using namespace ibemu::fabric;
using namespace ibemu::test;

namespace {

/* A tap that keeps everything, as (port, out, bytes) */
struct Recorder final : PacketTap {
	struct Seen {
		const Port *port;
		bool out;
		std::vector<uint8_t> bytes;
	};
	std::vector<Seen> seen;
	const Port *only = nullptr;
	bool watches(const Port &p) const override { return !only || &p == only; }
	bool wantsData() const override { return true; }
	void onWire(const Port &p, bool out, std::span<const uint8_t> b) override
	{
		seen.push_back({ &p, out, { b.begin(), b.end() } });
	}
};

/* The daemon's end of a control stream, kept in memory */
struct FakeStream final : tools::ControlSocket::Stream {
	std::vector<nlohmann::ordered_json> lines;
	bool isOpen = true;
	size_t room = SIZE_MAX;
	std::function<void()> closedFn;
	bool write(std::string line) override
	{
		if (!isOpen || lines.size() >= room)
			return false;
		lines.push_back(nlohmann::ordered_json::parse(line));
		return true;
	}
	void close() override { isOpen = false; }
	bool open() const override { return isOpen; }
	void onClosed(std::function<void()> fn) override { closedFn = std::move(fn); }
};

} /* namespace */

TEST_CASE("capture: a MAD packet's bytes, LRH to VCRC", "[capture]")
{
	Packet pkt = drSmp(IB_MGMT_METHOD_GET, IB_SMP_ATTR_NODE_INFO, 0, { 1, 3 });
	pkt.srcQp = 0;
	std::vector<uint8_t> b = encodeMadPacket(pkt);
	REQUIRE(b.size() == 8 + 12 + 8 + 256 + 4 + 2);
	CHECK(b[0] == 0xf0); /* VL15, LVer 0 */
	CHECK((b[1] & 3) == IB_LNH_IBA_LOCAL);
	CHECK((b[2] << 8 | b[3]) == 0xffff); /* permissive DLID */
	CHECK(((b[4] << 8 | b[5]) & 0x7ff) == (b.size() - 2) / 4); /* PktLen: LRH to ICRC in words */
	CHECK(b[8] == (IB_OPCODE_UD | IB_OPCODE_SEND_ONLY));
	CHECK(b[9] == 0x40); /* MigReq, no pad */
	CHECK((b[12 + 8] | b[13 + 8] | b[14 + 8] | b[15 + 8]) == 0); /* Q_Key 0 for QP0 */
	CHECK(memcmp(b.data() + 28, pkt.mad.data(), 256) == 0);

	PacketView v;
	REQUIRE(parsePacket(b, v));
	CHECK(v.isMad);
	CHECK(v.vl == 15);
	CHECK(v.destQp == 0);
	CHECK(v.payload == 28);
	CHECK(v.payloadLen == 256);

	/* the ICRC does not cover the VL (a switch may change it), the VCRC does */
	std::vector<uint8_t> b2 = b;
	b2[0] = 0x00;
	const size_t icrc = b.size() - 6;
	CHECK(invariantCrc({ b.data(), icrc }) == invariantCrc({ b2.data(), icrc }));
	CHECK(variantCrc({ b.data(), b.size() - 2 }) != variantCrc({ b2.data(), b.size() - 2 }));
	/* but it covers the MAD */
	b2[40] ^= 1;
	CHECK(invariantCrc({ b.data(), icrc }) != invariantCrc({ b2.data(), icrc }));
	/* the stored CRCs are the ones computed */
	uint32_t stored = b[icrc] | b[icrc + 1] << 8 | b[icrc + 2] << 16 | uint32_t(b[icrc + 3]) << 24;
	CHECK(stored == invariantCrc({ b.data(), icrc }));

	/* with a GRH: 40 more bytes, LNH 3, and hop limit outside the ICRC */
	pkt.grh = true;
	pkt.hopLimit = 5;
	std::vector<uint8_t> g = encodeMadPacket(pkt);
	REQUIRE(g.size() == b.size() + 40);
	CHECK((g[1] & 3) == IB_LNH_IBA_GLOBAL);
	CHECK(g[8] >> 4 == 6); /* IPVer */
	CHECK(g[8 + 6] == 0x1b); /* NxtHdr: BTH */
	REQUIRE(parsePacket(g, v));
	CHECK(v.grh);
	CHECK(v.isMad);
	std::vector<uint8_t> g2 = g;
	g2[8 + 7] = 64;
	CHECK(invariantCrc({ g.data(), g.size() - 6 }) == invariantCrc({ g2.data(), g2.size() - 6 }));

	/* the VCRC is IBA 7.8.2's CRC-16, as boost's generic one computes it,
	 * at every length (eight bytes a step, then the rest) */
	std::vector<uint8_t> any(300);
	for (size_t i = 0; i < any.size(); i++)
		any[i] = static_cast<uint8_t>(i * 131 + 7);
	for (size_t len = 0; len <= any.size(); len++) {
		boost::crc_optimal<16, 0x100b, 0xffff, 0xffff, true, true> ref;
		ref.process_bytes(any.data(), len);
		INFO("length " << len);
		REQUIRE(variantCrc({ any.data(), len }) == ref.checksum());
	}

	/* garbage is refused, not read past */
	CHECK_FALSE(parsePacket(std::span(b).first(20), v));
	std::vector<uint8_t> bad = b;
	bad[5] ^= 0x10; /* PktLen disagrees with the size */
	CHECK_FALSE(parsePacket(bad, v));
}

TEST_CASE("capture: the tap sees a DR SMP on every cable it crosses", "[capture]")
{
	DefaultFabric f;
	Recorder rec;
	f.s.setTap(&rec);
	/* host1 -> sw1 (port 7) -> sw2: NodeInfo of sw2 */
	auto r = roundTrip(f.s, *f.host1, drSmp(IB_MGMT_METHOD_GET, IB_SMP_ATTR_NODE_INFO, 0, { 1, 7 }));
	f.s.setTap(nullptr);
	REQUIRE(r);
	/* request and response each cross two cables: out and in at both ends */
	REQUIRE(rec.seen.size() == 8);
	CHECK(rec.seen[0].port == f.host1);
	CHECK(rec.seen[0].out);
	CHECK(rec.seen[1].port == f.host1->peer);
	CHECK_FALSE(rec.seen[1].out);
	PacketView v;
	REQUIRE(parsePacket(rec.seen[0].bytes, v));
	const auto &smp0 = *overlay<ib_smp>(rec.seen[0].bytes.data() + v.payload);
	CHECK(smp0.hop_ptr == 1);
	REQUIRE(parsePacket(rec.seen[2].bytes, v));
	const auto &smp2 = *overlay<ib_smp>(rec.seen[2].bytes.data() + v.payload);
	CHECK(smp2.hop_ptr == 2); /* sw1 moved it on */
	CHECK(smp2.return_path[1] == f.host1->peer->num);
	CHECK(rec.seen.back().port == f.host1);
	CHECK_FALSE(rec.seen.back().out);

	/* no tap: nothing is told, and the fabric does the same */
	auto again = roundTrip(f.s, *f.host1, drSmp(IB_MGMT_METHOD_GET, IB_SMP_ATTR_NODE_INFO, 0, { 1, 7 }));
	REQUIRE(again);
	CHECK(*again == *r);
	CHECK(rec.seen.size() == 8);
}

TEST_CASE("capture: a capture stream names ports and ends, and keeps to its filter and count", "[capture]")
{
	DefaultFabric f;
	tools::PacketCapture cap(f.s);
	auto s = std::make_shared<FakeStream>();
	cap.start({ { "op", "capture" }, { "ports", { "ibemu-host1" } }, { "kinds", { "smp" } }, { "count", 4 } }, s);
	REQUIRE(s->lines.size() == 1);
	CHECK(s->lines[0]["ok"] == true);
	CHECK(s->lines[0]["ports"] == 1); /* host1 has one port */
	CHECK(f.s.tapping());

	/* a PMA GMP is not an SMP: filtered out */
	roundTrip(f.s, *f.host1, pmaMad(IB_MGMT_METHOD_GET, IB_PMA_PORT_COUNTERS, 1, f.host2->lid));
	CHECK(s->lines.size() == 1);

	roundTrip(f.s, *f.host1, drSmp(IB_MGMT_METHOD_GET, IB_SMP_ATTR_PORT_INFO, 3, { 1, 7 }));
	REQUIRE(s->lines.size() == 3);
	const auto &req = s->lines[1];
	CHECK(req["port"] == "ibemu-host1 HCA-1:1");
	CHECK(req["dir"] == "out");
	CHECK(req["peer"] == "ibemu-sw1:1");
	CHECK(req["src"] == "ibemu-host1 HCA-1");
	CHECK(req["dst"] == "ibemu-sw2");
	const auto &resp = s->lines[2];
	CHECK(resp["dir"] == "in");
	CHECK(resp["src"] == "ibemu-sw2");
	CHECK(resp["dst"] == "ibemu-host1 HCA-1");

	std::vector<uint8_t> bytes;
	tools::PacketPlace at;
	REQUIRE(tools::readRecord(req, bytes, at));
	CHECK(bytes.size() == 290);
	CHECK(at.port == "ibemu-host1 HCA-1:1");
	CHECK(at.out);
	tools::PacketText text;
	CHECK(text.describe(bytes, at) == "SubnGet(PortInfo) DR 0,1,7 → \"ibemu-sw2\" port 3");

	/* LID-routed: the LIDs' owners; the count of 4 ends the stream */
	roundTrip(f.s, *f.host1, lidSmp(IB_MGMT_METHOD_GET, IB_SMP_ATTR_NODE_INFO, 0, f.host2->lid));
	REQUIRE(s->lines.size() == 5);
	CHECK(s->lines[3]["src"] == "ibemu-host1 HCA-1");
	CHECK(s->lines[3]["dst"] == "ibemu-host2 HCA-1");
	CHECK_FALSE(s->isOpen);
	CHECK_FALSE(f.s.tapping()); /* the last capture gone, the tap is too */
}

TEST_CASE("capture: names that are not UTF-8 are written with U+FFFD", "[capture]")
{
	/* root may write any bytes to node_desc, as on the kernel */
	DefaultFabric f;
	f.host1->node->desc = "\xff\xfe host1";
	f.sw2->desc = std::string("sw\0\x80", 4);
	tools::PacketCapture cap(f.s);
	auto s = std::make_shared<FakeStream>();
	cap.start({ { "op", "capture" }, { "ports", { "\xff\xfe host1" } }, { "kinds", { "smp" } } }, s);
	REQUIRE(s->lines.size() == 1);
	CHECK(s->lines[0]["ok"] == true);
	roundTrip(f.s, *f.host1, drSmp(IB_MGMT_METHOD_GET, IB_SMP_ATTR_PORT_INFO, 3, { 1, 7 }));
	REQUIRE(s->lines.size() == 3); /* the lines parsed: they are JSON */
	CHECK(s->lines[1]["port"] == "\xef\xbf\xbd\xef\xbf\xbd host1:1");
	CHECK(s->lines[1]["src"] == "\xef\xbf\xbd\xef\xbf\xbd host1");
	CHECK(s->lines[1]["dst"] == std::string("sw\0\xef\xbf\xbd", 6));

	/* a refusal that quotes what the client sent */
	auto r = std::make_shared<FakeStream>();
	cap.start({ { "op", "capture" }, { "ports", { "\xff\xfe host1:9" } } }, r);
	REQUIRE(r->lines.size() == 1);
	CHECK(r->lines[0]["ok"] == false);
}

TEST_CASE("capture: bad requests are refused whole; a slow client loses lines, counted", "[capture]")
{
	DefaultFabric f;
	tools::PacketCapture cap(f.s);
	const std::pair<nlohmann::ordered_json, std::string> bad[] = {
		{ { { "op", "capture" }, { "ports", { "nosuch:1" } } }, "capture: no node \"nosuch\" in the fabric" },
		{ { { "op", "capture" }, { "ports", { "ibemu-sw1:9" } } },
		  "capture: \"ibemu-sw1:9\": ibemu-sw1 has ports 1-8" },
		{ { { "op", "capture" }, { "kinds", { "smtp" } } },
		  "capture: unknown kind \"smtp\" (smp, sa, pma, cm, gmp, mad, data)" },
		{ { { "op", "capture" }, { "count", 0 } },
		  "capture: \"count\" must be a number of packets, 1 or more" },
		{ { { "op", "capture" }, { "ports", "ibemu-sw1" } }, "capture: \"ports\" must be a list of NODE:PORT" },
		{ { { "op", "capture" }, { "verbose", true } }, "capture: unknown argument \"verbose\"" },
	};
	for (const auto &[req, err] : bad) {
		auto s = std::make_shared<FakeStream>();
		cap.start(req, s);
		REQUIRE(s->lines.size() == 1);
		CHECK(s->lines[0]["ok"] == false);
		CHECK(s->lines[0]["error"] == err);
		CHECK_FALSE(s->isOpen);
	}
	CHECK(cap.active() == 0);
	CHECK_FALSE(f.s.tapping());

	/* every CA port by default; a client that reads too slowly */
	auto s = std::make_shared<FakeStream>();
	cap.start({ { "op", "capture" } }, s);
	CHECK(s->lines[0]["ports"] == 6); /* host1-host4's six CA ports with cables or not */
	s->room = 2;
	roundTrip(f.s, *f.host1, drSmp(IB_MGMT_METHOD_GET, IB_SMP_ATTR_NODE_INFO, 0, { 1 }));
	roundTrip(f.s, *f.host1, drSmp(IB_MGMT_METHOD_GET, IB_SMP_ATTR_NODE_INFO, 0, { 1 }));
	s->room = SIZE_MAX;
	roundTrip(f.s, *f.host1, drSmp(IB_MGMT_METHOD_GET, IB_SMP_ATTR_NODE_INFO, 0, { 1 }));
	REQUIRE(s->lines.size() == 4);
	CHECK(s->lines[3]["lost"] == 3);

	/* the client goes away: its capture ends */
	REQUIRE(s->closedFn);
	s->closedFn();
	CHECK(cap.active() == 0);
	CHECK_FALSE(f.s.tapping());
}

TEST_CASE("capture: an RDMA WRITE and a READ as packets, with PSNs and the ACKs", "[capture][verbs]")
{
	Pair p; /* path MTU 1024 */
	Recorder rec;
	fabric::Port &host1 = *p.dev1().port(1);
	rec.only = &host1;
	p.subnet.setTap(&rec);
	memset(p.bufA, 0x5a, 2500);
	auto w = p.wr(IB_WR_RDMA_WRITE, 1);
	w.wr.rdma.remote_addr = reinterpret_cast<uint64_t>(p.bufB);
	w.wr.rdma.rkey = p.mrB.rkey;
	REQUIRE(p.a.postSend(p.qpA.qp_handle, w, { sge(p.bufA, 2500, p.mrA.lkey) }) == 0);
	REQUIRE(p.a.poll(p.cqA).size() == 1);

	/* three packets out (1024 + 1024 + 452), one ACK in */
	REQUIRE(rec.seen.size() == 4);
	PacketView v[4];
	for (int i = 0; i < 4; i++)
		REQUIRE(parsePacket(rec.seen[i].bytes, v[i]));
	CHECK(v[0].opcode == (IB_OPCODE_RC | IB_OPCODE_RDMA_WRITE_FIRST));
	CHECK(v[1].opcode == (IB_OPCODE_RC | IB_OPCODE_RDMA_WRITE_MIDDLE));
	CHECK(v[2].opcode == (IB_OPCODE_RC | IB_OPCODE_RDMA_WRITE_LAST));
	CHECK(v[0].payloadLen == 1024);
	CHECK(v[2].payloadLen == 452);
	CHECK(v[0].destQp == p.qpB.qpn);
	CHECK(v[1].psn == v[0].psn + 1);
	CHECK(v[2].psn == v[0].psn + 2);
	CHECK_FALSE(v[0].ackReq);
	CHECK(v[2].ackReq);
	CHECK(rec.seen[0].bytes[v[0].payload] == 0x5a);
	/* the RETH: remote address, R_Key, the whole length */
	const uint8_t *reth = rec.seen[0].bytes.data() + v[0].eth;
	CHECK((uint32_t(reth[12]) << 24 | reth[13] << 16 | reth[14] << 8 | reth[15]) == 2500);
	CHECK(rec.seen[3].out == false);
	CHECK(v[3].opcode == (IB_OPCODE_RC | IB_OPCODE_ACKNOWLEDGE));
	CHECK(v[3].psn == v[2].psn);
	CHECK(v[3].destQp == p.qpA.qpn);

	/* a READ of 1500: one request, two responses carrying B's bytes */
	rec.seen.clear();
	memset(p.bufB + 4096, 0x77, 1500);
	w = p.wr(IB_WR_RDMA_READ, 2);
	w.wr.rdma.remote_addr = reinterpret_cast<uint64_t>(p.bufB + 4096);
	w.wr.rdma.rkey = p.mrB.rkey;
	REQUIRE(p.a.postSend(p.qpA.qp_handle, w, { sge(p.bufA + 4096, 1500, p.mrA.lkey) }) == 0);
	REQUIRE(p.a.poll(p.cqA).size() == 1);
	REQUIRE(rec.seen.size() == 3);
	PacketView r[3];
	for (int i = 0; i < 3; i++)
		REQUIRE(parsePacket(rec.seen[i].bytes, r[i]));
	CHECK(r[0].opcode == (IB_OPCODE_RC | IB_OPCODE_RDMA_READ_REQUEST));
	CHECK(r[0].psn == v[2].psn + 1);
	CHECK(r[1].opcode == (IB_OPCODE_RC | IB_OPCODE_RDMA_READ_RESPONSE_FIRST));
	CHECK(r[2].opcode == (IB_OPCODE_RC | IB_OPCODE_RDMA_READ_RESPONSE_LAST));
	CHECK(r[1].psn == r[0].psn);
	CHECK(r[2].psn == r[0].psn + 1);
	CHECK(r[2].payloadLen == 1500 - 1024);
	CHECK(rec.seen[2].bytes[r[2].payload] == 0x77);

	tools::PacketText text;
	CHECK(text.describe(rec.seen[0].bytes, {}).rfind("RC RDMA READ REQUEST QP ", 0) == 0);
	p.subnet.setTap(nullptr);
}

TEST_CASE("capture: a count that ends inside a message; data only when asked for", "[capture][verbs]")
{
	Pair p;
	tools::PacketCapture cap(p.subnet);
	/* MADs only: the data path builds no packets */
	auto smp = std::make_shared<FakeStream>();
	cap.start({ { "op", "capture" }, { "kinds", { "smp" } } }, smp);
	CHECK(p.subnet.tapping());
	CHECK_FALSE(p.subnet.tappingData());

	/* one data packet wanted, a message of three: the capture (and with
	 * it the last wish for data) goes after the first */
	auto one = std::make_shared<FakeStream>();
	cap.start({ { "op", "capture" }, { "kinds", { "data" } }, { "count", 1 } }, one);
	CHECK(p.subnet.tappingData());
	auto w = p.wr(IB_WR_RDMA_WRITE, 1);
	w.wr.rdma.remote_addr = reinterpret_cast<uint64_t>(p.bufB);
	w.wr.rdma.rkey = p.mrB.rkey;
	REQUIRE(p.a.postSend(p.qpA.qp_handle, w, { sge(p.bufA, 2500, p.mrA.lkey) }) == 0);
	auto c = p.a.poll(p.cqA);
	REQUIRE(c.size() == 1);
	CHECK(c[0].status == IB_WC_SUCCESS);
	CHECK(one->lines.size() == 2); /* the reply, one packet */
	CHECK_FALSE(one->isOpen);
	CHECK(cap.active() == 1);
	CHECK_FALSE(p.subnet.tappingData());

	/* the last capture ends in the middle of a message: the tap goes too */
	smp->closedFn();
	auto last = std::make_shared<FakeStream>();
	cap.start({ { "op", "capture" }, { "kinds", { "data" } }, { "count", 2 } }, last);
	REQUIRE(p.a.postSend(p.qpA.qp_handle, w, { sge(p.bufA, 2500, p.mrA.lkey) }) == 0);
	REQUIRE(p.a.poll(p.cqA).size() == 1);
	CHECK(last->lines.size() == 3);
	CHECK_FALSE(p.subnet.tapping());
}

TEST_CASE("capture: which PSN an ACK and a NAK carry", "[capture]")
{
	PacketHeaders base;
	base.opcode = IB_OPCODE_RC;
	PacketView v;
	auto ack = emu::replyPackets(base, emu::WireReply::Ack, 0, 10, 12, 5, 1024, {});
	REQUIRE(parsePacket(ack.at(0), v));
	CHECK(v.psn == 12); /* an ACK: everything up to the last packet */
	CHECK(v.opcode == (IB_OPCODE_RC | IB_OPCODE_ACKNOWLEDGE));
	CHECK(ack[0][v.eth] == emu::kAethAck);
	CHECK((ack[0][v.eth + 1] << 16 | ack[0][v.eth + 2] << 8 | ack[0][v.eth + 3]) == 5); /* MSN */
	auto nak = emu::replyPackets(base, emu::WireReply::Nak, emu::kAethNakRemoteAccess, 10, 12, 5, 1024, {});
	REQUIRE(parsePacket(nak.at(0), v));
	CHECK(v.psn == 10); /* a NAK: the packet found in error, the first */
	CHECK(nak[0][v.eth] == emu::kAethNakRemoteAccess);
	auto rnr = emu::replyPackets(base, emu::WireReply::RnrNak, emu::kAethRnrNak | 14, 10, 12, 5, 1024, {});
	REQUIRE(parsePacket(rnr.at(0), v));
	CHECK(v.psn == 10);
	CHECK(rnr[0][v.eth] == (emu::kAethRnrNak | 14));
}

TEST_CASE("capture: an opcode's name says its transport, XRC's too", "[capture]")
{
	CHECK(tools::opcodeName(IB_OPCODE_RC | IB_OPCODE_SEND_ONLY) == "RC SEND ONLY");
	CHECK(tools::opcodeName(IB_OPCODE_UD | IB_OPCODE_SEND_ONLY_WITH_IMMEDIATE) == "UD SEND ONLY WITH IMMEDIATE");
	CHECK(tools::opcodeName(IB_OPCODE_XRC | IB_OPCODE_RDMA_WRITE_ONLY) == "XRC RDMA WRITE ONLY");
	CHECK(tools::opcodeName(0xe4) == "transport 0x7 SEND ONLY"); /* manufacturer specific */
}
