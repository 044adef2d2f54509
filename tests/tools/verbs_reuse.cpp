// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// Registered memory stays bound to the address space that registered it.
//
// A victim process registers a buffer at a fixed address and connects an RC
// QP to ours; an RDMA WRITE reaches it (the control). Then the address
// space behind the registration goes away while the QP and MR live on in a
// descriptor someone still holds:
//   exec  the victim clears FD_CLOEXEC on its uverbs descriptor and execs
//         a sentinel, which maps the same address with other bytes;
//   reuse the victim forks a holder of the descriptor and exits, and a
//         sentinel is started with the victim's PID (ns_last_pid).
// A second RDMA WRITE then completes, as on hardware, where the MR's pages
// stay pinned until it is deregistered and take the bytes for nobody; and
// it must leave the sentinel's bytes alone: the daemon must not write into
// whoever has the address space or the PID now.
//
// usage: verbs_reuse exec|reuse DEV_REQUESTER DEV_RESPONDER (run as root)
// Prints one line per step; exits 0 when every step went as expected.
//
// And the other side of whose descriptors the daemon takes:
//   thread DEV  a thread other than the process's first opens DEV and
//               makes a CQ and a QP (ibemu's provider hands the daemon
//               sockets and memfds from that thread: pidfd_open() does not
//               take a thread that leads no process, and the daemon must
//               find the process another way). It prints how the rings
//               are mapped: all in the context's area, one memfd
//               (emu/ibemu_user_verbs.h), none in a memfd of its own.
#include <infiniband/verbs.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <signal.h>
#include <string>
#include <sys/mman.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

