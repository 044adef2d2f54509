// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// IPoIB (emu/ipoib.h) on the default fabric: host1's and host2's ports join
// the broadcast group through the SA, resolve each other by ARP over
// InfiniBand and carry IPv4 packets as UD SENDs across both switches.
#include "tests/unit/sa_helpers.h"
#include "tests/unit/verbs_helpers.h"

#include "emu/ipoib.h"
#include "emu/verbs_path.h"
#include "fabric/node.h"
#include "fabric/packet_format.h"
#include "fabric/packet_tap.h"
#include "fabric/subnet.h"

#include <catch2/catch.hpp>

#include <arpa/inet.h>

#include <set>

using namespace ibemu;
using namespace ibemu::emu;
using namespace ibemu::test;

namespace {

/* A tap that keeps the packets crossing one port, as a capture sees them */
struct Recorder final : fabric::PacketTap {
	struct Seen {
		bool out;
		std::vector<uint8_t> bytes;
	};
	std::vector<Seen> seen;
	const fabric::Port *only = nullptr;
	bool watches(const fabric::Port &p) const override { return &p == only; }
	bool wantsData() const override { return true; }
	void onWire(const fabric::Port &, bool out, std::span<const uint8_t> b) override
	{
		seen.push_back({ out, { b.begin(), b.end() } });
	}
	/* the UD SENDs among them, parsed */
	std::vector<std::pair<fabric::PacketView, const Seen *>> sends() const
	{
		std::vector<std::pair<fabric::PacketView, const Seen *>> out;
		for (const Seen &s : seen) {
			fabric::PacketView v;
			if (fabric::parsePacket(s.bytes, v) && v.opcode == (fabric::IB_OPCODE_UD | fabric::IB_OPCODE_SEND_ONLY) &&
			    v.destQp != 1)
				out.emplace_back(v, &s);
		}
		return out;
	}
};

using Packets = std::vector<std::vector<uint8_t>>;

/* a UDP datagram in an IPv4 packet, `len` bytes of payload */
std::vector<uint8_t> ipv4(uint32_t src, uint32_t dst, size_t len, uint8_t fill)
{
	std::vector<uint8_t> p(20 + 8 + len, fill);
	const size_t total = p.size();
	p[0] = 0x45;
	p[1] = 0;
	p[2] = uint8_t(total >> 8);
	p[3] = uint8_t(total);
	p[4] = p[5] = p[6] = p[7] = 0;
	p[8] = 64;
	p[9] = 17;
	p[10] = p[11] = 0;
	memcpy(&p[12], &src, 4);
	memcpy(&p[16], &dst, 4);
	return p;
}

fabric::Gid gidOf(const fabric::Port &p)
{
	return emu::portGid(p);
}

const fabric::Gid kBroadcastMgid{ 0xff, 0x12, 0x40, 0x1b, 0xff, 0xff, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff };
constexpr uint64_t kJoinMask = MCR_MGID | MCR_PORT_GID | MCR_PKEY | MCR_JOIN_STATE;

/* the SA's MCMemberRecord Sets */
std::vector<TestSa::McRequest> sets(const TestSa &sa)
{
	std::vector<TestSa::McRequest> out;
	for (const auto &r : sa.mc)
		if (r.method == 0x02)
			out.push_back(r);
	return out;
}

/* host1 and host2 with an SA on host1's port that has the broadcast
 * group (Q_Key 0x0b1b, MLID 0xc001) and MFTs that carry it everywhere */
struct IpoibPair : VerbsFixture {
	TestSa sa{ *this };
	uint32_t addr1 = inet_addr("10.200.0.1");
	uint32_t addr2 = inet_addr("10.200.1.1");
	Packets got1, got2;
	std::unique_ptr<Ipoib> ib1, ib2;

