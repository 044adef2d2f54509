// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// Which waiting handshake a new connection to the peer port displaces
// (tools/peer/peer_links.cpp). Pure: the connections waiting in, an index
// out.
//
// A connection accepted on the peer port waits in the handshake table
// until it authenticates; a real peer sends its hello at once and its
// AUTH a round trip later. The table is bounded in all and per source
// address, and a new connection is never turned away for want of room:
// it displaces one already waiting. A stranger who keeps the table full
// then cannot keep a peer out, only race it: to close a peer's connection
// before it authenticates, it must reopen every connection older than
// the peer's within the peer's round trip.
//   - a source with perSource connections waiting: one of its own goes
//     (a source competes only with itself);
//   - a full table: one of all goes.
// Which one: the oldest that has not said hello, or when all have, the
// oldest. A hello that names a peer of ours is kept over silence, and a
// peer that said hello authenticates within a round trip, so the oldest
// is the likeliest stranger.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

namespace ibemu::tools {

struct HandshakeSlot {
	std::string_view source; /* the address it came from */
	bool helloRead = false; /* its hello named a peer of ours */
};

struct HandshakeLimits {
	size_t total = 32;
	size_t perSource = 4;
};

inline constexpr size_t kNoDisplacement = SIZE_MAX;

/* slots: the connections waiting, oldest first. The index of the one to
 * close so that a new connection from `source` fits, or kNoDisplacement
 * when it fits as things are. */
size_t handshakeToDisplace(std::span<const HandshakeSlot> slots, std::string_view source,
			   const HandshakeLimits &limits);

} /* namespace ibemu::tools */
