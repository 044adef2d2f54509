// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// PortCounters by name, as perfquery prints them: for setting a counter
// from outside (`ibemu counters set`, ibsim's PerformanceSet).
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

namespace ibemu::fabric {

struct PortCounters;

/* Sets the counter perfquery calls `name` (case-insensitive; "all" sets
 * every counter). The data and packet counters exist in both PortCounters
 * views: the 64-bit one takes the value, the 32-bit one saturates at its
 * maximum. Returns 0, -ENOENT for an unknown name, -ERANGE for a value
 * wider than the counter (for "all": than the narrowest). */
int setPortCounter(PortCounters &c, std::string_view name, uint64_t value);

/* The names setPortCounter() knows, in perfquery's order. */
std::vector<std::string_view> portCounterNames();

} /* namespace ibemu::fabric */
