// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// Inside PeerLinks (tools/peer/peer_links.h), for its files only:
// a Peer (another host we share cables with) and a Conn (one TCP
// connection to it, from the hello to its close).
//   peer_links.cpp    the peers: listening, dialling, attaching a
//                     connection, status; the subnet key
//   peer_conn.cpp     one connection: handshake, authentication, framing,
//                     writes and close
//   peer_traffic.cpp  what an up connection carries: ENDs, PACKETs, DATA
#pragma once

#include "tools/peer/peer_links.h"

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>

#include <chrono>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace ibemu::tools {

inline constexpr auto kFirstRedial = std::chrono::milliseconds(100);
/* bytes queued for a peer that does not read them: past this the peer is
 * taken for dead */
inline constexpr size_t kMaxQueued = 64u << 20;

/* The far end of p's cable, plugged in or pulled out */
inline fabric::Port *cableEnd(fabric::Port &p)
{
	return p.peer ? p.peer : p.pulledPeer;
}

struct PeerLinks::Peer {
	explicit Peer(boost::asio::io_context &io) : retry(io) {}

	int index = -1;
	std::string name, addr;
	bool dialer = false; /* we dial it (our name sorts first) */
	bool dialing = false;
	std::vector<fabric::Port *> cables; /* our ports cabled to its nodes when we started */
	std::shared_ptr<Conn> conn; /* the connection that is up */
	boost::asio::steady_timer retry;
	std::unique_ptr<boost::asio::ip::tcp::resolver> resolver; /* while dialling */
	std::unique_ptr<boost::asio::ip::tcp::socket> dialling;
	std::chrono::milliseconds backoff = kFirstRedial;
	uint64_t packetsOut = 0, packetsIn = 0, bad = 0, ups = 0;
	uint64_t dropped = 0; /* packets for it while it was not up */
	std::string lastError;
};

struct PeerLinks::Conn : std::enable_shared_from_this<PeerLinks::Conn> {
	enum class State { Hello, Auth, Up, Closed };

	/* source: the address a connection we accepted came from (its
	 * share of the handshake table) */
	Conn(PeerLinks &l, boost::asio::ip::tcp::socket s, Peer *p, std::string from = {})
		: links(l), sock(std::move(s)), peer(p), deadline(l.io_), source(std::move(from))
	{
		dialer = p != nullptr;
	}

	PeerLinks &links;
	boost::asio::ip::tcp::socket sock;
	Peer *peer; /* known from the start when we dial, from the hello when we listen */
	bool dialer = false;
	State state = State::Hello;
	PeerHello mine, theirs;
	PeerSealer tx, rx;
	boost::asio::steady_timer deadline;
	std::chrono::steady_clock::time_point began;
	std::string source;
	std::vector<uint8_t> in;
	size_t inUsed = 0;
	std::vector<uint8_t> pending, writing;
	bool writingNow = false, flushPosted = false, closePosted = false;
	/* told when the bytes queued before them are written (or never are) */
	std::vector<fabric::OnWire> pendingOnWire, writingOnWire;
	std::string remote;
	/* the data message whose packets are arriving (DATA) */
	fabric::DataPackets assembling;
	PeerData assemblingHead;
	size_t assemblingBytes = 0;

	void begin();
	void waitDeadline();
	void read();
	void process();
	void message(std::span<const uint8_t> body);
	void hello(std::span<const uint8_t> body);
	void checkHello(std::span<const uint8_t> body);
	void sendSealed(PeerMsg type, std::span<const uint8_t> body);
	void closeLater(const std::string &why);
	void schedule();
	void flush();
	void close(const std::string &why, bool refused);
};

} /* namespace ibemu::tools */
