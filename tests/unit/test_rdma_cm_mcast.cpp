// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// rdma_cm multicast (emu/cma_multicast.cpp, emu/sa_multicast.cpp) driven
// as librdmacm drives it: JOIN_MCAST and LEAVE_MCAST against an SA on the
// fabric, one SA join per port and group, join states, and what port
// events do to the groups.
#include "tests/unit/rdma_cm_helpers.h"
#include "tests/unit/sa_helpers.h"
#include "tests/unit/verbs_helpers.h"

#include "emu/cm_msgs.h"
#include "emu/mad_port.h"
#include "emu/rdma_cm_abi.h"
#include "emu/sa_query.h"
#include "emu/ucma_file.h"

#include <arpa/inet.h>
#include <catch2/catch.hpp>

#include <functional>
#include <map>
#include <string>
#include <vector>

using namespace ibemu;
using namespace ibemu::emu;
using namespace ibemu::test;

namespace {

/* JOIN_MCAST as librdmacm's rdma_join_multicast_ex() writes it */
ssize_t joinMcast(CmClient &c, uint32_t id, sockaddr_in6 group, uint64_t uid, uint32_t &mcId,
		  uint16_t flags = RDMA_MC_JOIN_FLAG_FULLMEMBER)
{
	rdma_ucm_create_id_resp resp{ ~0u };
	rdma_ucm_join_mcast j{};
	j.response = uintptr_t(&resp);
	j.uid = uid;
	j.id = id;
	j.addr_size = sizeof(sockaddr_in);
	j.join_flags = flags;
	memcpy(&j.addr, &group, sizeof(sockaddr_in));
	ssize_t r = c.cmd(RDMA_USER_CM_CMD_JOIN_MCAST, j, sizeof resp);
	mcId = resp.id;
	return r;
}

ssize_t leaveMcast(CmClient &c, uint32_t mcId, uint32_t &eventsReported)
{
	rdma_ucm_destroy_id_resp resp{ ~0u };
	ssize_t r = c.cmd(RDMA_USER_CM_CMD_LEAVE_MCAST, rdma_ucm_destroy_id{ uintptr_t(&resp), mcId }, sizeof resp);
	eventsReported = resp.events_reported;
	return r;
}

} /* namespace */

