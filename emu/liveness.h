// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// Whether an object still lives, for a handler that may run after it went:
// a timer's or a post()'s handler holds its owner's weak() token and does
// nothing once token.expired() (the owner's Liveness ended with it).
#pragma once

#include <memory>

namespace ibemu::emu {

class Liveness {
public:
	class Weak {
	public:
		bool expired() const { return p_.expired(); }

	private:
		friend class Liveness;
		explicit Weak(const std::shared_ptr<char> &p) : p_(p) {}
		std::weak_ptr<char> p_;
	};

	Liveness() = default;
	Liveness(const Liveness &) = delete;
	Liveness &operator=(const Liveness &) = delete;

	Weak weak() const { return Weak(p_); }
	/* Ends it before the owner's destructor does. */
	void end() { p_.reset(); }

private:
	std::shared_ptr<char> p_ = std::make_shared<char>();
};

} /* namespace ibemu::emu */
