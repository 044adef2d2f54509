// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// umad_hostile's RMPP attacks: a message of SIZE bytes written from and
// read into buffers at every alignment, and reads and writes that fault
// part way (unaligned); RMPP messages the receiving files never read
// (unread); first segments that never go on (rmppflood). What each must
// leave behind is in docs/robustness.md.
#include "tests/tools/umad_hostile.h"
#include "tests/tools/umad_client.h"

#include "emu/umad_abi.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>
#include <unistd.h>
#include <vector>

namespace ibemu::hostile {

namespace {

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

} /* namespace */

/* ---------------- unaligned ---------------- */

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

} /* namespace ibemu::hostile */