	IpoibPair()
	{
		sa.groupQkey = 0x0b1b;
		programMfts(subnet, 0xc001);
		ib1 = std::make_unique<Ipoib>(*host, *hca1, 1, IpoibConfig{ addr1, 16 },
					      [this](std::span<const uint8_t> p) { got1.emplace_back(p.begin(), p.end()); });
		ib2 = std::make_unique<Ipoib>(*host, *hca2, 1, IpoibConfig{ addr2, 16 },
					      [this](std::span<const uint8_t> p) { got2.emplace_back(p.begin(), p.end()); });
	}
	/* sw2's port to host2: what reaches host2 across both switches */
	fabric::Port &toHost2() { return subnet.findNodeByGuid(0x2c90200000002)->port(1); }
};

/* A user's UD QP on host1 that sends IPoIB frames of its own making (a
 * remote that may send anything) to host2, and hears what comes back */
struct Injector {
	Client c;
	alignas(4096) uint8_t buf[8192]{};
	uint32_t pd = 0, cq = 0, ah = 0;
	ib_uverbs_reg_mr_resp mr{};
	ib_uverbs_create_qp_resp qp{};

	explicit Injector(IpoibPair &f) : c(f, f.dev1(), 300)
	{
		REQUIRE(c.allocPd(pd) == 0);
		REQUIRE(c.regMr(pd, buf, sizeof buf, IB_ACCESS_LOCAL_WRITE, mr) == 0);
		REQUIRE(c.createCq(64, cq) == 0);
		REQUIRE(c.createQp(pd, cq, cq, IB_QPT_UD, qp) == 0);
		c.connect(qp.qp_handle, IB_QPT_UD, 0, 0);
		ib_uverbs_modify_qp q{};
		q.qkey = 0x0b1b; /* IPoIB answers with the group's */
		REQUIRE(c.modify(qp.qp_handle, IB_QP_QKEY, q) == 0);
		REQUIRE(c.createAh(pd, f.lid2(), ah) == 0);
		REQUIRE(c.postRecv(qp.qp_handle, 7, { ib_uverbs_sge{ uint64_t(uintptr_t(buf + 4096)), 4096, mr.lkey } }) == 0);
	}
	/* one frame (type, reserved, body) to the QPN, with the group's Q_Key */
	void send(uint32_t dqpn, uint16_t type, const std::vector<uint8_t> &body)
	{
		std::vector<uint8_t> frame{ uint8_t(type >> 8), uint8_t(type), 0, 0 };
		frame.insert(frame.end(), body.begin(), body.end());
		memcpy(buf, frame.data(), frame.size());
		ib_uverbs_send_wr w{};
		w.opcode = IB_WR_SEND;
		w.wr.ud.ah = ah;
		w.wr.ud.remote_qpn = dqpn;
		w.wr.ud.remote_qkey = 0x0b1b;
		REQUIRE(c.postSend(qp.qp_handle, w, { ib_uverbs_sge{ uint64_t(uintptr_t(buf)), uint32_t(frame.size()), mr.lkey } }) == 0);
	}
	/* its hardware address: its QPN and host1's port GID */
	IpoibHwAddr hw(const fabric::Port &p) const
	{
		IpoibHwAddr a{ 0, uint8_t(qp.qpn >> 16), uint8_t(qp.qpn >> 8), uint8_t(qp.qpn) };
		const fabric::Gid g = gidOf(p);
		std::copy(g.begin(), g.end(), a.begin() + 4);
		return a;
	}
};

/* an ARP packet over InfiniBand (56 bytes) */
std::vector<uint8_t> arp(uint16_t op, const IpoibHwAddr &sha, uint32_t spa, uint32_t tpa)
{
	std::vector<uint8_t> a(56, 0);
	const uint8_t head[] = { 0, 32, 0x08, 0x00, 20, 4, 0, uint8_t(op) };
	memcpy(&a[0], head, sizeof head);
	memcpy(&a[8], sha.data(), sha.size());
	memcpy(&a[28], &spa, 4);
	memcpy(&a[52], &tpa, 4);
	return a;
}

} /* namespace */

