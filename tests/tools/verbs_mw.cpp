// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// Memory windows as rxe answers them (issue 40, item 1): ibv_alloc_mw and
// ibv_dealloc_mw, type 1 binds through ibv_bind_mw, type 2 binds through
// ibv_post_send and ibv_wr_bind_mw, LOCAL_INV, SEND_WITH_INV, RDMA through
// a window's rkey, and the errors of a bad bind or a stale, invalidated or
// deallocated rkey.
//
// usage: verbs_mw DEV_A DEV_B
// A owns the memory and its windows; B writes and reads through them over
// an RC connection (the ports must be active; on rdma_rxe, DEV_A and DEV_B
// are the one device, as verbs_check::toRts says). Prints one line per
// check and exits 0 when every check gave rxe's answer: the VM suite runs
// it on rxe too and compares the lines.
//
// rxe's answers (the kernel's drivers/infiniband/sw/rxe/rxe_mw.c,
// rxe_resp.c check_rkey(), rxe_req.c rxe_do_local_ops(); rdma-core's
// providers/rxe rxe_bind_mw()):
//   - query_device: max_mw, IBV_DEVICE_MEM_WINDOW and _TYPE_2B;
//   - a bind completes IBV_WC_BIND_MW, a LOCAL_INV IBV_WC_LOCAL_INV; a bind
//     rxe_check_bind_mw() refuses (an MR without IBV_ACCESS_MW_BIND, bounds
//     past the MR's, remote write on an MR without local write, a type 2
//     window already bound) completes IBV_WC_MW_BIND_ERR;
//   - ibv_bind_mw with IBV_ACCESS_ZERO_BASED is EINVAL (the provider's);
//   - LOCAL_INV of a type 1 window is IBV_WC_LOC_QP_OP_ERR;
//   - SEND_WITH_INV invalidates a type 2 window at the responder, whose
//     receive completes with IBV_WC_WITH_INV and the rkey;
//   - the responder finds the window by its rkey: a stale key, an
//     invalidated or deallocated window, an access it does not grant or an
//     address past its MR is IBV_WC_REM_ACCESS_ERR at the requester;
//   - ibv_dereg_mr of an MR with a window bound is EINVAL.
#include "verbs_check.h"

#include <infiniband/verbs.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <unistd.h>

