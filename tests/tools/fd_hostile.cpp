// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// A program that hands the daemon descriptors whose release waits: TCP
// sockets with SO_LINGER {1, 30 s} connected to a listener that never
// reads, with unsent data, so that their last close() waits the 30 s
// (docs/robustness.md). It speaks ibemu's driver ABI (emu/ibemu_user_verbs.h)
// on a uverbs device itself:
//   fd_hostile doorbell DEV COUNT [FILE]
//       COUNT such sockets (and FILE, e.g. the daemon's own sysfs) queued
//       on a QP's doorbell before IBEMU_CMD_ATTACH_QP_RING hands it over,
//       more than the 64 the daemon's buffer once had room for; then a
//       few more sent on it after
//   fd_hostile spare DEV COUNT [FILE]
//       a completion-channel spare whose end the daemon keeps holds them
//       (sent from the program's end beforehand); GET_CONTEXT with it, and
//       the uverbs file closed again
//   fd_hostile door SOCKET COUNT
//       the seccomp transport's door (RUNDIR/seccomp.sock) gets half of
//       them as a hand-over, more than the 4 its buffer once had room
//       for, and the other half in a message after it
// Prints "name: result" lines, then "holding PID" and waits for its stdin
// to close, keeping the listener (and so the lingering) alive; the test
// meanwhile checks that an honest client is still served. Kill it with
// SIGKILL: its own last close of a lingering socket would wait too.
#include "emu/ibemu_user_verbs.h"
#include "emu/uverbs_abi.h"
#include "tests/tools/send_fds.h"
#include "tests/tools/uverbs_write.h"

#include <arpa/inet.h>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <netinet/in.h>
#include <string>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>
#include <vector>

using namespace ibemu::emu;

