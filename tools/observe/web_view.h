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
//   GET /api/picture.svg   the fabric drawn by Graphviz (tools/observe/fabric_picture.h)
//   GET /api/node/N        node N's NodeInfo, PortInfo and LFT
//
// Read only: nothing on the page changes the fabric. It listens on
// 127.0.0.1 unless told otherwise, answers only requests whose Host is
// the address it listens on (no DNS rebinding), keeps at most
// kMaxConnections, and drops a connection idle for kIdle. The recent
// MADs come from a capture (tools/observe/packet_capture.h) that runs only while
// a page has asked for the state in the last kMadsIdle.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <nlohmann/json.hpp>

#include <chrono>
#include <deque>
#include <functional>
#include <memory>
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
	static constexpr std::chrono::seconds kIdle{ 30 };
	static constexpr std::chrono::seconds kMadsIdle{ 10 };
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
	 * (the transport-free part, for tests). */
	struct Answer {
		unsigned status = 200;
		std::string type;
		std::string body;
	};
	Answer get(const std::string &target);

private:
	class Session;
	class MadLog;

	void accept();
	bool allowedHost(const std::string &host) const;
	void touchMads();
	void touchMadsTimer();

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
	std::shared_ptr<MadLog> mads_; /* while pages poll */
	boost::asio::steady_timer madsTimer_;
	std::chrono::steady_clock::time_point lastPoll_;
	/* the picture, drawn again only when fabricState() says it changed */
	size_t pictureKey_ = 0;
	std::string picture_;
};

} /* namespace ibemu::tools */
