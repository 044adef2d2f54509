// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// The live view (`ibemu up --web`): a small HTTP server on the daemon's
// io_context (Boost.Beast) serving one page that draws the fabric and
// follows it as it changes.
//
//   GET /                  the page (tools/observe/web_page.cpp): no script from
//                          elsewhere, it polls the two below
//   GET /api/state         ports, cables, the SM, the recent MADs, the
//                          faults (tools/observe/web_state.h)
//   GET /api/sweep         the last sweep that changed the fabric, step by
//                          step, for the page's replay
//   GET /api/picture.svg   the fabric drawn by Graphviz (tools/observe/fabric_picture.h)
//   GET /api/node/N        node N's NodeInfo, PortInfo and LFT
//
// Read only: nothing on the page changes the fabric. It listens on
// 127.0.0.1 unless told otherwise, answers only requests whose Host is
// the address it listens on (no DNS rebinding), and drops a connection
// idle for kIdle. The recent MADs and the last sweep come from a ring the
// fabric records every MAD at a CA port into from the view's start
// (fabric/mad_ring.h), decoded only when a page asks.
//
// It runs on the daemon's only I/O thread, so no client may hold it up or
// keep others out:
// - a client (the user who owns the other end, when it is a socket of this
//   machine: tools/observe/socket_owner.h; else its address) keeps at most
//   kMaxPerClient connections: its next one closes its least recently used;
// - at kMaxConnections, a new connection closes the least recently used
//   one of the client that holds the most, so no one is ever locked out;
// - the state and the picture are built once per change into a shared,
//   immutable body that every request is sent (no copy); the fabric is
//   looked at for changes at most once per kStateEvery, and a build comes
//   no sooner after the last than kBuildShare-1 times what that one took:
//   whatever the pages ask, building takes at most 1/kBuildShare of the
//   thread.
#pragma once

#include "emu/clock.h"
#include "fabric/mad_ring.h"
#include "tools/observe/packet_text.h"
#include "tools/observe/socket_owner.h"

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <nlohmann/json.hpp>

#include <chrono>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <string>

namespace ibemu::fabric {
class Subnet;
}

namespace ibemu::tools {

class PacketCapture;
struct SubnetSplit;

class WebView {
public:
	static constexpr size_t kMaxConnections = 32;
	static constexpr size_t kMaxPerClient = 8;
	static constexpr std::chrono::seconds kIdle{ 30 };
	static constexpr std::chrono::milliseconds kStateEvery{ 250 };
	static constexpr unsigned kBuildShare = 10;
	static constexpr size_t kRecentMads = 100;

	/* `extra` adds to /api/state what the daemon knows (the instance,
	 * its faults and events). */
	WebView(boost::asio::io_context &io, fabric::Subnet &subnet, PacketCapture &capture,
		std::function<nlohmann::ordered_json()> extra, const SubnetSplit *split = nullptr);
	~WebView();
	WebView(const WebView &) = delete;
	WebView &operator=(const WebView &) = delete;

	/* Listens on "ADDR:PORT" (port 0: any free one); 0 or -errno with
	 * err set. */
	int listen(const std::string &where, std::string &err);
	/* "http://ADDR:PORT/" once listening */
	std::string url() const { return url_; }
	void close();

	/* The answer to a GET of target, as status, content type and body
	 * (the transport-free part, for tests). The body is shared: every
	 * request for an unchanged state is sent the same one. */
	struct Answer {
		unsigned status = 200;
		std::string type;
		std::shared_ptr<const std::string> data;
		/* the picture: the "picture" of the state it was drawn for (sent
		 * as X-Picture; it lags the state's while builds are spaced) */
		std::optional<size_t> picture;
		const std::string &body() const { return *data; }
	};
	Answer get(const std::string &target);

	/* For `ibemu status --json`: connections open, clients, connections
	 * closed to make room, how often the state, the picture and the sweep
	 * were built, and the MADs recorded. */
	nlohmann::ordered_json stats() const;

private:
	class Session;

	/* An answer built from the fabric again only when `key` changed (see
	 * the top) */
	struct Cached {
		std::optional<Answer> answer;
		size_t key = 0;
		emu::Clock::time_point checked{}, nextBuild{};
		uint64_t builds = 0;
		Answer get(const std::function<size_t()> &keyOf, const std::function<Answer()> &build);
	};

	void accept();
	void admit(boost::asio::ip::tcp::socket s);
	Answer state();
	Answer picture();
	Answer sweep();
	void decodeRecent();
	bool allowedHost(const std::string &host) const;

	boost::asio::io_context &io_;
	fabric::Subnet &subnet_;
	PacketCapture &capture_;
	std::function<nlohmann::ordered_json()> extra_;
	const SubnetSplit *split_; /* the topology's hosts, for the picture */
	boost::asio::ip::tcp::acceptor acceptor_;
	boost::asio::steady_timer retry_;
	std::string url_;
	std::string host_, hostAlias_, port_; /* what a request's Host must name; host_ "": any */
	std::set<std::shared_ptr<Session>> sessions_;
	SocketOwner owners_;
	uint64_t evicted_ = 0; /* connections closed to make room */
	fabric::MadRing ring_; /* set on the fabric from the start */
	uint64_t decoded_ = 0; /* MADs of the ring decoded into recent_ */
	std::deque<nlohmann::ordered_json> recent_; /* the last kRecentMads, for the page */
	PacketText text_;
	Cached state_, picture_, sweep_;
};

} /* namespace ibemu::tools */
