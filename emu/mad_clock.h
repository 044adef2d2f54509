// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// The clock behind MAD timeouts, retries and RMPP windows.
//
// It is the steady clock plus an offset that only tests move, so a test can
// let "200 ms" pass by advancing the clock and polling the io_context, with
// no sleeping and no dependence on the machine's speed. (meson.build builds
// everything with BOOST_ASIO_DISABLE_EPOLL for this: see there.)
#pragma once

#include <boost/asio/basic_waitable_timer.hpp>

#include <chrono>

namespace ibemu::emu {

struct MadClock {
	using duration = std::chrono::steady_clock::duration;
	using rep = duration::rep;
	using period = duration::period;
	using time_point = std::chrono::time_point<MadClock>;
	static constexpr bool is_steady = true;

	static time_point now() noexcept
	{
		return time_point(std::chrono::steady_clock::now().time_since_epoch() + offset_);
	}
	/* Tests only: make `d` pass at once. */
	static void advance(duration d) noexcept { offset_ += d; }

private:
	static inline duration offset_{};
};

using MadTimer = boost::asio::basic_waitable_timer<MadClock>;

} /* namespace ibemu::emu */
