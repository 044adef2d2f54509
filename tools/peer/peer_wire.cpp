// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// The inter-daemon channel's bytes (tools/peer/peer_wire.h). MACs and digests
// come from OpenSSL's libcrypto.
#include "tools/peer/peer_wire.h"

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/params.h>

#include <cstring>
#include <stdexcept>
#include <sys/random.h>

namespace ibemu::tools {

namespace {

constexpr char kMagic[8] = { 'I', 'B', 'E', 'M', 'U', 'S', 'N', '1' };

void putBe(std::vector<uint8_t> &out, uint64_t v, unsigned bytes)
{
	for (unsigned i = bytes; i-- > 0;)
		out.push_back(static_cast<uint8_t>(v >> (8 * i)));
}

uint64_t getBe(const uint8_t *p, unsigned bytes)
{
	uint64_t v = 0;
	for (unsigned i = 0; i < bytes; i++)
		v = v << 8 | p[i];
	return v;
}

void putPort(std::vector<uint8_t> &out, const PeerPortId &id)
{
	putBe(out, id.node, 8);
	out.push_back(id.port);
}

PeerPortId getPort(const uint8_t *p)
{
	return { getBe(p, 8), p[8] };
}

constexpr size_t kPortIdBytes = 9;
constexpr size_t kPacketHeadBytes = 2 * kPortIdBytes + 1;
constexpr size_t kEndBytes = 2 * kPortIdBytes + 13;
constexpr uint8_t kNoSpeed = 0xff;

EVP_MAC *macAlgorithm(const char *name)
{
	EVP_MAC *mac = EVP_MAC_fetch(nullptr, name, nullptr);
	if (!mac)
		throw std::runtime_error(std::string("libcrypto has no ") + name);
	return mac;
}

EVP_MAC *hmacAlgorithm()
{
	static EVP_MAC *mac = macAlgorithm("HMAC");
	return mac;
}

/* Messages are tagged with keyed BLAKE2b (RFC 7693), 16 octets: a MAC
 * three to four times cheaper per byte than HMAC-SHA256 in software,
 * which matters for verbs data (the session keys still come from
 * HMAC-SHA256) */
EVP_MAC_CTX *keyedTagger(std::span<const uint8_t> key)
{
	static EVP_MAC *mac = macAlgorithm("BLAKE2BMAC");
	EVP_MAC_CTX *ctx = EVP_MAC_CTX_new(mac);
	size_t size = kPeerTagBytes;
	OSSL_PARAM params[] = { OSSL_PARAM_construct_size_t(OSSL_MAC_PARAM_SIZE, &size), OSSL_PARAM_construct_end() };
	if (!ctx || !EVP_MAC_init(ctx, key.data(), key.size(), params)) {
		EVP_MAC_CTX_free(ctx);
		throw std::runtime_error("cannot key BLAKE2b");
	}
	return ctx;
}

EVP_MAC_CTX *keyedHmac(std::span<const uint8_t> key)
{
	if (key.empty())
		throw std::runtime_error("an empty HMAC key");
	EVP_MAC_CTX *ctx = EVP_MAC_CTX_new(hmacAlgorithm());
	char digest[] = "SHA256";
	OSSL_PARAM params[] = { OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, digest, 0),
				OSSL_PARAM_construct_end() };
	if (!ctx || !EVP_MAC_init(ctx, key.data(), key.size(), params)) {
		EVP_MAC_CTX_free(ctx);
		throw std::runtime_error("cannot key HMAC-SHA256");
	}
	return ctx;
}

/* HMAC-SHA256(key, parts...) */
PeerKey hmac(std::span<const uint8_t> key, std::initializer_list<std::span<const uint8_t>> parts)
{
	EVP_MAC_CTX *ctx = keyedHmac(key);
	bool ok = true;
	for (auto part : parts)
		ok = ok && EVP_MAC_update(ctx, part.data(), part.size());
	PeerKey out{};
	size_t n = 0;
	ok = ok && EVP_MAC_final(ctx, out.data(), &n, out.size()) && n == out.size();
	EVP_MAC_CTX_free(ctx);
	if (!ok) /* never an all-zero key anyone could compute */
		throw std::runtime_error("HMAC-SHA256 failed");
	return out;
}

std::span<const uint8_t> bytesOf(std::string_view s)
{
	return { reinterpret_cast<const uint8_t *>(s.data()), s.size() };
}

} /* namespace */

void appendMessage(std::vector<uint8_t> &out, std::span<const uint8_t> body)
{
	putBe(out, body.size(), 4);
	out.insert(out.end(), body.begin(), body.end());
}

