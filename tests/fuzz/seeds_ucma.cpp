// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// Seeds of fuzz_ucma (tests/fuzz/make_seeds.cpp writes them): the command
// sequences librdmacm writes for a connection, a UD multicast join, options
// and MIGRATE_ID, and malformed headers.
#include "tests/fuzz/fuzz_common.h"
#include "tests/fuzz/seeds.h"
#include "tests/unit/sa_helpers.h"

#include "emu/cma.h"
#include "emu/rdma_cm_abi.h"

#include <arpa/inet.h>
#include <cstring>

using namespace ibemu;
using namespace ibemu::emu;
using namespace ibemu::fuzz::seeds;
using ibemu::test::ip4;

namespace {

/* f bits: 1 file B, 2 nonblock, 0x04 the response into the response area */
constexpr uint8_t kA = 0x00, kB = 0x01, kNb = 0x02, kResp = 0x04;

struct Ucma {
	Bytes b;
	template <typename T> void cmd(uint32_t c, uint8_t f, const T &req)
	{
		static_assert(sizeof req % 4 == 0 && sizeof req / 4 < 256);
		b.push_back(uint8_t(c));
		b.push_back(f);
		b.push_back(uint8_t(sizeof req / 4));
		append(b, req);
	}
	void special(uint8_t op, uint8_t f, uint32_t arg = 0)
	{
		b.push_back(uint8_t(0x80 | op));
		b.push_back(f);
		b.push_back(1);
		le32(b, arg);
	}
	void create(uint8_t f, uint64_t uid, uint16_t ps)
	{
		rdma_ucm_create_id c{};
		c.uid = uid;
		c.ps = ps;
		cmd(RDMA_USER_CM_CMD_CREATE_ID, uint8_t(f | kResp), c);
	}
	void event(uint8_t f) { cmd(RDMA_USER_CM_CMD_GET_EVENT, uint8_t(f | kResp | kNb), rdma_ucm_get_event{}); }
};

} /* namespace */

