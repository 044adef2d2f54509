// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// Stand-in for <catch2/catch.hpp> when the unit-test helpers
// (tests/unit/*_helpers.cpp) are compiled into the fuzz targets.
//
// Catch2's REQUIRE needs a running test case (outside one it throws even
// when the condition holds), and a fuzz target has no test runner. Here a
// REQUIRE that holds does nothing and one that fails aborts with its text:
// the helpers only REQUIRE things about the harness' own setup, so a failure
// is a bug in the harness, reported as one. INFO is dropped.
//
// tests/fuzz/meson.build puts this directory on the include path of the
// fuzz targets only; the unit tests keep the real Catch2.
#pragma once

namespace ibemu::fuzz {
[[noreturn]] void requireFailed(const char *expr, const char *file, int line);
}

#define REQUIRE(...)                                                               \
	do {                                                                           \
		if (!(__VA_ARGS__))                                                        \
			::ibemu::fuzz::requireFailed(#__VA_ARGS__, __FILE__, __LINE__);        \
	} while (0)
#define INFO(...) \
	do {      \
	} while (0)
