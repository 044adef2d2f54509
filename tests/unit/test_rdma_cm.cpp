// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// rdma_cm files (emu/ucma_file.h) driven as librdmacm drives them, between
// the fixture's two HCAs: addresses, a route from an SA on the fabric, the
// IB CM's REQ/MRA/REP/RTU/DREQ/DREP on the wire, rejects and timeouts.
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

/* one process's rdma_cm file, written to as librdmacm writes */
struct CmClient {
	emu::Host &host;
	FakeAccess &ua;
	std::unique_ptr<UcmaFile> file;
	pid_t tid;

	CmClient(emu::Host &h, FakeAccess &a, pid_t t)
		: host(h), ua(a), file(std::make_unique<UcmaFile>(h.cma(), a, t)), tid(t)
	{}
	CmClient(VerbsFixture &f, pid_t t) : CmClient(*f.host, f.ua, t) {}
	/* close() and open() again */
	void reopen()
	{
		file.reset();
		file = std::make_unique<UcmaFile>(host.cma(), ua, tid);
	}

	template <typename Cmd> ssize_t cmd(uint32_t command, const Cmd &c, uint16_t out = 0, bool nonblock = true)
	{
		std::vector<uint8_t> buf(sizeof(rdma_ucm_cmd_hdr) + sizeof c);
		rdma_ucm_cmd_hdr h{ command, uint16_t(sizeof c), out };
		memcpy(buf.data(), &h, sizeof h);
		memcpy(buf.data() + sizeof h, &c, sizeof c);
		return file->write(tid, buf.data(), buf.size(), nonblock);
	}
	uint32_t create(uint64_t uid, uint16_t ps = RDMA_PS_TCP)
	{
		rdma_ucm_create_id_resp resp{ ~0u };
		rdma_ucm_create_id c{};
		c.uid = uid;
		c.response = uintptr_t(&resp);
		c.ps = ps;
		REQUIRE(cmd(RDMA_USER_CM_CMD_CREATE_ID, c, sizeof resp) > 0);
		return resp.id;
	}
	ssize_t bindIp(uint32_t id, sockaddr_in6 a)
	{
		rdma_ucm_bind_ip c{};
		c.addr = a;
		c.id = id;
		return cmd(RDMA_USER_CM_CMD_BIND_IP, c);
	}
	ssize_t resolveIp(uint32_t id, const sockaddr_in6 *src, sockaddr_in6 dst, uint32_t ms = 2000)
	{
		rdma_ucm_resolve_ip c{};
		if (src)
			c.src_addr = *src;
		c.dst_addr = dst;
		c.id = id;
		c.timeout_ms = ms;
		return cmd(RDMA_USER_CM_CMD_RESOLVE_IP, c);
	}
	ssize_t resolveRoute(uint32_t id, uint32_t ms = 2000)
	{
		return cmd(RDMA_USER_CM_CMD_RESOLVE_ROUTE, rdma_ucm_resolve_route{ id, ms });
	}
	ssize_t listen(uint32_t id, uint32_t backlog = 8)
	{
		return cmd(RDMA_USER_CM_CMD_LISTEN, rdma_ucm_listen{ id, backlog });
	}
	ssize_t connect(uint32_t id, uint32_t qpn, const char *priv = "")
	{
		rdma_ucm_connect c{};
		c.id = id;
		c.conn_param.qp_num = qpn;
		c.conn_param.valid = 1;
		c.conn_param.retry_count = 7;
		c.conn_param.rnr_retry_count = 7;
		c.conn_param.responder_resources = 4;
		c.conn_param.initiator_depth = 4;
		c.conn_param.private_data_len = uint8_t(strlen(priv));
		memcpy(c.conn_param.private_data, priv, strlen(priv));
		return cmd(RDMA_USER_CM_CMD_CONNECT, c);
	}
	ssize_t accept(uint32_t id, uint64_t uid, uint32_t qpn)
	{
		rdma_ucm_accept c{};
		c.id = id;
		c.uid = uid;
		if (qpn) {
			c.conn_param.qp_num = qpn;
			c.conn_param.valid = 1;
			c.conn_param.responder_resources = 4;
			c.conn_param.initiator_depth = 4;
			c.conn_param.rnr_retry_count = 7;
		}
		return cmd(RDMA_USER_CM_CMD_ACCEPT, c);
	}
	ssize_t getEvent(rdma_ucm_event_resp &ev, bool nonblock = true)
	{
		ev = {};
		rdma_ucm_get_event c{ uintptr_t(&ev) };
		return cmd(RDMA_USER_CM_CMD_GET_EVENT, c, sizeof ev, nonblock);
	}
	/* the next event, which must be `type` */
	rdma_ucm_event_resp expect(uint32_t type)
	{
		rdma_ucm_event_resp ev;
		REQUIRE(getEvent(ev) > 0);
		CHECK(ev.event == type);
		return ev;
	}
	ib_uverbs_qp_attr qpAttr(uint32_t id, uint32_t state)
	{
		ib_uverbs_qp_attr a{};
		rdma_ucm_init_qp_attr c{ uintptr_t(&a), id, state };
		REQUIRE(cmd(RDMA_USER_CM_CMD_INIT_QP_ATTR, c, sizeof a) > 0);
		return a;
	}
	uint32_t destroy(uint32_t id)
	{
		rdma_ucm_destroy_id_resp resp{ ~0u };
		rdma_ucm_destroy_id c{ uintptr_t(&resp), id, 0 };
		REQUIRE(cmd(RDMA_USER_CM_CMD_DESTROY_ID, c, sizeof resp) > 0);
		return resp.events_reported;
	}
};

