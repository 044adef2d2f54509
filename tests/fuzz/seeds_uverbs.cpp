// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// Seeds of fuzz_uverbs (tests/fuzz/make_seeds.cpp writes them).
#include "tests/fuzz/fuzz_common.h"
#include "tests/fuzz/seeds.h"

#include "emu/mad_rmpp.h"
#include "emu/uverbs_abi.h"
#include "fabric/pma.h"
#include "fabric/smp_attrs.h"
#include "fabric/topology.h"

#include <cstdio>
#include <map>
#include <sstream>

using namespace ibemu;
using namespace ibemu::fabric;
using namespace ibemu::emu;
using namespace ibemu::fuzz::seeds;

namespace {

constexpr uint64_t kBufA = 0x10000;
constexpr uint32_t kFirstKey = 0x1101; /* VerbsDevice: the first MR of a device */
constexpr uint32_t kFirstQpn = 0x11;

struct Verbs {
	Bytes b;
	uint16_t lid[2];

	/* one command record: c, f, then the body in 4-byte words */
	void raw(uint8_t c, uint8_t f, Bytes body)
	{
		body.resize((body.size() + 3) & ~size_t(3), 0);
		b.push_back(c);
		b.push_back(f);
		b.push_back(uint8_t(body.size() / 4));
		append(b, body);
	}
	template <typename T> void cmd(uint32_t command, int client, const T &req, uint8_t extra = 0)
	{
		Bytes body;
		append(body, req);
		raw(uint8_t(command), uint8_t(client | extra), body);
	}
	void special(uint8_t op, int client, uint32_t arg = 0)
	{
		Bytes body;
		le32(body, arg);
		raw(uint8_t(0x80 | op), uint8_t(client), body);
	}