TEST_CASE("ipoib: both ports join the broadcast group through the SA", "[ipoib]")
{
	IpoibPair f;
	CHECK(!f.ib1->up());
	CHECK(f.ib1->transmit(ipv4(f.addr1, f.addr2, 8, 1)) == -ENETDOWN); /* no carrier before the join */
	f.drain();
	REQUIRE(f.ib1->up());
	REQUIRE(f.ib2->up());
	/* the kernel's join of the broadcast group: one Set per port, full
	 * member, MGID, PortGID, P_Key and JoinState only */
	REQUIRE(f.sa.mc.size() == 2);
	std::set<fabric::Gid> members;
	for (const auto &r : f.sa.mc) {
		CHECK(r.method == 0x02);
		CHECK(r.mask == kJoinMask);
		CHECK(r.rec.mgid == kBroadcastMgid);
		CHECK(r.rec.pkey == 0xffff);
		CHECK(r.rec.joinState == 1);
		members.insert(r.rec.portGid);
	}
	CHECK(members == std::set<fabric::Gid>{ gidOf(*f.p1), gidOf(*f.p2) });
	/* the group's record is the port's: Q_Key, MLID, MTU 2048 */
	CHECK(f.ib1->broadcastGroup().qkey == 0x0b1b);
	CHECK(f.ib1->broadcastGroup().mlid == 0xc001);
	CHECK(f.ib1->mtu() == 2044);
	/* the QP is one of the HCA's: its number is taken, and it hears the group */
	Qp *qp = f.dev1().qp(f.ib1->qpn());
	REQUIRE(qp);
	CHECK(qp->qkey == 0x0b1b);
	REQUIRE(qp->mcast.size() == 1);
	CHECK(qp->mcast[0].mlid == 0xc001);
	Client user(f, f.dev1(), 100);
	uint32_t pd = 0, cq = 0;
	REQUIRE(user.allocPd(pd) == 0);
	REQUIRE(user.createCq(16, cq) == 0);
	ib_uverbs_create_qp_resp uq{};
	REQUIRE(user.createQp(pd, cq, cq, IB_QPT_UD, uq) == 0);
	CHECK(uq.qpn != f.ib1->qpn());
	/* the hardware addresses: flags, QPN, port GID (RFC 4391 9.1.1) */
	IpoibHwAddr hw = f.ib1->hwAddr();
	CHECK(hw[0] == 0);
	CHECK((uint32_t(hw[1]) << 16 | uint32_t(hw[2]) << 8 | hw[3]) == f.ib1->qpn());
	CHECK(std::equal(hw.begin() + 4, hw.end(), gidOf(*f.p1).begin()));
	IpoibHwAddr bc = f.ib1->broadcastAddr();
	CHECK((bc[1] == 0xff && bc[2] == 0xff && bc[3] == 0xff));
	CHECK(std::equal(bc.begin() + 4, bc.end(), kBroadcastMgid.begin()));
}

