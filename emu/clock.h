// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// The clock behind every emu timer: MAD timeouts and retries, RMPP windows,
// QP retransmission and RNR timers.
//
// Clock::now() is the steady clock (emu/clock.cpp). The test binaries link
// their own definition instead (tests/unit/manual_clock.cpp: a link seam),
// a clock that moves only when a test says so, so that "200 ms" passes
// exactly when a test says, never because the machine was slow. The
// daemon's code has no way to stop or move time.
#pragma once

#include <boost/asio/basic_waitable_timer.hpp>

#include <chrono>

namespace ibemu::emu {

struct Clock {
	using duration = std::chrono::steady_clock::duration;
	using rep = duration::rep;
	using period = duration::period;
	using time_point = std::chrono::time_point<Clock>;
	static constexpr bool is_steady = true;

	static time_point now() noexcept;
};

using Timer = boost::asio::basic_waitable_timer<Clock>;

} /* namespace ibemu::emu */