namespace {

constexpr size_t kLen = 4096;
/* Far from the heap, the stack and the mmap area, and outside the ranges
 * AddressSanitizer reserves on x86-64 (its allocator sits at 0x600000000000). */
void *const kAddr = reinterpret_cast<void *>(0x3e0000000000ull);

struct Peer {
	uint32_t qpn;
	uint16_t lid;
	uint32_t rkey;
};

struct Side {
	ibv_context *ctx = nullptr;
	ibv_pd *pd = nullptr;
	ibv_cq *cq = nullptr;
	ibv_qp *qp = nullptr;
	ibv_mr *mr = nullptr;
	uint16_t lid = 0;
};

[[noreturn]] void die(const char *what)
{
	fprintf(stderr, "verbs_reuse: %s: %s\n", what, strerror(errno));
	exit(2);
}

ibv_context *openDevice(const char *name)
{
	int n;
	ibv_device **list = ibv_get_device_list(&n);
	for (int i = 0; list && i < n; i++)
		if (!strcmp(ibv_get_device_name(list[i]), name)) {
			ibv_context *c = ibv_open_device(list[i]);
			ibv_free_device_list(list);
			if (!c)
				die(name);
			return c;
		}
	errno = ENODEV;
	die(name);
}

void setUp(Side &s, const char *dev)
{
	s.ctx = openDevice(dev);
	if (!(s.pd = ibv_alloc_pd(s.ctx)) || !(s.cq = ibv_create_cq(s.ctx, 16, nullptr, nullptr, 0)))
		die("pd/cq");
	ibv_qp_init_attr ia{};
	ia.send_cq = ia.recv_cq = s.cq;
	ia.qp_type = IBV_QPT_RC;
	ia.cap.max_send_wr = ia.cap.max_recv_wr = 4;
	ia.cap.max_send_sge = ia.cap.max_recv_sge = 1;
	if (!(s.qp = ibv_create_qp(s.pd, &ia)))
		die("create_qp");
	ibv_port_attr pa{};
	if (ibv_query_port(s.ctx, 1, &pa))
		die("query_port");
	s.lid = pa.lid;
}

void connect(Side &s, const Peer &to)
{
	ibv_qp_attr a{};
	a.qp_state = IBV_QPS_INIT;
	a.port_num = 1;
	a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_LOCAL_WRITE;
	if (ibv_modify_qp(s.qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS))
		die("INIT");
	a = {};
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = IBV_MTU_1024;
	a.dest_qp_num = to.qpn;
	a.rq_psn = 0;
	a.max_dest_rd_atomic = 1;
	a.min_rnr_timer = 12;
	a.ah_attr.dlid = to.lid;
	a.ah_attr.port_num = 1;
	if (ibv_modify_qp(s.qp, &a,
			  IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
				  IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER))
		die("RTR");
	a = {};
	a.qp_state = IBV_QPS_RTS;
	a.timeout = 10;
	a.retry_cnt = 2;
	a.rnr_retry = 2;
	a.sq_psn = 0;
	a.max_rd_atomic = 1;
	if (ibv_modify_qp(s.qp, &a,
			  IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
				  IBV_QP_MAX_QP_RD_ATOMIC))
		die("RTS");
}

char *mapFixed(char fill)
{
	void *p = mmap(kAddr, kLen, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
	if (p != kAddr)
		die("mmap at the fixed address");
	memset(p, fill, kLen);
	return static_cast<char *>(p);
}

/* The sentinel: the fixed address with 'S' in it; says "ready" on fd `out`,
 * waits for a line on fd `in`, then reports whether the bytes changed. */
int sentinel(int in, int out)
{
	char *p = mapFixed('S');
	if (write(out, "r", 1) != 1)
		return 2;
	char c;
	if (read(in, &c, 1) != 1)
		return 2;
	size_t bad = 0;
	for (size_t i = 0; i < kLen; i++)
		bad += p[i] != 'S';
	printf("sentinel pid %d: %s\n", getpid(), bad ? "its memory was written" : "its memory is untouched");
	fflush(stdout);
	return bad ? 1 : 0;
}

/* One RDMA WRITE of `len` bytes of 'X' to the peer's buffer: the status. */
ibv_wc_status rdmaWrite(Side &s, const Peer &to, char *src, ibv_mr *srcMr)
{
	memset(src, 'X', 64);
	ibv_sge sge{ reinterpret_cast<uintptr_t>(src), 64, srcMr->lkey };
	ibv_send_wr wr{}, *bad;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = IBV_WR_RDMA_WRITE;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.wr.rdma.remote_addr = reinterpret_cast<uintptr_t>(kAddr);
	wr.wr.rdma.rkey = to.rkey;
	if (ibv_post_send(s.qp, &wr, &bad))
		die("post_send");
	ibv_wc wc{};
	int n;
	while ((n = ibv_poll_cq(s.cq, 1, &wc)) == 0)
		;
	if (n < 0)
		die("poll_cq");
	return wc.status;
}

/* A process with PID `pid`, by setting the last PID handed out just below
 * it; a few tries, since something else may fork meanwhile. */
pid_t forkAs(pid_t pid)
{
	for (int attempt = 0; attempt < 50; attempt++) {
		int fd = open("/proc/sys/kernel/ns_last_pid", O_WRONLY);
		if (fd < 0)
			die("ns_last_pid");
		std::string v = std::to_string(pid - 1);
		if (write(fd, v.data(), v.size()) < 0)
			die("write ns_last_pid");
		close(fd);
		pid_t c = fork();
		if (c <= 0 || c == pid)
			return c;
		kill(c, SIGKILL);
		waitpid(c, nullptr, 0);
	}
	errno = EAGAIN;
	die("could not get the PID again");
}

} /* namespace */

/* Every process here ends with its verbs objects still open, on purpose:
 * what becomes of them is the test. That memory (libibverbs' and its
 * provider's) goes with the process; it is no leak to report in the ASan
 * build. */
extern "C" const char *__lsan_default_suppressions()
{
	return "leak:libibverbs\n"
	       "leak:libibemu-rdmav34\n";
}
/* and quietly: the suite compares this program's output */
extern "C" const char *__lsan_default_options()
{
	return "print_suppressions=0";
}

int main(int argc, char **argv)
{
	if (argc == 4 && !strcmp(argv[1], "sentinel"))
		return sentinel(atoi(argv[2]), atoi(argv[3]));
	if (argc == 3 && !strcmp(argv[1], "thread")) {
		Side s;
		std::thread([&] { setUp(s, argv[2]); }).join(); /* setUp exits 2 on failure */
		printf("a second thread opened %s and made a CQ and a QP\n", argv[2]);
		unsigned area = 0, own = 0;
		char line[512];
		FILE *maps = fopen("/proc/self/maps", "re");
		while (maps && fgets(line, sizeof line, maps)) {
			area += strstr(line, "/memfd:ibemu-rings ") != nullptr;
			own += strstr(line, "/memfd:ibemu-cq ") || strstr(line, "/memfd:ibemu-qp ");
		}
		if (maps)
			fclose(maps);
		printf("rings: %u area mapping, %u memfds of their own\n", area, own);
		return 0;
	}
	if (argc != 4 || (strcmp(argv[1], "exec") && strcmp(argv[1], "reuse"))) {
		fprintf(stderr, "usage: verbs_reuse exec|reuse DEV_REQUESTER DEV_RESPONDER | thread DEV\n");
		return 2;
	}
	bool viaExec = !strcmp(argv[1], "exec");
	setvbuf(stdout, nullptr, _IONBF, 0);

	Side req;
	setUp(req, argv[2]);
	static char src[kLen];
	ibv_mr *srcMr = ibv_reg_mr(req.pd, src, sizeof src, static_cast<int>(IBV_ACCESS_LOCAL_WRITE));
	if (!srcMr)
		die("reg_mr");

	int toVictim[2], fromVictim[2], go[2], ready[2];
	if (pipe(toVictim) || pipe(fromVictim) || pipe(go) || pipe(ready))
		die("pipe");
	pid_t victim = fork();
	if (victim < 0)
		die("fork");
	if (victim == 0) {
		Side resp;
		setUp(resp, argv[3]);
		char *buf = mapFixed('V');
		if (!(resp.mr = ibv_reg_mr(resp.pd, buf, kLen, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE)))
			die("victim reg_mr");
		Peer me{ resp.qp->qp_num, resp.lid, resp.mr->rkey }, them;
		if (write(fromVictim[1], &me, sizeof me) != sizeof me ||
		    read(toVictim[0], &them, sizeof them) != sizeof them)
			die("victim exchange");
		connect(resp, them);
		char c;
		if (write(fromVictim[1], "c", 1) != 1 ||
		    read(toVictim[0], &c, 1) != 1) /* connected; control write done */
			die("victim sync");
		printf("victim: the control write %s\n", buf[0] == 'X' ? "arrived" : "did not arrive");
		if (viaExec) {
			/* keep the device (and so the QP and MR) across the exec */
			fcntl(resp.ctx->cmd_fd, F_SETFD, 0);
			std::string in = std::to_string(go[0]), out = std::to_string(ready[1]);
			execl("/proc/self/exe", "verbs_reuse", "sentinel", in.c_str(), out.c_str(), nullptr);
			die("exec");
		}
		/* a holder keeps the descriptor open; this process goes away */
		pid_t holder = fork();
		if (holder == 0) {
			pause();
			_exit(0);
		}
		if (write(fromVictim[1], &holder, sizeof holder) != sizeof holder)
			die("victim holder");
		_exit(0);
	}

	Peer them, me{ req.qp->qp_num, req.lid, 0 };
	if (read(fromVictim[0], &them, sizeof them) != sizeof them || write(toVictim[1], &me, sizeof me) != sizeof me)
		die("exchange");
	connect(req, them);
	char c;
	if (read(fromVictim[0], &c, 1) != 1)
		die("sync");
	ibv_wc_status st = rdmaWrite(req, them, src, srcMr);
	printf("control RDMA WRITE: %s\n", ibv_wc_status_str(st));
	if (write(toVictim[1], "w", 1) != 1)
		die("sync");

	pid_t holder = 0, sentinelPid = victim;
	if (!viaExec) {
		if (read(fromVictim[0], &holder, sizeof holder) != sizeof holder)
			die("holder");
		waitpid(victim, nullptr, 0); /* the registering address space is gone */
		pid_t s = forkAs(victim);
		if (s == 0)
			_exit(sentinel(go[0], ready[1]));
		printf("a new process has the victim's PID: %s\n", s == victim ? "yes" : "no");
		sentinelPid = s;
	}
	if (read(ready[0], &c, 1) != 1)
		die("sentinel ready");
	st = rdmaWrite(req, them, src, srcMr);
	printf("RDMA WRITE after the %s: %s\n", viaExec ? "exec" : "exit and PID reuse", ibv_wc_status_str(st));
	if (write(go[1], "g", 1) != 1)
		die("go");
	int status = 0;
	waitpid(sentinelPid, &status, 0);
	if (holder) {
		kill(holder, SIGKILL);
		waitpid(holder, nullptr, 0);
	}
	bool ok = st == IBV_WC_SUCCESS && WIFEXITED(status) && WEXITSTATUS(status) == 0;
	return ok ? 0 : 1;
}
