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
	 * cannot be told: the request is then taken as all there is */
	CallerIo io;
	for (int i = 0; i < 1000 && io.count != sizeof buf; i++)
		io = callerIo(tid, SYS_read, 100);
	CHECK(io.nr == SYS_read);
	CHECK(io.count == sizeof buf);
	CHECK(io.addr == reinterpret_cast<uintptr_t>(buf));
	CHECK(callerIo(tid, SYS_write, 100).count == 100); /* not the call it is in */
	CHECK(callerIo(tid, SYS_read, sizeof buf).count == sizeof buf); /* nothing more to come */
	REQUIRE(write(p[1], "x", 1) == 1);
	reader.join();
	close(p[0]);
	close(p[1]);
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
