// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// The io thread's SessionPump driving a real libfuse session whose
// "/dev/fuse" is one end of a SOCK_SEQPACKET socket pair (libfuse's custom
// I/O): the test plays the kernel on the other end, so the requests, their
// replies and the work each one queues can be seen in order.
#define FUSE_USE_VERSION 35
#include "cuse_dev/session_pump.h"
#include "emu/work_queue.h"

#include <boost/asio/io_context.hpp>
#include <catch2/catch.hpp>
#include <fuse_lowlevel.h>
#include <linux/fuse.h>

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <string>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>
#include <vector>

using namespace ibemu;

namespace {

using Log = std::vector<std::string>;

/* What the session's handlers see, and what they do to the pump */
struct Fs {
	boost::asio::io_context *io = nullptr;
	cuse_dev::SessionPump *pump = nullptr;
	Log log;
	uint64_t stopAt = UINT64_MAX; /* a read at this offset stops the pump */
};

/* A READ at offset K logs "rK" and queues "wK", which queues "nK": a MAD's
 * delivery and the poll notification it leads to. */
void fsRead(fuse_req_t req, fuse_ino_t, size_t, off_t off, fuse_file_info *)
{
	Fs &fs = *static_cast<Fs *>(fuse_req_userdata(req));
	const std::string k = std::to_string(off);
	fs.log.push_back("r" + k);
	emu::queueWork(*fs.io, [&fs, k] {
		fs.log.push_back("w" + k);
		emu::queueWork(*fs.io, [&fs, k] { fs.log.push_back("n" + k); });
	});
	if (uint64_t(off) == fs.stopAt)
		fs.pump->stop();
	fuse_reply_buf(req, k.data(), k.size());
}

/* the kernel's end closed: what /dev/fuse says once unmounted */
ssize_t ioRead(int fd, void *buf, size_t len, void *)
{
	ssize_t n = ::read(fd, buf, len);
	if (n == 0) {
		errno = ENODEV;
		return -1;
	}
	return n;
}

ssize_t ioWritev(int fd, iovec *iov, int count, void *)
{
	return ::writev(fd, iov, count);
}

/* One socket pair: the session's end (the session closes it) and the
 * kernel's (the test's) */
struct Wire {
	int fd[2] = { -1, -1 };
	Wire() { REQUIRE(socketpair(AF_UNIX, SOCK_SEQPACKET, 0, fd) == 0); }
	~Wire()
	{
		if (fd[1] >= 0)
			close(fd[1]);
	}
	int session() const { return fd[0]; }
	int kernel() const { return fd[1]; }
	void kernelGoes()
	{
		close(fd[1]);
		fd[1] = -1;
	}
};

template <typename Arg> void send(const Wire &w, uint32_t opcode, uint64_t unique, const Arg &arg)
{
	fuse_in_header in{};
	in.len = sizeof in + sizeof arg;
	in.opcode = opcode;
	in.unique = unique;
	in.nodeid = 2;
	iovec iov[2] = { { &in, sizeof in }, { const_cast<Arg *>(&arg), sizeof arg } };
	REQUIRE(writev(w.kernel(), iov, 2) == ssize_t(in.len));
}

void sendInit(const Wire &w)
{
	fuse_init_in arg{};
	arg.major = FUSE_KERNEL_VERSION;
	arg.minor = 31; /* before the extended INIT: the short layout */
	send(w, FUSE_INIT, 1, arg);
}

void sendRead(const Wire &w, uint64_t unique, uint64_t offset)
{
	fuse_read_in arg{};
	arg.offset = offset;
	arg.size = 64;
	send(w, FUSE_READ, unique, arg);
}

/* reads at offsets first..last, read K with the unique base + K */
void sendReads(const Wire &w, uint64_t base, uint64_t first, uint64_t last)
{
	for (uint64_t k = first; k <= last; k++)
		sendRead(w, base + k, k);
}

/* the reads a log shows served */
size_t readsServed(const Log &log)
{
	size_t n = 0;
	for (auto &e : log)
		n += e[0] == 'r';
	return n;
}

/* the replies the session wrote, as (unique, error, payload) */
struct Reply {
	uint64_t unique;
	int32_t error;
	std::string data;
};
std::vector<Reply> replies(const Wire &w)
{
	std::vector<Reply> out;
	char b[4096];
	for (;;) {
		ssize_t n = recv(w.kernel(), b, sizeof b, MSG_DONTWAIT);
		if (n < ssize_t(sizeof(fuse_out_header)))
			return out;
		fuse_out_header h;
		memcpy(&h, b, sizeof h);
		out.push_back({ h.unique, h.error, std::string(b + sizeof h, size_t(n) - sizeof h) });
	}
}

/* A session on the wire's session end, its pump on io */
struct Session {
	Fs fs;
	fuse_session *se = nullptr;
	std::unique_ptr<cuse_dev::SessionPump> pump;
	Session(boost::asio::io_context &io, const Wire &w, unsigned spinUs = 0)
	{
		static const fuse_lowlevel_ops ops = [] {
			fuse_lowlevel_ops o{};
			o.read = fsRead;
			return o;
		}();
		static const fuse_custom_io io_hooks = { ioWritev, ioRead, nullptr, nullptr };
		const char *argv[] = { "unit" };
		fuse_args args = FUSE_ARGS_INIT(1, const_cast<char **>(argv));
		se = fuse_session_new(&args, &ops, sizeof ops, &fs);
		fuse_opt_free_args(&args);
		REQUIRE(se);
		REQUIRE(fuse_session_custom_io(se, &io_hooks, w.session()) == 0);
		fs.io = &io;
		pump = std::make_unique<cuse_dev::SessionPump>(io, se, spinUs);
		fs.pump = pump.get();
	}
	~Session()
	{
		pump.reset();
		fuse_session_destroy(se); /* closes the session's end */
	}
};

/* The order when each request was a turn of the io_context, for reads
 * first..last that wait together: each read's delivery before the next
 * read, its notification after it (r1 w1 r2 n1 w2 ... rL nL-1 wL nL). */
Log oneTurnEach(uint64_t first, uint64_t last)
{
	Log out;
	for (uint64_t k = first; k <= last; k++) {
		out.push_back("r" + std::to_string(k));
		if (k > first)
			out.push_back("n" + std::to_string(k - 1));
		out.push_back("w" + std::to_string(k));
	}
	if (last >= first)
		out.push_back("n" + std::to_string(last));
	return out;
}

/* turns the loop until `done` holds (a bound on the turns, not a time) */
template <typename Done> bool turnUntil(boost::asio::io_context &io, Done done)
{
	for (int i = 0; i < 10000 && !done(); i++)
		io.run_one_for(std::chrono::milliseconds(10));
	return done();
}

} /* namespace */