struct CmPair : VerbsFixture {
	explicit CmPair(bool saOnHost2 = false) : sa(*this, saOnHost2) {}
	TestSa sa;
	CmClient client{ *this, 100 };
	CmClient server{ *this, 200 };
	uint32_t addr1 = host->cma().ipv4Of(*hca1->node, 1);
	uint32_t addr2 = host->cma().ipv4Of(*hca2->node, 1);

	/* the client's ID through ADDR_RESOLVED and ROUTE_RESOLVED to addr2:port */
	uint32_t resolved(uint16_t port, uint16_t ps = RDMA_PS_TCP)
	{
		uint32_t id = client.create(0xc1, ps);
		sockaddr_in6 src = ip4(addr1, 0), dst = ip4(addr2, port);
		REQUIRE(client.resolveIp(id, &src, dst) > 0);
		drain();
		client.expect(RDMA_CM_EVENT_ADDR_RESOLVED);
		REQUIRE(client.resolveRoute(id) > 0);
		drain();
		client.expect(RDMA_CM_EVENT_ROUTE_RESOLVED);
		return id;
	}
};

} /* namespace */

TEST_CASE("rdma_cm: each local port has its address", "[rdma_cm]")
{
	CmPair p;
	CHECK(ntohl(p.addr1) >> 16 == 0x0ac8); /* 10.200.0.0/16 */
	CHECK(p.addr1 != p.addr2);
	uint32_t id = p.client.create(1);
	CHECK(p.client.bindIp(id, ip4(p.addr1, 7000)) > 0);
	/* the same address and port again: in use */
	uint32_t id2 = p.client.create(2);
	CHECK(p.client.bindIp(id2, ip4(p.addr1, 7000)) == -EADDRINUSE);
	/* an address no port has */
	uint32_t id3 = p.client.create(3);
	CHECK(p.client.bindIp(id3, ip4(inet_addr("10.200.99.9"), 0)) == -EADDRNOTAVAIL);
	/* a bound ID binds no more */
	CHECK(p.client.bindIp(id, ip4(p.addr1, 7001)) == -EINVAL);

	rdma_ucm_query_route_resp r{};
	rdma_ucm_query q{ uintptr_t(&r), id, 0 };
	REQUIRE(p.client.cmd(RDMA_USER_CM_CMD_QUERY_ROUTE, q, sizeof r) > 0);
	CHECK(be64toh(r.node_guid) == p.hca1->node->nodeGuid);
	CHECK(r.port_num == 1);
	CHECK(r.num_paths == 0);
	CHECK(reinterpret_cast<sockaddr_in *>(&r.src_addr)->sin_port == htons(7000));
	/* a response that does not fit */
	CHECK(p.client.cmd(RDMA_USER_CM_CMD_QUERY_ROUTE, q, 16) == -ENOSPC);
	/* another file's ID, and no ID */
	rdma_ucm_query q2{ uintptr_t(&r), id, 0 };
	CHECK(p.server.cmd(RDMA_USER_CM_CMD_QUERY_ROUTE, q2, sizeof r) == -EINVAL);
	q2.id = 999;
	CHECK(p.client.cmd(RDMA_USER_CM_CMD_QUERY_ROUTE, q2, sizeof r) == -ENOENT);
}

