// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// The pieces of the FUSE ring transport that need no kernel FUSE: the
// state lock around every handler, the work a request leaves, and the
// INIT negotiation as the kernel would see it on /dev/fuse (here a pipe).
// The ring itself is exercised end to end by e2e-fuse-uring.
#include "cuse_dev/fuse_uring.h"
#include "cuse_dev/fuse_uring_abi.h"
#include "emu/work_queue.h"
#include "fabric/state_lock.h"

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <catch2/catch.hpp>
#include <linux/fuse.h>

#include <chrono>
#include <cstring>
#include <string>
#include <thread>
#include <unistd.h>
#include <vector>

using namespace ibemu;

TEST_CASE("every io_context handler runs under the state lock", "[fuse-uring]")
{
	boost::asio::io_context io;
	bool held = false, heldElsewhere = true;
	REQUIRE_FALSE(fabric::StateLock::held());
	boost::asio::post(io, [&] {
		held = fabric::StateLock::held();
		std::thread([&] { heldElsewhere = fabric::StateLock::held(); }).join();
	});
	io.run();
	CHECK(held);
	CHECK_FALSE(heldElsewhere); /* held by the io thread, for it alone */
	CHECK_FALSE(fabric::StateLock::held());
}

TEST_CASE("the state lock is recursive and can be given up for a while", "[fuse-uring]")
{
	{
		fabric::StateGuard a;
		fabric::StateGuard b;
		CHECK(fabric::StateLock::held());
		{
			fabric::StateUnlocked u;
			CHECK_FALSE(fabric::StateLock::held());
			bool taken = false;
			std::thread([&] {
				fabric::StateGuard g;
				taken = true;
			}).join();
			CHECK(taken);
		}
		CHECK(fabric::StateLock::held());
	}
	CHECK_FALSE(fabric::StateLock::held());
}

namespace {

/* a, which queues c when it runs, then b */
void queueTwoRounds(boost::asio::io_context &io, std::vector<std::string> &log)
{
	emu::queueWork(io, [&] {
		log.push_back("a");
		emu::queueWork(io, [&] { log.push_back("c"); });
	});
	emu::queueWork(io, [&] { log.push_back("b"); });
}

} /* namespace */

TEST_CASE("work queued while a request is served runs after it, in order, on the same thread", "[fuse-uring]")
{
	boost::asio::io_context io;
	std::vector<std::string> log;
	{
		emu::RequestWork work;
		queueTwoRounds(io, log);
		log.push_back("request");
	}
	CHECK(log == std::vector<std::string>{ "request", "a", "b", "c" });
	CHECK(io.poll() == 0); /* nothing went to the io_context */

	io.restart();
	emu::queueWork(io, [&] { log.push_back("posted"); });
	CHECK(log.size() == 4);
	CHECK(io.poll() == 1);
	CHECK(log.back() == "posted");
}

TEST_CASE("a pump's turn runs one round of work between requests and posts the rest in order", "[fuse-uring]")
{
	using Log = std::vector<std::string>;
	boost::asio::io_context io;
	Log log;
	{
		emu::RequestWork work(io);
		queueTwoRounds(io, log); /* what the first request leaves */
		work.runQueued();
		CHECK(log == Log{ "a", "b" });
		log.push_back("request 2");
		emu::queueWork(io, [&] { log.push_back("d"); });
		work.runQueued();
		CHECK(log == Log{ "a", "b", "request 2", "c", "d" });

		log.clear();
		queueTwoRounds(io, log); /* the turn's last request */
		work.postRest();
		boost::asio::post(io, [&] { log.push_back("next turn"); });
		emu::queueWork(io, [&] { log.push_back("left at exit"); });
	}
	CHECK(log.empty()); /* the destructor posted, ran nothing */
	CHECK(io.poll() == 5);
	/* c, queued by a outside the turn, goes behind the next turn */
	CHECK(log == Log{ "a", "b", "next turn", "left at exit", "c" });
}

