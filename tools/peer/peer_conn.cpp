// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// One connection to another host's daemon (tools/peer/peer_conn.h).
//
// A connection's life:  Hello -> Auth -> Up -> Closed
//   Hello  both ends send a hello at once and read the other's: same
//          topology digest, a host that shares cables with us and dials
//          the way the names say; then both derive the session keys and
//          send a sealed AUTH
//   Auth   the first sealed message must be AUTH under the right key
//   Up     attached to its Peer: the cables may train; ENDs and PACKETs
//   Closed the socket is gone; if it was Up, the Peer's cables went down
// A handshake has 5 s, and a connection we accepted 1 s of it for its
// hello (the first thing a peer sends; strangers wait in a bounded table,
// tools/peer/handshake_slots.h). Anything that fails authentication closes the
// connection; a sealed message whose content makes no sense (a port we do
// not share, bytes that are not a MAD packet) is counted and dropped
// (tools/peer/peer_traffic.cpp).
#include "tools/peer/peer_conn.h"

#include <boost/asio/post.hpp>
#include <boost/asio/write.hpp>
#include <spdlog/spdlog.h>

#include <netinet/in.h>
#include <netinet/tcp.h>

#include <cstring>

namespace ibemu::tools {

using boost::asio::ip::tcp;

namespace {

constexpr auto kHandshakeTime = std::chrono::seconds(5);
/* for the hello of a connection we accepted */
constexpr auto kHelloTime = std::chrono::seconds(1);

/* A dead peer is noticed within seconds even when nothing is sent:
 * keepalives, and a limit on unacknowledged data */
void tuneSocket(tcp::socket &s)
{
	int fd = s.native_handle(), one = 1, idle = 2, intvl = 1, cnt = 3, userTimeout = 5000;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
	setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof one);
	setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof idle);
	setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &intvl, sizeof intvl);
	setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &cnt, sizeof cnt);
	setsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &userTimeout, sizeof userTimeout);
}

} /* namespace */

void PeerLinks::Conn::begin()
{
	boost::system::error_code ec;
	auto ep = sock.remote_endpoint(ec);
	remote = ec ? "?" : ep.address().to_string() + ":" + std::to_string(ep.port());
	tuneSocket(sock);
	mine.host = links.split_.hosts[size_t(links.me_)].name;
	mine.topology = links.digest_;
	mine.nonce = peerNonce();
	appendMessage(pending, encodeHello(mine));
	schedule();
	began = std::chrono::steady_clock::now();
	deadline.expires_at(began + (dialer ? kHandshakeTime : kHelloTime));
	waitDeadline();
	read();
}

/* A hello that came in while the io thread was busy is still read in
 * time: the epoll reactor queues a turn's socket handlers before its
 * expired timers */
void PeerLinks::Conn::waitDeadline()
{
	deadline.async_wait([self = shared_from_this()](const boost::system::error_code &e) {
		if (e || self->state == State::Up || self->state == State::Closed)
			return;
		if (self->state == State::Hello && !self->dialer)
			return self->close("no hello within 1 s", true);
		if (std::chrono::steady_clock::now() < self->began + kHandshakeTime) {
			self->deadline.expires_at(self->began + kHandshakeTime);
			return self->waitDeadline();
		}
		self->close("no handshake within 5 s", true);
	});
}

void PeerLinks::Conn::read()
{
	/* a stranger gets room for one message; a peer, for many */
	const size_t room = state == State::Up ? 65536 : kPeerMaxMessage + 4;
	if (in.size() < room)
		in.resize(room);
	sock.async_read_some(
		boost::asio::buffer(in.data() + inUsed, in.size() - inUsed),
		[self = shared_from_this()](const boost::system::error_code &ec, size_t n) {
			if (self->state == State::Closed)
				return;
			if (ec) {
				self->close(ec == boost::asio::error::eof ? "connection closed" : ec.message(), false);
				return;
			}
			self->inUsed += n;
			self->process();
			if (self->state != State::Closed)
				self->read();
		});
}

void PeerLinks::Conn::process()
{
	size_t off = 0;
	while (state != State::Closed && inUsed - off >= 4) {
		const uint8_t *p = in.data() + off;
		size_t len = size_t(p[0]) << 24 | size_t(p[1]) << 16 | size_t(p[2]) << 8 | p[3];
		if (len == 0 || len > kPeerMaxMessage) {
			close("a message of " + std::to_string(len) + " bytes (at most " +
				      std::to_string(kPeerMaxMessage) + ")",
			      true);
			return;
		}
		if (inUsed - off < 4 + len)
			break;
		message({ p + 4, len });
		off += 4 + len;
	}
	if (state == State::Closed)
		return;
	memmove(in.data(), in.data() + off, inUsed - off);
	inUsed -= off;
}