TEST_CASE("rdma_cm multicast: joins go to the SA once per port and group, leaves after the last", "[rdma_cm][mcast]")
{
	CmPair p;
	const sockaddr_in6 group = ip4(inet_addr("239.1.2.3"), 0);
	uint32_t id = p.client.create(0xa1, RDMA_PS_UDP);
	uint32_t mc = 0;
	/* no device yet */
	CHECK(joinMcast(p.client, id, group, 0x51, mc) == -EINVAL);
	/* a multicast destination resolves through the bound source's port */
	sockaddr_in6 src = ip4(p.addr1, 0);
	REQUIRE(p.client.resolveIp(id, &src, group) > 0);
	p.drain();
	p.client.expect(RDMA_CM_EVENT_ADDR_RESOLVED);
	/* without a source there is no route to a group */
	uint32_t lone = p.client.create(0xa2, RDMA_PS_UDP);
	CHECK(p.client.resolveIp(lone, nullptr, group) == -ENETUNREACH);
	/* bad flags; an address of the wrong size */
	CHECK(joinMcast(p.client, id, group, 0x51, mc, 7) == -EINVAL);
	rdma_ucm_join_mcast bad{};
	bad.id = id;
	bad.addr_size = 3;
	memcpy(&bad.addr, &group, sizeof(sockaddr_in));
	rdma_ucm_create_id_resp br{};
	bad.response = uintptr_t(&br);
	CHECK(p.client.cmd(RDMA_USER_CM_CMD_JOIN_MCAST, bad, sizeof br) == -EINVAL);
	/* a TCP ID has no multicast */
	uint32_t tcp = p.resolved(7100);
	CHECK(joinMcast(p.client, tcp, group, 0x52, mc) == -EINVAL);

	REQUIRE(joinMcast(p.client, id, group, 0x51, mc) > 0);
	p.drain();
	REQUIRE(p.sa.mc.size() == 1);
	const auto &req = p.sa.mc[0];
	CHECK(req.method == 0x02);
	/* ip_ib_mc_map() with the RDMA CM's signature: ff12:4001:ffff::f01:203 */
	const fabric::Gid mgid{ 0xff, 0x12, 0x40, 0x01, 0xff, 0xff, 0, 0, 0, 0, 0, 0, 0x0f, 1, 2, 3 };
	CHECK(req.rec.mgid == mgid);
	CHECK(req.rec.joinState == 1);
	CHECK(req.rec.qkey == 0x01234567);
	CHECK(req.rec.pkey == 0xffff);
	CHECK(req.mask ==
	      (MCR_MGID | MCR_PORT_GID | MCR_PKEY | MCR_JOIN_STATE | MCR_QKEY | MCR_SL | MCR_FLOW_LABEL | MCR_TCLASS));
	fabric::Gid portGid;
	REQUIRE(p.hca1->madPorts[0]->gid(0, portGid));
	CHECK(req.rec.portGid == portGid);
	rdma_ucm_event_resp ev = p.client.expect(RDMA_CM_EVENT_MULTICAST_JOIN);
	CHECK(ev.uid == 0x51);
	CHECK(ev.id == mc);
	CHECK(ev.status == 0);
	CHECK(ev.param.ud.qp_num == 0xffffff);
	CHECK(ev.param.ud.qkey == 0x01234567);
	CHECK(ev.param.ud.ah_attr.dlid == 0xc001);
	CHECK(ev.param.ud.ah_attr.is_global == 1);
	CHECK(memcmp(ev.param.ud.ah_attr.grh.dgid, mgid.data(), 16) == 0);
	CHECK(ev.param.ud.ah_attr.port_num == 1);

	/* a second ID of the same port joins the same group: answered from
	 * the port's membership, nothing goes to the SA */
	uint32_t id2 = p.client.create(0xa3, RDMA_PS_UDP);
	REQUIRE(p.client.bindIp(id2, ip4(p.addr1, 0)) > 0);
	uint32_t mc2 = 0;
	REQUIRE(joinMcast(p.client, id2, group, 0x53, mc2) > 0);
	p.drain();
	CHECK(p.sa.mc.size() == 1);
	CHECK(p.client.expect(RDMA_CM_EVENT_MULTICAST_JOIN).uid == 0x53);
	CHECK(mc2 != mc);

	/* leaving: not yours, unknown, then the first (no Delete yet), then
	 * the last (a Delete of the port's full membership) */
	uint32_t reported = 0;
	CHECK(leaveMcast(p.server, mc, reported) == -EINVAL);
	CHECK(leaveMcast(p.client, 12345, reported) == -ENOENT);
	REQUIRE(leaveMcast(p.client, mc, reported) > 0);
	CHECK(reported == 1);
	p.drain();
	CHECK(p.sa.mc.size() == 1);
	REQUIRE(leaveMcast(p.client, mc2, reported) > 0);
	p.drain();
	REQUIRE(p.sa.mc.size() == 2);
	CHECK(p.sa.mc[1].method == 0x15);
	CHECK(p.sa.mc[1].rec.mgid == mgid);
	CHECK(p.sa.mc[1].rec.joinState == 1);

	/* the SA refuses: MULTICAST_ERROR; destroying an ID leaves its groups */
	p.sa.mcStatus = 0x0200; /* invalid attribute value */
	REQUIRE(joinMcast(p.client, id, group, 0x54, mc) > 0);
	p.drain();
	ev = p.client.expect(RDMA_CM_EVENT_MULTICAST_ERROR);
	CHECK(ev.uid == 0x54);
	CHECK(int32_t(ev.status) == -EINVAL);
	p.sa.mcStatus = 0;
	REQUIRE(joinMcast(p.client, id, group, 0x55, mc) > 0);
	p.drain();
	p.client.expect(RDMA_CM_EVENT_MULTICAST_JOIN);
	/* a file's joins are bounded */
	for (size_t i = p.host->cma().mcCountOf(p.client.file.get()); i < UcmaFile::kMaxJoins; i++)
		REQUIRE(joinMcast(p.client, id, group, 0x60, mc) > 0);
	CHECK(joinMcast(p.client, id, group, 0x61, mc) == -ENOMEM);
	p.drain();
	size_t before = p.sa.mc.size();
	REQUIRE(p.client.cmd(RDMA_USER_CM_CMD_DESTROY_ID, rdma_ucm_destroy_id{ uintptr_t(&reported), id },
			     sizeof(rdma_ucm_destroy_id_resp)) > 0);
	/* ADDR_RESOLVED and the three join events read: the ID counts them all,
	 * as librdmacm's rdma_destroy_id() waits for its acks of them */
	CHECK(reported == 4);
	p.drain();
	REQUIRE(p.sa.mc.size() == before + 1);
	CHECK(p.sa.mc.back().method == 0x15);
}

