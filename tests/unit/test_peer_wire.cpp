// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// The bytes between the daemons of a split subnet (tools/peer/peer_wire.h):
// hellos, sealed messages a stranger cannot forge, replay or cut, and the
// END and PACKET bodies.
#include "tools/peer/peer_wire.h"

#include <catch2/catch.hpp>

#include <cstring>

using namespace ibemu;
using namespace ibemu::tools;

namespace {

std::vector<uint8_t> keyOf(const char *s)
{
	return { reinterpret_cast<const uint8_t *>(s), reinterpret_cast<const uint8_t *>(s) + strlen(s) };
}

/* The body of the one message in a length-prefixed stream */
std::span<const uint8_t> only(const std::vector<uint8_t> &stream)
{
	REQUIRE(stream.size() >= 4);
	size_t len = size_t(stream[0]) << 24 | size_t(stream[1]) << 16 | size_t(stream[2]) << 8 | stream[3];
	REQUIRE(len == stream.size() - 4);
	return std::span(stream).subspan(4);
}

struct Session {
	PeerHello d, l;
	PeerSessionKeys kd, kl; /* as each side derives them */
	Session(const char *keyD, const char *keyL)
	{
		d.host = "node-a";
		l.host = "node-b";
		d.nonce = peerNonce();
		l.nonce = peerNonce();
		kd = deriveSessionKeys(keyOf(keyD), d, l);
		kl = deriveSessionKeys(keyOf(keyL), d, l);
	}
};

} /* namespace */

TEST_CASE("a hello reads back; anything else is not one", "[peer-wire]")
{
	PeerHello h;
	h.host = "node-a";
	h.topology = sha256("topology");
	h.nonce = peerNonce();
	std::vector<uint8_t> b = encodeHello(h);
	PeerHello back;
	REQUIRE(decodeHello(b, back));
	CHECK(back.host == "node-a");
	CHECK(back.topology == h.topology);
	CHECK(back.nonce == h.nonce);

	CHECK_FALSE(decodeHello(std::span(b).first(b.size() - 1), back));
	std::vector<uint8_t> bad = b;
	bad[0] = 'X';
	CHECK_FALSE(decodeHello(bad, back));
	bad = b;
	bad[8] = 2; /* a version we do not speak */
	CHECK_FALSE(decodeHello(bad, back));
	bad = b;
	bad[9] = 200; /* a name longer than the message */
	CHECK_FALSE(decodeHello(bad, back));
	CHECK(peerNonce() != peerNonce());
}

TEST_CASE("sealed messages open only under the same key, once, in order, whole", "[peer-wire]")
{
	Session s("a subnet key of some length", "a subnet key of some length");
	CHECK(s.kd.dialerToListener == s.kl.dialerToListener);
	CHECK(s.kd.dialerToListener != s.kd.listenerToDialer);

	PeerSealer tx(s.kd.dialerToListener), rx(s.kl.dialerToListener);
	const uint8_t body[] = { 1, 2, 3, 4, 5 };
	std::vector<uint8_t> m1, m2;
	tx.seal(m1, PeerMsg::Packet, body);
	tx.seal(m2, PeerMsg::End, body);

	PeerMsg type;
	std::span<const uint8_t> got;
	SECTION("in order")
	{
		REQUIRE(rx.open(only(m1), type, got));
		CHECK(type == PeerMsg::Packet);
		CHECK(std::equal(got.begin(), got.end(), std::begin(body), std::end(body)));
		REQUIRE(rx.open(only(m2), type, got));
		CHECK(type == PeerMsg::End);
		CHECK_FALSE(rx.open(only(m2), type, got)); /* replayed */
	}
	SECTION("out of order or dropped")
	{
		CHECK_FALSE(rx.open(only(m2), type, got));
	}
	SECTION("any bit changed")
	{
		for (size_t i = 4; i < m1.size(); i++) {
			std::vector<uint8_t> bad = m1;
			bad[i] ^= 0x01;
			INFO("byte " << i);
			CHECK_FALSE(rx.open(only(bad), type, got));
		}
		CHECK(rx.open(only(m1), type, got)); /* the failures did not move it on */
	}
	SECTION("cut short")
	{
		CHECK_FALSE(rx.open(only(m1).first(only(m1).size() - 1), type, got));
		CHECK_FALSE(rx.open(only(m1).first(3), type, got));
	}
	SECTION("the other direction's key")
	{
		PeerSealer wrong(s.kl.listenerToDialer);
		CHECK_FALSE(wrong.open(only(m1), type, got));
	}
	SECTION("no key")
	{
		PeerSealer none;
		CHECK_FALSE(none.open(only(m1), type, got));
	}
}

TEST_CASE("a different subnet key or nonce gives different session keys", "[peer-wire]")
{
	Session s("the key of subnet one", "the key of subnet two");
	CHECK(s.kd.dialerToListener != s.kl.dialerToListener);
	PeerSealer tx(s.kd.dialerToListener), rx(s.kl.dialerToListener);
	std::vector<uint8_t> m;
	tx.seal(m, PeerMsg::Auth, {});
	PeerMsg type;
	std::span<const uint8_t> got;
	CHECK_FALSE(rx.open(only(m), type, got));

	Session again("the key of subnet one", "the key of subnet one");
	CHECK(again.kd.dialerToListener != s.kd.dialerToListener); /* fresh nonces */

	/* a hello altered on the way (here its digest) gives other keys */
	PeerHello forged = again.l;
	forged.topology[0] ^= 1;
	CHECK(deriveSessionKeys(keyOf("the key of subnet one"), again.d, forged).dialerToListener !=
	      again.kd.dialerToListener);
}

TEST_CASE("END and PACKET bodies read back and are checked", "[peer-wire]")
{
	PeerEnd e;
	e.from = { 0x2c90200000001, 7 };
	e.to = { 0x2c90200000002, 8 };
	e.end.cabled = true;
	e.end.widthEnabled = 3;
	e.end.widthSupported = 3;
	e.end.speedEnabled = 7;
	e.end.speedExtEnabled = 1;
	e.end.speedSupported = fabric::Speed::EDR;
	e.end.degradedSpeed = fabric::Speed::DDR;
	e.end.retrains = 0x01020304;
	std::vector<uint8_t> b = encodeEnd(e);
	PeerEnd back;
	REQUIRE(decodeEnd(b, back));
	CHECK(back.from == e.from);
	CHECK(back.to == e.to);
	CHECK(back.end == e.end);

	CHECK_FALSE(decodeEnd(std::span(b).first(b.size() - 1), back));
	std::vector<uint8_t> bad = b;
	bad[18] = 0x80; /* unknown flags */
	CHECK_FALSE(decodeEnd(bad, back));
	bad = b;
	bad[23] = 40; /* no such speed */
	CHECK_FALSE(decodeEnd(bad, back));

	const uint8_t bytes[] = { 9, 8, 7 };
	std::vector<uint8_t> pb = encodePacket({ e.from, e.to, 17, bytes });
	PeerPacket p;
	REQUIRE(decodePacket(pb, p));
	CHECK(p.from == e.from);
	CHECK(p.to == e.to);
	CHECK(p.hops == 17);
	CHECK(p.bytes.size() == 3);
	CHECK_FALSE(decodePacket(std::span(pb).first(18), p));
}
