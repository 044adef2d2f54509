// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// XRC (issue 40, item 4): ibv_open_xrcd and its sharing by file, XRC SRQs,
// XRC send (initiator) and receive (target) QPs, XRC SENDs landing in the
// SRQ their XRCETH names, and XRC RDMA WRITEs checked against that SRQ's PD.
//
// usage: verbs_xrc DEV_A DEV_B
// A's initiator QP sends to B's target QP (the ports must be active). B
// opens its domain twice, from two contexts with two descriptors of one
// file: the target QP comes from the first open, the SRQs from the second.
// Prints one line per check and exits 0 when every check gave the answer
// of the kernel (drivers/infiniband/core/uverbs_cmd.c: EBADF for a bad
// descriptor, EAGAIN for a file with no domain yet and no O_CREAT, EINVAL
// for O_EXCL of one that has, EBUSY closing a domain with an SRQ, ENOENT
// for a handle the file does not have) and of IBA (a request naming an SRQ
// that is not an XRC SRQ of the target QP's domain is NAKed Invalid
// Request: IBV_WC_REM_INV_REQ_ERR at the initiator). rdma_rxe has no XRC
// (docs/verbs.md).
#include "verbs_check.h"

#include <infiniband/verbs.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <unistd.h>

namespace {

using verbs_check::errName, verbs_check::pollOne, verbs_check::status;
const auto expect = verbs_check::check;

ibv_context *ctxA, *ctxB, *ctxB2;
ibv_pd *pdA, *pdB2;
ibv_cq *cqA, *cq1, *cq2;
ibv_xrcd *x1, *x2;
ibv_qp *ini, *tgt;
uint16_t lidA, lidB;
alignas(4096) uint8_t bufA[4096];
alignas(4096) uint8_t bufB[4096];

ibv_context *open(const char *name)
{
	int n = 0;
	ibv_device **list = ibv_get_device_list(&n);
	ibv_context *ctx = nullptr;
	for (int i = 0; list && i < n; i++)
		if (strcmp(ibv_get_device_name(list[i]), name) == 0)
			ctx = ibv_open_device(list[i]);
	if (list)
		ibv_free_device_list(list);
	if (!ctx) {
		fprintf(stderr, "verbs_xrc: cannot open %s\n", name);
		exit(2);
	}
	return ctx;
}

uint16_t lidOf(ibv_context *ctx)
{
	ibv_port_attr pa{};
	return ibv_query_port(ctx, 1, &pa) == 0 ? pa.lid : 0;
}

/* the errno of ibv_open_xrcd(ctx, fd, oflags); the domain in *out */
int openXrcd(ibv_context *ctx, int fd, int oflags, ibv_xrcd **out = nullptr)
{
	ibv_xrcd_init_attr a{};
	a.comp_mask = IBV_XRCD_INIT_ATTR_FD | IBV_XRCD_INIT_ATTR_OFLAGS;
	a.fd = fd;
	a.oflags = oflags;
	errno = 0;
	ibv_xrcd *x = ibv_open_xrcd(ctx, &a);
	if (out)
		*out = x;
	else if (x)
		ibv_close_xrcd(x);
	return x ? 0 : errno;
}

ibv_srq *xrcSrq(ibv_xrcd *x, ibv_cq *cq)
{
	ibv_srq_init_attr_ex a{};
	a.comp_mask = IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_PD | IBV_SRQ_INIT_ATTR_XRCD | IBV_SRQ_INIT_ATTR_CQ;
	a.srq_type = IBV_SRQT_XRC;
	a.attr.max_wr = 4;
	a.attr.max_sge = 1;
	a.pd = pdB2;
	a.xrcd = x;
	a.cq = cq;
	return ibv_create_srq_ex(ctxB2, &a);
}

/* XRC's halves take RC's attributes but those of the half they lack
 * (the kernel's ib_modify_qp_is_ok() table) */
bool modify(ibv_qp *qp, uint32_t destQpn, uint16_t dlid, bool target)
{
	using verbs_check::kRcRtr, verbs_check::kRcRts;
	return verbs_check::toRts(qp, destQpn, dlid, target ? IBV_ACCESS_REMOTE_WRITE : 0,
				  target ? kRcRtr : kRcRtr & ~(IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER),
				  target ? kRcRts & ~(IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC)
					 : kRcRts);
}

/* A new initiator on A and target on B (of the domain x1): an error leaves both in Error. */
void connect()
{
	if (ini)
		ibv_destroy_qp(ini);
	if (tgt)
		ibv_destroy_qp(tgt);
	ibv_qp_init_attr_ex x{};
	x.qp_type = IBV_QPT_XRC_RECV;
	x.comp_mask = IBV_QP_INIT_ATTR_XRCD;
	x.xrcd = x1;
	tgt = ibv_create_qp_ex(ctxB, &x);
	x = {};
	x.qp_type = IBV_QPT_XRC_SEND;
	x.send_cq = cqA;
	x.cap = { 4, 0, 1, 0, 64 };
	x.pd = pdA;
	x.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
	x.send_ops_flags = IBV_QP_EX_WITH_SEND;
	ini = ibv_create_qp_ex(ctxA, &x);
	if (!ini || !tgt || !modify(ini, tgt->qp_num, lidB, false) || !modify(tgt, ini->qp_num, lidA, true)) {
		fprintf(stderr, "verbs_xrc: cannot connect: %s\n", strerror(errno));
		exit(2);
	}
}

/* A sends 16 bytes of text to B's SRQ srqn (through ibv_wr_* if wrApi),
 * or with an rkey writes them at B's addr: its completion */
ibv_wc send(uint32_t srqn, const char *text, bool wrApi, uint32_t rkey = 0, uint8_t *addr = nullptr)
{
	ibv_wc unposted{};
	unposted.status = IBV_WC_GENERAL_ERR; /* the post itself failed */
	memcpy(bufA, text, 16);
	if (wrApi) {
		ibv_qp_ex *qpx = ibv_qp_to_qp_ex(ini);
		ibv_wr_start(qpx);
		qpx->wr_id = 7;
		qpx->wr_flags = IBV_SEND_SIGNALED | IBV_SEND_INLINE;
		ibv_wr_send(qpx);
		ibv_wr_set_xrc_srqn(qpx, srqn);
		ibv_wr_set_inline_data(qpx, bufA, 16);
		if (ibv_wr_complete(qpx))
			return unposted;
	} else {
		ibv_sge sge{ uintptr_t(bufA), 16, 0 };
		ibv_send_wr wr{}, *bad;
		wr.wr_id = 7;
		wr.opcode = rkey ? IBV_WR_RDMA_WRITE : IBV_WR_SEND;
		wr.wr.rdma = { uintptr_t(addr), rkey };
		wr.sg_list = &sge;
		wr.num_sge = 1;
		wr.send_flags = IBV_SEND_SIGNALED | IBV_SEND_INLINE;
		wr.qp_type.xrc.remote_srqn = srqn;
		if (ibv_post_send(ini, &wr, &bad))
			return unposted;
	}
	return pollOne(cqA);
}

void postRecv(ibv_srq *srq, ibv_mr *mr, size_t off, uint64_t id)
{
	ibv_sge sge{ uintptr_t(bufB + off), 64, mr->lkey };
	ibv_recv_wr wr{}, *bad;
	wr.wr_id = id;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	expect(ibv_post_srq_recv(srq, &wr, &bad) == 0, "post_srq_recv");
}

/* the receive that text should have landed in: on cq, its wr_id, and the bytes at off */
void landed(ibv_cq *cq, uint64_t id, size_t off, const char *text, const char *what)
{
	ibv_wc wc = pollOne(cq);
	bool ok = wc.status == IBV_WC_SUCCESS && wc.wr_id == id && wc.opcode == IBV_WC_RECV && wc.byte_len == 16 &&
		wc.qp_num == tgt->qp_num && memcmp(bufB + off, text, 16) == 0;
	printf("%s: receive %s, %s\n", what, status(wc), ok ? "its SRQ's buffer, wr_id and CQ" : "elsewhere");
	expect(ok, what);
}

} /* namespace */

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: verbs_xrc DEV_A DEV_B\n");
		return 2;
	}
	ctxA = open(argv[1]);
	ctxB = open(argv[2]);
	ctxB2 = open(argv[2]);
	lidA = lidOf(ctxA);
	lidB = lidOf(ctxB);
	pdA = ibv_alloc_pd(ctxA);
	pdB2 = ibv_alloc_pd(ctxB2);
	cqA = ibv_create_cq(ctxA, 8, nullptr, nullptr, 0);
	cq1 = ibv_create_cq(ctxB2, 8, nullptr, nullptr, 0);
	cq2 = ibv_create_cq(ctxB2, 8, nullptr, nullptr, 0);
	if (!pdA || !pdB2 || !cqA || !cq1 || !cq2) {
		fprintf(stderr, "verbs_xrc: cannot set up: %s\n", strerror(errno));
		return 2;
	}

	ibv_device_attr da{};
	expect(ibv_query_device(ctxB, &da) == 0, "query_device");
	printf("query_device: IBV_DEVICE_XRC %s\n", (da.device_cap_flags & IBV_DEVICE_XRC) ? "set" : "not set");
	expect(da.device_cap_flags & IBV_DEVICE_XRC, "IBV_DEVICE_XRC");

	/* one file, two descriptors, two contexts: one domain */
	char path[] = "/tmp/verbs_xrc.XXXXXX", other[] = "/tmp/verbs_xrc.XXXXXX";
	int fd1 = mkstemp(path), fd3 = mkstemp(other);
	int fd2 = ::open(path, O_RDONLY | O_CLOEXEC);
	unlink(path);
	unlink(other);
	int ret = openXrcd(ctxB, fd1, O_CREAT, &x1);
	printf("open_xrcd O_CREAT of a new file: %s\n", errName(ret));
	expect(ret == 0, "open_xrcd O_CREAT");
	ret = openXrcd(ctxB2, fd2, 0, &x2);
	printf("open_xrcd of the same file through another descriptor and context: %s\n", errName(ret));
	expect(ret == 0, "open_xrcd shared");
	ret = openXrcd(ctxB2, fd2, O_CREAT | O_EXCL);
	printf("open_xrcd O_CREAT|O_EXCL of a file that has one: %s\n", errName(ret));
	expect(ret == EINVAL, "open_xrcd O_EXCL");
	ret = openXrcd(ctxB2, fd3, 0);
	printf("open_xrcd without O_CREAT of a file that has none: %s\n", errName(ret));
	expect(ret == EAGAIN, "open_xrcd without O_CREAT");
	ret = openXrcd(ctxB2, 1000, O_CREAT);
	printf("open_xrcd of a descriptor the process lacks: %s\n", errName(ret));
	expect(ret == EBADF, "open_xrcd bad fd");
	int opath = ::open("/tmp", O_PATH | O_CLOEXEC); /* fdget() refuses it */
	ret = openXrcd(ctxB2, opath, O_CREAT);
	printf("open_xrcd of an O_PATH descriptor: %s\n", errName(ret));
	expect(ret == EBADF, "open_xrcd O_PATH");
	close(opath);
	{ /* a domain keeps its file (the kernel's igrab()): a new file cannot
	   * take its inode number, and with it the domain */
		char gone[] = "/tmp/verbs_xrc.XXXXXX", fresh[] = "/tmp/verbs_xrc.XXXXXX";
		int f = mkstemp(gone);
		ibv_xrcd *held = nullptr;
		ret = openXrcd(ctxB2, f, O_CREAT, &held);
		close(f);
		unlink(gone);
		int g = mkstemp(fresh); /* ext4 would give it the freed inode */
		unlink(fresh);
		int again = openXrcd(ctxB2, g, 0);
		printf("open_xrcd without O_CREAT of a new file after another's domain: %s\n", errName(again));
		expect(ret == 0 && again == EAGAIN, "a domain keeps its inode");
		close(g);
		if (held)
			ibv_close_xrcd(held);
	}
	ibv_xrcd *own = nullptr;
	ret = openXrcd(ctxB2, -1, 0, &own);
	printf("open_xrcd of no file: %s\n", errName(ret));
	expect(ret == 0, "open_xrcd fd -1");
	struct {
		ibv_xrcd xrcd;
		uint32_t comp_mask, handle;
	} unknown{ { ctxB2 }, 1, 4242 }; /* a verbs_xrcd of a handle the file lacks */
	ret = ibv_close_xrcd(&unknown.xrcd);
	printf("close_xrcd of an unknown handle: %s\n", errName(ret));
	expect(ret == ENOENT, "close_xrcd unknown");

	/* XRC SRQs, in the second open's domain */
	ibv_srq *s1 = xrcSrq(x2, cq1), *s2 = xrcSrq(x2, cq2), *s3 = xrcSrq(x2, cq2);
	ibv_srq *foreign = xrcSrq(own, cq2);
	uint32_t n1 = 0, n2 = 0, nf = 0;
	bool made = s1 && s2 && s3 && foreign && ibv_get_srq_num(s1, &n1) == 0 && ibv_get_srq_num(s2, &n2) == 0 &&
		ibv_get_srq_num(foreign, &nf) == 0 && n1 != n2;
	printf("create_srq_ex XRC: %s\n", made ? "ok, each its own number" : errName(errno));
	expect(made, "create_srq_ex XRC");
	if (!made)
		return 1;
	ret = ibv_destroy_srq(s3);
	printf("destroy_srq XRC: %s\n", errName(ret));
	expect(ret == 0, "destroy_srq XRC");
	ret = ibv_close_xrcd(x2);
	printf("close_xrcd with an XRC SRQ: %s\n", errName(ret));
	expect(ret == EBUSY, "close_xrcd busy");
	ibv_qp_init_attr rc{};
	rc.send_cq = rc.recv_cq = cq1;
	rc.srq = s1;
	rc.qp_type = IBV_QPT_RC;
	rc.cap = { 1, 1, 1, 1, 0 };
	errno = 0;
	ibv_qp *bad = ibv_create_qp(pdB2, &rc);
	printf("create_qp RC with an XRC SRQ: %s\n", bad ? "ok" : errName(errno));
	expect(!bad && errno == EINVAL, "RC QP with an XRC SRQ");

	ibv_mr *mrA = ibv_reg_mr(pdA, bufA, sizeof bufA, IBV_ACCESS_LOCAL_WRITE);
	ibv_mr *mrB = ibv_reg_mr(pdB2, bufB, sizeof bufB, IBV_ACCESS_LOCAL_WRITE);
	postRecv(s1, mrB, 0, 101);
	postRecv(s2, mrB, 64, 202);
	connect();

	/* each send lands in the SRQ it names, with that SRQ's CQ */
	ibv_wc wc = send(n2, "to the second  .", false);
	printf("XRC SEND to the second SRQ: %s\n", status(wc));
	expect(wc.status == IBV_WC_SUCCESS && wc.wr_id == 7, "XRC SEND");
	landed(cq2, 202, 64, "to the second  .", "XRC SEND to the second SRQ");
	ibv_wc none;
	int left = ibv_poll_cq(cq1, 1, &none);
	printf("the first SRQ's CQ after it: %d completions\n", left);
	expect(left == 0, "nothing on the other CQ");
	wc = send(n1 | 0xff000000, "to the first   .", true); /* an XRCETH has 24 bits: the top byte goes */
	printf("XRC SEND through ibv_wr_set_xrc_srqn to the first SRQ: %s\n", status(wc));
	expect(wc.status == IBV_WC_SUCCESS, "ibv_wr_set_xrc_srqn");
	landed(cq1, 101, 0, "to the first   .", "XRC SEND to the first SRQ");

	/* an RDMA WRITE names an SRQ too, whose PD its rkey must be of */
	ibv_pd *otherPd = ibv_alloc_pd(ctxB2);
	const int remote = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE;
	ibv_mr *inPd = ibv_reg_mr(pdB2, bufB + 1024, 64, remote),
	       *outside = ibv_reg_mr(otherPd, bufB + 2048, 64, remote);
	wc = send(n1, "written through.", false, inPd->rkey, bufB + 1024);
	bool moved = wc.status == IBV_WC_SUCCESS && memcmp(bufB + 1024, "written through.", 16) == 0;
	printf("XRC RDMA WRITE with an rkey of the SRQ's PD: %s, bytes %s\n", status(wc),
	       moved ? "arrived" : "missing");
	expect(moved, "XRC RDMA WRITE");
	wc = send(n1, "not in that PD..", false, outside->rkey, bufB + 2048);
	printf("XRC RDMA WRITE with an rkey of another PD: %s\n", status(wc));
	expect(wc.status == IBV_WC_REM_ACCESS_ERR, "XRC RDMA WRITE, another PD");
	connect();

	/* an SRQ of another domain, and a number no SRQ has: Invalid Request */
	postRecv(foreign, mrB, 128, 303);
	wc = send(nf, "to another domain", false);
	printf("XRC SEND to an XRC SRQ of another domain: %s\n", status(wc));
	expect(wc.status == IBV_WC_REM_INV_REQ_ERR, "SRQ of another domain");
	left = ibv_poll_cq(cq2, 1, &none);
	printf("that SRQ's CQ after it: %d completions\n", left);
	expect(left == 0, "nothing for the other domain's SRQ");
	connect();
	wc = send(0xfffff0, "to no SRQ at all", false);
	printf("XRC SEND to a number no SRQ has: %s\n", status(wc));
	expect(wc.status == IBV_WC_REM_INV_REQ_ERR, "no such SRQ");

	ibv_destroy_qp(ini);
	ibv_destroy_qp(tgt);
	expect(ibv_destroy_srq(s1) == 0 && ibv_destroy_srq(s2) == 0 && ibv_destroy_srq(foreign) == 0, "destroy SRQs");
	ret = ibv_close_xrcd(x2);
	printf("close_xrcd once its SRQs are gone: %s\n", errName(ret));
	expect(ret == 0, "close_xrcd");
	expect(ibv_close_xrcd(x1) == 0 && ibv_close_xrcd(own) == 0, "close the other domains");
	expect(ibv_dereg_mr(mrA) == 0 && ibv_dereg_mr(mrB) == 0 && ibv_dereg_mr(inPd) == 0 &&
		       ibv_dereg_mr(outside) == 0 && ibv_dealloc_pd(otherPd) == 0,
	       "dereg_mr");
	close(fd1);
	close(fd2);
	close(fd3);
	return verbs_check::failures ? 1 : 0;
}
