// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// Queue sizes and creation paths as rxe answers them (issue 40, items 2
// and 3): ibv_resize_cq growing and shrinking a CQ with completions
// pending, every ibv_create_qp_ex path of RC, UC and UD, ibv_query_qp, and
// SRQs made from zeroed attributes.
//
// usage: verbs_queues DEV
// Prints one line per check, the same on ibemu and on rdma_rxe (the VM
// suite compares them), and exits 0 when every check gave rxe's answer.
// No port needs to be active: the completions are receives flushed by a
// QP in the Error state.
//
// rxe's answers, from the kernel's drivers/infiniband/sw/rxe and rdma-core's
// providers/rxe/rxe.c:
//   - a queue asked for n entries holds 2^k - 1 >= n (rxe_queue_init()):
//     CQE 10 is 15, 16 is 31; a send queue's SGEs and inline bytes share
//     one room (rxe_qp_init_req(): 1 SGE with 64 bytes inline is 4 SGEs);
//   - resize: cqe < 1, > max_cqe or below the completions not yet polled
//     is EINVAL (rxe_cq_chk_attr()); the rest move to the new queue in
//     order (rxe_queue_resize());
//   - ibv_create_qp_ex: comp_mask bits beyond PD, CREATE_FLAGS and
//     SEND_OPS_FLAGS, any create flag, send_ops_flags beyond the type's
//     (UD: SEND, SEND_WITH_IMM) are EOPNOTSUPP (check_qp_init_attr());
//     CREATE_FLAGS with no flag set is taken;
//   - SRQ: max_wr 0 is EINVAL, max_sge 0 becomes 1 (rxe_srq_chk_init()).
// Checked against Debian 12's 6.1 rxe in the VM: the lines agree. Two of
// its answers differ from ibemu's and are not printed: at create it
// answers the WR counts asked for (a QP's, an SRQ's), and only the query
// the rounded ones (kernels with rxe_init_sq() answer those at create, as
// ibemu does); and receives posted to a QP already in Error never
// complete there (ibemu flushes them, as the Error state asks): the tool posts
// its receives before the Error state.
#include "verbs_check.h"

#include <infiniband/verbs.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>
#include <unistd.h>
#include <vector>

