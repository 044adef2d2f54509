// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// rdma_cm connections (emu/cma_conn.cpp) driven as librdmacm drives them,
// between the fixture's two HCAs: the IB CM's REQ/MRA/REP/RTU/DREQ/DREP on
// the wire, rejects, a peer that goes mid-handshake, timeouts, and a UD
// ID's SIDR exchange.
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

TEST_CASE("rdma_cm: a connection through the IB CM, and its end", "[rdma_cm]")
{
	CmPair p;
	uint32_t lid = p.server.create(0x5e);
	REQUIRE(p.server.bindIp(lid, ip4(p.addr2, 7471)) > 0);
	REQUIRE(p.server.listen(lid) > 0);
	/* a second listener on the port */
	uint32_t lid2 = p.server.create(0x5f);
	CHECK(p.server.bindIp(lid2, ip4(0, 7471)) == -EADDRNOTAVAIL); /* a wildcard: cma_check_port() */

	uint32_t cid = p.resolved(7471);
	ib_uverbs_qp_attr init = p.client.qpAttr(cid, IB_QPS_INIT);
	CHECK(init.qp_attr_mask == (IB_QP_STATE | IB_QP_PKEY_INDEX | IB_QP_PORT | IB_QP_ACCESS_FLAGS));
	CHECK(init.qp_access_flags == 0);
	CHECK(init.port_num == 1);
	REQUIRE(p.client.connect(cid, 0x123, "hello") > 0);
	p.drain();

	auto req = p.server.expect(RDMA_CM_EVENT_CONNECT_REQUEST);
	CHECK(req.uid == 0x5e);
	CHECK(req.param.conn.qp_num == 0x123);
	CHECK(req.param.conn.private_data_len == 56);
	CHECK(memcmp(req.param.conn.private_data, "hello", 5) == 0);
	uint32_t sid = req.id;
	CHECK(sid != lid);
	/* the server's MRA keeps the client waiting past the REQ's own timeout
	 * (2 x 1024 + 4096 ms): no second REQ, no error */
	for (int i = 0; i < 10; i++)
		p.advance(1000);
	rdma_ucm_event_resp ev;
	CHECK(p.client.getEvent(ev) == -EAGAIN);
	CHECK(p.server.getEvent(ev) == -EAGAIN);

	REQUIRE(p.server.accept(sid, 0xacce, 0x456) > 0);
	p.drain();
	auto rep = p.client.expect(RDMA_CM_EVENT_CONNECT_RESPONSE);
	CHECK(rep.uid == 0xc1);
	CHECK(rep.param.conn.qp_num == 0x456);

	/* both QPs get each other's numbers and PSNs */
	ib_uverbs_qp_attr cRtr = p.client.qpAttr(cid, IB_QPS_RTR), cRts = p.client.qpAttr(cid, IB_QPS_RTS);
	ib_uverbs_qp_attr sRtr = p.server.qpAttr(sid, IB_QPS_RTR), sRts = p.server.qpAttr(sid, IB_QPS_RTS);
	CHECK(cRtr.dest_qp_num == 0x456);
	CHECK(sRtr.dest_qp_num == 0x123);
	CHECK(cRtr.ah_attr.dlid == p.lid2());
	CHECK(sRtr.ah_attr.dlid == p.lid1());
	CHECK(cRtr.path_mtu == 4);
	CHECK(cRtr.rq_psn == sRts.sq_psn);
	CHECK(sRtr.rq_psn == cRts.sq_psn);
	CHECK(cRts.retry_cnt == 7);
	CHECK(p.client.qpAttr(cid, IB_QPS_INIT).qp_access_flags ==
	      (IB_ACCESS_REMOTE_WRITE | IB_ACCESS_REMOTE_READ | IB_ACCESS_REMOTE_ATOMIC));

	/* the active side's ACCEPT is its RTU */
	REQUIRE(p.client.accept(cid, 0, 0) > 0);
	p.drain();
	auto est = p.server.expect(RDMA_CM_EVENT_ESTABLISHED);
	CHECK(est.uid == 0xacce);
	CHECK(est.id == sid);

	/* the client disconnects; the server answers */
	REQUIRE(p.client.cmd(RDMA_USER_CM_CMD_DISCONNECT, rdma_ucm_disconnect{ cid }) > 0);
	p.drain();
	p.server.expect(RDMA_CM_EVENT_DISCONNECTED);
	CHECK(p.client.getEvent(ev) == -EAGAIN);
	REQUIRE(p.server.cmd(RDMA_USER_CM_CMD_DISCONNECT, rdma_ucm_disconnect{ sid }) > 0);
	p.drain();
	p.client.expect(RDMA_CM_EVENT_DISCONNECTED);

	CHECK(p.server.destroy(sid) == 2); /* ESTABLISHED and DISCONNECTED */
	CHECK(p.server.destroy(lid) == 1); /* the CONNECT_REQUEST */
	CHECK(p.client.destroy(cid) == 4);
}

