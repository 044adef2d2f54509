// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// RDMA WRITE bandwidth and small-message round trip through stock
// libibverbs, between two devices (an RC QP on each, connected in this
// process), against memcpy measured in the same run.
//
// usage: verbs_bw DEV_A DEV_B [RUNS]
// Prints, per message size, the median bandwidth of RUNS runs for RDMA
// WRITE and for memcpy and their ratio, then the median round trip of an
// 8-byte SEND ping-pong.
#include <infiniband/verbs.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

[[noreturn]] void die(const char *what)
{
	perror(what);
	exit(1);
}

struct End {
	ibv_context *ctx = nullptr;
	ibv_pd *pd = nullptr;
	ibv_cq *cq = nullptr;
	ibv_qp *qp = nullptr;
	ibv_mr *mr = nullptr;
	std::vector<char> buf;
	uint16_t lid = 0;

	End(ibv_device *dev, size_t size) : buf(size)
	{
		if (!(ctx = ibv_open_device(dev)))
			die("ibv_open_device");
		if (!(pd = ibv_alloc_pd(ctx)))
			die("ibv_alloc_pd");
		if (!(cq = ibv_create_cq(ctx, 64, nullptr, nullptr, 0)))
			die("ibv_create_cq");
		mr = ibv_reg_mr(pd, buf.data(), buf.size(), IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
		if (!mr)
			die("ibv_reg_mr");
		ibv_qp_init_attr ia{};
		ia.send_cq = ia.recv_cq = cq;
		ia.cap = { 32, 32, 1, 1, 0 };
		ia.qp_type = IBV_QPT_RC;
		if (!(qp = ibv_create_qp(pd, &ia)))
			die("ibv_create_qp");
		ibv_port_attr pa{};
		if (ibv_query_port(ctx, 1, &pa))
			die("ibv_query_port");
		lid = pa.lid;
	}
	void connect(const End &peer)
	{
		ibv_qp_attr a{};
		a.qp_state = IBV_QPS_INIT;
		a.port_num = 1;
		a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE;
		if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS))
			die("INIT");
		a = {};
		a.qp_state = IBV_QPS_RTR;
		a.path_mtu = IBV_MTU_4096;
		a.dest_qp_num = peer.qp->qp_num;
		a.max_dest_rd_atomic = 1;
		a.min_rnr_timer = 12;
		a.ah_attr.dlid = peer.lid;
		a.ah_attr.port_num = 1;
		if (ibv_modify_qp(qp, &a,
				  IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
					  IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER))
			die("RTR");
		a = {};
		a.qp_state = IBV_QPS_RTS;
		a.timeout = 14;
		a.retry_cnt = 7;
		a.rnr_retry = 7;
		a.max_rd_atomic = 1;
		if (ibv_modify_qp(qp, &a,
				  IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
					  IBV_QP_MAX_QP_RD_ATOMIC))
			die("RTS");
	}
	void waitOne()
	{
		ibv_wc wc{};
		int n;
		while ((n = ibv_poll_cq(cq, 1, &wc)) == 0) {
		}
		if (n < 0 || wc.status != IBV_WC_SUCCESS) {
			fprintf(stderr, "completion: %s\n", n < 0 ? "poll failed" : ibv_wc_status_str(wc.status));
			exit(1);
		}
	}
};