TEST_CASE("rdma_cm: address resolution errors as a real host gives them", "[rdma_cm]")
{
	CmPair p;
	uint32_t id = p.client.create(1);
	/* on the subnet, but no port answers: ARP times out */
	REQUIRE(p.client.resolveIp(id, nullptr, ip4(inet_addr("10.200.99.9"), 1), 500) > 0);
	p.drain();
	rdma_ucm_event_resp ev;
	CHECK(p.client.getEvent(ev) == -EAGAIN);
	p.advance(500);
	ev = p.client.expect(RDMA_CM_EVENT_ADDR_ERROR);
	CHECK(int(ev.status) == -ETIMEDOUT);
	CHECK(ev.uid == 1);
	/* off the subnet: no route, and the command says so */
	uint32_t id2 = p.client.create(2);
	CHECK(p.client.resolveIp(id2, nullptr, ip4(inet_addr("192.0.2.1"), 1)) == -ENETUNREACH);
	p.drain();
	/* a blocking GET_EVENT with nothing queued parks */
	CHECK(p.client.getEvent(ev, false) == UcmaFile::kBlocked);
	CHECK(p.client.destroy(id) == 1);
	CHECK(p.client.destroy(id2) == 0);
}

TEST_CASE("rdma_cm: a route is a PathRecord from the SM; no answer is ROUTE_ERROR", "[rdma_cm]")
{
	CmPair p;
	uint32_t id = p.resolved(7471);
	CHECK(p.sa.queries == 1);
	CHECK(p.sa.lastMask ==
	      (PR_DGID | PR_SGID | PR_PKEY | PR_NUMB_PATH | PR_REVERSIBLE | PR_SERVICE_ID | PR_QOS_CLASS));
	rdma_ucm_query_route_resp r{};
	rdma_ucm_query q{ uintptr_t(&r), id, 0 };
	REQUIRE(p.client.cmd(RDMA_USER_CM_CMD_QUERY_ROUTE, q, sizeof r) > 0);
	CHECK(r.num_paths == 1);
	CHECK(ntohs(r.ib_route[0].slid) == p.lid1());
	CHECK(ntohs(r.ib_route[0].dlid) == p.lid2());
	CHECK(r.ib_route[0].mtu == 4);

	/* QUERY PATH: the SA's record as it came */
	uint8_t buf[8 + 72]{};
	rdma_ucm_query qp{ uintptr_t(buf), id, RDMA_USER_CM_QUERY_PATH };
	REQUIRE(p.client.cmd(RDMA_USER_CM_CMD_QUERY, qp, sizeof buf) > 0);
	CHECK(buf[0] == 1);
	PathRecord rec = PathRecord::decode(buf + 16);
	CHECK(rec.dlid == p.lid2());

	/* the SM says nothing: ten tries, then ROUTE_ERROR */
	p.sa.silent = true;
	uint32_t id2 = p.client.create(2);
	sockaddr_in6 src = ip4(p.addr1, 0);
	REQUIRE(p.client.resolveIp(id2, &src, ip4(p.addr2, 1)) > 0);
	p.drain();
	p.client.expect(RDMA_CM_EVENT_ADDR_RESOLVED);
	REQUIRE(p.client.resolveRoute(id2, 1000) > 0);
	for (int i = 0; i < 12; i++)
		p.advance(100);
	auto ev = p.client.expect(RDMA_CM_EVENT_ROUTE_ERROR);
	CHECK(int(ev.status) == -ETIMEDOUT);
	CHECK(p.sa.queries == 1 + 11);
}