std::vector<uint8_t> encodeHello(const PeerHello &h)
{
	std::vector<uint8_t> b(kMagic, kMagic + sizeof kMagic);
	b.push_back(h.version);
	b.push_back(static_cast<uint8_t>(h.host.size()));
	b.insert(b.end(), h.host.begin(), h.host.begin() + std::min(h.host.size(), kPeerMaxHostName));
	b.insert(b.end(), h.topology.begin(), h.topology.end());
	b.insert(b.end(), h.nonce.begin(), h.nonce.end());
	return b;
}

bool decodeHello(std::span<const uint8_t> b, PeerHello &h)
{
	if (b.size() < sizeof kMagic + 2 || memcmp(b.data(), kMagic, sizeof kMagic) != 0)
		return false;
	h.version = b[8];
	size_t len = b[9];
	if (h.version != 1 || b.size() != 10 + len + h.topology.size() + h.nonce.size())
		return false;
	h.host.assign(reinterpret_cast<const char *>(b.data() + 10), len);
	memcpy(h.topology.data(), b.data() + 10 + len, h.topology.size());
	memcpy(h.nonce.data(), b.data() + 10 + len + h.topology.size(), h.nonce.size());
	return true;
}

PeerSessionKeys deriveSessionKeys(std::span<const uint8_t> subnetKey, const PeerHello &dialer,
				  const PeerHello &listener)
{
	const std::vector<uint8_t> d = encodeHello(dialer), l = encodeHello(listener);
	const uint8_t dLen[2] = { uint8_t(d.size() >> 8), uint8_t(d.size()) };
	PeerKey session = hmac(subnetKey, { bytesOf("ibemu peer session v1"), dLen, d, l });
	return { hmac(session, { bytesOf("dialer to listener") }), hmac(session, { bytesOf("listener to dialer") }) };
}

PeerSealer::PeerSealer() = default;

PeerSealer::PeerSealer(const PeerKey &key) : ctx_(keyedTagger(key))
{}

PeerSealer::~PeerSealer()
{
	EVP_MAC_CTX_free(ctx_);
}

PeerSealer::PeerSealer(PeerSealer &&o) noexcept : ctx_(o.ctx_), seq_(o.seq_)
{
	o.ctx_ = nullptr;
}

PeerSealer &PeerSealer::operator=(PeerSealer &&o) noexcept
{
	if (this != &o) {
		EVP_MAC_CTX_free(ctx_);
		ctx_ = o.ctx_;
		seq_ = o.seq_;
		o.ctx_ = nullptr;
	}
	return *this;
}

bool PeerSealer::tag(PeerMsg type, std::span<const uint8_t> body, uint8_t out[kPeerTagBytes])
{
	uint8_t head[9];
	for (unsigned i = 0; i < 8; i++)
		head[i] = static_cast<uint8_t>(seq_ >> (56 - 8 * i));
	head[8] = static_cast<uint8_t>(type);
	uint8_t full[kPeerTagBytes];
	size_t n = 0;
	/* a NULL key re-keys with the key already set */
	if (!EVP_MAC_init(ctx_, nullptr, 0, nullptr) || !EVP_MAC_update(ctx_, head, sizeof head) ||
	    !EVP_MAC_update(ctx_, body.data(), body.size()) || !EVP_MAC_final(ctx_, full, &n, sizeof full) ||
	    n != sizeof full)
		return false;
	memcpy(out, full, kPeerTagBytes);
	return true;
}

void PeerSealer::seal(std::vector<uint8_t> &out, PeerMsg type, std::span<const uint8_t> body)
{
	putBe(out, 1 + body.size() + kPeerTagBytes, 4);
	out.push_back(static_cast<uint8_t>(type));
	out.insert(out.end(), body.begin(), body.end());
	uint8_t t[kPeerTagBytes];
	if (!ctx_ || !tag(type, body, t)) {
		out.resize(out.size() - 4 - 1 - body.size());
		throw std::runtime_error("BLAKE2b failed");
	}
	out.insert(out.end(), t, t + kPeerTagBytes);
	seq_++;
}

bool PeerSealer::open(std::span<const uint8_t> msg, PeerMsg &type, std::span<const uint8_t> &body)
{
	if (!ctx_ || msg.size() < 1 + kPeerTagBytes)
		return false;
	const auto t = static_cast<PeerMsg>(msg[0]);
	const auto b = msg.subspan(1, msg.size() - 1 - kPeerTagBytes);
	uint8_t want[kPeerTagBytes];
	if (!tag(t, b, want) || CRYPTO_memcmp(want, msg.data() + msg.size() - kPeerTagBytes, kPeerTagBytes) != 0)
		return false;
	seq_++;
	type = t;
	body = b;
	return true;
}