TEST_CASE("the pump serves waiting requests with their work in the order posting gave", "[session-pump]")
{
	boost::asio::io_context io;
	Wire w;
	Session s(io, w);
	sendInit(w);
	sendReads(w, 10, 1, 3);
	s.pump->start();
	REQUIRE(turnUntil(io, [&] { return s.fs.log.size() == 9; }));
	/* as when each request was a turn of its own: a request's delivery
	 * before the next request, the notification after it */
	CHECK(s.fs.log == Log{ "r1", "w1", "r2", "n1", "w2", "r3", "n2", "w3", "n3" });
	auto r = replies(w);
	REQUIRE(r.size() == 4);
	CHECK(r[0].unique == 1); /* INIT */
	CHECK(r[0].error == 0);
	for (uint64_t k = 1; k <= 3; k++) {
		CHECK(r[k].unique == 10 + k);
		CHECK(r[k].data == std::to_string(k));
	}
}

TEST_CASE("a turn of the pump serves at most 16 requests, and the rest keep their order", "[session-pump]")
{
	boost::asio::io_context io;
	Wire w;
	Session s(io, w);
	sendInit(w);
	constexpr uint64_t kMany = 40;
	sendReads(w, 100, 1, kMany);
	s.pump->start();
	REQUIRE(io.run_one() == 1); /* the first turn: INIT and some reads */
	const size_t served = readsServed(s.fs.log);
	CHECK(served <= 15); /* 16 requests, INIT among them, or fewer if slow */
	REQUIRE(turnUntil(io, [&] { return s.fs.log.size() == 3 * kMany; }));
	/* wherever the turns ended */
	CHECK(s.fs.log == oneTurnEach(1, kMany));
	CHECK(replies(w).size() == kMany + 1);
}