TEST_CASE("rdma_cm: no listener is a REJ with invalid service ID", "[rdma_cm]")
{
	CmPair p;
	uint32_t cid = p.resolved(9999);
	REQUIRE(p.client.connect(cid, 0x123) > 0);
	p.drain();
	auto ev = p.client.expect(RDMA_CM_EVENT_REJECTED);
	CHECK(ev.status == cm::REJ_INVALID_SERVICE_ID);
}

TEST_CASE("rdma_cm: a rejected request, and a peer whose file closes mid-handshake", "[rdma_cm]")
{
	CmPair p;
	uint32_t lid = p.server.create(0x5e);
	REQUIRE(p.server.bindIp(lid, ip4(0, 7471)) > 0);
	REQUIRE(p.server.listen(lid) > 0);

	uint32_t cid = p.resolved(7471);
	REQUIRE(p.client.connect(cid, 0x123) > 0);
	p.drain();
	auto req = p.server.expect(RDMA_CM_EVENT_CONNECT_REQUEST);
	rdma_ucm_reject rj{};
	rj.id = req.id;
	rj.private_data_len = 3;
	memcpy(rj.private_data, "no!", 3);
	rj.reason = 7; /* only the consumer's reasons */
	CHECK(p.server.cmd(RDMA_USER_CM_CMD_REJECT, rj) == -EINVAL);
	rj.reason = 0;
	REQUIRE(p.server.cmd(RDMA_USER_CM_CMD_REJECT, rj) > 0);
	p.drain();
	auto ev = p.client.expect(RDMA_CM_EVENT_REJECTED);
	CHECK(ev.status == cm::REJ_CONSUMER_DEFINED);
	CHECK(memcmp(ev.param.conn.private_data, "no!", 3) == 0);

	/* a second try; the server's file closes before it answers */
	uint32_t cid2 = p.resolved(7471);
	REQUIRE(p.client.connect(cid2, 0x124) > 0);
	p.drain();
	p.server.expect(RDMA_CM_EVENT_CONNECT_REQUEST);
	p.server.reopen();
	p.drain();
	ev = p.client.expect(RDMA_CM_EVENT_REJECTED);
	CHECK(ev.status == cm::REJ_CONSUMER_DEFINED);
}

TEST_CASE("rdma_cm: a REQ no one answers ends UNREACHABLE after the CM's retries", "[rdma_cm]")
{
	CmPair p;
	uint32_t cid = p.resolved(7471);
	/* the server's port drops CM MADs: unplug its agent's HCA view by
	 * listening nowhere and silencing the CM on host2 */
	p.hca2->madPorts[0]->port().host = nullptr;
	REQUIRE(p.client.connect(cid, 0x123) > 0);
	p.drain();
	/* REQ timeout: 2 * 4.096us*2^18 + 4.096us*2^20 = 2*1024 + 4096 ms, 16 tries */
	for (int i = 0; i < 16 * 7; i++)
		p.advance(1000);
	auto ev = p.client.expect(RDMA_CM_EVENT_UNREACHABLE);
	CHECK(int(ev.status) == -ETIMEDOUT);
	p.hca2->madPorts[0]->port().host = p.hca2->madPorts[0].get();
}