namespace {

using verbs_check::check;
using verbs_check::errName;
using verbs_check::failures;

struct Dev {
	ibv_context *ctx = nullptr;
	ibv_pd *pd = nullptr;
	ibv_cq *cq = nullptr;
};

ibv_qp *rcQp(Dev &d, ibv_cq *cq, uint32_t recvs)
{
	ibv_qp_init_attr a{};
	a.send_cq = a.recv_cq = cq;
	a.qp_type = IBV_QPT_RC;
	a.cap = { 1, recvs, 1, 1, 0 };
	return ibv_create_qp(d.pd, &a);
}

/* RESET -> INIT, where receives may be posted */
int toInit(ibv_qp *qp)
{
	ibv_qp_attr a{};
	a.qp_state = IBV_QPS_INIT;
	a.port_num = 1;
	return ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
}

/* -> ERR: the receives posted flush with WR_FLUSH_ERR */
int toError(ibv_qp *qp)
{
	ibv_qp_attr a{};
	a.qp_state = IBV_QPS_ERR;
	return ibv_modify_qp(qp, &a, IBV_QP_STATE);
}

int postRecvs(ibv_qp *qp, uint64_t first, uint64_t last)
{
	for (uint64_t id = first; id <= last; id++) {
		ibv_recv_wr wr{}, *bad;
		wr.wr_id = id;
		if (int ret = ibv_post_recv(qp, &wr, &bad))
			return ret;
	}
	return 0;
}

/* rxe flushes in a tasklet; ibemu at once */
void settle()
{
	usleep(200 * 1000);
}

/* polls everything, one at a time; the wr_ids in order */
std::string pollAll(ibv_cq *cq, bool &allFlushed)
{
	std::string ids;
	ibv_wc wc;
	allFlushed = true;
	while (ibv_poll_cq(cq, 1, &wc) == 1) {
		ids += (ids.empty() ? "" : ",") + std::to_string(wc.wr_id);
		allFlushed = allFlushed && wc.status == IBV_WC_WR_FLUSH_ERR;
	}
	return ids;
}

/* an RC QP on cq whose receives first..last flush into it: posted in INIT,
 * then the QP goes to Error */
ibv_qp *flushInto(Dev &d, ibv_cq *cq, uint64_t first, uint64_t last)
{
	ibv_qp *qp = rcQp(d, cq, 16);
	check(qp, "create_qp");
	if (!qp)
		return nullptr;
	check(toInit(qp) == 0, "the QP to INIT");
	check(postRecvs(qp, first, last) == 0, "receives posted");
	check(toError(qp) == 0, "the QP to Error");
	settle();
	return qp;
}

void resize(Dev &d)
{
	ibv_cq *cq = ibv_create_cq(d.ctx, 16, nullptr, nullptr, 0);
	check(cq, "create_cq 16");
	if (!cq)
		return;
	printf("create_cq 16: cqe %d\n", cq->cqe);
	check(cq->cqe == 31, "create_cq 16 holds 31");
	ibv_qp *qp1 = flushInto(d, cq, 1, 12);

	/* 12 pending: grow past the ring, shrink to exactly 12, then below */
	int ret = ibv_resize_cq(cq, 100);
	printf("resize_cq 100 with 12 pending: %s, cqe %d\n", errName(ret), cq->cqe);
	check(ret == 0 && cq->cqe == 127, "grow to 100: 127");
	ret = ibv_resize_cq(cq, 12);
	printf("resize_cq 12 with 12 pending: %s, cqe %d\n", errName(ret), cq->cqe);
	check(ret == 0 && cq->cqe == 15, "shrink to 12: 15");
	ret = ibv_resize_cq(cq, 11);
	printf("resize_cq 11 with 12 pending: %s, cqe %d\n", errName(ret), cq->cqe);
	check(ret == EINVAL && cq->cqe == 15, "below the pending: EINVAL, unchanged");
	ret = ibv_resize_cq(cq, 0);
	printf("resize_cq 0: %s\n", errName(ret));
	check(ret == EINVAL, "resize to 0: EINVAL");
	ibv_device_attr da{};
	ibv_query_device(d.ctx, &da);
	ret = ibv_resize_cq(cq, da.max_cqe + 1);
	printf("resize_cq max_cqe + 1: %s\n", errName(ret));
	check(ret == EINVAL, "resize past max_cqe: EINVAL");

	bool flushed;
	std::string ids = pollAll(cq, flushed);
	printf("polled after the resizes: %s (%s)\n", ids.c_str(), flushed ? "all flushed" : "not all flushed");
	check(ids == "1,2,3,4,5,6,7,8,9,10,11,12" && flushed, "12 completions, in order, once each");

	/* the device writes to the new queue: grow again with 3 pending,
	 * then 2 more arrive */
	ibv_qp *qp2 = flushInto(d, cq, 13, 15);
	ret = ibv_resize_cq(cq, 40);
	printf("resize_cq 40 with 3 pending: %s, cqe %d\n", errName(ret), cq->cqe);
	check(ret == 0 && cq->cqe == 63, "grow to 40: 63");
	ibv_qp *qp3 = flushInto(d, cq, 16, 17);
	ids = pollAll(cq, flushed);
	printf("polled after: %s\n", ids.c_str());
	check(ids == "13,14,15,16,17" && flushed, "5 completions, in order");
	for (ibv_qp *qp : { qp1, qp2, qp3 })
		if (qp)
			ibv_destroy_qp(qp);
	ibv_destroy_cq(cq);
}

const char *typeName(ibv_qp_type t)
{
	return t == IBV_QPT_RC ? "RC" : t == IBV_QPT_UC ? "UC" : "UD";
}

/* ibv_create_qp_ex with comp_mask, create_flags and send_ops_flags: its
 * errno, and the caps created and queried (which must agree) */
int createEx(Dev &d, ibv_qp_type type, uint32_t mask, uint32_t createFlags, uint64_t ops, const char *what)
{
	ibv_qp_init_attr_ex a{};
	a.qp_type = type;
	a.send_cq = a.recv_cq = d.cq;
	a.cap = { 10, 16, 1, 2, 64 };
	a.comp_mask = mask;
	a.pd = d.pd;
	a.create_flags = createFlags;
	a.send_ops_flags = ops;
	errno = 0;
	ibv_qp *qp = ibv_create_qp_ex(d.ctx, &a);
	int err = qp ? 0 : errno;
	printf("create_qp_ex %s %s: %s", typeName(type), what, errName(err));
	if (qp) {
		ibv_qp_attr q{};
		ibv_qp_init_attr qi{};
		int ret = ibv_query_qp(qp, &q, IBV_QP_CAP, &qi);
		/* the WR counts created are left out: 6.1's rxe answers the
		 * counts asked for (10, 16) and queries the rounded ones; later
		 * kernels (rxe_init_sq()) answer those at create too, as ibemu */
		printf(", created sges %u %u inline %u", a.cap.max_send_sge, a.cap.max_recv_sge, a.cap.max_inline_data);
		printf(", queried %u %u %u %u %u", qi.cap.max_send_wr, qi.cap.max_recv_wr, qi.cap.max_send_sge,
		       qi.cap.max_recv_sge, qi.cap.max_inline_data);
		check(ret == 0 && !memcmp(&qi.cap, &a.cap, sizeof a.cap) && !memcmp(&q.cap, &a.cap, sizeof a.cap),
		      "query_qp returns the caps created");
		check(a.cap.max_send_wr == 15 && a.cap.max_recv_wr == 31 && a.cap.max_send_sge == 4 &&
			      a.cap.max_recv_sge == 2 && a.cap.max_inline_data == 64,
		      "caps as rxe grants them");
		check(qi.qp_type == type, "query_qp: the type");
		if (mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS) {
			ibv_qp_ex *x = ibv_qp_to_qp_ex(qp);
			bool builders = x && x->wr_start && x->wr_complete && x->wr_send && x->wr_set_sge &&
				((ops & IBV_QP_EX_WITH_RDMA_WRITE) ? x->wr_rdma_write != nullptr : true);
			printf(", builders %s", builders ? "set" : "missing");
			check(builders, "the ibv_wr_* builders");
		}
		ibv_destroy_qp(qp);
	}
	printf("\n");
	return err;
}

void createPaths(Dev &d)
{
	const uint32_t pd = IBV_QP_INIT_ATTR_PD, flags = IBV_QP_INIT_ATTR_CREATE_FLAGS,
		       ops = IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
	const uint64_t send = IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM;
	const uint64_t uc = send | IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM;
	const uint64_t rc = uc | IBV_QP_EX_WITH_RDMA_READ | IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP |
		IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD;
	for (ibv_qp_type t : { IBV_QPT_RC, IBV_QPT_UC, IBV_QPT_UD }) {
		uint64_t all = t == IBV_QPT_RC ? rc : t == IBV_QPT_UC ? uc : send;
		check(createEx(d, t, pd, 0, 0, "pd") == 0, "pd only");
		check(createEx(d, t, pd | ops, 0, all, "send_ops_flags") == 0, "send_ops_flags of the type");
		check(createEx(d, t, pd | flags, 0, 0, "create_flags 0") == 0, "create_flags 0");
		check(createEx(d, t, pd | flags | ops, 0, IBV_QP_EX_WITH_SEND, "create_flags 0, send") == 0,
		      "create_flags 0 and send_ops_flags");
		check(createEx(d, t, pd | flags, IBV_QP_CREATE_BLOCK_SELF_MCAST_LB, 0, "block_self_mcast_lb") ==
			      EOPNOTSUPP,
		      "a create flag: EOPNOTSUPP");
		check(createEx(d, t, pd | flags, IBV_QP_CREATE_SCATTER_FCS, 0, "scatter_fcs") == EOPNOTSUPP,
		      "scatter_fcs: EOPNOTSUPP");
		check(createEx(d, t, pd | ops, 0, IBV_QP_EX_WITH_TSO, "tso") == EOPNOTSUPP, "TSO: EOPNOTSUPP");
		check(createEx(d, t, pd | IBV_QP_INIT_ATTR_MAX_TSO_HEADER, 0, 0, "max_tso_header") == EOPNOTSUPP,
		      "a comp_mask bit: EOPNOTSUPP");
	}
	check(createEx(d, IBV_QPT_UD, pd | ops, 0, send | IBV_QP_EX_WITH_RDMA_WRITE, "rdma_write") == EOPNOTSUPP,
	      "UD with RDMA WRITE: EOPNOTSUPP");
	check(createEx(d, IBV_QPT_UC, pd | ops, 0, send | IBV_QP_EX_WITH_RDMA_READ, "rdma_read") == EOPNOTSUPP,
	      "UC with RDMA READ: EOPNOTSUPP");
	check(createEx(d, IBV_QPT_RC, ops, 0, send, "no pd") == EINVAL, "no PD: EINVAL");
}

void srqs(Dev &d)
{
	struct Case {
		uint32_t maxWr, maxSge, limit;
		int err;
		uint32_t gotWr, gotSge;
	};
	for (const Case &c : { Case{ 0, 0, 0, EINVAL, 0, 0 }, Case{ 10, 0, 0, 0, 15, 1 }, Case{ 1, 1, 0, 0, 1, 1 },
			       Case{ 16, 2, 20, 0, 31, 2 } }) {
		ibv_srq_init_attr a{};
		a.attr = { c.maxWr, c.maxSge, c.limit };
		errno = 0;
		ibv_srq *srq = ibv_create_srq(d.pd, &a);
		int err = srq ? 0 : errno;
		printf("create_srq max_wr %u max_sge %u limit %u: %s", c.maxWr, c.maxSge, c.limit, errName(err));
		check(err == c.err, "create_srq's errno");
		if (srq) {
			ibv_srq_attr q{};
			int ret = ibv_query_srq(srq, &q);
			/* max_wr as created: as for a QP's WRs */
			printf(", created max_sge %u, queried %u %u %u", a.attr.max_sge, q.max_wr, q.max_sge, q.srq_limit);
			check(a.attr.max_wr == c.gotWr, "create_srq: the rounded max_wr");
			check(ret == 0 && q.max_wr == c.gotWr && q.max_sge == c.gotSge, "query_srq: rxe's rounding");
			ibv_destroy_srq(srq);
		}
		printf("\n");
	}
}

} /* namespace */

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: verbs_queues DEV\n");
		return 2;
	}
	int n = 0;
	ibv_device **list = ibv_get_device_list(&n);
	Dev d;
	for (int i = 0; list && i < n && !d.ctx; i++)
		if (!strcmp(ibv_get_device_name(list[i]), argv[1]))
			d.ctx = ibv_open_device(list[i]);
	if (!d.ctx) {
		fprintf(stderr, "verbs_queues: no device %s\n", argv[1]);
		return 1;
	}
	d.pd = ibv_alloc_pd(d.ctx);
	d.cq = ibv_create_cq(d.ctx, 64, nullptr, nullptr, 0);
	if (!d.pd || !d.cq) {
		fprintf(stderr, "verbs_queues: no PD or CQ: %s\n", strerror(errno));
		return 1;
	}
	resize(d);
	createPaths(d);
	srqs(d);
	ibv_destroy_cq(d.cq);
	ibv_dealloc_pd(d.pd);
	ibv_close_device(d.ctx);
	ibv_free_device_list(list);
	return failures ? 1 : 0;
}
