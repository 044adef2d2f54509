// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// Alone in its file on purpose: the test binaries define Clock::now()
// themselves, and the linker then never takes this object from the library.
#include "emu/clock.h"

namespace ibemu::emu {

Clock::time_point Clock::now() noexcept
{
	return time_point(std::chrono::steady_clock::now().time_since_epoch());
}

} /* namespace ibemu::emu */