TEST_CASE("rdma_cm: what crosses the wire for a connection", "[rdma_cm]")
{
	CmPair p(true); /* the SA on host2: the PathRecord query crosses the fabric too */
	std::vector<std::string> wire;
	p.subnet.setDropFilter([&](const Port &out, const Packet &pkt) {
		if (&out != p.p1 && &out != p.p2)
			return false; /* each MAD once, where it leaves its CA */
		static const std::map<uint16_t, std::string> cm = { { cm::ATTR_REQ, "REQ" },  { cm::ATTR_MRA, "MRA" },
								    { cm::ATTR_REJ, "REJ" },  { cm::ATTR_REP, "REP" },
								    { cm::ATTR_RTU, "RTU" },  { cm::ATTR_DREQ, "DREQ" },
								    { cm::ATTR_DREP, "DREP" } };
		uint16_t attr = uint16_t(pkt.mad[16] << 8 | pkt.mad[17]);
		std::string from = &out == p.p1 ? "host1 " : "host2 ";
		if (pkt.mad[1] == IB_MGMT_CLASS_CM && cm.count(attr))
			wire.push_back(from + "CM " + cm.at(attr));
		else if (pkt.mad[1] == IB_MGMT_CLASS_SUBN_ADM && attr == 0x0035)
			wire.push_back(from + (pkt.mad[3] == IB_MGMT_METHOD_GET ? "SubnAdmGet" : "SubnAdmGetResp") +
				       " PathRecord");
		return false;
	});
	const fabric::PortCounters c1 = p.p1->counters, c2 = p.p2->counters, s1 = p.p1->peer->counters,
				   s2 = p.p2->peer->counters;
	uint32_t lid = p.server.create(1);
	REQUIRE(p.server.bindIp(lid, ip4(p.addr2, 7471)) > 0);
	REQUIRE(p.server.listen(lid) > 0);
	uint32_t cid = p.resolved(7471);
	REQUIRE(p.client.connect(cid, 0x123) > 0);
	p.drain();
	uint32_t sid = p.server.expect(RDMA_CM_EVENT_CONNECT_REQUEST).id;
	REQUIRE(p.server.accept(sid, 2, 0x456) > 0);
	p.drain();
	p.client.expect(RDMA_CM_EVENT_CONNECT_RESPONSE);
	REQUIRE(p.client.accept(cid, 0, 0) > 0);
	p.drain();
	p.server.expect(RDMA_CM_EVENT_ESTABLISHED);
	REQUIRE(p.client.cmd(RDMA_USER_CM_CMD_DISCONNECT, rdma_ucm_disconnect{ cid }) > 0);
	p.drain();
	REQUIRE(p.server.cmd(RDMA_USER_CM_CMD_DISCONNECT, rdma_ucm_disconnect{ sid }) > 0);
	p.drain();
	p.subnet.setDropFilter(nullptr);
	const std::vector<std::string> expected = {
		"host1 SubnAdmGet PathRecord",
		"host2 SubnAdmGetResp PathRecord",
		"host1 CM REQ",
		"host2 CM MRA",
		"host2 CM REP",
		"host1 CM RTU",
		"host1 CM DREQ",
		"host2 CM DREP",
	};
	CHECK(wire == expected);
	/* the PMAs of both CA ports and of the switch ports at their cables counted them */
	CHECK(p.p1->counters.xmitPkts - c1.xmitPkts == 4);
	CHECK(p.p2->counters.xmitPkts - c2.xmitPkts == 4);
	CHECK(p.p1->counters.rcvPkts - c1.rcvPkts == 4);
	CHECK(p.p1->peer->counters.rcvPkts - s1.rcvPkts == 4);
	CHECK(p.p2->peer->counters.xmitPkts - s2.xmitPkts == 4);
}

TEST_CASE("rdma_cm: a UD ID resolves its peer's QP with SIDR", "[rdma_cm]")
{
	CmPair p;
	uint32_t lid = p.server.create(0x5e, RDMA_PS_UDP);
	REQUIRE(p.server.bindIp(lid, ip4(p.addr2, 7174)) > 0);
	REQUIRE(p.server.listen(lid) > 0);
	uint32_t cid = p.resolved(7174, RDMA_PS_UDP);
	ib_uverbs_qp_attr init = p.client.qpAttr(cid, IB_QPS_INIT);
	CHECK(init.qp_attr_mask == (IB_QP_STATE | IB_QP_PKEY_INDEX | IB_QP_PORT | IB_QP_QKEY));
	CHECK(init.qkey == 0x01234567); /* RDMA_UDP_QKEY */
	REQUIRE(p.client.connect(cid, 0x123, "ud?") > 0);
	p.drain();
	auto req = p.server.expect(RDMA_CM_EVENT_CONNECT_REQUEST);
	CHECK(req.uid == 0x5e);
	CHECK(req.param.ud.private_data_len == 216 - 36);
	CHECK(memcmp(req.param.ud.private_data, "ud?", 3) == 0);
	REQUIRE(p.server.accept(req.id, 0xacce, 0x456) > 0);
	p.drain();
	auto est = p.client.expect(RDMA_CM_EVENT_ESTABLISHED);
	CHECK(est.param.ud.qp_num == 0x456);
	CHECK(est.param.ud.qkey == 0x01234567);
	CHECK(est.param.ud.ah_attr.dlid == p.lid2());
	CHECK(est.param.ud.ah_attr.port_num == 1);
	rdma_ucm_event_resp ev;
	CHECK(p.server.getEvent(ev) == -EAGAIN); /* UD: no ESTABLISHED on the passive side */

	/* no one listening on the port: the CM answers "unsupported" */
	uint32_t cid2 = p.resolved(9999, RDMA_PS_UDP);
	REQUIRE(p.client.connect(cid2, 0x124) > 0);
	p.drain();
	auto un = p.client.expect(RDMA_CM_EVENT_UNREACHABLE);
	CHECK(un.status == cm::SIDR_UNSUPPORTED);
	/* a server that rejects */
	uint32_t cid3 = p.resolved(7174, RDMA_PS_UDP);
	REQUIRE(p.client.connect(cid3, 0x125) > 0);
	p.drain();
	auto req3 = p.server.expect(RDMA_CM_EVENT_CONNECT_REQUEST);
	rdma_ucm_reject rj{};
	rj.id = req3.id;
	REQUIRE(p.server.cmd(RDMA_USER_CM_CMD_REJECT, rj) > 0);
	p.drain();
	un = p.client.expect(RDMA_CM_EVENT_UNREACHABLE);
	CHECK(un.status == cm::SIDR_REJECT);
}
