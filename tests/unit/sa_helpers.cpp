// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
#include "tests/unit/sa_helpers.h"

#include "fabric/node.h"

#include <catch2/catch.hpp>

#include <arpa/inet.h>

namespace ibemu::test {

using namespace ibemu::emu;

TestSa::TestSa(EmuFixture &f, bool onHost2) : fx(f), at(*(onHost2 ? f.hca2 : f.hca1)->madPorts[0])
{
	MadRegistration reg;
	reg.mgmtClass = IB_MGMT_CLASS_SUBN_ADM;
	reg.classVersion = 2;
	reg.methods.set(IB_MGMT_METHOD_GET);
	reg.methods.set(0x02); /* Set */
	reg.methods.set(0x15); /* Delete */
	REQUIRE(at.registerAgent(1, &reg, 0, 0, this, nullptr, &agent) == 0);
	fx.p1->smLid = fx.p2->smLid = at.port().lid;
}

TestSa::~TestSa()
{
	at.unregisterAgent(agent);
}

uint16_t TestSa::lidOf(const fabric::Gid &g) const
{
	uint64_t guid = 0;
	for (int i = 8; i < 16; i++)
		guid = guid << 8 | g[size_t(i)];
	return guid == fx.p1->guid ? fx.lid1() : guid == fx.p2->guid ? fx.lid2() : 0;
}

void TestSa::madReceived(MadAgent &a, MadRecv &&recv)
{
	queries++;
	if (silent || recv.mad.size() < 56 + 64)
		return;
	if (recv.mad[16] == 0x00 && recv.mad[17] == 0x38) /* MCMemberRecord */
		return mcMember(a, recv);
	PathRecord p = PathRecord::decode(recv.mad.data() + 56);
	lastMask = 0;
	for (int i = 0; i < 8; i++)
		lastMask = lastMask << 8 | recv.mad[size_t(48 + i)];
	p.slid = lidOf(p.sgid);
	p.dlid = lidOf(p.dgid);
	p.mtu = 4;
	p.rate = 3;
	p.packetLifeTime = 18;
	p.sl = 0;
	answer(a, recv, 0x81 /* GetResp */, 0, [&](uint8_t *rec) { p.encode(rec); });
}

/* OpenSM's answer to a join: the group's MLID, SL 0, MTU and rate */
void TestSa::mcMember(MadAgent &a, const MadRecv &recv)
{
	McRequest r{ recv.mad[3], 0, McMemberRecord::decode(recv.mad.data() + 56) };
	for (int i = 0; i < 8; i++)
		r.mask = r.mask << 8 | recv.mad[size_t(48 + i)];
	mc.push_back(r);
	McMemberRecord resp = r.rec;
	resp.mlid = 0xc001;
	resp.mtu = 4;
	resp.rate = 3;
	resp.hopLimit = 0;
	if (groupQkey && !(r.mask & MCR_QKEY))
		resp.qkey = groupQkey;
	bool set = r.method == 0x02;
	answer(a, recv, set ? 0x81 : 0x95 /* GetResp, DeleteResp */, set ? mcStatus : deleteStatus,
	       [&](uint8_t *rec) { resp.encode(rec); });
}

void TestSa::answer(MadAgent &a, const MadRecv &recv, uint8_t method, uint16_t status,
		    const std::function<void(uint8_t *)> &put)
{
	auto s = std::make_shared<MadSend>();
	s->msg = recv.mad;
	s->msg[3] = method;
	s->msg[4] = uint8_t(status >> 8);
	s->msg[5] = uint8_t(status);
	put(s->msg.data() + 56);
	s->ah = recv.src;
	s->ah.remoteQkey = IB_QP1_QKEY;
	a.port().postSend(a, s);
}

sockaddr_in6 ip4(uint32_t addr, uint16_t port)
{
	sockaddr_in6 s{};
	auto *s4 = reinterpret_cast<sockaddr_in *>(&s);
	s4->sin_family = AF_INET;
	s4->sin_addr.s_addr = addr;
	s4->sin_port = htons(port);
	return s;
}

} /* namespace ibemu::test */