	/* GET_CONTEXT, PD 0, MR 1 (8 KiB at kBufA, all access), CQ 2 */
	void basics(int c, uint32_t access = 0xf)
	{
		cmd(CMD_GET_CONTEXT, c, ib_uverbs_get_context{});
		cmd(CMD_ALLOC_PD, c, ib_uverbs_alloc_pd{});
		ib_uverbs_reg_mr mr{};
		mr.start = mr.hca_va = kBufA;
		mr.length = 0x2000;
		mr.access_flags = access;
		cmd(CMD_REG_MR, c, mr);
		ib_uverbs_create_cq cq{};
		cq.cqe = 64;
		cq.comp_channel = -1;
		cmd(CMD_CREATE_CQ, c, cq);
	}
	/* QP 3 (or `handle`) on PD 0 and CQ 2 */
	void createQp(int c, uint8_t type, int srq = -1)
	{
		ib_uverbs_create_qp q{};
		q.pd_handle = 0;
		q.send_cq_handle = q.recv_cq_handle = 2;
		q.max_send_wr = q.max_recv_wr = 16;
		q.max_send_sge = q.max_recv_sge = 2;
		q.max_inline_data = 64;
		q.qp_type = type;
		if (srq >= 0) {
			q.is_srq = 1;
			q.srq_handle = uint32_t(srq);
			q.max_recv_wr = q.max_recv_sge = 0;
		}
		cmd(CMD_CREATE_QP, c, q);
	}
	void modify(int c, uint32_t qp, uint32_t mask, ib_uverbs_modify_qp a)
	{
		a.qp_handle = qp;
		a.attr_mask = mask;
		cmd(CMD_MODIFY_QP, c, a);
	}
	/* RESET -> INIT -> RTR -> RTS, as test::Client::connect */
	void connect(int c, uint32_t qp, uint8_t type, uint16_t dlid, uint32_t dqpn)
	{
		ib_uverbs_modify_qp a{};
		a.qp_state = IB_QPS_INIT;
		a.port_num = 1;
		a.qp_access_flags = IB_ACCESS_REMOTE_WRITE | IB_ACCESS_REMOTE_READ | IB_ACCESS_REMOTE_ATOMIC;
		a.qkey = 0x11111111;
		if (type == IB_QPT_UD) {
			modify(c, qp, IB_QP_STATE | IB_QP_PKEY_INDEX | IB_QP_PORT | IB_QP_QKEY, a);
			a.qp_state = IB_QPS_RTR;
			modify(c, qp, IB_QP_STATE, a);
			a.qp_state = IB_QPS_RTS;
			modify(c, qp, IB_QP_STATE | IB_QP_SQ_PSN, a);
			return;
		}
		modify(c, qp, IB_QP_STATE | IB_QP_PKEY_INDEX | IB_QP_PORT | IB_QP_ACCESS_FLAGS, a);
		a.qp_state = IB_QPS_RTR;
		a.dest.dlid = dlid;
		a.dest.port_num = 1;
		a.path_mtu = kMtu1024;
		a.dest_qp_num = dqpn;
		a.max_dest_rd_atomic = 1;
		a.min_rnr_timer = 12;
		uint32_t rtr = IB_QP_STATE | IB_QP_AV | IB_QP_PATH_MTU | IB_QP_DEST_QPN | IB_QP_RQ_PSN;
		if (type == IB_QPT_RC)
			rtr |= IB_QP_MAX_DEST_RD_ATOMIC | IB_QP_MIN_RNR_TIMER;
		modify(c, qp, rtr, a);
		a.qp_state = IB_QPS_RTS;
		a.timeout = 14;
		a.retry_cnt = 7;
		a.rnr_retry = 7;
		a.max_rd_atomic = 1;
		uint32_t rts = IB_QP_STATE | IB_QP_SQ_PSN;
		if (type == IB_QPT_RC)
			rts |= IB_QP_TIMEOUT | IB_QP_RETRY_CNT | IB_QP_RNR_RETRY | IB_QP_MAX_QP_RD_ATOMIC;
		modify(c, qp, rts, a);
	}
	/* both sides: basics, a QP, connected to each other */
	void pair(uint8_t type)
	{
		for (int c : { 0, 1 }) {
			basics(c);
			createQp(c, type);
		}
		for (int c : { 0, 1 })
			connect(c, 3, type, lid[1 - c], kFirstQpn);
	}
	void postSend(int c, uint32_t qp, ib_uverbs_send_wr wr, std::vector<ib_uverbs_sge> sges)
	{
		wr.num_sge = uint32_t(sges.size());
		ib_uverbs_post_send req{};
		req.qp_handle = qp;
		req.wr_count = 1;
		req.sge_count = uint32_t(sges.size());
		req.wqe_size = sizeof wr;
		Bytes body;
		append(body, req);
		append(body, wr);
		for (const auto &s : sges)
			append(body, s);
		raw(CMD_POST_SEND, uint8_t(c), body);
	}
	void postRecv(int c, uint32_t handle, uint64_t wrId, std::vector<ib_uverbs_sge> sges, bool srq = false)
	{
		ib_uverbs_recv_wr wr{ wrId, uint32_t(sges.size()), 0 };
		ib_uverbs_post_recv req{};
		req.qp_handle = handle;
		req.wr_count = 1;
		req.sge_count = uint32_t(sges.size());
		req.wqe_size = sizeof wr;
		Bytes body;
		append(body, req);
		append(body, wr);
		for (const auto &s : sges)
			append(body, s);
		raw(srq ? CMD_POST_SRQ_RECV : CMD_POST_RECV, uint8_t(c), body);
	}
	void poll(int c, uint32_t cq = 2, uint32_t ne = 8)
	{
		ib_uverbs_poll_cq p{};
		p.cq_handle = cq;
		p.ne = ne;
		cmd(CMD_POLL_CQ, c, p, 0x60); /* out_words: room for ne completions */
	}
	static ib_uverbs_send_wr wr(uint32_t opcode, uint64_t id = 1, uint32_t flags = IB_SEND_SIGNALED)
	{
		ib_uverbs_send_wr w{};
		w.wr_id = id;
		w.opcode = opcode;
		w.send_flags = flags;
		return w;
	}
};

} /* namespace */

