// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// A hostile umad client, speaking the ib_umad ABI with raw system calls (no
// libibumad), one attack per mode (issue 9). It prints one line per result,
// with errno names, so that a suite can compare its output exactly:
//   hugeread DEV              reads of absurd counts into a 4 KiB buffer
//   unaligned DEVA DEVB SIZE  an RMPP message of SIZE bytes from unaligned
//                             buffers; reads and writes that fault part way
//   unread DEVA DEVB N SIZE [FILES]  N RMPP messages FILES receivers leave queued
//   regfault DEV              REGISTER_AGENT whose id cannot be copied back
//   flood DEV N               N requests whose answers are never read
//   outstanding DEV           requests that wait for answers, until ENOMEM
//   agents DEV NFILES         NFILES files x 32 agents, held until stdin says
//   rmppflood DEVA DEVB N     N first RMPP segments that never go on
//   badptr DEV                unmapped pointers and absurd sizes
//   tiny DEV                  writes and reads of every size up to hdr + 24
//   pollwait DEV              poll() and ppoll() with and without timeouts
//   block DEV read|poll|issm|ioctl|write   a client to be killed in a call
// Exits 0 when it ran (whatever the results), 2 on usage errors.
#include "tests/tools/umad_client.h"

#include "emu/umad_abi.h"

#include <algorithm>
#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <functional>
#include <poll.h>
#include <signal.h>
#include <string>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

using namespace ibemu;
using namespace ibemu::hostile;

