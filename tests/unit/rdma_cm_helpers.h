// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// rdma_cm test helpers: one process's rdma_cm file (emu/ucma_file.h)
// written to as librdmacm writes, and a pair of them (client and server)
// on the fixture's two HCAs with an SA on the fabric. Used by
// test_rdma_cm.cpp (addresses, routes, commands), test_rdma_cm_conn.cpp
// (connections and SIDR) and test_rdma_cm_mcast.cpp (multicast).
#pragma once

#include "tests/unit/sa_helpers.h"
#include "tests/unit/verbs_helpers.h"

#include "emu/rdma_cm_abi.h"
#include "emu/ucma_file.h"

#include <catch2/catch.hpp>

#include <cstring>
#include <memory>
#include <vector>

namespace ibemu::test {

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

} /* namespace ibemu::test */