TEST_CASE("ipoib: ARP over IB resolves the neighbour; unicast and broadcast IPv4 cross the switches", "[ipoib]")
{
	IpoibPair f;
	f.drain();
	REQUIRE(f.ib1->up());
	REQUIRE(f.ib2->up());
	const fabric::PortCounters before = f.toHost2().counters;
	Recorder rec;
	rec.only = f.p1;
	f.subnet.setTap(&rec);

	/* unicast: an ARP request on the group, the reply and the packet by
	 * the PathRecords the SA answered */
	const std::vector<uint8_t> uni = ipv4(f.addr1, f.addr2, 1000, 0x5a);
	CHECK(f.ib1->transmit(uni) == 0);
	f.drain();
	REQUIRE(f.got2.size() == 1);
	CHECK(f.got2[0] == uni);
	CHECK(f.got1.empty());
	CHECK(f.ib1->neighbour(f.addr2) == f.ib2->hwAddr());
	CHECK(f.ib2->neighbour(f.addr1) == f.ib1->hwAddr()); /* learnt from the request */
	CHECK(f.sa.lastMask == (PR_DGID | PR_SGID | PR_NUMB_PATH | PR_TCLASS | PR_PKEY));
	/* across sw1 and sw2 to host2: the request as multicast, the packet
	 * as unicast; from host2 the reply (and the MADs to the SA) */
	const fabric::PortCounters &after = f.toHost2().counters;
	CHECK(after.extMulticastXmitPkts > before.extMulticastXmitPkts);
	CHECK(after.extUnicastXmitPkts > before.extUnicastXmitPkts);
	CHECK(after.extUnicastRcvPkts > before.extUnicastRcvPkts);
	CHECK(after.extXmitData > before.extXmitData + 1000 / 4);

	/* what host1's port sent, as a capture shows it: the ARP request on
	 * the group (GRH to the MGID, QPN 0xffffff), then the packet to
	 * host2's QPN; both with the group's Q_Key, from IPoIB's QPN, behind
	 * the 4-byte IPoIB header */
	f.subnet.setTap(nullptr);
	std::vector<std::pair<fabric::PacketView, const Recorder::Seen *>> out;
	for (const auto &s : rec.sends())
		if (s.second->out)
			out.push_back(s);
	REQUIRE(out.size() == 2);
	const auto &[arp, arpSeen] = out[0];
	CHECK(arp.grh);
	CHECK(arp.dlid == 0xc001);
	CHECK(arp.destQp == kMulticastQpn);
	CHECK(arp.qkey == 0x0b1b);
	CHECK(arp.srcQp == f.ib1->qpn());
	REQUIRE(arp.payloadLen == 4 + 56);
	const uint8_t *a = arpSeen->bytes.data() + arp.payload;
	const uint8_t arpHead[] = { 0x08, 0x06, 0, 0, 0, 32, 0x08, 0x00, 20, 4, 0, 1 };
	CHECK(std::equal(std::begin(arpHead), std::end(arpHead), a));
	const IpoibHwAddr hw1 = f.ib1->hwAddr();
	CHECK(std::equal(hw1.begin(), hw1.end(), a + 12));
	const auto &[data, dataSeen] = out[1];
	CHECK(!data.grh);
	CHECK(data.dlid == f.lid2());
	CHECK(data.destQp == f.ib2->qpn());
	CHECK(data.qkey == 0x0b1b);
	REQUIRE(data.payloadLen == 4 + uni.size());
	const uint8_t *d = dataSeen->bytes.data() + data.payload;
	CHECK((d[0] == 0x08 && d[1] == 0x00 && d[2] == 0 && d[3] == 0));
	CHECK(std::equal(uni.begin(), uni.end(), d + 4));

	/* and back, without another ARP */
	const std::vector<uint8_t> back = ipv4(f.addr2, f.addr1, 64, 0x3c);
	const uint64_t mcBefore = f.toHost2().counters.extMulticastRcvPkts;
	CHECK(f.ib2->transmit(back) == 0);
	f.drain();
	REQUIRE(f.got1.size() == 1);
	CHECK(f.got1[0] == back);
	CHECK(f.toHost2().counters.extMulticastRcvPkts == mcBefore); /* no ARP from host2 */

	/* broadcast: to the subnet's broadcast address, on the group; the
	 * sender does not hear its own */
	const std::vector<uint8_t> bcast = ipv4(f.addr2, inet_addr("10.200.255.255"), 200, 0x77);
	CHECK(f.ib2->transmit(bcast) == 0);
	f.drain();
	REQUIRE(f.got1.size() == 2);
	CHECK(f.got1[1] == bcast);
	CHECK(f.got2.size() == 1);
	CHECK(f.toHost2().counters.extMulticastRcvPkts == mcBefore + 1);

	/* what cannot go */
	CHECK(f.ib1->transmit(ipv4(f.addr1, f.addr2, 2045 - 28, 0)) == -EMSGSIZE);
	CHECK(f.ib1->transmit(ipv4(f.addr1, inet_addr("10.201.0.1"), 8, 0)) == -ENETUNREACH);
	CHECK(f.ib1->transmit(std::vector<uint8_t>(10, 0x45)) == -EINVAL);
}

