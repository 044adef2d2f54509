// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// Speaks the uverbs write() ABI to a real /dev/infiniband/uverbsN, without
// libibverbs, to check what the kernel ABI promises across processes:
//   uverbs_probe handles DEV   another process's handles get ENOENT/EINVAL
//   uverbs_probe pin DEV       RLIMIT_MEMLOCK accounting of REG_MR
//   uverbs_probe abi DEV       header errnos
//   uverbs_probe ioctl DEV     ENOTTY for the ioctl ABI (ibemu's choice; a
//                              real kernel implements it)
//   uverbs_probe descriptors DEV FILE
//                              ibemu's driver data naming descriptors that
//                              are not what they claim (FILE: one on a FUSE
//                              mount, e.g. ibemud's own sysfs): refused,
//                              and the daemon keeps answering
//   uverbs_probe many-maps DEV N
//                              REG_MR by a process with N mappings of its
//                              own (pages alternately writable and not):
//                              the right answer at its start, middle and
//                              end (the daemon's cost follows the range)
//   uverbs_probe pd-share DEV  ALLOC_PD until refused: prints "pds N: E"
//                              (ibemu bounds each user but root to 3/4 of
//                              the device's limit: EAGAIN)
// Prints one "name: result" line per check; exits 0 when every check
// matched the kernel's answer. The VM suite runs handles, pin and abi
// against ibemu and against the real kernel's rdma_rxe and compares.
#include "emu/ibemu_user_verbs.h"
#include "emu/uverbs_abi.h"
#include "tests/tools/uverbs_write.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <string>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

using namespace ibemu::emu;

