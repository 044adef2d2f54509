// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// The peer port's handshake table (tools/peer/handshake_slots.h): a new
// connection always gets in, displacing a source's own oldest past its
// share, else the oldest silent one of a full table, a hello naming a
// peer kept over silence.
#include "tools/peer/handshake_slots.h"

#include <catch2/catch.hpp>

#include <string>
#include <vector>

using namespace ibemu::tools;

namespace {

constexpr HandshakeLimits kLimits{ 6, 2 };

} /* namespace */

TEST_CASE("handshake slots: room left, nothing displaced", "[peer]")
{
	std::vector<HandshakeSlot> slots;
	CHECK(handshakeToDisplace(slots, "10.0.0.1", kLimits) == kNoDisplacement);
	slots = { { "10.0.0.1", false }, { "10.0.0.2", true }, { "10.0.0.3", false } };
	CHECK(handshakeToDisplace(slots, "10.0.0.4", kLimits) == kNoDisplacement);
	CHECK(handshakeToDisplace(slots, "10.0.0.1", kLimits) == kNoDisplacement);
}

TEST_CASE("handshake slots: a source past its share displaces its own oldest", "[peer]")
{
	const std::vector<HandshakeSlot> slots = { { "10.0.0.9", false }, { "10.0.0.1", false },
						   { "10.0.0.2", false }, { "10.0.0.1", false } };
	CHECK(handshakeToDisplace(slots, "10.0.0.1", kLimits) == 1);
	/* never another source's, though older */
	CHECK(handshakeToDisplace(slots, "10.0.0.2", kLimits) == kNoDisplacement);
}

TEST_CASE("handshake slots: a source's own hello is kept over its own silence", "[peer]")
{
	std::vector<HandshakeSlot> slots = { { "10.0.0.1", true }, { "10.0.0.1", false } };
	CHECK(handshakeToDisplace(slots, "10.0.0.1", kLimits) == 1);
	slots[1].helloRead = true;
	CHECK(handshakeToDisplace(slots, "10.0.0.1", kLimits) == 0);
}

TEST_CASE("handshake slots: a full table displaces the oldest silent one", "[peer]")
{
	const std::vector<HandshakeSlot> slots = { { "a", true },  { "b", true },  { "c", false },
						   { "d", false }, { "e", true },  { "f", false } };
	CHECK(handshakeToDisplace(slots, "g", kLimits) == 2);
	/* a source with room in a full table displaces as a new source does */
	CHECK(handshakeToDisplace(slots, "a", kLimits) == 2);
}

TEST_CASE("handshake slots: a table of hellos displaces its oldest", "[peer]")
{
	std::vector<HandshakeSlot> slots;
	const std::vector<std::string> names = { "a", "b", "c", "d", "e", "f" };
	for (const auto &n : names)
		slots.push_back({ n, true });
	CHECK(handshakeToDisplace(slots, "g", kLimits) == 0);
}

TEST_CASE("handshake slots: a stranger keeping the table full never keeps a peer out", "[peer]")
{
	/* strangers from many sources reopen as fast as they are closed; a
	 * peer's connection, once its hello is in, is displaced only after
	 * every connection older than it */
	struct Conn {
		std::string source;
		bool hello;
		bool peer;
	};
	std::vector<Conn> table;
	const auto admit = [&](Conn c) {
		std::vector<HandshakeSlot> slots;
		for (const auto &t : table)
			slots.push_back({ t.source, t.hello });
		size_t i = handshakeToDisplace(slots, c.source, kLimits);
		bool peerGone = false;
		if (i != kNoDisplacement) {
			peerGone = table[i].peer;
			table.erase(table.begin() + long(i));
		}
		table.push_back(std::move(c));
		return !peerGone;
	};
	for (int i = 0; i < 40; i++) /* silent and forged-hello strangers */
		admit({ "10.0.1." + std::to_string(i % 8), i % 2 == 0, false });
	REQUIRE(table.size() == kLimits.total);
	REQUIRE(admit({ "10.0.0.1", false, true }));
	table.back().hello = true; /* its hello comes in */
	/* the worst: strangers that say hello at once, each from a source
	 * of its own; the peer outlives every connection older than it */
	for (size_t i = 0; i + 1 < kLimits.total; i++)
		CHECK(admit({ "10.0.2." + std::to_string(i), true, false }));
	CHECK(std::count_if(table.begin(), table.end(), [](const Conn &c) { return c.peer; }) == 1);
	CHECK_FALSE(admit({ "10.0.3.1", true, false }));
}

TEST_CASE("handshake slots: limits of zero act as one", "[peer]")
{
	const std::vector<HandshakeSlot> slots = { { "a", false } };
	CHECK(handshakeToDisplace(slots, "a", HandshakeLimits{ 0, 0 }) == 0);
	CHECK(handshakeToDisplace(slots, "b", HandshakeLimits{ 0, 0 }) == 0);
}
