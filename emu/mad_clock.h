// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// The clock behind MAD timeouts, retries and RMPP windows.
//
// In the daemon it is the steady clock. Tests freeze it and move it by hand,
// so that "200 ms" passes exactly when a test says so, never because the
// machine was slow: advance() then polling the io_context runs what became
// due. (meson.build builds everything with BOOST_ASIO_DISABLE_EPOLL for this:
// see there.)
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
		if (frozen_)
			return frozenAt_;
		return time_point(std::chrono::steady_clock::now().time_since_epoch());
	}
	/* Tests only: stop the clock where it is... */
	static void freeze() noexcept
	{
		if (!frozen_)
			frozenAt_ = now();
		frozen_ = true;
	}
	/* ...and make `d` pass at once. */
	static void advance(duration d) noexcept { frozenAt_ += d; }

private:
	static inline bool frozen_ = false;
	static inline time_point frozenAt_{};
};

using MadTimer = boost::asio::basic_waitable_timer<MadClock>;

} /* namespace ibemu::emu */
