// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// The peer port's handshake table: who makes room for a new connection
// (tools/peer/handshake_slots.h).
#include "tools/peer/handshake_slots.h"

#include <algorithm>

namespace ibemu::tools {

namespace {

/* The oldest of the slots `among` picks that has not said hello, else
 * the oldest of them; kNoDisplacement when it picks none */
template <typename Pred>
size_t oldest(std::span<const HandshakeSlot> slots, Pred among)
{
	size_t first = kNoDisplacement;
	for (size_t i = 0; i < slots.size(); i++) {
		if (!among(slots[i]))
			continue;
		if (!slots[i].helloRead)
			return i;
		if (first == kNoDisplacement)
			first = i;
	}
	return first;
}

} /* namespace */

size_t handshakeToDisplace(std::span<const HandshakeSlot> slots, std::string_view source,
			   const HandshakeLimits &limits)
{
	const auto fromSource = [&](const HandshakeSlot &s) { return s.source == source; };
	if (size_t(std::count_if(slots.begin(), slots.end(), fromSource)) >= std::max<size_t>(limits.perSource, 1))
		return oldest(slots, fromSource);
	if (slots.size() >= std::max<size_t>(limits.total, 1))
		return oldest(slots, [](const HandshakeSlot &) { return true; });
	return kNoDisplacement;
}

} /* namespace ibemu::tools */
