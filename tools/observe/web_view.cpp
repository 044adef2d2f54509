// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
#include "tools/observe/web_view.h"

#include "fabric/packet_format.h"
#include "fabric/subnet.h"
#include "tools/control/control_socket.h"
#include "tools/control/json_text.h"
#include "tools/observe/fabric_picture.h"
#include "tools/observe/packet_capture.h"
#include "tools/observe/packet_text.h"
#include "tools/observe/sweep_replay.h"
#include "tools/observe/web_state.h"

#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <map>

#include <fcntl.h>

namespace ibemu::tools {

namespace beast = boost::beast;
namespace http = beast::http;
using tcp = boost::asio::ip::tcp;
using Json = nlohmann::ordered_json;

/* The page and its script (tools/observe/web_page.cpp) */
extern const char kWebPage[];
extern const char kWebScript[];

namespace {

WebView::Answer answer(unsigned status, std::string type, std::string body)
{
	return { status, std::move(type), std::make_shared<const std::string>(std::move(body)) };
}

WebView::Answer text(unsigned status, std::string body)
{
	return answer(status, "text/plain", std::move(body));
}

} /* namespace */

/* One HTTP connection: requests in order, one at a time */
class WebView::Session : public std::enable_shared_from_this<Session> {
public:
	Session(WebView &view, tcp::socket s, std::string client)
		: client(std::move(client)), used(emu::Clock::now()), view_(view), stream_(std::move(s))
	{}

	const std::string client; /* whose it is (WebView::admit) */
	emu::Clock::time_point used; /* when a request last came or went */

	void start() { read(); }
	void close()
	{
		beast::error_code ec;
		stream_.socket().shutdown(tcp::socket::shutdown_both, ec);
		stream_.close();
	}

private:
	void read()
	{
		parser_.emplace();
		parser_->header_limit(8 * 1024);
		parser_->body_limit(0); /* GETs have no body */
		stream_.expires_after(kIdle);
		http::async_read(stream_, buffer_, *parser_,
				 [self = shared_from_this()](beast::error_code ec, size_t) { self->onRead(ec); });
	}

	void onRead(beast::error_code ec)
	{
		if (ec == http::error::body_limit) /* nothing here takes a body */
			return reply(text(413, "no request bodies here\n"), 11, false, false);
		if (ec)
			return done();
		used = emu::Clock::now();
		const auto &req = parser_->get();
		Answer a;
		auto host = req.find(http::field::host);
		if (req.method() != http::verb::get && req.method() != http::verb::head)
			a = text(405, "only GET\n");
		else if (!view_.host_.empty() && (host == req.end() || !view_.allowedHost(std::string(host->value()))))
			a = text(421, "this server answers to its own address only\n");
		else
			a = view_.get(std::string(req.target()));
		reply(std::move(a), req.version(), req.keep_alive(), req.method() == http::verb::head);
	}

	/* The body is sent from the answer's own string, which the write
	 * keeps alive: a state shared by every request is never copied. */
	void reply(Answer a, unsigned version, bool keepAlive, bool head)
	{
		using Body = http::span_body<const char>;
		auto res = std::make_shared<http::response<Body>>(static_cast<http::status>(a.status), version);
		res->set(http::field::server, "ibemud");
		res->set(http::field::content_type, a.type);
		res->set(http::field::cache_control, "no-store");
		res->set("X-Content-Type-Options", "nosniff");
		if (a.picture)
			res->set("X-Picture", std::to_string(*a.picture));
		/* the page's own script only: markup that slipped into the SVG runs nothing */
		res->set("Content-Security-Policy",
			 "default-src 'self'; style-src 'self' 'unsafe-inline'; frame-ancestors 'none'");
		res->keep_alive(keepAlive);
		if (!head)
			res->body() = Body::value_type(a.data->data(), a.data->size());
		res->prepare_payload();
		http::async_write(stream_, *res,
				  [self = shared_from_this(), res, body = a.data](beast::error_code e, size_t) {
					  self->used = emu::Clock::now();
					  if (e || !res->keep_alive())
						  return self->done();
					  self->read();
				  });
	}

	void done()
	{
		close();
		view_.sessions_.erase(shared_from_this());
	}

