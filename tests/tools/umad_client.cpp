// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
#include "tests/tools/umad_client.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

namespace ibemu::hostile {

const char *ename(int e)
{
	const char *n = strerrorname_np(e);
	return n ? n : "E?";
}

std::string result(ssize_t n)
{
	return n < 0 ? ename(errno) : std::to_string(n);
}

void put16(uint8_t *p, uint16_t v)
{
	p[0] = uint8_t(v >> 8), p[1] = uint8_t(v);
}
void put32(uint8_t *p, uint32_t v)
{
	for (int i = 3; i >= 0; i--, v >>= 8)
		p[i] = uint8_t(v);
}
void put64(uint8_t *p, uint64_t v)
{
	for (int i = 7; i >= 0; i--, v >>= 8)
		p[i] = uint8_t(v);
}
uint32_t get32(const uint8_t *p)
{
	return uint32_t(p[0]) << 24 | uint32_t(p[1]) << 16 | uint32_t(p[2]) << 8 | p[3];
}

int openDev(const char *dev, int flags)
{
	int fd = open(dev, flags | O_CLOEXEC);
	if (fd < 0)
		printf("open %s: %s\n", dev, ename(errno));
	return fd;
}

int regAgent(int fd, uint8_t qpn, uint8_t cls, uint8_t method, uint8_t rmpp)
{
	ib_user_mad_reg_req r{};
	r.qpn = qpn;
	r.mgmt_class = cls;
	r.mgmt_class_version = 1;
	if (cls)
		r.method_mask[method / 32] |= 1u << (method % 32);
	r.rmpp_version = rmpp;
	return ioctl(fd, IB_USER_MAD_REGISTER_AGENT, &r) == 0 ? int(r.id) : -errno;
}

int regAgent2(int fd, uint8_t qpn, uint8_t cls, uint8_t method, uint8_t rmpp, uint32_t flags)
{
	ib_user_mad_reg_req2 r{};
	r.qpn = qpn;
	r.mgmt_class = cls;
	r.mgmt_class_version = 1;
	r.flags = flags;
	if (cls) {
		r.method_mask[method / 64] |= uint64_t(1) << (method % 64);
		r.oui = kOui;
	}
	r.rmpp_version = rmpp;
	return ioctl(fd, IB_USER_MAD_REGISTER_AGENT2, &r) == 0 ? int(r.id) : -errno;
}

int needAgent(int id, const char *what)
{
	if (id < 0) {
		printf("%s: %s\n", what, ename(-id));
		exit(0);
	}
	return id;
}

ib_user_mad_hdr header(uint32_t id, uint16_t lid, uint32_t qpn, uint32_t timeoutMs)
{
	ib_user_mad_hdr h{};
	h.id = id;
	h.timeout_ms = timeoutMs;
	h.qpn = qpn;
	h.qkey = qpn ? 0x80010000 : 0;
	h.lid = lid;
	return h;
}

std::vector<uint8_t> nodeInfoGet(uint32_t id, uint32_t tid, size_t hs)
{
	std::vector<uint8_t> m(hs + kMad);
	ib_user_mad_hdr h = header(id, 0xffff, 0);
	memcpy(m.data(), &h, hs);
	uint8_t *s = m.data() + hs;
	s[0] = 1, s[1] = 0x81, s[2] = 1, s[3] = 0x01; /* SubnGet, directed route */
	put64(s + 8, tid);
	put16(s + 16, 0x0011); /* NodeInfo */
	put16(s + 32, 0xffff); /* DrSLID, DrDLID permissive */
	put16(s + 34, 0xffff);
	return m;
}

void vendorHeader(uint8_t *mad, uint32_t tid, uint8_t rmppType, uint8_t rmppFlags)
{
	mad[0] = 1, mad[1] = kVendorClass, mad[2] = 1, mad[3] = 0x02;
	put64(mad + 8, tid);
	put16(mad + 16, 0x0010);
	mad[24] = 1; /* RMPP version */
	mad[25] = rmppType;
	mad[26] = rmppFlags;
	mad[37] = uint8_t(kOui >> 16), mad[38] = uint8_t(kOui >> 8), mad[39] = uint8_t(kOui);
}

bool waitIn(int fd, int ms)
{
	pollfd p{ fd, POLLIN, 0 };
	return poll(&p, 1, ms) == 1 && (p.revents & POLLIN);
}

uint8_t *lowMap(size_t len)
{
	static uintptr_t next = 0x10000000;
	for (; next + len < 0x7fff0000; next += 0x10000000) {
		void *p = mmap(reinterpret_cast<void *>(next), len, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
		if (p != MAP_FAILED) {
			next += (len + 0x10000000) & ~uintptr_t(0xfffffff);
			return static_cast<uint8_t *>(p);
		}
	}
	void *p = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED) {
		perror("mmap");
		exit(2);
	}
	return static_cast<uint8_t *>(p);
}

uint8_t *guarded(size_t len)
{
	size_t mapped = (len + kPage - 1) / kPage * kPage;
	uint8_t *p = lowMap(mapped + kPage);
	mprotect(p + mapped, kPage, PROT_NONE);
	return p;
}

uint8_t *holed(size_t len, size_t holeAt)
{
	uint8_t *p = lowMap((len + 2 * kPage - 1) / kPage * kPage);
	mprotect(p + holeAt, kPage, PROT_NONE);
	return p;
}

uint8_t *unmapped()
{
	void *p = mmap(nullptr, kPage, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	munmap(p, kPage);
	return static_cast<uint8_t *>(p);
}

uint16_t lidOf(const char *dev)
{
	std::string umad = strrchr(dev, '/') ? strrchr(dev, '/') + 1 : dev;
	auto first = [](const std::string &path) {
		char buf[64] = "";
		FILE *f = fopen(path.c_str(), "re");
		if (!f || !fgets(buf, sizeof buf, f)) {
			fprintf(stderr, "cannot read %s\n", path.c_str());
			exit(2);
		}
		fclose(f);
		buf[strcspn(buf, "\n")] = 0;
		return std::string(buf);
	};
	std::string ibdev = first("/sys/class/infiniband_mad/" + umad + "/ibdev");
	std::string port = first("/sys/class/infiniband_mad/" + umad + "/port");
	return uint16_t(
		strtoul(first("/sys/class/infiniband/" + ibdev + "/ports/" + port + "/lid").c_str(), nullptr, 0));
}

} /* namespace ibemu::hostile */
