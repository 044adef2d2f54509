// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// Requests handled again a moment later (cuse_dev/restarts.h): the
// attempts counted, the bound on what waiting requests hold, shutdown.
// (Requests with a FUSE request behind them are covered end to end.)
#include "cuse_dev/restarts.h"

#include <catch2/catch.hpp>

#include <chrono>
#include <thread>
#include <vector>

using namespace ibemu::cuse_dev;

TEST_CASE("restarts: again() runs later with the next attempt's number", "[restarts]")
{
	boost::asio::io_context io;
	Restarts r(io);
	std::vector<unsigned> ran;
	REQUIRE(r.later(nullptr, 0, 0, [&](unsigned n, int err) { ran.push_back(err ? 1000 + n : n); }));
	REQUIRE(r.later(nullptr, 5, 0, [&](unsigned n, int err) { ran.push_back(err ? 1000 + n : n); }));
	CHECK(ran.empty()); /* not before the io thread runs it */
	io.run();
	CHECK(ran == std::vector<unsigned>{ 1, 6 });

	/* the last attempt is refused: the handler answers the request */
	CHECK_FALSE(r.later(nullptr, Restarts::kAttempts, 0, [&](unsigned, int) { ran.push_back(0); }));
	io.restart();
	io.run();
	CHECK(ran.size() == 2);
}

TEST_CASE("restarts: again() may ask for another attempt", "[restarts]")
{
	boost::asio::io_context io;
	Restarts r(io);
	unsigned last = 0;
	Restarts::Again again = [&](unsigned n, int err) {
		CHECK(err == 0);
		last = n;
		if (n < 3)
			CHECK(r.later(nullptr, n, 10, again));
	};
	REQUIRE(r.later(nullptr, 0, 10, again));
	io.run();
	CHECK(last == 3);
}

TEST_CASE("restarts: what waiting requests hold is bounded", "[restarts]")
{
	boost::asio::io_context io;
	Restarts r(io);
	int ran = 0;
	REQUIRE(r.later(nullptr, 0, Restarts::kMaxBytes - 1, [&](unsigned, int err) { ran += err ? 1000 : 1; }));
	CHECK_FALSE(r.later(nullptr, 0, 2, [&](unsigned, int err) { ran += err ? 1000 : 1; }));
	REQUIRE(r.later(nullptr, 0, 1, [&](unsigned, int err) { ran += err ? 1000 : 1; }));
	io.run();
	CHECK(ran == 2);
	/* given back when they ran */
	CHECK(r.later(nullptr, 0, Restarts::kMaxBytes, [&](unsigned, int err) { ran += err ? 1000 : 1; }));
	io.restart();
	io.run();
	CHECK(ran == 3);
}

TEST_CASE("restarts: shutdown ends what waits with ENXIO, and what comes after", "[restarts]")
{
	boost::asio::io_context io;
	std::vector<int> errs;
	{
		Restarts r(io);
		REQUIRE(r.later(nullptr, 0, 100, [&](unsigned, int err) { errs.push_back(err); }));
		REQUIRE(r.later(nullptr, 3, 0, [&](unsigned, int err) { errs.push_back(err); }));
		r.shutdown();
		CHECK(errs == std::vector<int>{ ENXIO, ENXIO });
		CHECK(r.later(nullptr, 0, 0, [&](unsigned, int err) { errs.push_back(err); }));
		CHECK(errs == std::vector<int>{ ENXIO, ENXIO, ENXIO }); /* at once */
	}
	io.run(); /* the cancelled waits find nothing */
	CHECK(errs.size() == 3);
}

TEST_CASE("restarts: an entry dropped after its wait expired is not run", "[restarts]")
{
	/* Both waits expire together, so both handlers are queued before
	 * either runs; the first one's again() ends the second entry, whose
	 * wait's handler must then find nothing (a cancelled wait that had expired
	 * already still runs its handler, with success). */
	boost::asio::io_context io;
	Restarts r(io);
	int ran = 0;
	REQUIRE(r.later(nullptr, 0, 0, [&](unsigned, int) {
		ran++;
		r.shutdown();
	}));
	REQUIRE(r.later(nullptr, 0, 0, [&](unsigned, int err) { ran += err ? 1000 : 1; }));
	std::this_thread::sleep_for(std::chrono::milliseconds(5));
	io.run();
	CHECK(ran == 1001); /* the first ran, the second ended ENXIO, once */
}