	WebView &view_;
	beast::tcp_stream stream_;
	beast::flat_buffer buffer_;
	std::optional<http::request_parser<http::empty_body>> parser_;
};

WebView::WebView(boost::asio::io_context &io, fabric::Subnet &subnet, PacketCapture &capture,
		 std::function<Json()> extra, const SubnetSplit *split)
	: io_(io), subnet_(subnet), capture_(capture), extra_(std::move(extra)), split_(split), acceptor_(io),
	  retry_(io)
{
	subnet_.setMadRing(&ring_);
}

WebView::~WebView()
{
	close();
}

int WebView::listen(const std::string &where, std::string &err)
{
	std::string addr = "127.0.0.1";
	unsigned port = 0;
	size_t colon = where.rfind(':');
	std::string portText = colon == std::string::npos ? where : where.substr(colon + 1);
	if (colon != std::string::npos)
		addr = where.substr(0, colon);
	if (addr.size() > 2 && addr.front() == '[' && addr.back() == ']')
		addr = addr.substr(1, addr.size() - 2);
	auto [p, ec] = std::from_chars(portText.data(), portText.data() + portText.size(), port);
	if (!where.empty() && (ec != std::errc() || p != portText.data() + portText.size() || port > 65535)) {
		err = "--web " + where + ": give ADDR:PORT, e.g. 127.0.0.1:8080 (port 0: any free one)";
		return -EINVAL;
	}
	boost::system::error_code e;
	auto ip = boost::asio::ip::make_address(addr, e);
	if (e) {
		err = "--web " + where + ": \"" + addr + "\" is not an IP address";
		return -EINVAL;
	}
	tcp::endpoint ep(ip, static_cast<uint16_t>(port));
	acceptor_.open(ep.protocol(), e);
	if (!e)
		acceptor_.set_option(tcp::acceptor::reuse_address(true), e);
	if (!e)
		acceptor_.bind(ep, e);
	if (!e)
		acceptor_.listen(boost::asio::socket_base::max_listen_connections, e);
	if (e) {
		err = fmt::format("--web {}: {}", where.empty() ? addr : where, e.message());
		acceptor_.close(e);
		return -EADDRINUSE;
	}
	const unsigned bound = acceptor_.local_endpoint().port();
	const std::string shown = ip.is_v6() ? "[" + ip.to_string() + "]" : ip.to_string();
	url_ = fmt::format("http://{}:{}/", shown, bound);
	/* an address for everyone (0.0.0.0, ::) was the user's choice: any
	 * Host; otherwise only our own names */
	if (!ip.is_unspecified()) {
		host_ = shown;
		port_ = std::to_string(bound);
		if (ip.is_loopback())
			hostAlias_ = "localhost";
	}
	accept();
	return 0;
}

/* Host: NAME[:PORT], NAME an address ([v6] bracketed) or, on loopback,
 * localhost; names compare without case, and no port is port 80 */
bool WebView::allowedHost(const std::string &host) const
{
	std::string name = host, port = "80";
	size_t colon = host.rfind(':');
	if (colon != std::string::npos && host.find(']', colon) == std::string::npos) {
		name = host.substr(0, colon);
		port = host.substr(colon + 1);
	}
	std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return std::tolower(c); });
	if (port != port_)
		return false;
	return name == host_ || (!hostAlias_.empty() && name == hostAlias_);
}

void WebView::close()
{
	boost::system::error_code ec;
	retry_.cancel();
	acceptor_.close(ec);
	for (const auto &s : sessions_)
		s->close();
	sessions_.clear();
	subnet_.setMadRing(nullptr);
}

void WebView::accept()
{
	acceptor_.async_accept([this](const boost::system::error_code &ec, tcp::socket s) {
		if (!ec) /* not inherited by what the daemon runs */
			fcntl(s.native_handle(), F_SETFD, FD_CLOEXEC);
		if (ec == boost::asio::error::operation_aborted || !acceptor_.is_open())
			return;
		if (ec) { /* out of descriptors: try again a little later */
			retry_.expires_after(std::chrono::milliseconds(100));
			retry_.async_wait([this](const boost::system::error_code &e) {
				if (!e && acceptor_.is_open())
					accept();
			});
			return;
		}
		admit(std::move(s));
		accept();
	});
}

/* Who a connection is, for the caps: the user who owns the other end when
 * it is a socket of this machine, else the address it comes from. Then
 * room for it (see web_view.h): the client's least recently used
 * connection goes when it has kMaxPerClient, else, when all are taken,
 * the least recently used of the client that would hold the most with
 * it (its own on a tie). */
void WebView::admit(tcp::socket s)
{
	boost::system::error_code e1, e2;
	const tcp::endpoint local = s.local_endpoint(e1), peer = s.remote_endpoint(e2);
	if (e1 || e2)
		return; /* gone already */
	std::string client = "address " + peer.address().to_string();
	if (auto uid = owners_.uidOf(local, peer))
		client = "uid " + std::to_string(*uid);
	/* the connections each client would hold with this one */
	std::map<std::string, size_t> held{ { client, 1 } };
	for (const auto &x : sessions_)
		held[x->client]++;
	std::string from; /* whose connection goes */
	if (held[client] > kMaxPerClient)
		from = client;
	else if (sessions_.size() >= kMaxConnections) {
		from = client; /* when no one holds more, its own */
		size_t most = held[client];
		for (const auto &[who, n] : held)
			if (n > most) {
				most = n;
				from = who;
			}
	}
	if (!from.empty()) {
		std::shared_ptr<Session> oldest;
		for (const auto &x : sessions_)
			if (x->client == from && (!oldest || x->used < oldest->used))
				oldest = x;
		/* a new client when every one holds a single connection (as
		 * many uids as a user namespace has): the least recently used
		 * of all goes, so there are never more than kMaxConnections */
		if (!oldest && sessions_.size() >= kMaxConnections)
			for (const auto &x : sessions_)
				if (!oldest || x->used < oldest->used)
					oldest = x;
		if (oldest) {
			oldest->close();
			sessions_.erase(oldest);
			evicted_++;
		}
	}
	auto session = std::make_shared<Session>(*this, std::move(s), std::move(client));
	sessions_.insert(session);
	session->start();
}