TEST_CASE("rdma_cm multicast: a join state nobody holds any more is left on its own", "[rdma_cm][mcast]")
{
	CmPair p;
	const sockaddr_in6 group = ip4(inet_addr("239.1.2.4"), 0);
	uint32_t full = p.client.create(0xa1, RDMA_PS_UDP), sendOnly = p.client.create(0xa2, RDMA_PS_UDP);
	REQUIRE(p.client.bindIp(full, ip4(p.addr1, 0)) > 0);
	REQUIRE(p.client.bindIp(sendOnly, ip4(p.addr1, 0)) > 0);
	uint32_t mcFull = 0, mcSend = 0, reported = 0;
	REQUIRE(joinMcast(p.client, full, group, 1, mcFull) > 0);
	p.drain();
	REQUIRE(joinMcast(p.client, sendOnly, group, 2, mcSend, RDMA_MC_JOIN_FLAG_SENDONLY_FULLMEMBER) > 0);
	p.drain();
	/* the send-only full member is a join state the port did not hold: a
	 * second Set */
	REQUIRE(p.sa.mc.size() == 2);
	CHECK(p.sa.mc[1].method == 0x02);
	CHECK(p.sa.mc[1].rec.joinState == 8);
	p.client.expect(RDMA_CM_EVENT_MULTICAST_JOIN);
	p.client.expect(RDMA_CM_EVENT_MULTICAST_JOIN);
	/* the send-only one leaves: a Delete of that state alone */
	REQUIRE(leaveMcast(p.client, mcSend, reported) > 0);
	p.drain();
	REQUIRE(p.sa.mc.size() == 3);
	CHECK(p.sa.mc[2].method == 0x15);
	CHECK(p.sa.mc[2].rec.joinState == 8);
	/* then the full member: the rest */
	REQUIRE(leaveMcast(p.client, mcFull, reported) > 0);
	p.drain();
	REQUIRE(p.sa.mc.size() == 4);
	CHECK(p.sa.mc[3].method == 0x15);
	CHECK(p.sa.mc[3].rec.joinState == 1);
}

