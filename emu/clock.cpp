// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// Alone in its file on purpose: the test binaries define Clock::now() and
// ClockWaitTraits themselves, and the linker then never takes this object
// from the library.
#include "emu/clock.h"

namespace ibemu::emu {

Clock::time_point Clock::now() noexcept
{
	return time_point(std::chrono::steady_clock::now().time_since_epoch());
}

Clock::duration ClockWaitTraits::to_wait_duration(const Clock::duration &d)
{
	return d;
}

Clock::duration ClockWaitTraits::to_wait_duration(const Clock::time_point &t)
{
	const Clock::time_point now = Clock::now();
	return t > now ? t - now : Clock::duration::zero(); /* never overflows: both are after the epoch */
}

} /* namespace ibemu::emu */
