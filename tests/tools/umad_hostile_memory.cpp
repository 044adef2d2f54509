// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// umad_hostile's attacks through user memory and sizes: reads of absurd
// counts (hugeread), a REGISTER_AGENT whose id cannot be copied back
// (regfault), unmapped pointers and absurd sizes (badptr), and writes and
// reads of every size up to a header and 24 bytes (tiny).
#include "tests/tools/umad_hostile.h"
#include "tests/tools/umad_client.h"

#include "emu/umad_abi.h"

#include <algorithm>
#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>
#include <vector>

namespace ibemu::hostile {

namespace {

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

} /* namespace */

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

} /* namespace ibemu::hostile */