TEST_CASE("rdma_cm multicast: port events fail the groups as multicast.c does; members join again", "[rdma_cm][mcast]")
{
	CmPair p;
	const sockaddr_in6 group = ip4(inet_addr("239.1.2.5"), 0);
	uint32_t id = p.client.create(0xa1, RDMA_PS_UDP);
	REQUIRE(p.client.bindIp(id, ip4(p.addr1, 0)) > 0);
	uint32_t mc = 0, reported = 0;
	REQUIRE(joinMcast(p.client, id, group, 0x51, mc) > 0);
	p.drain();
	p.client.expect(RDMA_CM_EVENT_MULTICAST_JOIN);
	REQUIRE(p.sa.mc.size() == 1);
	rdma_ucm_event_resp ev;

	/* a new SM alone changes nothing (the kernel's multicast.c ignores
	 * SM_CHANGE); one that asks the port to register again may have lost
	 * the group: MULTICAST_ERROR, ENETRESET, and no Delete for it */
	const uint16_t smLid = p.p1->smLid;
	for (uint16_t lid : { uint16_t(smLid + 1), smLid }) { /* and back, where the test SA is */
		p.p1->smLid = lid;
		p.subnet.portChanged(*p.p1, false);
		p.drain();
		CHECK(p.client.getEvent(ev) == -EAGAIN);
	}
	p.subnet.portChanged(*p.p1, true);
	p.drain();
	ev = p.client.expect(RDMA_CM_EVENT_MULTICAST_ERROR);
	CHECK(ev.uid == 0x51);
	CHECK(ev.id == mc);
	CHECK(int32_t(ev.status) == -ENETRESET);
	p.subnet.portChanged(*p.p1, true); /* told once */
	p.drain();
	CHECK(p.client.getEvent(ev) == -EAGAIN);
	CHECK(p.sa.mc.size() == 1);
	/* the member held nothing any more: leaving sends nothing, joining
	 * again asks the SA */
	REQUIRE(leaveMcast(p.client, mc, reported) > 0);
	p.drain();
	CHECK(p.sa.mc.size() == 1);
	REQUIRE(joinMcast(p.client, id, group, 0x52, mc) > 0);
	p.drain();
	REQUIRE(p.sa.mc.size() == 2);
	CHECK(p.sa.mc[1].method == 0x02);
	p.client.expect(RDMA_CM_EVENT_MULTICAST_JOIN);

	/* a P_Key table change that leaves the group's P_Key where it was
	 * fails nothing; one that moves it does */
	p.p1->pkeys.push_back(0x8001);
	p.subnet.portChanged(*p.p1, false);
	p.drain();
	CHECK(p.client.getEvent(ev) == -EAGAIN);
	p.p1->pkeys.insert(p.p1->pkeys.begin(), 0x8002);
	p.subnet.portChanged(*p.p1, false);
	p.drain();
	CHECK(int32_t(p.client.expect(RDMA_CM_EVENT_MULTICAST_ERROR).status) == -ENETRESET);
	REQUIRE(leaveMcast(p.client, mc, reported) > 0);
	REQUIRE(joinMcast(p.client, id, group, 0x53, mc) > 0);
	p.drain();
	p.client.expect(RDMA_CM_EVENT_MULTICAST_JOIN);

	/* a leave's Delete is awaited: a join meanwhile waits for its answer */
	const size_t sets = p.sa.mc.size();
	p.sa.silent = true;
	const unsigned asked = p.sa.queries;
	REQUIRE(leaveMcast(p.client, mc, reported) > 0);
	REQUIRE(joinMcast(p.client, id, group, 0x54, mc) > 0);
	p.drain();
	CHECK(p.sa.queries == asked + 1); /* the Delete only */
	p.sa.silent = false;
	p.advance(300); /* the Delete's next try is answered, then the Set goes */
	REQUIRE(p.sa.mc.size() == sets + 2);
	CHECK(p.sa.mc[sets].method == 0x15);
	CHECK(p.sa.mc[sets + 1].method == 0x02);
	CHECK(p.client.expect(RDMA_CM_EVENT_MULTICAST_JOIN).uid == 0x54);

	/* a Delete the SA refuses goes again, three times more, then the
	 * group goes and a join starts afresh */
	p.sa.deleteStatus = 0x0200;
	const size_t before = p.sa.mc.size();
	REQUIRE(leaveMcast(p.client, mc, reported) > 0);
	p.drain();
	REQUIRE(p.sa.mc.size() == before + 4);
	for (size_t i = before; i < before + 4; i++)
		CHECK(p.sa.mc[i].method == 0x15);
	p.sa.deleteStatus = 0;
	REQUIRE(joinMcast(p.client, id, group, 0x55, mc) > 0);
	p.drain();
	REQUIRE(p.sa.mc.size() == before + 5);
	CHECK(p.sa.mc.back().method == 0x02);
	p.client.expect(RDMA_CM_EVENT_MULTICAST_JOIN);
}