TEST_CASE("requests that come after a pause keep the order, asleep or in the spin window", "[session-pump]")
{
	const unsigned spinUs = GENERATE(0u, 10000000u); /* blocks at once; spins all along */
	boost::asio::io_context io;
	Wire w;
	Session s(io, w, spinUs);
	sendInit(w);
	sendReads(w, 200, 1, 5);
	s.pump->start();
	REQUIRE(turnUntil(io, [&] { return s.fs.log.size() == 15; }));
	CHECK(s.fs.log.back() == "n5"); /* nothing came: the notification went out */
	sendReads(w, 200, 6, 10);
	REQUIRE(turnUntil(io, [&] { return s.fs.log.size() == 30; }));
	Log expect = oneTurnEach(1, 5), after = oneTurnEach(6, 10);
	expect.insert(expect.end(), after.begin(), after.end());
	CHECK(s.fs.log == expect);
	CHECK(replies(w).size() == 11);
}

TEST_CASE("a request that stops the pump ends its turn: the requests behind it stay unread", "[session-pump]")
{
	boost::asio::io_context io;
	Wire w;
	Session s(io, w);
	s.fs.stopAt = 2;
	sendInit(w);
	sendReads(w, 20, 1, 4);
	s.pump->start();
	REQUIRE(turnUntil(io, [&] { return s.fs.log.size() >= 4; }));
	io.poll(); /* whatever is left to run */
	/* r2 stopped the pump; the work it queued still runs, nothing is read */
	CHECK(s.fs.log == Log{ "r1", "w1", "r2", "n1", "w2", "n2" });
	CHECK(replies(w).size() == 3);
	/* the next request is still there, whole, for whoever reads next */
	char b[256];
	ssize_t n = recv(w.session(), b, sizeof b, MSG_DONTWAIT);
	REQUIRE(n == ssize_t(sizeof(fuse_in_header) + sizeof(fuse_read_in)));
	fuse_in_header h;
	memcpy(&h, b, sizeof h);
	CHECK(h.unique == 23);
}

TEST_CASE("a pump stopped between turns posts the work its next turn would have run", "[session-pump]")
{
	boost::asio::io_context io;
	Wire w;
	Session s(io, w);
	sendInit(w);
	sendReads(w, 300, 1, 20);
	s.pump->start();
	REQUIRE(io.run_one() == 1); /* one turn: at most 16 requests */
	const size_t served = readsServed(s.fs.log);
	REQUIRE(served <= 15); /* (none, if INIT alone took the turn's time) */
	s.pump->stop();
	io.poll();
	/* every piece of work of the requests served ran, once, in order */
	CHECK(s.fs.log == oneTurnEach(1, served));
	CHECK(replies(w).size() == served + 1);
}

TEST_CASE("the pump ends when its session's device closes", "[session-pump]")
{
	boost::asio::io_context io;
	Wire w;
	Session s(io, w);
	sendInit(w);
	sendRead(w, 31, 1);
	s.pump->start();
	REQUIRE(turnUntil(io, [&] { return s.fs.log.size() == 3; }));
	CHECK(replies(w).size() == 2);
	w.kernelGoes();
	/* the read that finds the end ends the pump's loop: it waits no more,
	 * and the io_context runs out of work */
	REQUIRE(turnUntil(io, [&] { return io.stopped(); }));
	CHECK(s.fs.log == Log{ "r1", "w1", "n1" });
	CHECK(fuse_session_exited(s.se));
}
