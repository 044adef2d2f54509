// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// rdma_cm files (emu/ucma_file.h) driven as librdmacm drives them, between
// the fixture's two HCAs: each port's addresses, address resolution and
// its errors, a route from an SA on the fabric or from the program
// (RDMA_OPTION_IB_PATH), binding rules, bad commands, and addresses in a
// subnet split across daemons. Connections are tested in
// test_rdma_cm_conn.cpp, multicast in test_rdma_cm_mcast.cpp.
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

/* cma_any_addr(): a loopback address is a wildcard. libfabric's verbs
 * provider binds 127.0.0.1 ("localhost") on every fi_getinfo and takes
 * EADDRNOTAVAIL as "no verbs here" */
TEST_CASE("rdma_cm: loopback addresses bind to no device and resolve to a local port", "[rdma_cm]")
{
	CmPair p;
	uint32_t id = p.client.create(1);
	CHECK(p.client.bindIp(id, ip4(inet_addr("127.0.0.1"), 7000)) > 0);
	rdma_ucm_query_route_resp r{};
	rdma_ucm_query q{ uintptr_t(&r), id, 0 };
	REQUIRE(p.client.cmd(RDMA_USER_CM_CMD_QUERY_ROUTE, q, sizeof r) > 0);
	CHECK(r.node_guid == 0);
	CHECK(r.port_num == 0);
	/* a wildcard on the port overlaps every address on it:
	 * EADDRNOTAVAIL, as cma_check_port() (EADDRINUSE is for equal
	 * addresses) */
	uint32_t id2 = p.client.create(2);
	CHECK(p.client.bindIp(id2, ip4(p.addr1, 7000)) == -EADDRNOTAVAIL);
	CHECK(p.client.bindIp(id2, ip4(inet_addr("127.0.0.2"), 7001)) > 0);
	sockaddr_in6 v6{};
	v6.sin6_family = AF_INET6;
	v6.sin6_addr = in6addr_loopback;
	uint32_t id3 = p.client.create(3);
	CHECK(p.client.bindIp(id3, v6) > 0);

	/* rdma_resolve_addr() to a loopback address: the first active port,
	 * whose own GID the destination is (cma_resolve_loopback()) */
	uint32_t id4 = p.client.create(4);
	REQUIRE(p.client.resolveIp(id4, nullptr, ip4(inet_addr("127.0.0.1"), 7000)) > 0);
	p.drain();
	p.client.expect(RDMA_CM_EVENT_ADDR_RESOLVED);
	REQUIRE(p.client.resolveRoute(id4) > 0);
	p.drain();
	p.client.expect(RDMA_CM_EVENT_ROUTE_RESOLVED);
	rdma_ucm_query q4{ uintptr_t(&r), id4, 0 };
	REQUIRE(p.client.cmd(RDMA_USER_CM_CMD_QUERY_ROUTE, q4, sizeof r) > 0);
	CHECK(be64toh(r.node_guid) == p.hca1->node->nodeGuid);
	CHECK(r.num_paths == 1);
	CHECK(ntohs(r.ib_route[0].slid) == p.lid1());
	CHECK(ntohs(r.ib_route[0].dlid) == p.lid1());
	CHECK(memcmp(r.ib_route[0].sgid, r.ib_route[0].dgid, 16) == 0);
}

/* addr_resolve() writes the route's source address back into an ID
 * bound to a zero address: librdmacm's rdma_get_local_addr() then has
 * the port's address, which libfabric's ofi_rxm sends its peers as its
 * own (0.0.0.0 they refuse: "invalid address") */
