// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// The emu::Clock of the test binaries: it stands still until a test moves
// it. manual_clock.cpp defines emu::Clock::now(), which replaces the steady
// clock of emu/clock.cpp in every binary that links it (a link seam), and
// takes Asio's timerfd away (see there).
#pragma once

#include "emu/clock.h"

namespace ibemu::test {

struct ManualClock {
	/* make `d` pass at once (negative: go back, for the fuzz targets that
	 * start every input at the same time) */
	static void advance(emu::Clock::duration d) noexcept;
};

} /* namespace ibemu::test */