namespace {

int failures = 0;

void check(const char *name, int got, int want)
{
	printf("%s: %s%s\n", name, got == 0 ? "ok" : strerror(got), got == want ? "" : "  (UNEXPECTED)");
	if (got != want)
		failures++;
}

/* one legacy command; returns 0 or errno */
template <typename Req> int cmd(int fd, uint32_t command, Req req, void *resp = nullptr, size_t respLen = 0)
{
	return ibemu::test::uverbsCmd(fd, command, req, resp, respLen);
}

int openCtx(const char *dev)
{
	int fd = open(dev, O_RDWR | O_CLOEXEC);
	if (fd < 0) {
		perror(dev);
		exit(2);
	}
	ib_uverbs_get_context_resp r{};
	if (int e = cmd(fd, CMD_GET_CONTEXT, ib_uverbs_get_context{}, &r, sizeof r)) {
		fprintf(stderr, "GET_CONTEXT: %s\n", strerror(e));
		exit(2);
	}
	return fd;
}

int handles(const char *dev)
{
	int fd = openCtx(dev);
	ib_uverbs_alloc_pd_resp pd{};
	check("alloc_pd", cmd(fd, CMD_ALLOC_PD, ib_uverbs_alloc_pd{}, &pd, sizeof pd), 0);
	ib_uverbs_create_cq cc{};
	cc.cqe = 4;
	cc.comp_channel = -1;
	struct {
		ib_uverbs_create_cq_resp core;
		uint8_t driver[56]; /* room for a driver's reply (rxe: its queue's mmap info) */
	} cqr{};
	check("create_cq", cmd(fd, CMD_CREATE_CQ, cc, &cqr, sizeof cqr), 0);
	ib_uverbs_create_cq_resp cq = cqr.core;
	printf("handles: pd %u cq %u\n", pd.pd_handle, cq.cq_handle);
	fflush(stdout);
	pid_t child = fork();
	if (child == 0) { /* another process, its own file, the first one's numbers */
		int fd2 = openCtx(dev);
		ib_uverbs_destroy_cq dc{};
		dc.cq_handle = cq.cq_handle;
		ib_uverbs_destroy_cq_resp dr{};
		check("other process destroy_cq(its cq)", cmd(fd2, CMD_DESTROY_CQ, dc, &dr, sizeof dr), ENOENT);
		check("other process req_notify_cq(its cq)",
		      cmd(fd2, CMD_REQ_NOTIFY_CQ, ib_uverbs_req_notify_cq{ cq.cq_handle, 0 }), ENOENT);
		check("other process dealloc_pd(its pd)",
		      cmd(fd2, CMD_DEALLOC_PD, ib_uverbs_dealloc_pd{ pd.pd_handle }), ENOENT);
		fflush(stdout);
		_exit(failures ? 1 : 0);
	}
	int st = 0;
	waitpid(child, &st, 0);
	if (!WIFEXITED(st) || WEXITSTATUS(st))
		failures++;
	/* still ours, untouched; a handle of the wrong type is EINVAL */
	check("owner req_notify_cq(its pd)", cmd(fd, CMD_REQ_NOTIFY_CQ, ib_uverbs_req_notify_cq{ pd.pd_handle, 0 }),
	      EINVAL);
	ib_uverbs_destroy_cq dc{};
	dc.cq_handle = cq.cq_handle;
	ib_uverbs_destroy_cq_resp dr{};
	check("owner destroy_cq", cmd(fd, CMD_DESTROY_CQ, dc, &dr, sizeof dr), 0);
	check("owner dealloc_pd(cq handle, now free)", cmd(fd, CMD_DEALLOC_PD, ib_uverbs_dealloc_pd{ cq.cq_handle }),
	      ENOENT);
	check("owner dealloc_pd", cmd(fd, CMD_DEALLOC_PD, ib_uverbs_dealloc_pd{ pd.pd_handle }), 0);
	return failures ? 1 : 0;
}

int regMr(int fd, uint32_t pd, void *addr, size_t len)
{
	ib_uverbs_reg_mr r{};
	r.start = r.hca_va = reinterpret_cast<uint64_t>(addr);
	r.length = len;
	r.pd_handle = pd;
	r.access_flags = IB_ACCESS_LOCAL_WRITE;
	ib_uverbs_reg_mr_resp resp{};
	return cmd(fd, CMD_REG_MR, r, &resp, sizeof resp);
}

int pin(const char *dev)
{
	int fd = openCtx(dev);
	ib_uverbs_alloc_pd_resp pd{};
	check("alloc_pd", cmd(fd, CMD_ALLOC_PD, ib_uverbs_alloc_pd{}, &pd, sizeof pd), 0);
	void *mem = mmap(nullptr, 64 * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	rlimit rl;
	getrlimit(RLIMIT_MEMLOCK, &rl); /* only the soft limit moves: the hard one cannot come back up */
	rl.rlim_cur = 8 * 4096;
	setrlimit(RLIMIT_MEMLOCK, &rl);
	check("reg 6 pages (limit 8)", regMr(fd, pd.pd_handle, mem, 6 * 4096), 0);
	check("reg 2 more (exactly 8)", regMr(fd, pd.pd_handle, mem, 2 * 4096), 0);
	check("reg 1 more (9 > 8)", regMr(fd, pd.pd_handle, mem, 4096), ENOMEM);
	printf("holding 8 pages; status now\n");
	fflush(stdout);
	if (getenv("PROBE_HOLD")) { /* a test reads `ibemu status`, then sends a line */
		char line[16];
		if (!fgets(line, sizeof line, stdin))
			fprintf(stderr, "probe: stdin closed while holding\n");
	}
	rl.rlim_cur = 64 * 4096;
	setrlimit(RLIMIT_MEMLOCK, &rl);
	munmap(static_cast<char *>(mem) + 40 * 4096, 4096);
	check("reg across an unmapped page", regMr(fd, pd.pd_handle, static_cast<char *>(mem) + 39 * 4096, 3 * 4096),
	      EFAULT);
	rl.rlim_cur = 0;
	setrlimit(RLIMIT_MEMLOCK, &rl);
	check("reg with RLIMIT_MEMLOCK 0", regMr(fd, pd.pd_handle, mem, 4096), EPERM);
	return failures ? 1 : 0;
}

int regMrAccess(int fd, uint32_t pd, uint64_t addr, size_t len, uint32_t access)
{
	ib_uverbs_reg_mr r{};
	r.start = r.hca_va = addr;
	r.length = len;
	r.pd_handle = pd;
	r.access_flags = access;
	ib_uverbs_reg_mr_resp resp{};
	return cmd(fd, CMD_REG_MR, r, &resp, sizeof resp);
}

int manyMaps(const char *dev, long n)
{
	int fd = openCtx(dev);
	ib_uverbs_alloc_pd_resp pd{};
	check("alloc_pd", cmd(fd, CMD_ALLOC_PD, ib_uverbs_alloc_pd{}, &pd, sizeof pd), 0);
	/* n mappings: every odd page of one region read-only (each its own) */
	size_t pages = size_t(n) | 1; /* odd: writable at both ends */
	auto *m = static_cast<char *>(
		mmap(nullptr, pages * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
	if (m == MAP_FAILED) {
		perror("mmap");
		return 2;
	}
	size_t made = 1;
	for (size_t i = 1; i < pages; i += 2)
		if (mprotect(m + i * 4096, 4096, PROT_READ) == 0)
			made += 2;
	printf("mappings made: %s\n", made + 100 >= size_t(n) ? "all" : "fewer  (UNEXPECTED)");
	if (made + 100 < size_t(n))
		failures++;
	auto at = [m](size_t page) { return reinterpret_cast<uint64_t>(m + page * 4096); };
	size_t mid = (pages / 2) & ~size_t(1), last = pages - 1;
	const uint32_t rw = IB_ACCESS_LOCAL_WRITE;
	check("reg the first page, writable", regMrAccess(fd, pd.pd_handle, at(0), 4096, rw), 0);
	check("reg a middle page, writable", regMrAccess(fd, pd.pd_handle, at(mid), 4096, rw), 0);
	check("reg the last page, writable", regMrAccess(fd, pd.pd_handle, at(last), 4096, rw), 0);
	check("reg a read-only page, read only", regMrAccess(fd, pd.pd_handle, at(mid + 1), 4096, 0), 0);
	check("reg a read-only page, writable", regMrAccess(fd, pd.pd_handle, at(mid + 1), 4096, rw), EFAULT);
	check("reg across 64 mappings, read only", regMrAccess(fd, pd.pd_handle, at(mid), 64 * 4096, 0), 0);
	check("reg across 64 mappings, writable", regMrAccess(fd, pd.pd_handle, at(mid), 64 * 4096, rw), EFAULT);
	return failures ? 1 : 0;
}

int pdShare(const char *dev)
{
	int fd = openCtx(dev);
	int n = 0, rc = 0;
	for (; n < 4096 && rc == 0; n++) {
		ib_uverbs_alloc_pd_resp pd{};
		rc = cmd(fd, CMD_ALLOC_PD, ib_uverbs_alloc_pd{}, &pd, sizeof pd);
	}
	printf("pds %d: %s\n", n - 1, rc ? strerror(rc) : "ok");
	fflush(stdout);
	if (getenv("PROBE_HOLD")) { /* hold them until a line comes */
		char line[16];
		if (!fgets(line, sizeof line, stdin))
			fprintf(stderr, "probe: stdin closed while holding\n");
	}
	return 0;
}

int ioctls(const char *dev)
{
	int fd = open(dev, O_RDWR | O_CLOEXEC);
	if (fd < 0) {
		perror(dev);
		return 2;
	}
	uint8_t hdr[24] = {};
	check("ioctl RDMA_VERBS_IOCTL", ioctl(fd, RDMA_VERBS_IOCTL, hdr) == 0 ? 0 : errno, ENOTTY);
	check("ioctl 0", ioctl(fd, 0, hdr) == 0 ? 0 : errno, ENOTTY);
	return failures ? 1 : 0;
}

int abi(const char *dev)
{
	int fd = open(dev, O_RDWR | O_CLOEXEC);
	if (fd < 0) {
		perror(dev);
		return 2;
	}
	check("query_device, no room for the response", cmd(fd, CMD_QUERY_DEVICE, ib_uverbs_query_device{}), ENOSPC);
	ib_uverbs_query_device_resp qd{};
	check("query_device before get_context (sized)",
	      cmd(fd, CMD_QUERY_DEVICE, ib_uverbs_query_device{}, &qd, sizeof qd), EINVAL);
	uint8_t shortCmd[4] = {};
	check("write of 4 bytes", write(fd, shortCmd, 4) < 0 ? errno : 0, EINVAL);
	check("unknown command", cmd(fd, 99, ib_uverbs_query_device{}), EOPNOTSUPP);
	/* QUERY_DEVICE is 16 bytes: a header and the response pointer */
	ib_uverbs_cmd_hdr h{ CMD_QUERY_DEVICE, 4, 0 };
	uint8_t longer[24] = {};
	memcpy(longer, &h, sizeof h);
	check("write longer than its header says", write(fd, longer, sizeof longer) < 0 ? errno : 0, EINVAL);
	const size_t page = 4096;
	/* the header mapped, the response pointer in a hole: the device gets
	 * the mapped head; the kernel checks the header first (no room for the
	 * response: ENOSPC), and its get_user() of the pointer faults */
	auto *two = static_cast<uint8_t *>(
		mmap(nullptr, 2 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
	munmap(two + page, page);
	memcpy(two + page - sizeof h, &h, sizeof h);
	check("command running into an unmapped page, no room for the response",
	      write(fd, two + page - sizeof h, 16) < 0 ? errno : 0, ENOSPC);
	h.out_words = sizeof(ib_uverbs_query_device_resp) / 4;
	memcpy(two + page - sizeof h, &h, sizeof h);
	check("command running into an unmapped page", write(fd, two + page - sizeof h, 16) < 0 ? errno : 0, EFAULT);
	munmap(two, page);
	return failures ? 1 : 0;
}

/* GET_CONTEXT with ibemu's driver data, one spare, and a ring area or not */
int providerContext(int fd, int recvFd, int sendFd, int areaFd = -1)
{
	struct {
		ib_uverbs_get_context core;
		ibemu_get_context_req drv;
	} req{};
	req.drv = { IBEMU_UVERBS_MAGIC, IBEMU_UVERBS_VERSION, 1, areaFd, {} };
	req.drv.spares[0] = { recvFd, sendFd };
	struct {
		ib_uverbs_get_context_resp core;
		ibemu_get_context_resp drv;
	} resp{};
	return cmd(fd, CMD_GET_CONTEXT, req, &resp, sizeof resp);
}

int ringCq(int fd, int ringFd)
{
	struct {
		ib_uverbs_create_cq core;
		ibemu_create_cq_req drv;
	} req{};
	req.core.cqe = 4;
	req.core.comp_channel = -1;
	req.drv.ring_fd = ringFd;
	struct {
		ib_uverbs_create_cq_resp core;
		ibemu_create_cq_resp drv;
	} resp{};
	return cmd(fd, CMD_CREATE_CQ, req, &resp, sizeof resp);
}

int descriptors(const char *dev, const char *fuseFile)
{
	int fd = open(dev, O_RDWR | O_CLOEXEC);
	int other = open(fuseFile, O_RDONLY | O_CLOEXEC);
	int sv[2];
	if (fd < 0 || other < 0 || socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) {
		perror("descriptors: setup");
		return 2;
	}
	/* past the FUSE attribute cache (1 s): an fstat() would ask the server */
	usleep(1200 * 1000);
	check("spare whose sending end is a FUSE file", providerContext(fd, sv[0], other), EINVAL);
	check("spare whose receiving end is a FUSE file", providerContext(fd, other, sv[1]), EINVAL);
	check("ring area that is a FUSE file", providerContext(fd, sv[0], sv[1], other), EINVAL);
	check("ring area that is a socket", providerContext(fd, sv[0], sv[1], sv[0]), EINVAL);
	check("a real spare", providerContext(fd, sv[0], sv[1]), 0);
	check("CQ ring that is a FUSE file", ringCq(fd, other), EINVAL);
	check("CQ ring that is a socket", ringCq(fd, sv[0]), EINVAL);
	int loose = memfd_create("ring", MFD_CLOEXEC);
	check("CQ ring that can shrink", loose >= 0 && ftruncate(loose, 4096) == 0 ? ringCq(fd, loose) : errno, EINVAL);
	int ring = memfd_create("ring", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	bool sealed = ring >= 0 && ftruncate(ring, off_t(ibemu_cq_ring_bytes(4))) == 0 &&
		fcntl(ring, F_ADD_SEALS, F_SEAL_SHRINK) == 0;
	check("a sealed memfd ring", sealed ? ringCq(fd, ring) : errno, 0);
	ib_uverbs_query_device_resp qd{};
	check("the daemon still answers", cmd(fd, CMD_QUERY_DEVICE, ib_uverbs_query_device{}, &qd, sizeof qd), 0);
	return failures ? 1 : 0;
}

} /* namespace */

int main(int argc, char **argv)
{
	std::string mode = argc > 1 ? argv[1] : "";
	if (mode == "descriptors" && argc == 4)
		return descriptors(argv[2], argv[3]);
	if (mode == "many-maps" && argc == 4)
		return manyMaps(argv[2], atol(argv[3]));
	if (argc != 3) {
		fprintf(stderr,
			"usage: uverbs_probe handles|pin|abi|ioctl|pd-share /dev/infiniband/uverbsN\n"
			"       uverbs_probe descriptors /dev/infiniband/uverbsN FILE\n"
			"       uverbs_probe many-maps /dev/infiniband/uverbsN MAPPINGS\n");
		return 2;
	}
	if (mode == "handles")
		return handles(argv[2]);
	if (mode == "pin")
		return pin(argv[2]);
	if (mode == "abi")
		return abi(argv[2]);
	if (mode == "ioctl")
		return ioctls(argv[2]);
	if (mode == "pd-share")
		return pdShare(argv[2]);
	fprintf(stderr, "uverbs_probe: unknown mode %s\n", argv[1]);
	return 2;
}