namespace {

struct Pipe {
	int fd[2] = { -1, -1 };
	Pipe() { REQUIRE(pipe(fd) == 0); }
	~Pipe()
	{
		close(fd[0]);
		close(fd[1]);
	}
};

/* what the kernel sends: INIT, protocol 7.45, offering the ring or not */
std::vector<uint8_t> initRequest(uint64_t unique, bool offerRing)
{
	fuse_in_header in{};
	fuse_init_in arg{};
	in.len = sizeof in + sizeof arg;
	in.opcode = FUSE_INIT;
	in.unique = unique;
	arg.major = 7;
	arg.minor = 45;
	arg.flags = FUSE_INIT_EXT | FUSE_MAX_PAGES;
	arg.flags2 = offerRing ? cuse_dev::uring::kInitFlags2OverIoUring : 0;
	std::vector<uint8_t> b(sizeof in + sizeof arg);
	memcpy(b.data(), &in, sizeof in);
	memcpy(b.data() + sizeof in, &arg, sizeof arg);
	return b;
}

/* the kernel's INIT, as libfuse reads it through the read hook */
void kernelSendsInit(cuse_dev::FuseUring &ring, const Pipe &p, uint64_t unique, bool offerRing)
{
	auto req = initRequest(unique, offerRing);
	REQUIRE(write(p.fd[1], req.data(), req.size()) == static_cast<ssize_t>(req.size()));
	std::vector<uint8_t> buf(8192);
	CHECK(ring.read(p.fd[0], buf.data(), buf.size()) == static_cast<ssize_t>(req.size()));
}

/* libfuse's answer, through the writev hook; returns what reached the pipe */
fuse_init_out answerInit(cuse_dev::FuseUring &ring, int rd, int wr, uint64_t unique)
{
	fuse_out_header out{};
	fuse_init_out arg{};
	out.len = sizeof out + sizeof arg;
	out.unique = unique;
	arg.major = 7;
	arg.minor = 38;
	arg.flags = FUSE_INIT_EXT | FUSE_MAX_PAGES;
	arg.max_write = 1 << 20;
	arg.max_pages = 256;
	iovec iov[2] = { { &out, sizeof out }, { &arg, sizeof arg } };
	REQUIRE(ring.writev(wr, iov, 2) == static_cast<ssize_t>(sizeof out + sizeof arg));
	fuse_out_header gotOut{};
	fuse_init_out got{};
	REQUIRE(read(rd, &gotOut, sizeof gotOut) == static_cast<ssize_t>(sizeof gotOut));
	REQUIRE(read(rd, &got, sizeof got) == static_cast<ssize_t>(sizeof got));
	CHECK(gotOut.unique == unique);
	return got;
}

} /* namespace */

TEST_CASE("INIT asks for the ring only when the kernel offers it", "[fuse-uring]")
{
	Pipe toServer, toKernel;
	std::string why;
	/* the queue threads' commands go to a descriptor that is no FUSE
	 * device: the kernel (here: the pipe) refuses every entry */
	auto ring = cuse_dev::FuseUring::prepare(
		toKernel.fd[1], 2, [](const char *, size_t) {}, why);
	REQUIRE(ring);
	CHECK(why.empty());
	CHECK(ring->queues() >= 1);
	fabric::StateGuard g; /* as the io thread holds it */

	SECTION("offered: the reply asks for it, and a refused entry falls back")
	{
		kernelSendsInit(*ring, toServer, 41, true);
		fuse_init_out got = answerInit(*ring, toKernel.fd[0], toKernel.fd[1], 41);
		CHECK((got.flags & FUSE_INIT_EXT) != 0);
		CHECK((got.flags2 & cuse_dev::uring::kInitFlags2OverIoUring) != 0);
		CHECK(got.max_write == 1u << 20); /* the rest as libfuse said */
		CHECK(got.max_pages == 256);
		/* the queues register on the pipe, which refuses them */
		for (int i = 0; i < 2000 && ring->active(); i++) /* a bound, not a timing */
			std::this_thread::sleep_for(std::chrono::milliseconds(5));
		CHECK_FALSE(ring->active());
	}
	SECTION("not offered: the reply goes out as libfuse made it")
	{
		kernelSendsInit(*ring, toServer, 42, false);
		fuse_init_out got = answerInit(*ring, toKernel.fd[0], toKernel.fd[1], 42);
		CHECK((got.flags2 & cuse_dev::uring::kInitFlags2OverIoUring) == 0);
		CHECK_FALSE(ring->active());
	}
	SECTION("a reply to a request of /dev/fuse passes through unchanged")
	{
		fuse_out_header out{ sizeof(fuse_out_header) + 4, 0, 77 };
		char body[4] = { 'a', 'b', 'c', 'd' };
		iovec iov[2] = { { &out, sizeof out }, { body, sizeof body } };
		REQUIRE(ring->writev(toKernel.fd[1], iov, 2) == static_cast<ssize_t>(sizeof out + sizeof body));
		uint8_t got[sizeof out + sizeof body];
		REQUIRE(read(toKernel.fd[0], got, sizeof got) == static_cast<ssize_t>(sizeof got));
		CHECK(memcmp(got + sizeof out, body, sizeof body) == 0);
	}
	fabric::StateUnlocked u;
	ring->stop();
}