namespace ibemu::fuzz::seeds {

void ucmaSeeds()
{
	fuzz::Fixture fx;
	const uint32_t a1 = fx.host->cma().ipv4Of(*fx.hca1->node, 1), a2 = fx.host->cma().ipv4Of(*fx.hca2->node, 1);
	/* handles: the Cma numbers IDs from 0 host-wide, in creation order */
	{
		Ucma u; /* a connection: A (ID 0) connects to B's listener (ID 1) */
		u.create(kA, 0xa, RDMA_PS_TCP);
		u.create(kB, 0xb, RDMA_PS_TCP);
		u.cmd(RDMA_USER_CM_CMD_BIND_IP, kB, rdma_ucm_bind_ip{ 0, ip4(a2, 7000), 1 });
		u.cmd(RDMA_USER_CM_CMD_LISTEN, kB, rdma_ucm_listen{ 1, 8 });
		rdma_ucm_resolve_ip r{};
		r.src_addr = ip4(a1, 0);
		r.dst_addr = ip4(a2, 7000);
		r.id = 0;
		r.timeout_ms = 2000;
		u.cmd(RDMA_USER_CM_CMD_RESOLVE_IP, kA, r);
		u.event(kA);
		u.cmd(RDMA_USER_CM_CMD_RESOLVE_ROUTE, kA, rdma_ucm_resolve_route{ 0, 2000 });
		u.event(kA);
		u.cmd(RDMA_USER_CM_CMD_QUERY_ROUTE, uint8_t(kA | kResp), rdma_ucm_query{ 0, 0, 0 });
		rdma_ucm_connect c{};
		c.id = 0;
		c.conn_param.qp_num = 0x11;
		c.conn_param.valid = 1;
		c.conn_param.retry_count = 7;
		c.conn_param.rnr_retry_count = 7;
		c.conn_param.responder_resources = 1;
		c.conn_param.initiator_depth = 1;
		u.cmd(RDMA_USER_CM_CMD_CONNECT, kA, c);
		u.event(kB); /* CONNECT_REQUEST: the new ID is 2 */
		rdma_ucm_accept ac{};
		ac.id = 2;
		ac.uid = 0xbb;
		ac.conn_param.qp_num = 0x12;
		ac.conn_param.valid = 1;
		ac.conn_param.responder_resources = 1;
		ac.conn_param.initiator_depth = 1;
		u.cmd(RDMA_USER_CM_CMD_ACCEPT, kB, ac);
		u.event(kA);
		rdma_ucm_init_qp_attr qa{ 0, 0, 3 /* RTR */ };
		u.cmd(RDMA_USER_CM_CMD_INIT_QP_ATTR, uint8_t(kA | kResp), qa);
		u.cmd(RDMA_USER_CM_CMD_ACCEPT, kA, rdma_ucm_accept{}); /* the RTU */
		u.event(kB);
		u.cmd(RDMA_USER_CM_CMD_DISCONNECT, kA, rdma_ucm_disconnect{ 0 });
		u.event(kB);
		u.event(kA);
		u.cmd(RDMA_USER_CM_CMD_DESTROY_ID, uint8_t(kB | kResp), rdma_ucm_destroy_id{ 0, 2 });
		put("ucma", "connect-accept-disconnect", u.b);
	}
	{
		Ucma u; /* UD IDs joining one group on each host, and leaving */
		u.create(kA, 0xa, RDMA_PS_UDP);
		u.create(kB, 0xb, RDMA_PS_UDP);
		rdma_ucm_resolve_ip r{};
		r.src_addr = ip4(a1, 0);
		r.dst_addr = ip4(inet_addr("239.1.2.3"), 0);
		r.id = 0;
		r.timeout_ms = 2000;
		u.cmd(RDMA_USER_CM_CMD_RESOLVE_IP, kA, r);
		u.event(kA);
		u.cmd(RDMA_USER_CM_CMD_BIND_IP, kB, rdma_ucm_bind_ip{ 0, ip4(a2, 0), 1 });
		for (uint8_t f : { kA, kB }) {
			rdma_ucm_join_mcast j{};
			j.uid = 0x51;
			j.id = f;
			j.addr_size = sizeof(sockaddr_in);
			j.join_flags = f == kA ? RDMA_MC_JOIN_FLAG_FULLMEMBER : RDMA_MC_JOIN_FLAG_SENDONLY_FULLMEMBER;
			sockaddr_in6 g = ip4(inet_addr("239.1.2.3"), 0);
			memcpy(&j.addr, &g, sizeof(sockaddr_in));
			u.cmd(RDMA_USER_CM_CMD_JOIN_MCAST, uint8_t(f | kResp), j);
			u.event(f);
		}
		rdma_ucm_join_ip_mcast ji{};
		ji.uid = 0x52;
		ji.addr = ip4(inet_addr("239.9.9.9"), 0);
		ji.id = 0;
		u.cmd(RDMA_USER_CM_CMD_JOIN_IP_MCAST, uint8_t(kA | kResp), ji);
		u.special(0, kA, 5000);
		u.event(kA);
		u.cmd(RDMA_USER_CM_CMD_LEAVE_MCAST, uint8_t(kA | kResp), rdma_ucm_destroy_id{ 0, 0 });
		u.cmd(RDMA_USER_CM_CMD_DESTROY_ID, uint8_t(kB | kResp), rdma_ucm_destroy_id{ 0, 1 });
		put("ucma", "udp-multicast-join-leave", u.b);
	}
	{
		Ucma u; /* options, queries, notify, MIGRATE_ID to B's file, a close */
		u.create(kA, 0xa, RDMA_PS_TCP);
		int one = 1;
		rdma_ucm_set_option o{};
		o.optval = 0x100; /* response area + 0x100: the harness's memory */
		o.id = 0;
		o.level = RDMA_OPTION_ID;
		o.optname = RDMA_OPTION_ID_REUSEADDR;
		o.optlen = sizeof one;
		u.cmd(RDMA_USER_CM_CMD_SET_OPTION, kA, o);
		u.cmd(RDMA_USER_CM_CMD_BIND_IP, kA, rdma_ucm_bind_ip{ 0, ip4(a1, 7001), 0 });
		for (uint32_t option : { 0u, 1u, 2u }) /* RDMA_USER_CM_QUERY_ADDR, _PATH, _GID */
			u.cmd(RDMA_USER_CM_CMD_QUERY, uint8_t(kA | kResp), rdma_ucm_query{ 0, 0, option });
		u.cmd(RDMA_USER_CM_CMD_NOTIFY, kA, rdma_ucm_notify{ 0, 9 });
		u.special(6, kB); /* B's file opened by A's process */
		rdma_ucm_migrate_id m{};
		m.id = 0;
		m.fd = 3;
		u.cmd(RDMA_USER_CM_CMD_MIGRATE_ID, uint8_t(kB | kResp), m);
		u.special(3, kA);
		u.special(2, kB);
		put("ucma", "options-query-migrate-close", u.b);
	}
	{
		Ucma u; /* headers that lie, and commands nobody knows */
		Bytes raw;
		rdma_ucm_cmd_hdr h{ RDMA_USER_CM_CMD_CREATE_ID, 200, 4 };
		append(raw, h);
		u.b.push_back(0x84);
		u.b.push_back(kA);
		u.b.push_back(uint8_t(raw.size() / 4));
		append(u.b, raw);
		u.cmd(0x3f, kA, rdma_ucm_notify{ 1, 2 });
		u.cmd(RDMA_USER_CM_CMD_GET_OPTION, kA, rdma_ucm_notify{ 1, 2 });
		u.cmd(RDMA_USER_CM_CMD_GET_EVENT, 0x30 /* out: an event's size, response kept */,
		      rdma_ucm_get_event{ 8 });
		put("ucma", "bad-headers", u.b);
	}
}

} /* namespace ibemu::fuzz::seeds */