namespace {

/* ---------------- hugeread ---------------- */

int hugeread(const char *dev)
{
	int fd = openDev(dev);
	if (fd < 0)
		return 0;
	ioctl(fd, IB_USER_MAD_ENABLE_PKEY);
	uint8_t *buf = guarded(kPage); /* exactly 4 KiB, then a hole */
	for (size_t count : { size_t(0), size_t(1) << 30, size_t(1) << 40 })
		printf("read %zu: %s\n", count, result(read(fd, buf, count)).c_str());
	int id = needAgent(regAgent(fd, 0, 0), "register QP0 agent");
	std::vector<uint8_t> m = nodeInfoGet(uint32_t(id), 0x1234);
	if (write(fd, m.data(), m.size()) != ssize_t(m.size())) {
		printf("write NodeInfo Get: %s\n", ename(errno));
		return 0;
	}
	if (!waitIn(fd)) {
		printf("no answer came\n");
		return 0;
	}
	ssize_t n = read(fd, buf, size_t(1) << 40);
	printf("read %zu with a MAD queued: %s\n", size_t(1) << 40, result(n).c_str());
	if (n == ssize_t(sizeof(ib_user_mad_hdr) + kMad)) {
		const uint8_t *s = buf + sizeof(ib_user_mad_hdr);
		printf("it is the HCA's NodeInfo: method 0x%02x tid 0x%" PRIx32 "\n", s[3], get32(s + 12));
	}
	return 0;
}

/* ---------------- unaligned ---------------- */

struct Rmpp {
	int fa, fb;
	uint32_t agentA;
	uint16_t dlid;
	size_t size;
	size_t hs = sizeof(ib_user_mad_hdr);
	size_t total() const { return hs + 40 + size; }
};

uint8_t pattern(size_t i, uint32_t tid)
{
	return uint8_t((i * 131 + (i >> 11) + tid) & 0xff);
}

/* the whole message (header and MAD) into dst */
void fillMessage(const Rmpp &r, uint8_t *dst, uint32_t tid)
{
	ib_user_mad_hdr h = header(r.agentA, r.dlid, 1);
	memcpy(dst, &h, r.hs);
	uint8_t *mad = dst + r.hs;
	memset(mad, 0, 40);
	vendorHeader(mad, tid, 1, 1); /* ACTIVE: the MAD layer segments it */
	for (size_t i = 0; i < r.size; i++)
		mad[40 + i] = pattern(i, tid);
}

/* what a received message holds: "tid T, N bytes, same" or where it differs */
std::string describe(const Rmpp &r, const uint8_t *got, ssize_t n)
{
	if (n < 0)
		return ename(errno);
	if (size_t(n) < r.hs + 40)
		return std::to_string(n) + " bytes, too short";
	uint32_t tid = get32(got + r.hs + 12);
	std::string s = "tid " + std::to_string(tid) + ", " + std::to_string(n) + " bytes, ";
	if (size_t(n) != r.total())
		return s + "length differs";
	for (size_t i = 0; i < r.size; i++)
		if (got[r.hs + 40 + i] != pattern(i, tid))
			return s + "differs at " + std::to_string(i);
	return s + "same";
}

int unaligned(const char *devA, const char *devB, size_t size)
{
	Rmpp r{};
	r.size = size;
	r.dlid = lidOf(devB);
	r.fa = openDev(devA);
	r.fb = openDev(devB);
	if (r.fa < 0 || r.fb < 0)
		return 0;
	r.agentA = uint32_t(needAgent(regAgent2(r.fa, 1, 0, 0, 1, 0), "register the sender"));
	needAgent(regAgent2(r.fb, 1, kVendorClass, 0x02, 1, 0), "register the receiver");
	printf("to LID %u, %zu data bytes\n", r.dlid, size);

	/* written from the heap + 1, read into the heap + 3 */
	std::vector<uint8_t> wmem(r.total() + 1), rmem(r.total() + 3);
	uint8_t *w = wmem.data() + 1, *rd = rmem.data() + 3;
	fillMessage(r, w, 1);
	printf("write from an unaligned buffer: %s\n", result(write(r.fa, w, r.total())).c_str());
	if (!waitIn(r.fb)) {
		printf("nothing arrived\n");
		return 0;
	}
	printf("read into an unaligned buffer: %s\n", describe(r, rd, read(r.fb, rd, r.total())).c_str());

	/* a reader's buffer with a hole after its first MiB (or half, if smaller) */
	size_t holeAt = r.total() > (size_t(2) << 20) ? size_t(1) << 20
						      : std::max(kPage, r.total() / 2 / kPage * kPage);
	fillMessage(r, w, 2);
	printf("write: %s\n", result(write(r.fa, w, r.total())).c_str());
	if (!waitIn(r.fb)) {
		printf("nothing arrived\n");
		return 0;
	}
	uint8_t *hole = holed(r.total() + 1, holeAt);
	printf("read into a buffer with a hole at %zu KiB: %s\n", holeAt >> 10,
	       result(read(r.fb, hole + 1, r.total())).c_str());
	printf("read again into a good buffer: %s\n", describe(r, rd, read(r.fb, rd, r.total())).c_str());

	/* a writer's buffer with a hole: nothing may leave */
	fillMessage(r, w, 3);
	memcpy(hole + 1, w, holeAt - 1); /* all of it that fits before the hole */
	printf("write from a buffer with a hole at %zu KiB: %s\n", holeAt >> 10,
	       result(write(r.fa, hole + 1, r.total())).c_str());
	fillMessage(r, w, 4);
	printf("write: %s\n", result(write(r.fa, w, r.total())).c_str());
	if (!waitIn(r.fb)) {
		printf("nothing arrived\n");
		return 0;
	}
	printf("the next message: %s\n", describe(r, rd, read(r.fb, rd, r.total())).c_str());
	printf("anything more: %s\n", result(read(r.fb, rd, r.total())).c_str());
	return 0;
}

/* ---------------- unread ---------------- */

/* N RMPP messages of SIZE bytes, one after the other, to FILES agents (one
 * vendor class each, in turn) that do not read them until every send is
 * over: the daemon keeps what its per-file queue bound and the user's
 * budget allow. (One at a time, so that what the daemon holds is the
 * queues, not messages in flight.) */
int unread(const char *devA, const char *devB, long n, size_t size, int files)
{
	Rmpp r{};
	r.size = size;
	r.dlid = lidOf(devB);
	r.fa = openDev(devA);
	if (r.fa < 0 || files < 1 || files > 32)
		return 0;
	std::vector<int> receivers;
	for (int i = 0; i < files; i++) {
		int fd = openDev(devB);
		if (fd < 0)
			return 0;
		needAgent(regAgent2(fd, 1, uint8_t(kVendorClass + i), 0x02, 1, 0), "register a receiver");
		receivers.push_back(fd);
	}
	r.agentA = uint32_t(needAgent(regAgent2(r.fa, 1, 0, 0, 1, 0), "register the sender"));
	std::vector<uint8_t> msg(r.total()), report(sizeof(ib_user_mad_hdr) + kMad);
	/* Each send waits 100 ms for a response that never comes, so its end
	 * (all segments ACKed, or given up) shows as a timeout report. */
	long accepted = 0, reports = 0;
	int err = 0;
	/* Over several files the user's budget runs out, and a receiver out of
	 * resources STOPs the transfer: the send is aborted, which the kernel
	 * never reports. So only wait a moment for each report then. */
	auto oneReport = [&] {
		if (!waitIn(r.fa, files > 1 ? 1000 : 60000))
			return false;
		if (read(r.fa, report.data(), report.size()) > 0)
			reports++;
		return true;
	};
	for (long i = 0; i < n && !err; i++) {
		fillMessage(r, msg.data(), uint32_t(i + 1));
		msg[r.hs + 1] = uint8_t(kVendorClass + i % files);
		ib_user_mad_hdr h = header(r.agentA, r.dlid, 1, 100);
		h.retries = 5;
		memcpy(msg.data(), &h, r.hs);
		if (write(r.fa, msg.data(), msg.size()) != ssize_t(msg.size())) {
			err = errno;
			break;
		}
		accepted++;
		while (reports < accepted && oneReport()) {
		}
	}
	long kept = 0;
	std::vector<uint8_t> in(r.total());
	for (int fd : receivers)
		while (read(fd, in.data(), in.size()) > 0)
			kept++;
	printf("unread: %ld written, %ld accepted%s%s, %ld ended, %ld kept by the receiver%s\n", n, accepted,
	       err ? ", then " : "", err ? ename(err) : "", reports, kept, files > 1 ? "s" : "");
	return 0;
}

/* ---------------- regfault ---------------- */

int regfault(const char *dev)
{
	int fd = openDev(dev);
	if (fd < 0)
		return 0;
	auto *page = static_cast<ib_user_mad_reg_req *>(
		mmap(nullptr, kPage, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
	ib_user_mad_reg_req req{};
	req.qpn = 1;
	req.mgmt_class = 0x0a; /* vendor range 1: nobody else registers it */
	req.mgmt_class_version = 1;
	req.method_mask[0] = 1u << 0x01; /* Get */
	*page = req;
	mprotect(page, kPage, PROT_READ);
	printf("register, argument read-only: %s\n",
	       ioctl(fd, IB_USER_MAD_REGISTER_AGENT, page) == 0 ? "ok" : ename(errno));
	ib_user_mad_reg_req again = req;
	printf("the same, writable: %s\n", ioctl(fd, IB_USER_MAD_REGISTER_AGENT, &again) == 0 ? "ok" : ename(errno));
	again = req;
	printf("once more (its method is taken now): %s\n",
	       ioctl(fd, IB_USER_MAD_REGISTER_AGENT, &again) == 0 ? "ok" : ename(errno));
	return 0;
}

/* ---------------- flood ---------------- */

int flood(const char *dev, long n)
{
	int fd = openDev(dev);
	if (fd < 0)
		return 0;
	ioctl(fd, IB_USER_MAD_ENABLE_PKEY);
	int id = needAgent(regAgent(fd, 0, 0), "register QP0 agent");
	long ok = 0;
	int firstErr = 0;
	for (long i = 0; i < n; i++) {
		std::vector<uint8_t> m = nodeInfoGet(uint32_t(id), uint32_t(i + 1));
		if (write(fd, m.data(), m.size()) == ssize_t(m.size()))
			ok++;
		else if (!firstErr)
			firstErr = errno;
	}
	printf("flood: %ld written, %ld accepted%s%s\n", n, ok, firstErr ? ", first error " : "",
	       firstErr ? ename(firstErr) : "");
	return 0; /* and never read */
}

/* ---------------- outstanding ---------------- */

int outstanding(const char *dev)
{
	int fd = openDev(dev);
	if (fd < 0)
		return 0;
	int id = needAgent(regAgent2(fd, 1, 0, 0, 0, 0), "register GSI agent");
	long ok = 0;
	int err = 0;
	for (long i = 0; i < 100000; i++) {
		std::vector<uint8_t> m(sizeof(ib_user_mad_hdr) + kMad);
		ib_user_mad_hdr h = header(uint32_t(id), kNobodyLid, 1, 60000);
		memcpy(m.data(), &h, sizeof h);
		uint8_t *mad = m.data() + sizeof h;
		mad[0] = 1, mad[1] = 0x04, mad[2] = 1, mad[3] = 0x01; /* PerfMgt Get */
		put64(mad + 8, uint64_t(i + 1));
		put16(mad + 16, 0x0012); /* PortCounters */
		if (write(fd, m.data(), m.size()) != ssize_t(m.size())) {
			err = errno;
			break;
		}
		ok++;
	}
	printf("outstanding: %ld accepted, then %s\n", ok, err ? ename(err) : "no error");
	return 0;
}

/* ---------------- agents ---------------- */

int agents(const char *dev, long nfiles)
{
	rlimit rl;
	getrlimit(RLIMIT_NOFILE, &rl);
	if (rl.rlim_max < rlim_t(nfiles) + 64)
		rl.rlim_max = rlim_t(nfiles) + 64; /* root may raise it */
	rl.rlim_cur = rl.rlim_max;
	if (setrlimit(RLIMIT_NOFILE, &rl) != 0) {
		getrlimit(RLIMIT_NOFILE, &rl);
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	std::vector<int> fds;
	long nagents = 0;
	for (long i = 0; i < nfiles; i++) {
		int fd = open(dev, O_RDWR | O_NONBLOCK | O_CLOEXEC);
		if (fd < 0) {
			printf("open %ld: %s\n", i + 1, ename(errno));
			break;
		}
		fds.push_back(fd);
		for (int a = 0; a < int(IB_UMAD_MAX_AGENTS); a++) {
			int id = regAgent(fd, 1, 0);
			if (id < 0) {
				printf("file %ld agent %d: %s\n", i + 1, a + 1, ename(-id));
				break;
			}
			nagents++;
		}
	}
	printf("ready %zu files %ld agents\n", fds.size(), nagents);
	fflush(stdout);
	char line[16];
	if (!fgets(line, sizeof line, stdin))
		printf("stdin closed\n");
	for (int fd : fds)
		close(fd);
	printf("closed\n");
	return 0;
}

/* ---------------- rmppflood ---------------- */

int rmppflood(const char *devA, const char *devB, long n)
{
	uint16_t dlid = lidOf(devB);
	int fa = openDev(devA), fb = openDev(devB);
	if (fa < 0 || fb < 0)
		return 0;
	int a = needAgent(regAgent2(fa, 1, kVendorClass, 0x02, 1, IB_USER_MAD_USER_RMPP), "register user-RMPP sender");
	needAgent(regAgent2(fb, 1, kVendorClass, 0x02, 1, 0), "register kernel-RMPP receiver");
	long sent = 0;
	int err = 0;
	for (long i = 0; i < n; i++) {
		std::vector<uint8_t> m(sizeof(ib_user_mad_hdr) + kMad);
		ib_user_mad_hdr h = header(uint32_t(a), dlid, 1);
		memcpy(m.data(), &h, sizeof h);
		uint8_t *mad = m.data() + sizeof h;
		vendorHeader(mad, uint32_t(i + 1), 1, 1 | 2); /* DATA, ACTIVE | FIRST */
		put32(mad + 28, 1); /* segment 1 */
		put32(mad + 32, 16 * 220); /* of 16: never finished */
		if (write(fa, m.data(), m.size()) != ssize_t(m.size())) {
			err = errno;
			break;
		}
		sent++;
	}
	/* every first segment gets an ACK (a reassembly began) or a STOP */
	long acks = 0, stops = 0, other = 0;
	std::vector<uint8_t> buf(sizeof(ib_user_mad_hdr) + kMad);
	while (acks + stops + other < sent && waitIn(fa, 30000)) {
		while (read(fa, buf.data(), buf.size()) > 0) {
			const uint8_t *mad = buf.data() + sizeof(ib_user_mad_hdr);
			if (mad[25] == 2)
				acks++;
			else if (mad[25] == 3 && mad[27] == 1)
				stops++;
			else
				other++;
		}
	}
	printf("rmppflood: %ld first segments sent%s%s, %ld ACKs, %ld STOPs (RESX), %ld other\n", sent,
	       err ? ", then " : "", err ? ename(err) : "", acks, stops, other);
	return 0;
}

/* ---------------- badptr ---------------- */

int badptr(const char *dev)
{
	int fd = openDev(dev);
	if (fd < 0)
		return 0;
	ioctl(fd, IB_USER_MAD_ENABLE_PKEY);
	const size_t hs = sizeof(ib_user_mad_hdr), full = hs + kMad;
	uint8_t *bad = unmapped();
	uint8_t *good = guarded(kPage);
	int id = needAgent(regAgent(fd, 0, 0), "register QP0 agent");
	std::vector<uint8_t> m = nodeInfoGet(uint32_t(id), 7);

	printf("write from an unmapped buffer: %s\n", result(write(fd, bad, full)).c_str());
	memcpy(good, m.data(), m.size());
	printf("write of 2^40 bytes from a 4 KiB buffer: %s\n", result(write(fd, good, size_t(1) << 40)).c_str());
	printf("write of 16 MiB from a 4 KiB buffer: %s\n", result(write(fd, good, size_t(16) << 20)).c_str());
	/* A MAD whose buffer ends in a hole after 120 bytes: the kernel hands
	 * over only what is mapped, and those bytes alone are a valid write. */
	std::vector<uint8_t> cut = nodeInfoGet(uint32_t(id), 0x51);
	memcpy(good + kPage - 120, cut.data(), 120);
	printf("write of a MAD with a hole after 120 bytes: %s\n", result(write(fd, good + kPage - 120, full)).c_str());
	/* none of these may have sent anything: the answers up to a good
	 * request's own are its alone */
	std::vector<uint8_t> next = nodeInfoGet(uint32_t(id), 0x52);
	std::string answers;
	if (write(fd, next.data(), next.size()) == ssize_t(next.size())) {
		std::vector<uint8_t> in(kPage);
		uint32_t tid = 0;
		while (tid != 0x52 && waitIn(fd)) {
			if (read(fd, in.data(), in.size()) <= 0)
				break;
			tid = get32(in.data() + hs + 12);
			char t[32];
			snprintf(t, sizeof t, " 0x%" PRIx32, tid);
			answers += t;
		}
	}
	printf("answers up to a good request's:%s\n", answers.c_str());
	printf("read into an unmapped buffer, queue empty: %s\n", result(read(fd, bad, full)).c_str());
	printf("register, unmapped argument: %s\n",
	       ioctl(fd, IB_USER_MAD_REGISTER_AGENT, bad) == 0 ? "ok" : ename(errno));
	printf("unregister, unmapped argument: %s\n",
	       ioctl(fd, IB_USER_MAD_UNREGISTER_AGENT, bad) == 0 ? "ok" : ename(errno));
	ib_user_mad_reg_req *edge = reinterpret_cast<ib_user_mad_reg_req *>(good + kPage - 10);
	printf("register, argument running into a hole: %s\n",
	       ioctl(fd, IB_USER_MAD_REGISTER_AGENT, edge) == 0 ? "ok" : ename(errno));
	std::vector<uint8_t> big(16384);
	unsigned hugeCmd = iocEncode(IOC_READ | IOC_WRITE, IB_IOCTL_MAGIC, 1, 16383);
	printf("ioctl of the largest size (16383): %s\n", ioctl(fd, hugeCmd, big.data()) == 0 ? "ok" : ename(errno));

	/* a MAD waits; bad reads must leave it queued */
	if (write(fd, m.data(), m.size()) != ssize_t(m.size()) || !waitIn(fd)) {
		printf("no MAD to read: %s\n", ename(errno));
		return 0;
	}
	printf("read into an unmapped buffer, a MAD queued: %s\n", result(read(fd, bad, full)).c_str());
	printf("read into 100 bytes before a hole: %s\n", result(read(fd, good + kPage - 100, full)).c_str());
	printf("read into 300 bytes before a hole: %s\n", result(read(fd, good + kPage - 300, full)).c_str());
	ssize_t n = read(fd, good, kPage);
	printf("read into a good buffer: %s%s\n", result(n).c_str(),
	       n == ssize_t(full) && get32(good + hs + 12) == 7 ? ", the NodeInfo answer" : "");
	printf("and then: %s\n", result(read(fd, good, kPage)).c_str());
	return 0;
}

/* ---------------- tiny ---------------- */

/* one line per run of sizes with the same answer */
void sizes(const char *what, size_t upTo, const std::function<std::string(size_t)> &probe)
{
	size_t from = 0;
	std::string cur = probe(0);
	for (size_t s = 1; s <= upTo + 1; s++) {
		std::string r = s <= upTo ? probe(s) : "";
		if (r != cur) {
			if (from == s - 1)
				printf("%s %zu: %s\n", what, from, cur.c_str());
			else
				printf("%s %zu-%zu: %s\n", what, from, s - 1, cur.c_str());
			from = s;
			cur = r;
		}
	}
}

int tiny(const char *dev)
{
	for (bool pkey : { false, true }) {
		int fd = openDev(dev);
		if (fd < 0)
			return 0;
		if (pkey)
			ioctl(fd, IB_USER_MAD_ENABLE_PKEY);
		size_t hs = pkey ? 64 : 56;
		printf("header %zu bytes\n", hs);
		int id = needAgent(regAgent(fd, 0, 0), "register QP0 agent");
		std::vector<uint8_t> buf(kPage);
		std::vector<uint8_t> m = nodeInfoGet(uint32_t(id), 9, hs);
		sizes("write", hs + 24, [&](size_t s) {
			memcpy(buf.data(), m.data(), std::min(s, m.size()));
			return result(write(fd, buf.data(), s));
		});
		sizes("read, queue empty", hs + 24, [&](size_t s) { return result(read(fd, buf.data(), s)); });
		if (write(fd, m.data(), m.size()) != ssize_t(m.size()) || !waitIn(fd)) {
			printf("no MAD to read: %s\n", ename(errno));
			return 0;
		}
		sizes("read, a MAD queued", hs + 24, [&](size_t s) { return result(read(fd, buf.data(), s)); });
		printf("read the MAD: %s\n", result(read(fd, buf.data(), buf.size())).c_str());
		close(fd);
	}
	return 0;
}

/* ---------------- pollwait ---------------- */

void onAlarm(int)
{}

/* Waits until process pid is in system call nr (/proc/PID/syscall), at
 * most 10 s: then what wakes it is the daemon's poll notification, not a
 * MAD found queued when it polled. */
void waitInSyscall(pid_t pid, long nr)
{
	char path[64];
	snprintf(path, sizeof path, "/proc/%d/syscall", static_cast<int>(pid));
	for (int i = 0; i < 1000; i++) {
		long now = -1;
		if (FILE *f = fopen(path, "re")) {
			if (fscanf(f, "%ld", &now) != 1) /* "running" */
				now = -1;
			fclose(f);
		}
		if (now == nr)
			return;
		usleep(10 * 1000);
	}
}

const char *revents(const pollfd &p)
{
	return p.revents == POLLIN ? "POLLIN" : p.revents ? "other events" : "none";
}

/* poll() and ppoll() waiting without a timeout for the answer to a MAD
 * that another process sends on the same file once they sleep (the
 * daemon's poll notification must wake them), one interrupted by a
 * signal, and one with a timeout that passes. */
int pollwait(const char *dev)
{
	int fd = openDev(dev);
	if (fd < 0)
		return 0;
	ioctl(fd, IB_USER_MAD_ENABLE_PKEY);
	int id = needAgent(regAgent(fd, 0, 0), "register QP0 agent");
	std::vector<uint8_t> buf(kPage);
	for (const char *call : { "poll", "ppoll" }) {
		bool isPoll = strcmp(call, "poll") == 0;
		pid_t parent = getpid();
		pid_t child = fork();
		if (child == 0) {
			waitInSyscall(parent, isPoll ? SYS_poll : SYS_ppoll);
			std::vector<uint8_t> m = nodeInfoGet(uint32_t(id), 0x77);
			_exit(write(fd, m.data(), m.size()) == ssize_t(m.size()) ? 0 : 1);
		}
		pollfd p{ fd, POLLIN, 0 };
		int n = isPoll ? poll(&p, 1, -1) : ppoll(&p, 1, nullptr, nullptr);
		printf("%s, no timeout, a MAD sent meanwhile: %d, %s\n", call, n, revents(p));
		printf("read it: %s\n", result(read(fd, buf.data(), buf.size())).c_str());
		int status = -1;
		waitpid(child, &status, 0);
		if (status != 0)
			printf("the sender failed\n");
	}
	struct sigaction sa {};
	sa.sa_handler = onAlarm; /* no SA_RESTART */
	sigaction(SIGALRM, &sa, nullptr);
	alarm(1);
	pollfd p{ fd, POLLIN, 0 };
	int n = poll(&p, 1, -1);
	printf("poll, no timeout, a signal: %s\n", n < 0 ? ename(errno) : "returned");
	p.revents = 0;
	n = poll(&p, 1, 300);
	printf("poll, 300 ms, nothing comes: %d, %s\n", n, revents(p));
	return 0;
}

/* ---------------- block ---------------- */

/* A client for a kill storm: it says where it is, then stays in (or keeps
 * making) the call until it is killed. */
int block(const char *dev, const std::string &kind)
{
	if (kind == "issm") {
		printf("opening %s\n", dev);
		fflush(stdout);
		int fd = open(dev, O_RDONLY | O_CLOEXEC); /* waits while an SM holds it */
		printf("issm open: %s\n", fd < 0 ? ename(errno) : "ok");
		return 0;
	}
	/* a blocking file for the reader; the loops must never wait */
	int fd = open(dev, O_RDWR | O_CLOEXEC | (kind == "read" ? 0 : O_NONBLOCK));
	if (fd < 0) {
		printf("open %s: %s\n", dev, ename(errno));
		return 0;
	}
	ioctl(fd, IB_USER_MAD_ENABLE_PKEY);
	std::vector<uint8_t> buf(kPage);
	if (kind == "poll") {
		printf("polling\n");
		fflush(stdout);
		pollfd p{ fd, POLLIN, 0 };
		printf("poll: %d\n", poll(&p, 1, -1));
		return 0;
	}
	if (kind == "read") {
		printf("reading\n");
		fflush(stdout);
		printf("read: %s\n", result(read(fd, buf.data(), buf.size())).c_str());
		return 0;
	}
	if (kind == "ioctl") {
		printf("looping\n");
		fflush(stdout);
		for (;;) {
			int id = regAgent(fd, 1, 0);
			if (id >= 0)
				ioctl(fd, IB_USER_MAD_UNREGISTER_AGENT, &id);
		}
	}
	if (kind == "write") {
		int id = needAgent(regAgent(fd, 0, 0), "register QP0 agent");
		printf("looping\n");
		fflush(stdout);
		for (uint32_t tid = 1;; tid++) {
			std::vector<uint8_t> m = nodeInfoGet(uint32_t(id), tid);
			if (write(fd, m.data(), m.size()) < 0 && errno != ENOMEM)
				return 0;
			while (read(fd, buf.data(), buf.size()) > 0) {
			}
		}
	}
	fprintf(stderr, "block: read, poll, issm, ioctl or write\n");
	return 2;
}

long number(const char *s)
{
	char *end;
	long v = strtol(s, &end, 0);
	if (*end || v < 0) {
		fprintf(stderr, "umad_hostile: not a count: %s\n", s);
		exit(2);
	}
	return v;
}

} /* namespace */

int main(int argc, char **argv)
{
	setvbuf(stdout, nullptr, _IOLBF, 0);
	std::string mode = argc > 1 ? argv[1] : "";
	if (mode == "hugeread" && argc == 3)
		return hugeread(argv[2]);
	if (mode == "unaligned" && argc == 5)
		return unaligned(argv[2], argv[3], size_t(number(argv[4])));
	if (mode == "unread" && (argc == 6 || argc == 7))
		return unread(argv[2], argv[3], number(argv[4]), size_t(number(argv[5])),
			      argc == 7 ? int(number(argv[6])) : 1);
	if (mode == "regfault" && argc == 3)
		return regfault(argv[2]);
	if (mode == "flood" && argc == 4)
		return flood(argv[2], number(argv[3]));
	if (mode == "outstanding" && argc == 3)
		return outstanding(argv[2]);
	if (mode == "agents" && argc == 4)
		return agents(argv[2], number(argv[3]));
	if (mode == "rmppflood" && argc == 5)
		return rmppflood(argv[2], argv[3], number(argv[4]));
	if (mode == "badptr" && argc == 3)
		return badptr(argv[2]);
	if (mode == "tiny" && argc == 3)
		return tiny(argv[2]);
	if (mode == "pollwait" && argc == 3)
		return pollwait(argv[2]);
	if (mode == "block" && argc == 4)
		return block(argv[2], argv[3]);
	fprintf(stderr,
		"usage: umad_hostile hugeread|regfault|outstanding|badptr|tiny DEV\n"
		"       umad_hostile unaligned DEVA DEVB SIZE | unread DEVA DEVB N SIZE [FILES] | rmppflood DEVA DEVB "
		"N\n"
		"       umad_hostile flood DEV N | agents DEV NFILES | block DEV read|poll|issm|ioctl|write\n");
	return 2;
}