TEST_CASE("ipoib: an address no one has is asked three times, then its packets are dropped", "[ipoib]")
{
	IpoibPair f;
	f.drain();
	const uint32_t nobody = inet_addr("10.200.9.9");
	/* the requests on the group, as host2's port receives them */
	auto requests = [&f, base = f.toHost2().counters.extMulticastXmitPkts] {
		return f.toHost2().counters.extMulticastXmitPkts - base;
	};
	CHECK(f.ib1->transmit(ipv4(f.addr1, nobody, 8, 1)) == 0);
	f.drain();
	CHECK(!f.ib1->neighbour(nobody));
	CHECK(requests() == 1);
	for (int i = 0; i < 5; i++) {
		f.advance(1000);
		f.drain();
	}
	CHECK(requests() == 3); /* and none after the third */
	CHECK(f.got2.empty());
	CHECK(f.ib1->neighbourCount() == 0);
	/* the same address again: asked again */
	CHECK(f.ib1->transmit(ipv4(f.addr1, nobody, 8, 1)) == 0);
	f.drain();
	CHECK(requests() == 4);
	/* the neighbour is gone: the next packet asks again, and is answered once the address exists */
	CHECK(f.ib1->transmit(ipv4(f.addr1, f.addr2, 8, 2)) == 0);
	f.drain();
	CHECK(f.got2.size() == 1);
}

TEST_CASE("ipoib: a join the SA refuses is tried again later; a client reregister makes the port join again", "[ipoib]")
{
	IpoibPair f;
	f.sa.mcStatus = 0x0200; /* no such group yet: the SM has not made it */
	f.drain();
	CHECK(!f.ib1->up());
	REQUIRE(sets(f.sa).size() == 2);
	f.sa.mcStatus = 0;
	f.drain();
	CHECK(sets(f.sa).size() == 2); /* not before the backoff */
	f.advance(1000);
	f.drain();
	CHECK(sets(f.sa).size() == 4);
	REQUIRE(f.ib1->up());
	REQUIRE(f.ib2->up());

	/* an SM that took over asks the ports to register again: the port's
	 * membership is lost, and it joins again at once */
	f.subnet.portChanged(*f.p1, true);
	f.drain();
	REQUIRE(sets(f.sa).size() == 5);
	CHECK(sets(f.sa).back().rec.portGid == gidOf(*f.p1));
	CHECK(f.ib1->up());
	const std::vector<uint8_t> uni = ipv4(f.addr1, f.addr2, 32, 9);
	CHECK(f.ib1->transmit(uni) == 0);
	f.drain();
	REQUIRE(f.got2.size() == 1);
	CHECK(f.got2[0] == uni);

	/* the HCA unplugged: the device is dead, its QP gone (a file open on
	 * the HCA keeps its verbs device), its membership left */
	const uint32_t qpn = f.ib2->qpn();
	REQUIRE(qpn != 0);
	Client user(f, f.dev2(), 200);
	VerbsDevice &dev2 = f.dev2();
	REQUIRE(dev2.qp(qpn));
	bool carrier = true;
	f.ib2->onCarrier([&carrier](bool up, uint32_t) { carrier = up; });
	const size_t reqs = f.sa.mc.size();
	f.host->removeHca(f.hca2);
	f.hca2 = nullptr;
	f.drain();
	CHECK(f.ib2->transmit(uni) == -ENODEV);
	CHECK(!f.ib2->up());
	CHECK(!carrier);
	CHECK(dev2.qp(qpn) == nullptr);
	REQUIRE(f.sa.mc.size() == reqs + 1);
	CHECK(f.sa.mc.back().method == 0x15); /* SubnAdmDelete */
	CHECK(f.sa.mc.back().rec.portGid == gidOf(*f.p2));
}

