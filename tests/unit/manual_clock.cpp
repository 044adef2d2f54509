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

/* a timer is never waited for: the reactor checks its timers each turn */
Clock::duration ClockWaitTraits::to_wait_duration(const Clock::duration &)
{
	return Clock::duration::zero();
}

Clock::duration ClockWaitTraits::to_wait_duration(const Clock::time_point &)
{
	return Clock::duration::zero();
}

} /* namespace ibemu::emu */

namespace ibemu::test {

void ManualClock::advance(emu::Clock::duration d) noexcept
{
	current += d;
}

} /* namespace ibemu::test */