/* What librdmacm does with a route from ibacm: SET_OPTION(IB, IB_PATH)
 * with the records, after the address and instead of RESOLVE_ROUTE */
TEST_CASE("rdma_cm: RDMA_OPTION_IB_PATH is the route, without asking the SM", "[rdma_cm]")
{
	CmPair p;
	uint32_t a = p.resolved(7471);
	CHECK(p.sa.queries == 1);
	uint8_t got[8 + 72]{};
	rdma_ucm_query q{ uintptr_t(got), a, RDMA_USER_CM_QUERY_PATH };
	REQUIRE(p.client.cmd(RDMA_USER_CM_CMD_QUERY, q, sizeof got) > 0);

	/* two records: one not for GMPs, then the SM's path with another SL */
	ib_path_rec_data recs[2]{};
	memcpy(&recs[1], got + 8, sizeof recs[1]);
	PathRecord path = PathRecord::decode(recs[1].path_rec);
	REQUIRE(path.dlid == p.lid2());
	path.sl = 3;
	path.encode(recs[1].path_rec);
	recs[0] = recs[1];
	recs[0].flags = IB_PATH_PRIMARY | IB_PATH_BIDIRECTIONAL;
	auto set = [&](uint32_t id, const void *val, uint32_t len, uint32_t name = RDMA_OPTION_IB_PATH) {
		rdma_ucm_set_option o{ uintptr_t(val), id, RDMA_OPTION_IB, name, len };
		return p.client.cmd(RDMA_USER_CM_CMD_SET_OPTION, o);
	};

	uint32_t b = p.client.create(0xc2);
	CHECK(set(b, recs, sizeof recs) == -EINVAL); /* no device yet */
	sockaddr_in6 src = ip4(p.addr1, 0);
	REQUIRE(p.client.resolveIp(b, &src, ip4(p.addr2, 7471)) > 0);
	p.drain();
	p.client.expect(RDMA_CM_EVENT_ADDR_RESOLVED);
	CHECK(set(b, nullptr, 0) == -EINVAL); /* no records at all */
	CHECK(set(b, recs, sizeof recs - 1) == -EINVAL); /* not whole records */
	CHECK(set(b, recs, sizeof recs[0]) == -EINVAL); /* no GMP, primary, bidirectional record */
	CHECK(set(b, recs, sizeof recs, 2) == -ENOSYS);
	p.ua.proc(p.client.tid).unmapped.push_back({ 0x1000, 0x2000 });
	CHECK(set(b, reinterpret_cast<void *>(0x1000), sizeof recs) == -EFAULT);
	rdma_ucm_event_resp ev;
	CHECK(p.client.getEvent(ev) == -EAGAIN);

	REQUIRE(set(b, recs, sizeof recs) > 0);
	auto routed = p.client.expect(RDMA_CM_EVENT_ROUTE_RESOLVED); /* queued by the command itself */
	CHECK(routed.id == b);
	CHECK(routed.status == 0);
	CHECK(set(b, recs, sizeof recs) == -EINVAL); /* routed already */
	CHECK(p.client.resolveRoute(b) == -EINVAL);
	p.drain();
	CHECK(p.sa.queries == 1);
	REQUIRE(p.client.cmd(RDMA_USER_CM_CMD_QUERY, rdma_ucm_query{ uintptr_t(got), b, RDMA_USER_CM_QUERY_PATH },
			     sizeof got) > 0);
	CHECK(memcmp(got + 16, recs[1].path_rec, 64) == 0);

	/* the connection follows that path, and its REQ tells the server */
	uint32_t lid = p.server.create(0x5e);
	REQUIRE(p.server.bindIp(lid, ip4(p.addr2, 7471)) > 0);
	REQUIRE(p.server.listen(lid) > 0);
	REQUIRE(p.client.connect(b, 0x123) > 0);
	p.drain();
	uint32_t sid = p.server.expect(RDMA_CM_EVENT_CONNECT_REQUEST).id;
	REQUIRE(p.server.accept(sid, 0xacce, 0x456) > 0);
	p.drain();
	p.client.expect(RDMA_CM_EVENT_CONNECT_RESPONSE);
	ib_uverbs_qp_attr c = p.client.qpAttr(b, IB_QPS_RTR), s = p.server.qpAttr(sid, IB_QPS_RTR);
	CHECK(c.ah_attr.sl == 3);
	CHECK(c.ah_attr.dlid == p.lid2());
	CHECK(s.ah_attr.sl == 3);
	CHECK(s.ah_attr.dlid == p.lid1());
}