TEST_CASE("ipoib: a neighbour not heard from for 30 s is asked again, and found with its new QPN", "[ipoib]")
{
	IpoibPair f;
	f.drain();
	const std::vector<uint8_t> first = ipv4(f.addr1, f.addr2, 16, 1);
	CHECK(f.ib1->transmit(first) == 0);
	f.drain();
	REQUIRE(f.got2.size() == 1);
	/* host2's device made again: another QPN, host1 still has the old one */
	const uint32_t oldQpn = f.ib2->qpn();
	f.ib2.reset();
	f.ib2 = std::make_unique<Ipoib>(*f.host, *f.hca2, 1, IpoibConfig{ f.addr2, 16 },
					[&f](std::span<const uint8_t> p) { f.got2.emplace_back(p.begin(), p.end()); });
	f.drain();
	REQUIRE(f.ib2->up());
	REQUIRE(f.ib2->qpn() != oldQpn);
	f.got2.clear();
	CHECK(f.ib1->transmit(first) == 0); /* within 30 s: to the old QPN, lost */
	f.drain();
	CHECK(f.got2.empty());
	f.advance(30000);
	CHECK(f.ib1->transmit(first) == 0); /* stale: asked again, and this one is lost too */
	f.drain();
	CHECK(f.got2.empty());
	CHECK(f.ib1->neighbour(f.addr2) == f.ib2->hwAddr());
	const std::vector<uint8_t> again = ipv4(f.addr1, f.addr2, 16, 2);
	CHECK(f.ib1->transmit(again) == 0);
	f.drain();
	REQUIRE(f.got2.size() == 1);
	CHECK(f.got2[0] == again);
}

TEST_CASE("ipoib: what a remote sends that is no IPv4 packet or no ARP over IB is dropped; a probe is answered", "[ipoib]")
{
	IpoibPair f;
	f.drain();
	REQUIRE(f.ib2->up());
	Injector inj(f);
	const uint32_t q2 = f.ib2->qpn();
	/* frames shorter than the IPoIB header, IPv4 shorter than its header
	 * or of another version: not handed up (a TUN would take the last
	 * for IPv6) */
	inj.send(q2, 0x0800, {});
	inj.send(q2, 0x0800, std::vector<uint8_t>(19, 0x45));
	std::vector<uint8_t> v6 = ipv4(f.addr1, f.addr2, 40, 0);
	v6[0] = 0x60;
	inj.send(q2, 0x0800, v6);
	f.drain();
	for (size_t n = 0; n < 4; n++) { /* 0 to 3 bytes: not even a header */
		Injector *i = &inj;
		memset(i->buf, 0x08, n);
		ib_uverbs_send_wr w{};
		w.opcode = IB_WR_SEND;
		w.wr.ud.ah = i->ah;
		w.wr.ud.remote_qpn = q2;
		w.wr.ud.remote_qkey = 0x0b1b;
		REQUIRE(i->c.postSend(i->qp.qp_handle, w, { ib_uverbs_sge{ uint64_t(uintptr_t(i->buf)), uint32_t(n), i->mr.lkey } }) == 0);
	}
	const std::vector<uint8_t> good = ipv4(f.addr1, f.addr2, 8, 3);
	inj.send(q2, 0x0800, good);
	f.drain();
	REQUIRE(f.got2.size() == 1);
	CHECK(f.got2[0] == good);

	/* ARP for host2's address: short, or with another hardware address
	 * length, it is not learnt nor answered */
	const IpoibHwAddr me = inj.hw(*f.p1);
	const uint32_t sender = inet_addr("10.200.0.7");
	std::vector<uint8_t> a = arp(1, me, sender, f.addr2);
	inj.send(q2, 0x0806, std::vector<uint8_t>(a.begin(), a.end() - 1));
	a[4] = 19;
	inj.send(q2, 0x0806, a);
	/* nor a sender off the subnet, nor the subnet's broadcast address */
	inj.send(q2, 0x0806, arp(1, me, inet_addr("10.201.0.7"), f.addr2));
	inj.send(q2, 0x0806, arp(1, me, inet_addr("10.200.255.255"), f.addr2));
	f.drain();
	CHECK(inj.c.poll(inj.cq).empty());
	CHECK(f.ib2->neighbourCount() == 0);
	/* a probe (sender 0.0.0.0): answered to its sender, not learnt */
	inj.send(q2, 0x0806, arp(1, me, 0, f.addr2));
	f.drain();
	auto wc = inj.c.poll(inj.cq);
	REQUIRE(wc.size() == 1);
	CHECK(wc[0].status == IB_WC_SUCCESS);
	REQUIRE(wc[0].byte_len == 40 + 4 + 56);
	const uint8_t *r = inj.buf + 4096 + 40;
	CHECK((r[0] == 0x08 && r[1] == 0x06));
	const std::vector<uint8_t> reply(r + 4, r + 4 + 56);
	const IpoibHwAddr hw2 = f.ib2->hwAddr();
	std::vector<uint8_t> want = arp(2, hw2, f.addr2, 0);
	std::copy(me.begin(), me.end(), want.begin() + 32);
	CHECK(reply == want);
	CHECK(f.ib2->neighbourCount() == 0);
	/* and a sender on the subnet is */
	inj.send(q2, 0x0806, arp(1, me, sender, f.addr2));
	f.drain();
	CHECK(f.ib2->neighbour(sender) == me);
}