double median(std::vector<double> v)
{
	std::sort(v.begin(), v.end());
	size_t n = v.size();
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

double seconds(Clock::time_point a, Clock::time_point b)
{
	return std::chrono::duration<double>(b - a).count();
}

/* bytes/s of `iters` RDMA WRITEs of `size` bytes, 16 in flight */
double writeBw(End &a, End &b, size_t size, int iters)
{
	auto t0 = Clock::now();
	int posted = 0, done = 0;
	while (done < iters) {
		while (posted < iters && posted - done < 16) {
			ibv_sge sge{ reinterpret_cast<uint64_t>(a.buf.data()), static_cast<uint32_t>(size),
				     a.mr->lkey };
			ibv_send_wr wr{}, *bad;
			wr.sg_list = &sge;
			wr.num_sge = 1;
			wr.opcode = IBV_WR_RDMA_WRITE;
			wr.send_flags = IBV_SEND_SIGNALED;
			wr.wr.rdma.remote_addr = reinterpret_cast<uint64_t>(b.buf.data());
			wr.wr.rdma.rkey = b.mr->rkey;
			if (ibv_post_send(a.qp, &wr, &bad))
				die("ibv_post_send");
			posted++;
		}
		a.waitOne();
		done++;
	}
	return double(size) * iters / seconds(t0, Clock::now());
}

double memcpyBw(End &a, End &b, size_t size, int iters)
{
	auto t0 = Clock::now();
	for (int i = 0; i < iters; i++) {
		memcpy(b.buf.data(), a.buf.data(), size);
		asm volatile("" ::: "memory");
	}
	return double(size) * iters / seconds(t0, Clock::now());
}

void postRecv(End &e)
{
	ibv_sge sge{ reinterpret_cast<uint64_t>(e.buf.data()), 8, e.mr->lkey };
	ibv_recv_wr wr{}, *bad;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	if (ibv_post_recv(e.qp, &wr, &bad))
		die("ibv_post_recv");
}

void send8(End &e)
{
	ibv_sge sge{ reinterpret_cast<uint64_t>(e.buf.data()), 8, e.mr->lkey };
	ibv_send_wr wr{}, *bad;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = IBV_WR_SEND;
	wr.send_flags = IBV_SEND_SIGNALED;
	if (ibv_post_send(e.qp, &wr, &bad))
		die("ibv_post_send");
}

} /* namespace */

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: %s DEV_A DEV_B [RUNS]\n", argv[0]);
		return 2;
	}
	int runs = argc > 3 ? atoi(argv[3]) : 5;
	int n = 0;
	ibv_device **list = ibv_get_device_list(&n);
	ibv_device *da = nullptr, *db = nullptr;
	for (int i = 0; i < n; i++) {
		if (!strcmp(ibv_get_device_name(list[i]), argv[1]))
			da = list[i];
		if (!strcmp(ibv_get_device_name(list[i]), argv[2]))
			db = list[i];
	}
	if (!da || !db) {
		fprintf(stderr, "verbs_bw: %s or %s not found\n", argv[1], argv[2]);
		return 1;
	}
	const size_t maxSize = 1 << 20;
	End a(da, maxSize), b(db, maxSize);
	a.connect(b);
	b.connect(a);

	printf("%-10s %16s %16s %10s\n", "size", "RDMA WRITE MiB/s", "memcpy MiB/s", "ratio");
	for (size_t size : { size_t(4096), size_t(65536), size_t(1) << 20 }) {
		int iters = static_cast<int>(std::max<size_t>(64, (size_t(32) << 20) / size));
		std::vector<double> w, m;
		for (int r = 0; r < runs; r++) {
			w.push_back(writeBw(a, b, size, iters));
			m.push_back(memcpyBw(a, b, size, iters));
		}
		double mw = median(w) / (1 << 20), mm = median(m) / (1 << 20);
		printf("%-10zu %16.1f %16.1f %10.4f\n", size, mw, mm, mw / mm);
	}

	/* round trip: A sends 8 bytes, B answers, A sees the answer */
	std::vector<double> rtt;
	int iters = 1000;
	for (int i = 0; i < iters; i++) {
		postRecv(a);
		postRecv(b);
		auto t0 = Clock::now();
		send8(a);
		b.waitOne(); /* B's receive */
		send8(b);
		a.waitOne(); /* A's send */
		b.waitOne(); /* B's send */
		a.waitOne(); /* A's receive */
		rtt.push_back(seconds(t0, Clock::now()) * 1e6);
	}
	printf("8-byte SEND round trip: median %.1f us over %d\n", median(rtt), iters);
	ibv_free_device_list(list);
	return 0;
}
