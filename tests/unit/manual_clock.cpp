// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
#include "tests/unit/manual_clock.h"

#include <cerrno>
#include <sys/timerfd.h>

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

/* Asio's epoll reactor waits for its timers on a timerfd, which counts real
 * time and would fire late, or never, for a clock that only tests move.
 * When it has none it does what the select reactor does: it looks at the
 * timers on every turn and sleeps for what they ask. So the test binaries
 * have none: this definition stands in for the C library's (the reactor's
 * calls bind to the executable's own symbol first). */
extern "C" int timerfd_create(clockid_t, int) noexcept
{
	errno = ENOSYS;
	return -1;
}