TEST_CASE("rdma_cm: a connection through the IB CM, and its end", "[rdma_cm]")
{
	CmPair p;
	uint32_t lid = p.server.create(0x5e);
	REQUIRE(p.server.bindIp(lid, ip4(p.addr2, 7471)) > 0);
	REQUIRE(p.server.listen(lid) > 0);
	/* a second listener on the port */
	uint32_t lid2 = p.server.create(0x5f);
	CHECK(p.server.bindIp(lid2, ip4(0, 7471)) == -EADDRINUSE);

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

TEST_CASE("rdma_cm: bad commands get the kernel's errnos and leave nothing behind", "[rdma_cm]")
{
	CmPair p;
	uint8_t raw[8] = {};
	CHECK(p.client.file->write(100, raw, 7, true) == -EINVAL); /* no whole header */
	rdma_ucm_cmd_hdr h{ RDMA_USER_CM_CMD_COUNT, 0, 0 };
	memcpy(raw, &h, sizeof h);
	CHECK(p.client.file->write(100, raw, 8, true) == -EINVAL); /* no such command */
	h = { RDMA_USER_CM_CMD_CREATE_ID, 64, 4 };
	memcpy(raw, &h, sizeof h);
	CHECK(p.client.file->write(100, raw, 8, true) == -EINVAL); /* more command than written */
	CHECK(p.client.cmd(RDMA_USER_CM_CMD_GET_OPTION, rdma_ucm_query{}) == -ENOSYS);
	CHECK(p.client.cmd(RDMA_USER_CM_CMD_JOIN_MCAST, rdma_ucm_join_mcast{}) == -EINVAL); /* no address */

	/* a response the caller cannot take: EFAULT, and the ID is not kept */
	alignas(8) static uint8_t hole[64];
	p.ua.proc(100).unmapped.push_back({ uint64_t(uintptr_t(hole)), uint64_t(uintptr_t(hole)) + sizeof hole });
	rdma_ucm_create_id c{};
	c.response = uintptr_t(hole);
	c.ps = RDMA_PS_TCP;
	CHECK(p.client.cmd(RDMA_USER_CM_CMD_CREATE_ID, c, 4) == -EFAULT);
	CHECK(p.host->cma().countOf(p.client.file.get()) == 0);
	/* too small a response buffer; an unknown port space */
	rdma_ucm_create_id_resp resp{};
	c.response = uintptr_t(&resp);
	CHECK(p.client.cmd(RDMA_USER_CM_CMD_CREATE_ID, c, 2) == -ENOSPC);
	c.ps = 0x9999;
	CHECK(p.client.cmd(RDMA_USER_CM_CMD_CREATE_ID, c, 4) == -EINVAL);

	/* an event the caller cannot take stays queued */
	uint32_t id = p.client.create(7);
	REQUIRE(p.client.resolveIp(id, nullptr, ip4(p.addr1, 1)) > 0);
	p.drain();
	rdma_ucm_get_event ge{ uintptr_t(hole) };
	CHECK(p.client.cmd(RDMA_USER_CM_CMD_GET_EVENT, ge, sizeof(rdma_ucm_event_resp)) == -EFAULT);
	p.client.expect(RDMA_CM_EVENT_ADDR_RESOLVED);

	/* binds with a size that is not the family's, and a bind of AF_IB */
	rdma_ucm_bind b{};
	b.id = p.client.create(8);
	uint16_t fam = AF_INET;
	memcpy(b.addr.data, &fam, 2);
	b.addr_size = sizeof(sockaddr_in6);
	CHECK(p.client.cmd(RDMA_USER_CM_CMD_BIND, b) == -EINVAL);
	sockaddr_ib sib{};
	sib.sib_family = kAfIb;
	sib.sib_sid = htobe64(0x0000000001060000ull);
	sib.sib_sid_mask = htobe64(0xffffffffffff0000ull);
	memcpy(b.addr.data, &sib, sizeof sib);
	b.addr_size = sizeof sib;
	CHECK(p.client.cmd(RDMA_USER_CM_CMD_BIND, b) > 0); /* librdmacm's AF_IB probe */

	/* the IDs one file may hold */
	for (size_t n = p.host->cma().countOf(p.client.file.get()); n < UcmaFile::kMaxIds; n++)
		p.client.create(n);
	rdma_ucm_create_id c2{};
	c2.response = uintptr_t(&resp);
	c2.ps = RDMA_PS_TCP;
	CHECK(p.client.cmd(RDMA_USER_CM_CMD_CREATE_ID, c2, 4) == -ENOMEM);
	p.client.reopen(); /* closing the file ends them all */
	CHECK(p.host->cma().countOf(p.client.file.get()) == 0);
	CHECK(p.host->cma().find(0) == nullptr);
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

TEST_CASE("rdma_cm: an IPv6 wildcard bind takes IPv4's port too, unless AFONLY", "[rdma_cm]")
{
	CmPair p;
	auto any6 = [](uint16_t port) {
		sockaddr_in6 s{};
		s.sin6_family = AF_INET6;
		s.sin6_port = htons(port);
		return s;
	};
	uint32_t v6 = p.client.create(1);
	REQUIRE(p.client.bindIp(v6, any6(7000)) > 0);
	uint32_t v4 = p.client.create(2);
	CHECK(p.client.bindIp(v4, ip4(p.addr1, 7000)) == -EADDRINUSE);

	uint32_t only = p.client.create(3);
	int one = 1;
	rdma_ucm_set_option o{ uintptr_t(&one), only, RDMA_OPTION_ID, RDMA_OPTION_ID_AFONLY, sizeof one };
	REQUIRE(p.client.cmd(RDMA_USER_CM_CMD_SET_OPTION, o) > 0);
	REQUIRE(p.client.bindIp(only, any6(7001)) > 0);
	CHECK(p.client.bindIp(v4, ip4(p.addr1, 7001)) > 0);
	/* the option is for an ID not yet bound */
	CHECK(p.client.cmd(RDMA_USER_CM_CMD_SET_OPTION, o) == -EINVAL);
}

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

TEST_CASE("rdma_cm in a split subnet: every daemon numbers every CA alike and resolves another host's",
	  "[rdma_cm][remote-cable]")
{
	/* kSplitTopology's CAs in the file's order: H1 (host a), H3 (host a),
	 * H2 (host b); daemon a makes H1 an HCA, daemon b H2 */
	boost::asio::io_context io;
	SplitSubnet net{ &io };
	net.connect();
	MiniSm sm(net.a, SplitSubnet::port(net.a, "H1", 1));
	sm.run();
	FakeAccess ua;
	emu::Host hostA(io, net.a), hostB(io, net.b);
	hostA.setAccess(&ua);
	hostB.setAccess(&ua);
	REQUIRE(hostA.addHca(*net.a.findNode("H1"), "ibemu0"));
	REQUIRE(hostB.addHca(*net.b.findNode("H2"), "ibemu0"));
	/* an ID of cl's resolving dst: its handle, and its event once the
	 * 500 ms it gives ARP have passed */
	auto resolve = [&io](CmClient &cl, uint64_t uid, sockaddr_in6 dst, uint32_t &id) {
		id = cl.create(uid);
		REQUIRE(cl.resolveIp(id, nullptr, dst, 500) > 0);
		ManualClock::advance(std::chrono::milliseconds(500));
		io.restart();
		io.poll();
		rdma_ucm_event_resp ev;
		REQUIRE(cl.getEvent(ev) > 0);
		return ev;
	};

	CHECK(hostA.cma().ipv4Of(*net.a.findNode("H1"), 1) == inet_addr("10.200.0.1"));
	CHECK(hostA.cma().ipv4Of(*net.a.findNode("H2"), 1) == inet_addr("10.200.2.1"));
	CHECK(hostB.cma().ipv4Of(*net.b.findNode("H2"), 1) == inet_addr("10.200.2.1"));
	CHECK(hostB.cma().ipv4Of(*net.b.findNode("H3"), 1) == inet_addr("10.200.1.1"));
	CHECK(hostB.cma().ipv4Of(*net.b.findNode("S2"), 1) == 0); /* a switch has none */

	/* from a, H2's address is answered, through a's active port, and
	 * the destination GID is H2's port GUID under the subnet's prefix */
	CmClient c(hostA, ua, 100);
	uint32_t id = 0, other = 0;
	REQUIRE(resolve(c, 1, ip4(inet_addr("10.200.2.1"), 7000), id).event == RDMA_CM_EVENT_ADDR_RESOLVED);
	rdma_ucm_query_addr_resp r{};
	rdma_ucm_query q{ uintptr_t(&r), id, RDMA_USER_CM_QUERY_GID };
	REQUIRE(c.cmd(RDMA_USER_CM_CMD_QUERY, q, sizeof r) > 0);
	CHECK(be64toh(r.node_guid) == net.a.findNode("H1")->nodeGuid);
	CHECK(r.port_num == 1);
	const auto *dst = reinterpret_cast<const sockaddr_ib *>(&r.dst_addr);
	REQUIRE(dst->sib_family == kAfIb);
	uint64_t prefix = 0, guid = 0;
	for (int i = 0; i < 8; i++) {
		prefix = prefix << 8 | dst->sib_addr[i];
		guid = guid << 8 | dst->sib_addr[8 + i];
	}
	CHECK(prefix == SplitSubnet::port(net.a, "H1", 1).gidPrefix);
	CHECK(guid == SplitSubnet::port(net.b, "H2", 1).guid);

	/* and its IPv6 link-local address */
	sockaddr_in6 v6{};
	v6.sin6_family = AF_INET6;
	v6.sin6_port = htons(7000);
	auto ll = emu::Cma::ipv6Of(SplitSubnet::port(net.a, "H2", 1).guid);
	memcpy(&v6.sin6_addr, ll.data(), 16);
	CHECK(resolve(c, 2, v6, other).event == RDMA_CM_EVENT_ADDR_RESOLVED);

	/* H3 is a's own CA but not an HCA there: nobody answers in a ... */
	rdma_ucm_event_resp ev = resolve(c, 3, ip4(inet_addr("10.200.1.1"), 7000), other);
	CHECK(ev.event == RDMA_CM_EVENT_ADDR_ERROR);
	CHECK(int(ev.status) == -ETIMEDOUT);
	/* ... while b, which cannot know, answers from the topology */
	CmClient cb(hostB, ua, 200);
	CHECK(resolve(cb, 4, ip4(inet_addr("10.200.1.1"), 7000), other).event == RDMA_CM_EVENT_ADDR_RESOLVED);
	/* a CA number past the subnet's CAs is nobody's */
	ev = resolve(cb, 5, ip4(inet_addr("10.200.3.1"), 7000), other);
	CHECK(ev.event == RDMA_CM_EVENT_ADDR_ERROR);
	CHECK(int(ev.status) == -ETIMEDOUT);
}