namespace {

using verbs_check::errName;
using verbs_check::failures;
const auto expect = verbs_check::check;
using verbs_check::pollOne;
using verbs_check::status;

struct Side {
	ibv_context *ctx = nullptr;
	ibv_pd *pd = nullptr;
	ibv_cq *cq = nullptr;
	ibv_qp *qp = nullptr;
	uint16_t lid = 0;
};

Side a, b;
alignas(4096) uint8_t bufA[8192];
alignas(4096) uint8_t bufB[4096];

bool modify(ibv_qp *qp, uint32_t destQpn, uint16_t dlid)
{
	return verbs_check::toRts(qp, destQpn, dlid,
				  IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC,
				  verbs_check::kRcRtr, verbs_check::kRcRts);
}

/* A new connection: an error leaves both QPs in the Error state. A's QP
 * takes the memory window operations through ibv_wr_*. */
void connect()
{
	if (a.qp)
		ibv_destroy_qp(a.qp);
	if (b.qp)
		ibv_destroy_qp(b.qp);
	ibv_qp_init_attr_ex x{};
	x.send_cq = x.recv_cq = a.cq;
	x.qp_type = IBV_QPT_RC;
	x.cap = { 8, 8, 1, 1, 0 };
	x.pd = a.pd;
	x.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
	x.send_ops_flags = IBV_QP_EX_WITH_BIND_MW | IBV_QP_EX_WITH_LOCAL_INV | IBV_QP_EX_WITH_SEND;
	a.qp = ibv_create_qp_ex(a.ctx, &x);
	ibv_qp_init_attr y{};
	y.send_cq = y.recv_cq = b.cq;
	y.qp_type = IBV_QPT_RC;
	y.cap = { 8, 8, 1, 1, 0 };
	b.qp = ibv_create_qp(b.pd, &y);
	if (!a.qp || !b.qp || !modify(a.qp, b.qp->qp_num, b.lid) || !modify(b.qp, a.qp->qp_num, a.lid)) {
		fprintf(stderr, "verbs_mw: cannot connect: %s\n", strerror(errno));
		_exit(2);
	}
}

/* B's RDMA WRITE (or READ) of len bytes at addr through rkey, or its
 * SEND_WITH_INV of rkey: the completion */
ibv_wc rdma(ibv_wr_opcode op, uint32_t rkey, uint64_t addr, uint32_t len)
{
	static ibv_mr *mr = ibv_reg_mr(b.pd, bufB, sizeof bufB, IBV_ACCESS_LOCAL_WRITE);
	ibv_sge sge{ uintptr_t(bufB), len, mr->lkey };
	ibv_send_wr wr{}, *bad;
	wr.opcode = op;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.send_flags = IBV_SEND_SIGNALED;
	if (op == IBV_WR_SEND_WITH_INV)
		wr.invalidate_rkey = rkey;
	else
		wr.wr.rdma = { addr, rkey };
	if (ibv_post_send(b.qp, &wr, &bad))
		return {};
	return pollOne(b.cq);
}

/* B writes 16 bytes of text at A's buf + off through rkey: did they arrive */
void writeThrough(uint32_t rkey, size_t off, const char *text, const char *what)
{
	memcpy(bufB, text, 16);
	ibv_wc wc = rdma(IBV_WR_RDMA_WRITE, rkey, uintptr_t(bufA) + off, 16);
	bool moved = wc.status == IBV_WC_SUCCESS && memcmp(bufA + off, text, 16) == 0;
	printf("RDMA WRITE through %s: %s, bytes %s\n", what, status(wc), moved ? "arrived" : "missing");
	expect(moved, what);
}

/* ibv_bind_mw, a type 1 window: the errno, and the completion's status */
void bind1(ibv_mw *mw, ibv_mr *mr, uint64_t addr, uint64_t len, unsigned access, const char *what, int wantErr,
	   ibv_wc_status want)
{
	ibv_mw_bind bind{};
	bind.wr_id = 1;
	bind.send_flags = IBV_SEND_SIGNALED;
	bind.bind_info = { mr, addr, len, access };
	int ret = ibv_bind_mw(a.qp, mw, &bind);
	if (ret) {
		printf("bind_mw type 1 %s: %s\n", what, errName(ret));
		expect(ret == wantErr, what);
		return;
	}
	ibv_wc wc = pollOne(a.cq);
	printf("bind_mw type 1 %s: %s, opcode %s\n", what, status(wc),
	       wc.status == IBV_WC_SUCCESS && wc.opcode == IBV_WC_BIND_MW ? "BIND_MW" : "-");
	expect(wantErr == 0 && wc.status == want && (want != IBV_WC_SUCCESS || wc.opcode == IBV_WC_BIND_MW), what);
}

/* a type 2 bind through ibv_post_send (or ibv_wr_bind_mw): its status */
ibv_wc_status bind2(ibv_mw *mw, ibv_mr *mr, uint64_t addr, uint64_t len, unsigned access, bool wrApi)
{
	uint32_t rkey = ibv_inc_rkey(mw->rkey);
	ibv_mw_bind_info info{ mr, addr, len, access };
	if (wrApi) {
		ibv_qp_ex *qpx = ibv_qp_to_qp_ex(a.qp);
		ibv_wr_start(qpx);
		qpx->wr_id = 2;
		qpx->wr_flags = IBV_SEND_SIGNALED;
		ibv_wr_bind_mw(qpx, mw, rkey, &info);
		if (ibv_wr_complete(qpx))
			return static_cast<ibv_wc_status>(-2);
	} else {
		ibv_send_wr wr{}, *bad;
		wr.wr_id = 2;
		wr.opcode = IBV_WR_BIND_MW;
		wr.send_flags = IBV_SEND_SIGNALED;
		wr.bind_mw = { mw, rkey, info };
		if (ibv_post_send(a.qp, &wr, &bad))
			return static_cast<ibv_wc_status>(-2);
	}
	ibv_wc wc = pollOne(a.cq);
	if (wc.status == IBV_WC_SUCCESS) {
		mw->rkey = rkey; /* the program's to keep */
		if (wc.opcode != IBV_WC_BIND_MW)
			return static_cast<ibv_wc_status>(-3);
	}
	return wc.status;
}

ibv_wc localInv(uint32_t rkey)
{
	ibv_send_wr wr{}, *bad;
	wr.wr_id = 3;
	wr.opcode = IBV_WR_LOCAL_INV;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.invalidate_rkey = rkey;
	if (ibv_post_send(a.qp, &wr, &bad))
		return {};
	return pollOne(a.cq);
}

bool open(Side &s, const char *name)
{
	int n = 0;
	ibv_device **list = ibv_get_device_list(&n);
	for (int i = 0; list && i < n; i++)
		if (!strcmp(ibv_get_device_name(list[i]), name))
			s.ctx = ibv_open_device(list[i]);
	if (list)
		ibv_free_device_list(list);
	ibv_port_attr pa;
	if (!s.ctx || ibv_query_port(s.ctx, 1, &pa))
		return false;
	s.lid = pa.lid;
	s.pd = ibv_alloc_pd(s.ctx);
	s.cq = ibv_create_cq(s.ctx, 16, nullptr, nullptr, 0);
	return s.pd && s.cq;
}

} /* namespace */

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: verbs_mw DEV_A DEV_B\n");
		return 2;
	}
	if (!open(a, argv[1]) || !open(b, argv[2])) {
		fprintf(stderr, "verbs_mw: cannot open %s and %s: %s\n", argv[1], argv[2], strerror(errno));
		return 2;
	}
	ibv_device_attr da;
	expect(ibv_query_device(a.ctx, &da) == 0, "query_device");
	bool caps = (da.device_cap_flags & IBV_DEVICE_MEM_WINDOW) &&
		(da.device_cap_flags & IBV_DEVICE_MEM_WINDOW_TYPE_2B);
	printf("query_device: max_mw %s, MEM_WINDOW and MEM_WINDOW_TYPE_2B %s\n", da.max_mw ? "nonzero" : "0",
	       caps ? "set" : "not set");
	expect(da.max_mw && caps, "query_device advertises memory windows");

	const unsigned rw = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
	ibv_mr *mr = ibv_reg_mr(a.pd, bufA, 4096, rw | IBV_ACCESS_MW_BIND);
	ibv_mr *noBind = ibv_reg_mr(a.pd, bufA + 4096, 4096, rw);
	ibv_mr *readOnly = ibv_reg_mr(a.pd, bufA + 4096, 4096, IBV_ACCESS_REMOTE_READ | IBV_ACCESS_MW_BIND);
	ibv_mw *mw1 = ibv_alloc_mw(a.pd, IBV_MW_TYPE_1);
	ibv_mw *mw2 = ibv_alloc_mw(a.pd, IBV_MW_TYPE_2);
	if (!mr || !noBind || !readOnly || !mw1 || !mw2) {
		fprintf(stderr, "verbs_mw: MRs and windows: %s\n", strerror(errno));
		return 2;
	}
	printf("alloc_mw type 1, type 2: ok\n");
	errno = 0;
	ibv_mw *bad = ibv_alloc_mw(a.pd, static_cast<ibv_mw_type>(3));
	printf("alloc_mw type 3: %s\n", bad ? "ok" : errName(errno));
	expect(!bad && errno == EINVAL, "alloc_mw type 3");
	const uint64_t base = uintptr_t(bufA);

	/* type 1: bind, then write and read through the window */
	connect();
	uint32_t stale = mw1->rkey;
	bind1(mw1, mr, base + 1024, 1024, IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ, "write+read", 0,
	      IBV_WC_SUCCESS);
	expect(mw1->rkey != stale && (mw1->rkey >> 8) == (stale >> 8), "a bind changes the key byte");
	writeThrough(mw1->rkey, 1024, "through window 1", "a type 1 window");
	memset(bufB, 0, 16);
	ibv_wc wc = rdma(IBV_WR_RDMA_READ, mw1->rkey, base + 1024, 16);
	bool moved = wc.status == IBV_WC_SUCCESS && memcmp(bufB, "through window 1", 16) == 0;
	printf("RDMA READ through a type 1 window: %s, bytes %s\n", status(wc), moved ? "arrived" : "missing");
	expect(moved, "read through a type 1 window");

	wc = rdma(IBV_WR_RDMA_WRITE, stale, base + 1024, 16);
	printf("RDMA WRITE with the key before the bind: %s\n", status(wc));
	expect(wc.status == IBV_WC_REM_ACCESS_ERR, "stale rkey");
	connect();
	wc = rdma(IBV_WR_RDMA_WRITE, mw1->rkey, base + 4096 - 8, 16);
	printf("RDMA WRITE past the MR through a window: %s\n", status(wc));
	expect(wc.status == IBV_WC_REM_ACCESS_ERR, "past the MR");
	connect();
	bind1(mw1, mr, base, 1024, IBV_ACCESS_REMOTE_READ, "read only", 0, IBV_WC_SUCCESS);
	wc = rdma(IBV_WR_RDMA_WRITE, mw1->rkey, base, 16);
	printf("RDMA WRITE through a read-only window: %s\n", status(wc));
	expect(wc.status == IBV_WC_REM_ACCESS_ERR, "access the window does not grant");

	int ret = ibv_dereg_mr(mr);
	printf("dereg_mr with a window bound: %s\n", errName(ret));
	expect(ret == EINVAL, "dereg_mr with a window bound");

	/* bind errors */
	connect();
	bind1(mw1, mr, base, 1024, IBV_ACCESS_REMOTE_READ | IBV_ACCESS_ZERO_BASED, "zero based", EINVAL,
	      IBV_WC_SUCCESS);
	uint32_t keep = mw1->rkey;
	bind1(mw1, noBind, base + 4096, 1024, IBV_ACCESS_REMOTE_READ, "MR without MW_BIND", 0, IBV_WC_MW_BIND_ERR);
	mw1->rkey = keep; /* the failed bind took no key: the program undoes it */
	connect();
	ibv_mw_bind tb{};
	tb.bind_info = { mr, base, 1024, IBV_ACCESS_REMOTE_READ };
	ret = ibv_bind_mw(a.qp, mw2, &tb);
	printf("bind_mw of a type 2 window: %s\n", errName(ret));
	expect(ret == EINVAL, "ibv_bind_mw of a type 2 window");
	ibv_wc_status st = bind2(mw2, mr, base, 8192, IBV_ACCESS_REMOTE_READ, false);
	printf("BIND_MW type 2 past the MR: %s\n", ibv_wc_status_str(st));
	expect(st == IBV_WC_MW_BIND_ERR, "bind past the MR");
	connect();
	st = bind2(mw2, readOnly, base + 4096, 64, IBV_ACCESS_REMOTE_WRITE, false);
	printf("BIND_MW type 2 remote write on an MR without local write: %s\n", ibv_wc_status_str(st));
	expect(st == IBV_WC_MW_BIND_ERR, "remote write without local write");

	/* type 2 through ibv_post_send, LOCAL_INV, and through ibv_wr_bind_mw.
	 * No QP is destroyed while a type 2 window bound through it is still
	 * bound: rxe keeps a reference from the window to the QP that
	 * rxe_destroy_qp() does not wait out, and a later LOCAL_INV of the
	 * window then drops the reference of whichever QP took its place,
	 * which never completes again (docs/verbs.md, "Memory windows") */
	connect();
	st = bind2(mw2, mr, base + 2048, 1024, IBV_ACCESS_REMOTE_WRITE, false);
	printf("BIND_MW type 2 through ibv_post_send: %s\n", ibv_wc_status_str(st));
	expect(st == IBV_WC_SUCCESS, "type 2 bind");
	writeThrough(mw2->rkey, 2048, "through window 2", "a type 2 window");
	wc = localInv(mw2->rkey);
	printf("LOCAL_INV of a type 2 window: %s, opcode %s\n", status(wc),
	       wc.status == IBV_WC_SUCCESS && wc.opcode == IBV_WC_LOCAL_INV ? "LOCAL_INV" : "-");
	expect(wc.status == IBV_WC_SUCCESS && wc.opcode == IBV_WC_LOCAL_INV, "LOCAL_INV type 2");
	wc = rdma(IBV_WR_RDMA_WRITE, mw2->rkey, base + 2048, 16);
	printf("RDMA WRITE after LOCAL_INV: %s\n", status(wc));
	expect(wc.status == IBV_WC_REM_ACCESS_ERR, "after invalidation");
	connect();
	wc = localInv(mw1->rkey);
	printf("LOCAL_INV of a type 1 window: %s\n", status(wc));
	expect(wc.status == IBV_WC_LOC_QP_OP_ERR, "LOCAL_INV type 1");
	/* bound twice: the second bind fails and leaves the QP in error with
	 * the window bound to it, so the window goes (dealloc_mw unbinds it)
	 * before the QP does, and a new one takes its place */
	connect();
	st = bind2(mw2, mr, base + 2048, 1024, IBV_ACCESS_REMOTE_WRITE, false);
	expect(st == IBV_WC_SUCCESS, "type 2 bind");
	st = bind2(mw2, mr, base + 2048, 1024, IBV_ACCESS_REMOTE_WRITE, false);
	printf("BIND_MW of a type 2 window already bound: %s\n", ibv_wc_status_str(st));
	expect(st == IBV_WC_MW_BIND_ERR, "type 2 bound twice");
	expect(ibv_dealloc_mw(mw2) == 0 && (mw2 = ibv_alloc_mw(a.pd, IBV_MW_TYPE_2)) != nullptr,
	       "a new type 2 window");
	connect();
	st = bind2(mw2, mr, base + 3072, 1024, IBV_ACCESS_REMOTE_WRITE, true);
	printf("BIND_MW type 2 through ibv_wr_bind_mw: %s\n", ibv_wc_status_str(st));
	expect(st == IBV_WC_SUCCESS, "ibv_wr_bind_mw");
	writeThrough(mw2->rkey, 3072, "through wr_bind ", "a window of ibv_wr_bind_mw");

	/* SEND with Invalidate: A's receive says which rkey the responder invalidated */
	uint32_t sent = mw2->rkey;
	ibv_sge rs{ base + 512, 64, mr->lkey };
	ibv_recv_wr rwr{}, *badRecv;
	rwr.sg_list = &rs;
	rwr.num_sge = 1;
	expect(ibv_post_recv(a.qp, &rwr, &badRecv) == 0, "post_recv");
	wc = rdma(IBV_WR_SEND_WITH_INV, sent, 0, 16);
	ibv_wc recvWc = pollOne(a.cq);
	/* rxe hands the kernel's IB_WC_WITH_INVALIDATE (1 << 2) to programs
	 * unchanged, where libibverbs calls that bit IBV_WC_IP_CSUM_OK: on
	 * rxe (the Ethernet port) that bit is the invalidation; ibemu sets
	 * IBV_WC_WITH_INV, as mlx5 does (docs/verbs.md) */
	ibv_port_attr port{};
	ibv_query_port(a.ctx, 1, &port);
	unsigned withInv = port.link_layer == IBV_LINK_LAYER_ETHERNET ? IBV_WC_IP_CSUM_OK : IBV_WC_WITH_INV;
	bool inv = recvWc.status == IBV_WC_SUCCESS && recvWc.opcode == IBV_WC_RECV &&
		(recvWc.wc_flags & withInv) && recvWc.invalidated_rkey == sent;
	printf("SEND_WITH_INV: send %s, receive %s, %s\n", status(wc), status(recvWc),
	       inv ? "WITH_INV of the window's rkey" : "no invalidation");
	expect(wc.status == IBV_WC_SUCCESS && inv, "SEND_WITH_INV");
	wc = rdma(IBV_WR_RDMA_WRITE, sent, base + 3072, 16);
	printf("RDMA WRITE after SEND_WITH_INV: %s\n", status(wc));
	expect(wc.status == IBV_WC_REM_ACCESS_ERR, "after remote invalidation");
	connect();
	st = bind2(mw2, mr, base + 3072, 1024, IBV_ACCESS_REMOTE_WRITE, false);
	printf("BIND_MW type 2 again after the invalidation: %s\n", ibv_wc_status_str(st));
	expect(st == IBV_WC_SUCCESS, "bind after invalidation");

	/* a deallocated window's key finds nothing */
	uint32_t gone = mw2->rkey;
	ret = ibv_dealloc_mw(mw2);
	printf("dealloc_mw: %s\n", errName(ret));
	expect(ret == 0, "dealloc_mw");
	wc = rdma(IBV_WR_RDMA_WRITE, gone, base + 3072, 16);
	printf("RDMA WRITE after dealloc_mw: %s\n", status(wc));
	expect(wc.status == IBV_WC_REM_ACCESS_ERR, "after dealloc");

	ibv_destroy_qp(a.qp);
	ibv_destroy_qp(b.qp);
	expect(ibv_dealloc_mw(mw1) == 0 && ibv_dereg_mr(mr) == 0 && ibv_dereg_mr(noBind) == 0 &&
		       ibv_dereg_mr(readOnly) == 0,
	       "teardown");
	return failures ? 1 : 0;
}
