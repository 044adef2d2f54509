// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
#include "tests/unit/manual_clock.h"

namespace {

/* an hour after the epoch: no timer ever computes a time before zero */
ibemu::emu::Clock::time_point current{ std::chrono::hours(1) };

} /* namespace */

namespace ibemu::emu {

Clock::time_point Clock::now() noexcept
{
	return current;
}

} /* namespace ibemu::emu */

namespace ibemu::test {

void ManualClock::advance(emu::Clock::duration d) noexcept
{
	current += d;
}

} /* namespace ibemu::test */
