// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// Telling a request apart from the caller's whole read() or write()
// (cuse_dev/caller.h): /proc/TID/syscall of a thread blocked in a call,
// and the one continuation a file keeps.
#include "cuse_dev/caller.h"

#include <catch2/catch.hpp>

#include <atomic>
#include <sys/syscall.h>
#include <thread>
#include <unistd.h>
#include <vector>

using namespace ibemu::cuse_dev;

TEST_CASE("caller: the whole call of a thread blocked in read()", "[caller]")
{
	int p[2];
	REQUIRE(pipe(p) == 0);
	std::atomic<pid_t> tid{ 0 };
	char buf[4096];
	std::thread reader([&] {
		tid = static_cast<pid_t>(syscall(SYS_gettid));
		CHECK(read(p[0], buf, sizeof buf) == 1);
	});
	while (!tid)
		std::this_thread::yield();
	/* until it sleeps in read(), the thread reads "running" and the call
	 * cannot be told: callerIo() says so, and leaves io alone */
	CallerIo io{ 0, 0, 7 };
	int rc = -kCallerRunning;
	for (int i = 0; i < 1000 && rc == -kCallerRunning; i++) {
		rc = callerIo(tid, SYS_read, 100, io, kAgainLooks);
		if (rc == -kCallerRunning)
			CHECK(io.count == 7);
	}
	REQUIRE(rc == 0);
	CHECK(io.nr == SYS_read);
	CHECK(io.count == sizeof buf);
	CHECK(io.addr == reinterpret_cast<uintptr_t>(buf));
	CHECK(callerIo(tid, SYS_write, 100, io, kFirstLooks) == 0);
	CHECK(io.count == 100); /* not the call it is in */
	CHECK(callerIo(tid, SYS_read, sizeof buf, io, kFirstLooks) == 0);
	CHECK(io.count == sizeof buf); /* nothing more to come */
	CHECK(io.addr == 0);

	/* a continuation of that read, and one of another call */
	Continuation rest;
	rest.tid = tid;
	rest.io = CallerIo{ SYS_read, reinterpret_cast<uintptr_t>(buf), sizeof buf };
	rest.left = 10;
	CHECK(rest.continues(tid, kFirstLooks) == 1);
	CHECK(rest.left == 10);
	rest.io.count = sizeof buf + 1;
	CHECK(rest.continues(tid, kFirstLooks) == 0);
	CHECK(rest.left == 0); /* dropped */
	REQUIRE(write(p[1], "x", 1) == 1);
	reader.join();
	close(p[0]);
	close(p[1]);
}

TEST_CASE("caller: a thread that never sleeps is running, not guessed at", "[caller]")
{
	std::atomic<pid_t> tid{ 0 };
	std::atomic<bool> stop{ false };
	std::thread spinner([&] {
		tid = static_cast<pid_t>(syscall(SYS_gettid));
		while (!stop)
			; /* in no system call, and never asleep */
	});
	while (!tid)
		std::this_thread::yield();
	long nr = -1;
	uint64_t args[6];
	CHECK(callerSyscall(tid, nr, args, kAgainLooks) == -kCallerRunning);
	CallerIo io{ 0, 0, 7 };
	CHECK(callerIo(tid, SYS_write, 100, io, kAgainLooks) == -kCallerRunning);
	CHECK(io.count == 7);
	Continuation rest;
	rest.tid = tid;
	rest.io = CallerIo{ SYS_write, 0x1000, 300000 };
	rest.left = 1000;
	CHECK(rest.continues(tid, kAgainLooks) == -kCallerRunning);
	CHECK(rest.left == 1000); /* kept: the next look may tell */
	std::vector<uint8_t> storage;
	const uint8_t *data = nullptr;
	char buf[100]{};
	CHECK(takeWrite(tid, buf, sizeof buf, 1 << 20, rest, storage, data, io, kAgainLooks) == -kCallerRunning);
	stop = true;
	spinner.join();
}

TEST_CASE("caller: a file's continuation outlives other threads' whole writes", "[caller]")
{
	Continuation rest;
	CallerIo split{ SYS_write, 0x1000, 300000 };
	expectRest(rest, 11, split, 126976);
	CHECK(rest.tid == 11);
	CHECK(rest.left == 300000 - 126976);

	CallerIo whole{ SYS_write, 0x9000, 24 };
	expectRest(rest, 12, whole, 24); /* another thread's command, not split */
	CHECK(rest.tid == 11);
	CHECK(rest.left == 300000 - 126976);

	expectRest(rest, 11, whole, 24); /* thread 11 has moved on to a whole write */
	CHECK(rest.left == 0);

	expectRest(rest, 11, split, 126976);
	expectRest(rest, 12, split, 126976); /* a second split write takes its place */
	CHECK(rest.tid == 12);
}