void ibemu::fuzz::seeds::uverbsSeeds()
{
	fuzz::Fixture fx;
	const uint16_t lids[2] = { fx.lid1(), fx.lid2() };
	auto make = [&] {
		Verbs v;
		v.lid[0] = lids[0];
		v.lid[1] = lids[1];
		return v;
	};
	const ib_uverbs_sge sgeA{ kBufA, 128, kFirstKey };

	{
		Verbs v = make();
		v.pair(IB_QPT_RC);
		v.postRecv(1, 3, 11, { { kBufA + 0x100, 256, kFirstKey } });
		v.postSend(0, 3, Verbs::wr(IB_WR_SEND, 21), { sgeA });
		auto imm = Verbs::wr(IB_WR_SEND_WITH_IMM, 22);
		imm.ex = 0x12345678;
		v.postRecv(1, 3, 12, { { kBufA + 0x200, 256, kFirstKey } });
		v.postSend(0, 3, imm, { sgeA });
		v.poll(0);
		v.poll(1);
		put("uverbs", "rc-send-recv", v.b);
	}
	{
		Verbs v = make();
		v.pair(IB_QPT_RC);
		auto w = Verbs::wr(IB_WR_RDMA_WRITE, 31);
		w.wr.rdma.remote_addr = kBufA + 0x400;
		w.wr.rdma.rkey = kFirstKey;
		v.postSend(0, 3, w, { sgeA });
		auto r = Verbs::wr(IB_WR_RDMA_READ, 32);
		r.wr.rdma.remote_addr = kBufA + 0x400;
		r.wr.rdma.rkey = kFirstKey;
		v.postSend(0, 3, r, { { kBufA + 0x800, 128, kFirstKey } });
		auto fa = Verbs::wr(IB_WR_ATOMIC_FETCH_AND_ADD, 33);
		fa.wr.atomic.remote_addr = kBufA + 0x1000;
		fa.wr.atomic.rkey = kFirstKey;
		fa.wr.atomic.compare_add = 5;
		v.postSend(0, 3, fa, { { kBufA + 0x1008, 8, kFirstKey } });
		auto cs = Verbs::wr(IB_WR_ATOMIC_CMP_AND_SWP, 34);
		cs.wr.atomic.remote_addr = kBufA + 0x1000;
		cs.wr.atomic.rkey = kFirstKey;
		cs.wr.atomic.compare_add = 5;
		cs.wr.atomic.swap = 9;
		v.postSend(0, 3, cs, { { kBufA + 0x1010, 8, kFirstKey } });
		auto wi = Verbs::wr(IB_WR_RDMA_WRITE_WITH_IMM, 35);
		wi.wr.rdma.remote_addr = kBufA;
		wi.wr.rdma.rkey = kFirstKey;
		v.postRecv(1, 3, 13, {});
		v.postSend(0, 3, wi, { sgeA });
		auto in = Verbs::wr(IB_WR_SEND, 36, IB_SEND_SIGNALED | IB_SEND_INLINE);
		v.postRecv(1, 3, 14, { { kBufA, 64, kFirstKey } });
		v.postSend(0, 3, in, { { kBufA, 32, 0 } });
		v.poll(0);
		v.poll(1);
		put("uverbs", "rc-write-read-atomic-inline", v.b);
	}
	{
		Verbs v = make();
		for (int c : { 0, 1 }) {
			v.basics(c);
			v.createQp(c, IB_QPT_UD);
			v.connect(c, 3, IB_QPT_UD, 0, 0);
		}
		ib_uverbs_create_ah ah{};
		ah.attr.dlid = lids[1];
		ah.attr.port_num = 1;
		v.cmd(CMD_CREATE_AH, 0, ah); /* handle 4 */
		ah.attr.is_global = 1;
		ah.attr.grh.hop_limit = 1;
		v.cmd(CMD_CREATE_AH, 0, ah); /* handle 5 */
		v.postRecv(1, 3, 41, { { kBufA, 40 + 256, kFirstKey } });
		v.postRecv(1, 3, 42, { { kBufA + 0x400, 40 + 256, kFirstKey } });
		for (uint32_t h : { 4u, 5u }) {
			auto w = Verbs::wr(IB_WR_SEND, 40 + h);
			w.wr.ud.ah = h;
			w.wr.ud.remote_qpn = kFirstQpn;
			w.wr.ud.remote_qkey = 0x11111111;
			v.postSend(0, 3, w, { sgeA });
		}
		v.poll(0);
		v.poll(1);
		v.cmd(CMD_DESTROY_AH, 0, ib_uverbs_destroy_ah{ 4 });
		put("uverbs", "ud-send-ah", v.b);
	}
	{
		Verbs v = make();
		for (int c : { 0, 1 })
			v.basics(c);
		ib_uverbs_create_srq s{};
		s.max_wr = 8;
		s.max_sge = 1;
		s.srq_limit = 2;
		v.cmd(CMD_CREATE_SRQ, 1, s); /* B: handle 3 */
		v.createQp(0, IB_QPT_RC); /* A: handle 3 */
		v.createQp(1, IB_QPT_RC, 3); /* B: handle 4 */
		v.connect(0, 3, IB_QPT_RC, lids[1], kFirstQpn);
		v.connect(1, 4, IB_QPT_RC, lids[0], kFirstQpn);
		v.postRecv(1, 3, 51, { { kBufA, 256, kFirstKey } }, true);
		v.postRecv(1, 3, 52, { { kBufA + 0x100, 256, kFirstKey } }, true);
		v.postRecv(1, 3, 53, { { kBufA + 0x200, 256, kFirstKey } }, true);
		v.postSend(0, 3, Verbs::wr(IB_WR_SEND, 54), { sgeA });
		v.postSend(0, 3, Verbs::wr(IB_WR_SEND, 55), { sgeA });
		ib_uverbs_modify_srq m{ 3, IB_SRQ_LIMIT, 0, 1 };
		v.cmd(CMD_MODIFY_SRQ, 1, m);
		v.cmd(CMD_QUERY_SRQ, 1, ib_uverbs_query_srq{ 0, 3, 0 });
		v.cmd(CMD_DESTROY_SRQ, 1, ib_uverbs_destroy_srq{ 0, 3, 0 }); /* busy */
		v.special(2, 1, 16);
		v.poll(0);
		v.poll(1);
		put("uverbs", "srq", v.b);
	}
	{
		Verbs v = make();
		v.basics(0);
		v.cmd(CMD_QUERY_DEVICE, 0, ib_uverbs_query_device{});
		ib_uverbs_query_port qp{};
		qp.port_num = 1;
		v.cmd(CMD_QUERY_PORT, 0, qp);
		qp.port_num = 2;
		v.cmd(CMD_QUERY_PORT, 0, qp);
		{ /* extended QUERY_DEVICE */
			Bytes body(8, 0);
			v.raw(0x40 | EX_CMD_QUERY_DEVICE, 0, body);
		}
		v.createQp(0, IB_QPT_RC);
		v.cmd(CMD_QUERY_QP, 0, ib_uverbs_query_qp{ 0, 3, 0xffffffff });
		v.cmd(CMD_RESIZE_CQ, 0, ib_uverbs_resize_cq{ 0, 2, 128 });
		v.cmd(CMD_REQ_NOTIFY_CQ, 0, ib_uverbs_req_notify_cq{ 2, 0 });
		v.cmd(CMD_CREATE_COMP_CHANNEL, 0, ib_uverbs_create_comp_channel{});
		v.raw(CMD_MODIFY_AH, 0, Bytes(16, 0));
		v.raw(45, 0, Bytes(16, 0)); /* beyond the legacy commands */
		v.raw(0x40 | 3, 0, Bytes(16, 0)); /* an extended command the device lacks */
		v.cmd(CMD_GET_CONTEXT, 0, ib_uverbs_get_context{}); /* twice */
		/* teardown in the wrong order: busy */
		v.cmd(CMD_DEALLOC_PD, 0, ib_uverbs_dealloc_pd{ 0 });
		v.cmd(CMD_DESTROY_CQ, 0, ib_uverbs_destroy_cq{ 0, 2, 0 });
		v.cmd(CMD_DESTROY_QP, 0, ib_uverbs_destroy_qp{ 0, 3, 0 });
		v.cmd(CMD_DEREG_MR, 0, ib_uverbs_dereg_mr{ 1 });
		v.cmd(CMD_DESTROY_CQ, 0, ib_uverbs_destroy_cq{ 0, 2, 0 });
		v.cmd(CMD_DEALLOC_PD, 0, ib_uverbs_dealloc_pd{ 0 });
		v.cmd(CMD_DEALLOC_PD, 0, ib_uverbs_dealloc_pd{ 0 }); /* gone */
		put("uverbs", "query-and-destroy", v.b);
	}
	{
		Verbs v = make();
		v.basics(0);
		/* a command before GET_CONTEXT; other tids of the processes */
		v.cmd(CMD_ALLOC_PD, 1, ib_uverbs_alloc_pd{});
		ib_uverbs_reg_mr mr{};
		mr.start = mr.hca_va = 0x40000;
		mr.length = 0x40000; /* 256 KiB: process 100 is at its limit */
		mr.access_flags = IB_ACCESS_LOCAL_WRITE;
		v.cmd(CMD_REG_MR, 0, mr);
		v.cmd(CMD_REG_MR, 0, mr, 2); /* thread 101: the same process */
		v.cmd(CMD_REG_MR, 0, mr, 4); /* tid 150: limit 0, EPERM */
		v.cmd(CMD_REG_MR, 0, mr, 6); /* tid 170: CAP_IPC_LOCK */
		mr.start = mr.hca_va = 0xf8000; /* read-only memory, writable MR: EFAULT */
		mr.length = 0x1000;
		v.cmd(CMD_REG_MR, 0, mr);
		mr.access_flags = 0;
		v.cmd(CMD_REG_MR, 0, mr);
		mr.start = mr.hca_va = 0x200000; /* beyond the arena */
		v.cmd(CMD_REG_MR, 0, mr);
		v.cmd(CMD_ALLOC_PD, 0, ib_uverbs_alloc_pd{}, 0x10); /* response into read-only memory */
		v.cmd(CMD_ALLOC_PD, 0, ib_uverbs_alloc_pd{}, 0x20); /* out_words one short */
		v.special(4, 0); /* process 100 execs */
		v.special(3, 0); /* close and reopen A */
		v.special(1, 0);
		put("uverbs", "pinning-and-processes", v.b);
	}
	{
		Verbs v = make();
		v.pair(IB_QPT_RC);
		/* no receive posted: RNR NAKs, retried by the RNR timer, then a
		 * receive wakes it */
		v.postSend(0, 3, Verbs::wr(IB_WR_SEND, 61), { sgeA });
		v.special(0, 0, 1);
		v.special(0, 0, 200);
		v.postRecv(1, 3, 62, { { kBufA, 256, kFirstKey } });
		v.special(1, 0);
		/* the link goes down: the send is lost and retried, then it comes back */
		v.special(8, 1);
		v.postRecv(1, 3, 63, { { kBufA, 256, kFirstKey } });
		v.postSend(0, 3, Verbs::wr(IB_WR_SEND, 64), { sgeA });
		v.special(0, 0, 100);
		v.special(9, 1);
		v.special(0, 0, 200);
		v.poll(0);
		v.poll(1);
		v.special(2, 1, 16);
		v.special(2, 1, 16);
		v.special(5, 1);
		put("uverbs", "rnr-and-link-down", v.b);
	}
	{
		Verbs v = make();
		v.pair(IB_QPT_UC);
		v.postRecv(1, 3, 71, { { kBufA, 64, kFirstKey } });
		v.postSend(0, 3, Verbs::wr(IB_WR_SEND, 72), { sgeA }); /* too long: LOC_LEN_ERR */
		auto w = Verbs::wr(IB_WR_RDMA_WRITE, 73);
		w.wr.rdma.remote_addr = kBufA;
		w.wr.rdma.rkey = 0xdead;
		v.postSend(0, 3, w, { sgeA });
		v.postSend(0, 3, Verbs::wr(IB_WR_SEND, 74), { { kBufA, 16, 0xbeef } });
		v.poll(0);
		v.poll(1);
		v.special(7, 1); /* host2's device goes away */
		v.postSend(0, 3, Verbs::wr(IB_WR_SEND, 75), { sgeA });
		v.poll(1);
		put("uverbs", "uc-errors-and-device-removal", v.b);
	}
	{ /* headers the harness does not make: written as they are */
		Verbs v = make();
		Bytes h;
		le32(h, CMD_GET_CONTEXT);
		le16(h, 4);
		le16(h, 2);
		le32(h, 0x80000);
		le32(h, 0);
		v.raw(0x86, 0, h);
		Bytes ex;
		le32(ex, IB_USER_VERBS_CMD_FLAG_EXTENDED | EX_CMD_QUERY_DEVICE);
		le16(ex, 1);
		le16(ex, 24);
		for (uint64_t x : { uint64_t(0x80000), uint64_t(0) })
			for (int i = 0; i < 8; i++)
				ex.push_back(uint8_t(x >> (8 * i)));
		ex.resize(ex.size() + 8, 0);
		v.raw(0x86, 0, ex);
		v.raw(0x86, 0, Bytes{ 0xff, 0xff, 0xff, 0x7f, 1, 0, 0, 0 });
		put("uverbs", "raw-headers", v.b);
	}
}