nlohmann::ordered_json WebView::stats() const
{
	std::set<std::string> clients;
	for (const auto &x : sessions_)
		clients.insert(x->client);
	return { { "connections", sessions_.size() },
		 { "clients", clients.size() },
		 { "evicted", evicted_ },
		 { "state_builds", state_.builds },
		 { "picture_builds", picture_.builds },
		 { "sweep_builds", sweep_.builds },
		 { "mads_recorded", ring_.count() } };
}

WebView::Answer WebView::Cached::get(const std::function<size_t()> &keyOf, const std::function<Answer()> &build)
{
	const auto now = emu::Clock::now();
	if (answer && now - checked < kStateEvery)
		return *answer;
	checked = now;
	const size_t k = keyOf();
	if (answer && (k == key || now < nextBuild))
		return *answer; /* unchanged, or changed too soon after the last build */
	answer = build();
	key = k;
	builds++;
	const auto end = emu::Clock::now();
	nextBuild = end + (end - now) * (kBuildShare - 1);
	return *answer;
}

/* The MADs the ring recorded since the last call, as the text trace
 * shows them: all decoded (a PortInfo Set is told against the last answer
 * seen), the last kRecentMads kept */
void WebView::decodeRecent()
{
	const uint64_t n = ring_.count();
	for (uint64_t seq = std::max(decoded_, n - std::min<uint64_t>(n, fabric::MadRing::kSize)); seq < n; seq++) {
		const fabric::MadRing::Entry &e = *ring_.find(seq);
		const std::vector<uint8_t> bytes = fabric::encodeMadPacket(e.pkt);
		const PacketPlace at = capture_.place(*e.port, e.out, bytes);
		recent_.push_back(
			{ { "t", e.ns }, { "port", at.port }, { "dir", e.out ? "out" : "in" }, { "text", text_.describe(bytes, at) } });
		if (recent_.size() > kRecentMads)
			recent_.pop_front();
	}
	decoded_ = n;
}

/* /api/state: the fabric's state, the recent MADs and what the daemon adds */
WebView::Answer WebView::state()
{
	Json more;
	return state_.get(
		[&] {
			if (extra_)
				more = extra_();
			size_t key = stateKey(subnet_);
			key = key * 1000003u ^ std::hash<std::string>{}(jsonText(more));
			return key * 1000003u ^ size_t(ring_.count());
		},
		[&] {
			Json j = fabricState(subnet_);
			decodeRecent();
			j["mads"] = Json::array();
			for (const auto &m : recent_)
				j["mads"].push_back(m);
			if (more.is_object())
				for (auto &[k, v] : more.items())
					j[k] = v;
			return answer(200, "application/json", jsonText(j));
		});
}

/* /api/picture.svg: drawn again only when what it draws changed; its
 * X-Picture says for which state, so that a page fetches it again while
 * it lags */
WebView::Answer WebView::picture()
{
	Answer a = picture_.get([&] { return pictureKey(subnet_); },
				[&] {
					std::string svg, err;
					if (!renderDot(fabricDot(subnet_, { .split = split_ }), "svg", svg, err))
						return text(500, err + "\n");
					return answer(200, "image/svg+xml", std::move(svg));
				});
	a.picture = picture_.key;
	return a;
}

/* /api/sweep: the last sweep that changed the fabric, built again when
 * another one is recorded or the fabric changed (its cables down or
 * pulled now are left out) */
WebView::Answer WebView::sweep()
{
	return sweep_.get([&] { return size_t(ring_.sweepEnd()) * 1000003u ^ stateKey(subnet_); },
			  [&] { return answer(200, "application/json", jsonText(sweepReplay(subnet_, ring_, capture_))); });
}

WebView::Answer WebView::get(const std::string &target)
{
	/* the page and its script: made once */
	static const Answer page = answer(200, "text/html; charset=utf-8", kWebPage);
	static const Answer script = answer(200, "text/javascript; charset=utf-8", kWebScript);
	const std::string path = target.substr(0, target.find('?'));
	if (path == "/" || path == "/index.html")
		return page;
	if (path == "/app.js")
		return script;
	if (path == "/api/state")
		return state();
	if (path == "/api/picture.svg")
		return picture();
	if (path == "/api/sweep")
		return sweep();
	if (path.rfind("/api/node/", 0) == 0) {
		const std::string id = path.substr(10);
		unsigned index = 0;
		auto [p, ec] = std::from_chars(id.data(), id.data() + id.size(), index);
		if (ec != std::errc() || p != id.data() + id.size() || index >= subnet_.nodes().size())
			return answer(404, "application/json", R"({"error":"no such node"})");
		return answer(200, "application/json", jsonText(nodeState(*subnet_.nodes()[index])));
	}
	return text(404, "not found\n");
}

} /* namespace ibemu::tools */