TEST_CASE("ipoib: the neighbour table is bounded, unresolved neighbours go first, unused ones expire", "[ipoib]")
{
	IpoibPair f;
	f.drain();
	CHECK(f.ib1->transmit(ipv4(f.addr1, f.addr2, 8, 1)) == 0);
	f.drain();
	REQUIRE(f.ib1->neighbour(f.addr2));
	/* a user sending to every address of the /16 */
	for (uint32_t i = 0; i < 1100; i++)
		CHECK(f.ib1->transmit(ipv4(f.addr1, htonl(ntohl(inet_addr("10.200.16.0")) + i), 8, 1)) == 0);
	CHECK(f.ib1->neighbourCount() == 1024);
	CHECK(f.ib1->neighbour(f.addr2)); /* resolved: not pushed out by those unresolved */
	f.drain();
	/* unused for 60 s, it goes when the next neighbour is made */
	f.advance(61000);
	CHECK(f.ib1->transmit(ipv4(f.addr1, inet_addr("10.200.20.1"), 8, 1)) == 0);
	CHECK(!f.ib1->neighbour(f.addr2));
}

TEST_CASE("ipoib: a path's queue keeps the first three frames; a stale PathRecord answer is not the new path's", "[ipoib]")
{
	IpoibPair f;
	f.drain();
	CHECK(f.ib1->transmit(ipv4(f.addr1, f.addr2, 8, 0)) == 0);
	f.drain();
	REQUIRE(f.got2.size() == 1);
	f.got2.clear();
	/* the paths flushed: five packets wait for the new PathRecord, the
	 * first three go (IPOIB_MAX_PATH_REC_QUEUE) */
	f.ib1->portEvent(*f.hca1, 1, IB_EVENT_SM_CHANGE);
	for (uint8_t i = 1; i <= 5; i++)
		CHECK(f.ib1->transmit(ipv4(f.addr1, f.addr2, 8, i)) == 0);
	f.drain();
	REQUIRE(f.got2.size() == 3);
	for (uint8_t i = 0; i < 3; i++)
		CHECK(f.got2[i] == ipv4(f.addr1, f.addr2, 8, uint8_t(i + 1)));
	f.got2.clear();

	/* the answer to a query is in, not yet applied, when the paths are
	 * flushed and asked for again (the SA no longer answers): it is not
	 * the new query's, whose packet waits */
	f.ib1->portEvent(*f.hca1, 1, IB_EVENT_SM_CHANGE);
	CHECK(f.ib1->transmit(ipv4(f.addr1, f.addr2, 8, 6)) == 0);
	REQUIRE(f.host->sa().outstanding() == 1);
	for (int i = 0; i < 1000 && f.host->sa().outstanding(); i++) {
		f.io.restart();
		f.io.poll_one();
	}
	REQUIRE(f.host->sa().outstanding() == 0);
	CHECK(f.got2.empty()); /* answered, not yet applied */
	f.sa.silent = true;
	f.ib1->portEvent(*f.hca1, 1, IB_EVENT_SM_CHANGE);
	CHECK(f.ib1->transmit(ipv4(f.addr1, f.addr2, 8, 7)) == 0);
	f.drain();
	CHECK(f.got2.empty());
	CHECK(f.ib1->pathCount() == 1);
}