std::vector<uint8_t> encodeEnd(const PeerEnd &e)
{
	std::vector<uint8_t> b;
	b.reserve(kEndBytes);
	putPort(b, e.from);
	putPort(b, e.to);
	const fabric::CableEnd &c = e.end;
	b.push_back(static_cast<uint8_t>((c.cabled ? 1 : 0) | (c.disabled ? 2 : 0)));
	b.push_back(c.widthEnabled);
	b.push_back(c.widthSupported);
	b.push_back(c.speedEnabled);
	b.push_back(c.speedExtEnabled);
	b.push_back(static_cast<uint8_t>(c.speedSupported));
	b.push_back(c.degradedWidth);
	b.push_back(c.degradedSpeed ? static_cast<uint8_t>(*c.degradedSpeed) : kNoSpeed);
	b.push_back(0);
	putBe(b, c.retrains, 4);
	return b;
}

bool decodeEnd(std::span<const uint8_t> b, PeerEnd &e)
{
	if (b.size() != kEndBytes)
		return false;
	const uint8_t *p = b.data();
	e.from = getPort(p);
	e.to = getPort(p + kPortIdBytes);
	p += 2 * kPortIdBytes;
	constexpr uint8_t kLast = static_cast<uint8_t>(fabric::Speed::NDR);
	if ((p[0] & ~3u) || p[5] > kLast || (p[7] > kLast && p[7] != kNoSpeed) || p[8])
		return false;
	fabric::CableEnd &c = e.end;
	c.cabled = p[0] & 1;
	c.disabled = p[0] & 2;
	c.widthEnabled = p[1];
	c.widthSupported = p[2];
	c.speedEnabled = p[3];
	c.speedExtEnabled = p[4];
	c.speedSupported = static_cast<fabric::Speed>(p[5]);
	c.degradedWidth = p[6];
	c.degradedSpeed = p[7] == kNoSpeed ? std::nullopt : std::optional(static_cast<fabric::Speed>(p[7]));
	c.retrains = static_cast<uint32_t>(getBe(p + 9, 4));
	return true;
}

std::vector<uint8_t> encodePacket(const PeerPacket &pk)
{
	std::vector<uint8_t> b;
	b.reserve(kPacketHeadBytes + pk.bytes.size());
	putPort(b, pk.from);
	putPort(b, pk.to);
	b.push_back(pk.hops);
	b.insert(b.end(), pk.bytes.begin(), pk.bytes.end());
	return b;
}

bool decodePacket(std::span<const uint8_t> b, PeerPacket &pk)
{
	if (b.size() < kPacketHeadBytes)
		return false;
	pk.from = getPort(b.data());
	pk.to = getPort(b.data() + kPortIdBytes);
	pk.hops = b[2 * kPortIdBytes];
	pk.bytes = b.subspan(kPacketHeadBytes);
	return true;
}

std::vector<uint8_t> encodeData(const PeerData &d)
{
	std::vector<uint8_t> b;
	b.reserve(kPacketHeadBytes + 8 + d.bytes.size());
	putPort(b, d.from);
	putPort(b, d.to);
	b.push_back(d.hops);
	putBe(b, d.index, 4);
	putBe(b, d.count, 4);
	b.insert(b.end(), d.bytes.begin(), d.bytes.end());
	return b;
}

bool decodeData(std::span<const uint8_t> b, PeerData &d)
{
	if (b.size() < kPacketHeadBytes + 8)
		return false;
	d.from = getPort(b.data());
	d.to = getPort(b.data() + kPortIdBytes);
	d.hops = b[2 * kPortIdBytes];
	d.index = static_cast<uint32_t>(getBe(b.data() + kPacketHeadBytes, 4));
	d.count = static_cast<uint32_t>(getBe(b.data() + kPacketHeadBytes + 4, 4));
	d.bytes = b.subspan(kPacketHeadBytes + 8);
	return d.count >= 1 && d.count <= kPeerMaxDataPackets && d.index < d.count;
}

std::array<uint8_t, kPeerNonceBytes> peerNonce()
{
	std::array<uint8_t, kPeerNonceBytes> n{};
	size_t got = 0;
	while (got < n.size()) {
		ssize_t r = getrandom(n.data() + got, n.size() - got, 0);
		if (r < 0 && errno != EINTR)
			throw std::runtime_error("getrandom failed");
		if (r > 0)
			got += size_t(r);
	}
	return n;
}

PeerDigest sha256(std::string_view text)
{
	PeerDigest d{};
	unsigned n = 0;
	EVP_Digest(text.data(), text.size(), d.data(), &n, EVP_sha256(), nullptr);
	return d;
}

} /* namespace ibemu::tools */