TEST_CASE("rdma_cm: resolving from no source takes the route's source address", "[rdma_cm]")
{
	CmPair p;
	auto srcOf = [&p](uint32_t id) {
		rdma_ucm_query_route_resp r{};
		rdma_ucm_query q{ uintptr_t(&r), id, 0 };
		REQUIRE(p.client.cmd(RDMA_USER_CM_CMD_QUERY_ROUTE, q, sizeof r) > 0);
		return *reinterpret_cast<sockaddr_in *>(&r.src_addr);
	};
	/* no source: a local destination is its own route's source */
	uint32_t id = p.client.create(1);
	REQUIRE(p.client.resolveIp(id, nullptr, ip4(p.addr2, 7000)) > 0);
	p.drain();
	p.client.expect(RDMA_CM_EVENT_ADDR_RESOLVED);
	sockaddr_in a = srcOf(id);
	CHECK(a.sin_addr.s_addr == p.addr2);
	CHECK(a.sin_port != 0); /* the ephemeral port it was bound to */
	/* bound to 0.0.0.0 first: the same, its port kept */
	uint32_t id2 = p.client.create(2);
	REQUIRE(p.client.bindIp(id2, ip4(INADDR_ANY, 7002)) > 0);
	REQUIRE(p.client.resolveIp(id2, nullptr, ip4(p.addr1, 7000)) > 0);
	p.drain();
	p.client.expect(RDMA_CM_EVENT_ADDR_RESOLVED);
	a = srcOf(id2);
	CHECK(a.sin_addr.s_addr == p.addr1);
	CHECK(a.sin_port == htons(7002));
	/* a source given stays */
	uint32_t id3 = p.client.create(3);
	sockaddr_in6 src = ip4(p.addr1, 0);
	REQUIRE(p.client.resolveIp(id3, &src, ip4(p.addr2, 7000)) > 0);
	p.drain();
	p.client.expect(RDMA_CM_EVENT_ADDR_RESOLVED);
	CHECK(srcOf(id3).sin_addr.s_addr == p.addr1);
	/* a loopback destination makes the source the loopback address, its
	 * port kept (cma_bind_loopback(): cma_set_loopback()) */
	uint32_t id4 = p.client.create(4);
	REQUIRE(p.client.bindIp(id4, ip4(INADDR_ANY, 7004)) > 0);
	REQUIRE(p.client.resolveIp(id4, nullptr, ip4(inet_addr("127.0.0.1"), 7000)) > 0);
	p.drain();
	p.client.expect(RDMA_CM_EVENT_ADDR_RESOLVED);
	a = srcOf(id4);
	CHECK(a.sin_addr.s_addr == htonl(INADDR_LOOPBACK));
	CHECK(a.sin_port == htons(7004));
}

/* On a cluster instance a loopback destination resolves within the ID's
 * host: its first active port, else its first HCA's port 1, never another
 * host's (cma_resolve_loopback() looks at the devices of the ID's network
 * namespace) */
TEST_CASE("rdma_cm: a loopback destination resolves to a port of the ID's host", "[rdma_cm]")
{
	CmPair p;
	p.hca1->hostName = "hosta";
	p.hca2->hostName = "hostb";
	p.client.file->setHostScope("hostb");
	auto resolvedNode = [&p](uint64_t uid) {
		uint32_t id = p.client.create(uid);
		REQUIRE(p.client.resolveIp(id, nullptr, ip4(inet_addr("127.0.0.1"), 7000)) > 0);
		p.drain();
		p.client.expect(RDMA_CM_EVENT_ADDR_RESOLVED);
		rdma_ucm_query_route_resp r{};
		rdma_ucm_query q{ uintptr_t(&r), id, 0 };
		REQUIRE(p.client.cmd(RDMA_USER_CM_CMD_QUERY_ROUTE, q, sizeof r) > 0);
		return be64toh(r.node_guid);
	};
	CHECK(resolvedNode(1) == p.hca2->node->nodeGuid);
	/* hostb's port down, hosta's active: still hostb's HCA */
	p.hca2->node->port(1).state = fabric::PortState::Down;
	CHECK(resolvedNode(2) == p.hca2->node->nodeGuid);
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
	CHECK(p.client.bindIp(v4, ip4(p.addr1, 7000)) == -EADDRNOTAVAIL);

	uint32_t only = p.client.create(3);
	int one = 1;
	rdma_ucm_set_option o{ uintptr_t(&one), only, RDMA_OPTION_ID, RDMA_OPTION_ID_AFONLY, sizeof one };
	REQUIRE(p.client.cmd(RDMA_USER_CM_CMD_SET_OPTION, o) > 0);
	REQUIRE(p.client.bindIp(only, any6(7001)) > 0);
	CHECK(p.client.bindIp(v4, ip4(p.addr1, 7001)) > 0);
	/* the option is for an ID not yet bound */
	CHECK(p.client.cmd(RDMA_USER_CM_CMD_SET_OPTION, o) == -EINVAL);
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
