// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// The bytes between the daemons of a subnet split across hosts
// (docs/multihost.md, "The channel"): a TCP stream of length-prefixed
// messages.
//
//   hello   (clear)  "IBEMUSN1", version, host name, topology digest, nonce
//   sealed  (every later message) type, body, a 16-octet keyed-BLAKE2b
//           tag under a per-direction key derived (HMAC-SHA256) from the
//           subnet key and both hellos, over an implicit per-direction
//           sequence number
//
// Sealed types: AUTH (empty: proves the key), END (a CableEnd), PACKET
// (the bytes of a MAD packet crossing a cable, LRH to VCRC, as a capture
// shows them), DATA (one packet of a data message, numbered within it).
// Everything here is pure: bytes in, bytes out.
#pragma once

#include "fabric/node.h"
#include "fabric/remote_cable.h"

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

struct evp_mac_ctx_st; /* OpenSSL's EVP_MAC_CTX */

namespace ibemu::tools {

constexpr size_t kPeerMaxMessage = 8192; /* a length above this ends the connection */
/* packets of one data message, at most */
constexpr size_t kPeerMaxDataPackets = fabric::kMaxAwayPackets;
constexpr size_t kPeerTagBytes = 16;
constexpr size_t kPeerNonceBytes = 32;
constexpr size_t kPeerMaxHostName = 255;

using PeerDigest = std::array<uint8_t, 32>; /* SHA-256 */
using PeerKey = std::array<uint8_t, 32>;

struct PeerHello {
	uint8_t version = 1;
	std::string host;
	PeerDigest topology{};
	std::array<uint8_t, kPeerNonceBytes> nonce{};
};

enum class PeerMsg : uint8_t { Auth = 1, End = 2, Packet = 3, Data = 4 };

/* A port named across daemons: its node GUID and number */
struct PeerPortId {
	uint64_t node = 0;
	uint8_t port = 0;
	bool operator==(const PeerPortId &) const = default;
};

/* END: the sender's port `from` (cabled to the receiver's port `to`) is
 * now `end` */
struct PeerEnd {
	PeerPortId from, to;
	fabric::CableEnd end;
};

/* PACKET: bytes that left the sender's port `from` onto its cable to the
 * receiver's port `to`, after crossing `hops` cables before it */
struct PeerPacket {
	PeerPortId from, to;
	uint8_t hops = 0;
	std::span<const uint8_t> bytes;
};

/* DATA: packet `index` of the `count` packets of a data message, as
 * PACKET otherwise; a message's packets follow each other in the stream */
struct PeerData {
	PeerPortId from, to;
	uint8_t hops = 0;
	uint32_t index = 0, count = 0;
	std::span<const uint8_t> bytes;
};

/* A length-prefixed message: 4 octets big-endian, then body */
void appendMessage(std::vector<uint8_t> &out, std::span<const uint8_t> body);

std::vector<uint8_t> encodeHello(const PeerHello &h);
/* false when body is not a hello of this version */
bool decodeHello(std::span<const uint8_t> body, PeerHello &h);

/* One direction of an authenticated channel: the key and the sequence
 * number of the next message. */
class PeerSealer {
public:
	PeerSealer();
	explicit PeerSealer(const PeerKey &key);
	~PeerSealer();
	PeerSealer(PeerSealer &&other) noexcept;
	PeerSealer &operator=(PeerSealer &&other) noexcept;

	/* Appends the message (length, type, body, tag) to out; throws
	 * std::runtime_error when libcrypto fails (never sends an unsealed
	 * message) */
	void seal(std::vector<uint8_t> &out, PeerMsg type, std::span<const uint8_t> body);
	/* Checks the tag of a sealed message body against the next sequence
	 * number; on success sets type and body (a view into msg) and moves
	 * on. false: forged, replayed, reordered, truncated, or no key. */
	bool open(std::span<const uint8_t> msg, PeerMsg &type, std::span<const uint8_t> &body);

private:
	bool tag(PeerMsg type, std::span<const uint8_t> body, uint8_t out[kPeerTagBytes]);

	::evp_mac_ctx_st *ctx_ = nullptr; /* HMAC-SHA256 keyed once */
	uint64_t seq_ = 0;
};

/* The two directions' keys of a session between `dialer` and `listener`,
 * from the subnet key and both hellos whole (names, digests, nonces), so
 * a hello altered on the way gives the two ends different keys. Throws
 * std::runtime_error when libcrypto fails. */
struct PeerSessionKeys {
	PeerKey dialerToListener{}, listenerToDialer{};
};
PeerSessionKeys deriveSessionKeys(std::span<const uint8_t> subnetKey, const PeerHello &dialer,
				  const PeerHello &listener);

std::vector<uint8_t> encodeEnd(const PeerEnd &e);
bool decodeEnd(std::span<const uint8_t> body, PeerEnd &e);
std::vector<uint8_t> encodePacket(const PeerPacket &p);
bool decodePacket(std::span<const uint8_t> body, PeerPacket &p);
std::vector<uint8_t> encodeData(const PeerData &d);
/* false when short, or the index is not below a count of 1 to
 * kPeerMaxDataPackets */
bool decodeData(std::span<const uint8_t> body, PeerData &d);

/* Random nonce bytes (the kernel's CSPRNG) */
std::array<uint8_t, kPeerNonceBytes> peerNonce();
/* SHA-256 of text */
PeerDigest sha256(std::string_view text);

} /* namespace ibemu::tools */