TEST_CASE("ipoib: a device destroyed while its join or a path query is out", "[ipoib]")
{
	IpoibPair f;
	f.sa.silent = true;
	f.drain();
	CHECK(!f.ib1->up());
	f.ib1.reset(); /* the join is out */
	f.advance(2000);
	f.drain();
	f.sa.silent = false;
	f.advance(16000);
	f.drain();
	REQUIRE(f.ib2->up());
	CHECK(f.ib2->transmit(ipv4(f.addr2, f.addr1, 8, 0)) == 0);
	f.drain();
	f.sa.silent = true;
	f.ib2->portEvent(*f.hca2, 1, IB_EVENT_SM_CHANGE);
	CHECK(f.ib2->transmit(ipv4(f.addr2, f.addr1, 8, 0)) == 0);
	f.drain();
	f.ib2.reset(); /* a path query is out */
	f.advance(2000);
	f.drain();
}

TEST_CASE("ipoib: the port number is checked", "[ipoib]")
{
	IpoibPair f;
	CHECK_THROWS_AS(Ipoib(*f.host, *f.hca1, 0, IpoibConfig{ f.addr1, 16 }, nullptr), std::invalid_argument);
	CHECK_THROWS_AS(Ipoib(*f.host, *f.hca1, 2, IpoibConfig{ f.addr1, 16 }, nullptr), std::invalid_argument);
}

namespace {

/* a ULP that, on a port event, removes the other (which then must hear nothing) */
struct Remover final : KernelUlp {
	Host &host;
	Remover *other = nullptr;
	unsigned events = 0;
	explicit Remover(Host &h) : host(h) { host.addUlp(this); }
	~Remover() { host.removeUlp(this); }
	void portEvent(Hca &, unsigned, AsyncEvent) override
	{
		events++;
		if (other)
			host.removeUlp(other);
	}
	void hcaRemoved(Hca &) override {}
};

} /* namespace */

TEST_CASE("host: a ULP removed by another during a port event hears nothing more", "[ipoib][host]")
{
	IpoibPair f;
	Remover a(*f.host), b(*f.host);
	a.other = &b;
	f.subnet.portChanged(*f.p1, true);
	f.drain();
	CHECK(a.events > 0);
	CHECK(b.events == 0);
}

TEST_CASE("ipoib: no carrier while the port's P_Key table lacks the P_Key; its index looked up again on a change", "[ipoib]")
{
	IpoibPair f;
	f.drain();
	Ipoib ib(*f.host, *f.hca1, 1, IpoibConfig{ inet_addr("10.201.0.1"), 16, 0x8001 }, nullptr);
	f.drain();
	CHECK(!ib.up());
	for (const auto &r : f.sa.mc)
		CHECK(r.rec.pkey != 0x8001); /* not even asked */
	f.p1->pkeys.push_back(0x8001);
	const uint16_t index = uint16_t(f.p1->pkeys.size() - 1);
	ib.portEvent(*f.hca1, 1, IB_EVENT_PKEY_CHANGE);
	f.drain();
	REQUIRE(ib.up());
	CHECK(sets(f.sa).back().rec.pkey == 0x8001);
	REQUIRE(f.dev1().qp(ib.qpn()));
	CHECK(f.dev1().qp(ib.qpn())->pkeyIndex == index);
	f.p1->pkeys.pop_back();
	ib.portEvent(*f.hca1, 1, IB_EVENT_PKEY_CHANGE);
	f.drain();
	CHECK(!ib.up());
}