void PeerLinks::Conn::message(std::span<const uint8_t> body)
{
	if (state == State::Hello)
		return hello(body);
	PeerMsg type;
	std::span<const uint8_t> inner;
	if (!rx.open(body, type, inner)) {
		close(state == State::Auth ? "authentication failed (not the same subnet key?)"
					   : "a message failed authentication",
		      true);
		return;
	}
	if (state == State::Auth) {
		if (type != PeerMsg::Auth || !inner.empty())
			return close("no AUTH after the hello", true);
		links.attach(shared_from_this());
		return;
	}
	links.received(*this, type, inner);
}

void PeerLinks::Conn::hello(std::span<const uint8_t> body)
{
	try {
		checkHello(body);
	} catch (const std::exception &e) { /* libcrypto failed: no keys, no session */
		close(std::string("cannot key the session: ") + e.what(), true);
	}
}

void PeerLinks::Conn::checkHello(std::span<const uint8_t> body)
{
	if (!decodeHello(body, theirs))
		return close("not an ibemu peer (bad hello)", true);
	if (dialer && theirs.host != peer->name)
		return close("expected host \"" + peer->name + "\", got \"" + theirs.host + "\"", true);
	if (!dialer) {
		for (const auto &p : links.peers_)
			if (p && p->name == theirs.host)
				peer = p.get();
		if (!peer)
			return close("host \"" + theirs.host + "\" shares no cable with this host", true);
		if (peer->dialer)
			return close("host \"" + theirs.host + "\" dialled, but this host dials it", true);
	}
	if (theirs.topology != links.digest_)
		return close("host \"" + theirs.host +
				     "\" loaded a different topology (every host must load the same file)",
			     true);
	const PeerSessionKeys k = dialer ? deriveSessionKeys(links.key_, mine, theirs)
					 : deriveSessionKeys(links.key_, theirs, mine);
	tx = PeerSealer(dialer ? k.dialerToListener : k.listenerToDialer);
	rx = PeerSealer(dialer ? k.listenerToDialer : k.dialerToListener);
	state = State::Auth;
	sendSealed(PeerMsg::Auth, {});
}

void PeerLinks::Conn::sendSealed(PeerMsg type, std::span<const uint8_t> body)
{
	if (state == State::Closed || closePosted)
		return;
	try {
		tx.seal(pending, type, body);
	} catch (const std::exception &e) {
		return closeLater(e.what());
	}
	schedule();
}

/* Closing takes the cables down: never in the middle of whatever
 * is sending (a packet being carried, a link training) */
void PeerLinks::Conn::closeLater(const std::string &why)
{
	if (closePosted)
		return;
	closePosted = true;
	boost::asio::post(links.io_, [self = shared_from_this(), why] { self->close(why, false); });
}

/* Writes go out from the io thread, after whatever queued them */
void PeerLinks::Conn::schedule()
{
	if (pending.size() > kMaxQueued)
		return closeLater("the peer reads nothing (" + std::to_string(pending.size() >> 20) + " MiB queued)");
	if (writingNow || flushPosted)
		return;
	flushPosted = true;
	boost::asio::post(links.io_, [self = shared_from_this()] {
		self->flushPosted = false;
		self->flush();
	});
}

void PeerLinks::Conn::flush()
{
	if (state == State::Closed || writingNow || pending.empty())
		return;
	writing.swap(pending);
	pending.clear();
	writingOnWire.swap(pendingOnWire);
	pendingOnWire.clear();
	writingNow = true;
	boost::asio::async_write(sock, boost::asio::buffer(writing),
				 [self = shared_from_this()](const boost::system::error_code &ec, size_t) {
					 self->writingNow = false;
					 self->writing.clear();
					 if (self->state == State::Closed)
						 return;
					 if (ec)
						 return self->close(ec.message(), false);
					 for (auto &fn : std::exchange(self->writingOnWire, {}))
						 fn(true);
					 self->flush();
				 });
}

/* refused: the handshake failed on our side (counted) */
void PeerLinks::Conn::close(const std::string &why, bool refused)
{
	if (state == State::Closed)
		return;
	auto self = shared_from_this();
	const bool wasUp = state == State::Up;
	state = State::Closed;
	boost::system::error_code ec;
	sock.shutdown(tcp::socket::shutdown_both, ec);
	sock.close(ec);
	deadline.cancel();
	std::erase(links.handshakes_, self);
	/* what was queued never leaves: told in turns of their own */
	for (auto *list : { &writingOnWire, &pendingOnWire })
		for (auto &fn : std::exchange(*list, {}))
			boost::asio::post(links.io_, [fn = std::move(fn)] { fn(false); });
	const std::string who = peer ? "host \"" + peer->name + "\"" : remote;
	if (refused)
		links.refused(who + " (" + remote + "): " + why);
	if (peer)
		peer->lastError = why;
	if (wasUp)
		links.detach(*this);
	else if (peer && dialer && !links.stopped_)
		links.redial(*peer);
	if (wasUp || !refused)
		spdlog::log(wasUp ? spdlog::level::warn : spdlog::level::debug, "peers: {} ({}): {}", who, remote, why);
}

} /* namespace ibemu::tools */