namespace {

/* one legacy command; returns 0 or errno */
template <typename Req> int cmd(int fd, uint32_t command, Req req, void *resp = nullptr, size_t respLen = 0)
{
	return ibemu::test::uverbsCmd(fd, command, req, resp, respLen);
}

void report(const char *name, int err)
{
	printf("%s: %s\n", name, err ? strerrorname_np(err) : "ok");
	fflush(stdout);
}

/* a listener on the loopback that never accepts nor reads, with a small
 * receive buffer that its connections inherit */
int lingerListener(sockaddr_in &at)
{
	int l = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	int small = 4096;
	setsockopt(l, SOL_SOCKET, SO_RCVBUF, &small, sizeof small);
	at = {};
	at.sin_family = AF_INET;
	at.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	socklen_t len = sizeof at;
	if (bind(l, reinterpret_cast<sockaddr *>(&at), sizeof at) != 0 || listen(l, 512) != 0 ||
	    getsockname(l, reinterpret_cast<sockaddr *>(&at), &len) != 0)
		return -1;
	return l;
}

/* a connection whose last close waits 30 s: lingering, with data the peer
 * never takes */
int lingering(const sockaddr_in &at)
{
	int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	int small = 4096;
	setsockopt(s, SOL_SOCKET, SO_SNDBUF, &small, sizeof small);
	if (connect(s, reinterpret_cast<const sockaddr *>(&at), sizeof at) != 0) {
		close(s);
		return -1;
	}
	linger lg{ 1, 30 };
	setsockopt(s, SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
	fcntl(s, F_SETFL, O_NONBLOCK);
	char junk[4096] = {};
	while (send(s, junk, sizeof junk, MSG_NOSIGNAL) > 0) {
	}
	return s;
}

/* count lingering sockets (and extra, if >= 0) in one message on sock;
 * our copies are closed after (the message holds them): 0 or errno */
int sendLingering(int sock, const sockaddr_in &at, int count, int extra)
{
	std::vector<int> fds;
	for (int i = 0; i < count; i++) {
		int s = lingering(at);
		if (s < 0)
			return errno;
		fds.push_back(s);
	}
	if (extra >= 0)
		fds.push_back(extra);
	int err = ibemu::test::sendFds(sock, fds, MSG_NOSIGNAL);
	/* ours go at once (a reset, no wait) when the message did not take them */
	linger now{ 1, 0 };
	for (size_t i = 0; i < size_t(count); i++) {
		if (err)
			setsockopt(fds[i], SOL_SOCKET, SO_LINGER, &now, sizeof now);
		close(fds[i]);
	}
	return err;
}

int getContext(int fd, uint32_t nspares, ibemu_spare spare)
{
	struct {
		ib_uverbs_get_context core;
		ibemu_get_context_req drv;
	} req{};
	req.drv = { IBEMU_UVERBS_MAGIC, IBEMU_UVERBS_VERSION, nspares, -1, {} };
	req.drv.spares[0] = spare;
	struct {
		ib_uverbs_get_context_resp core;
		ibemu_get_context_resp drv;
	} resp{};
	return cmd(fd, CMD_GET_CONTEXT, req, &resp, sizeof resp);
}

uint32_t round16(uint32_t n)
{
	return (n + 15) & ~15u;
}

/* a QP whose doorbell carries the sockets before the device takes it */
int doorbell(const char *dev, int count, int extra)
{
	sockaddr_in at;
	int l = lingerListener(at);
	int fd = open(dev, O_RDWR | O_CLOEXEC);
	if (l < 0 || fd < 0) {
		perror("doorbell: setup");
		return 2;
	}
	int err = getContext(fd, 0, {});
	report("get_context", err);
	ib_uverbs_alloc_pd_resp pd{};
	if (!err)
		report("alloc_pd", err = cmd(fd, CMD_ALLOC_PD, ib_uverbs_alloc_pd{}, &pd, sizeof pd));
	ib_uverbs_create_cq_resp cq{};
	if (!err) {
		ib_uverbs_create_cq c{};
		c.cqe = 4;
		c.comp_channel = -1;
		report("create_cq", err = cmd(fd, CMD_CREATE_CQ, c, &cq, sizeof cq));
	}
	ib_uverbs_create_qp_resp qp{};
	if (!err) {
		ib_uverbs_create_qp q{};
		q.pd_handle = pd.pd_handle;
		q.send_cq_handle = q.recv_cq_handle = cq.cq_handle;
		q.max_send_wr = q.max_recv_wr = 4;
		q.max_send_sge = q.max_recv_sge = 1;
		q.qp_type = 2; /* IB_QPT_RC */
		report("create_qp", err = cmd(fd, CMD_CREATE_QP, q, &qp, sizeof qp));
	}
	if (err)
		return 1;
	int bell[2];
	socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, bell);
	report("queued on the doorbell", sendLingering(bell[1], at, count, extra));
	ibemu_attach_qp_ring a{};
	a.qp_handle = qp.qp_handle;
	a.doorbell_fd = bell[0];
	a.sq_entries = ibemu_cq_ring_entries(qp.max_send_wr);
	a.sq_stride = round16(uint32_t(sizeof(ibemu_send_wqe)) + 16 * qp.max_send_sge + qp.max_inline_data);
	a.rq_entries = ibemu_cq_ring_entries(qp.max_recv_wr);
	a.rq_stride = round16(uint32_t(sizeof(ibemu_recv_wqe)) + 16 * qp.max_recv_sge);
	int ring = memfd_create("ring", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (ring < 0 ||
	    ftruncate(ring, off_t(ibemu_qp_ring_bytes(a.sq_entries, a.sq_stride, a.rq_entries, a.rq_stride))) != 0 ||
	    fcntl(ring, F_ADD_SEALS, F_SEAL_SHRINK) != 0)
		return 2;
	a.ring_fd = ring;
	report("attach_qp_ring", err = cmd(fd, IBEMU_CMD_ATTACH_QP_RING, a));
	/* the device's from here on: it may refuse more */
	report("sent on the doorbell after", sendLingering(bell[1], at, 4, -1));
	printf("holding %d\n", int(getpid()));
	fflush(stdout);
	char line[16];
	while (fgets(line, sizeof line, stdin)) {
	}
	return err ? 1 : 0;
}

/* a spare whose kept end holds the sockets */
int spare(const char *dev, int count, int extra)
{
	sockaddr_in at;
	int l = lingerListener(at);
	int fd = open(dev, O_RDWR | O_CLOEXEC);
	int sv[2];
	if (l < 0 || fd < 0 || socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) {
		perror("spare: setup");
		return 2;
	}
	/* from the program's end: they wait in the one the device keeps */
	report("queued in the spare", sendLingering(sv[0], at, count, extra));
	int err = getContext(fd, 1, { sv[0], sv[1] });
	report("get_context with the spare", err);
	if (!err) /* as the provider does: the device holds that end now */
		close(sv[1]);
	close(fd); /* the device releases the file, and the spare */
	printf("holding %d\n", int(getpid()));
	fflush(stdout);
	char line[16];
	while (fgets(line, sizeof line, stdin)) {
	}
	return 0;
}

/* a hand-over of nothing but sockets at the door */
int door(const char *path, int count)
{
	sockaddr_in at;
	int l = lingerListener(at);
	int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	sockaddr_un to{};
	to.sun_family = AF_UNIX;
	snprintf(to.sun_path, sizeof to.sun_path, "%s", path);
	if (l < 0 || s < 0 || connect(s, reinterpret_cast<sockaddr *>(&to), sizeof to) != 0) {
		perror("door: setup");
		return 2;
	}
	/* half in what the door takes for a hand-over (refused), half in a
	 * message after it, still queued when the door is done with it */
	report("sent to the door", sendLingering(s, at, count / 2, -1));
	report("sent after", sendLingering(s, at, count - count / 2, -1));
	printf("holding %d\n", int(getpid()));
	fflush(stdout);
	char line[16];
	while (fgets(line, sizeof line, stdin)) {
	}
	return 0;
}

} /* namespace */

int main(int argc, char **argv)
{
	std::string mode = argc > 1 ? argv[1] : "";
	if ((mode != "doorbell" && mode != "spare" && mode != "door") || argc < 4 || argc > 5) {
		fprintf(stderr, "usage: fd_hostile doorbell|spare /dev/infiniband/uverbsN COUNT [FILE]\n"
				"       fd_hostile door SOCKET COUNT\n");
		return 2;
	}
	int count = atoi(argv[3]);
	if (mode == "door")
		return door(argv[2], count);
	int extra = -1;
	if (argc == 5 && (extra = open(argv[4], O_RDONLY | O_CLOEXEC)) < 0) {
		perror(argv[4]);
		return 2;
	}
	return mode == "doorbell" ? doorbell(argv[2], count, extra) : spare(argv[2], count, extra);
}
