// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
#include "tools/control/control_socket.h"
#include "tools/control/json_text.h"

#include <boost/asio/read_until.hpp>
#include <boost/asio/streambuf.hpp>
#include <boost/asio/write.hpp>

#include <array>
#include <cerrno>
#include <cstring>
#include <deque>
#include <utility>
#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

namespace ibemu::tools {

using boost::asio::local::stream_protocol;

struct ControlSocket::Conn {
	explicit Conn(stream_protocol::socket s) : sock(std::move(s)), in(kMaxLine) {}
	stream_protocol::socket sock;
	boost::asio::streambuf in;
	Json client;
	bool open = true;
	uint64_t since = 0; /* the how-manieth accepted */
	bool reserved = false; /* past kMaxClients: the requests that are always served only */
	bool busy = false; /* a request of it is running */
	bool watching = false; /* for the client going away, while busy */
	Cancel cancel; /* what ends the running request */

	/* a stream: lines still to send, and whether it ends after them */
	std::deque<std::string> out;
	size_t queued = 0;
	bool writing = false;
	bool closing = false;
	std::function<void()> onClosed;
	std::array<char, 256> discard;
};

/* Holds its connection weakly: a stream outliving the client, or the
 * socket, writes nowhere. */
class ControlSocket::ConnStream : public ControlSocket::Stream {
public:
	ConnStream(ControlSocket &owner, const std::shared_ptr<Conn> &c) : owner_(owner), conn_(c) {}

	bool write(std::string line) override
	{
		auto c = conn_.lock();
		if (!c || !c->open || c->closing || c->queued + line.size() + 1 > kMaxQueued)
			return false;
		line += '\n';
		c->queued += line.size();
		c->out.push_back(std::move(line));
		owner_.flush(c);
		return true;
	}
	void close() override
	{
		auto c = conn_.lock();
		if (!c || !c->open)
			return;
		c->closing = true;
		c->onClosed = nullptr;
		owner_.flush(c);
	}
	bool open() const override
	{
		auto c = conn_.lock();
		return c && c->open && !c->closing;
	}
	void onClosed(std::function<void()> fn) override
	{
		if (auto c = conn_.lock(); c && c->open)
			c->onClosed = std::move(fn);
	}

private:
	ControlSocket &owner_;
	std::weak_ptr<Conn> conn_;
};

ControlSocket::ControlSocket(boost::asio::io_context &io, Handler handler)
	: handler_(std::move(handler)), acceptor_(io), retry_(io)
{}

ControlSocket::~ControlSocket()
{
	close();
}

namespace {

/* How deep a line's arrays and objects nest (strings skipped): nlohmann's
 * dump() and copies recurse, so a request nested deeper than any real one
 * is refused before it is parsed */
constexpr unsigned kMaxDepth = 16;

bool tooDeep(const std::string &line)
{
	unsigned depth = 0;
	bool inString = false;
	for (size_t i = 0; i < line.size(); i++) {
		char ch = line[i];
		if (inString) {
			if (ch == '\\')
				i++;
			else if (ch == '"')
				inString = false;
		} else if (ch == '"') {
			inString = true;
		} else if (ch == '[' || ch == '{') {
			if (++depth > kMaxDepth)
				return true;
		} else if ((ch == ']' || ch == '}') && depth > 0) {
			depth--;
		}
	}
	return false;
}

} /* namespace */

int ControlSocket::listen(const std::string &path, uid_t owner, std::string &err)
{
	owner_ = owner;
	if (path.size() >= sizeof(sockaddr_un::sun_path)) {
		err = "control socket " + path + ": the run directory's path is too long for a Unix socket (" +
			std::to_string(sizeof(sockaddr_un::sun_path) - 1) + " bytes at most)";
		return -ENAMETOOLONG;
	}
	unlink(path.c_str()); /* one left by a daemon that died; the pid lock says it is ours */
	boost::system::error_code ec;
	acceptor_.open(stream_protocol(), ec);
	/* created 0600: nobody else may connect, not even between bind and chmod */
	mode_t old = umask(0077);
	if (!ec)
		acceptor_.bind(stream_protocol::endpoint(path), ec);
	umask(old);
	if (!ec)
		acceptor_.listen(boost::asio::socket_base::max_listen_connections, ec);
	if (ec) {
		err = "control socket " + path + ": " + ec.message();
		acceptor_.close(ec);
		return -EIO;
	}
	path_ = path;
	accept();
	return 0;
}

void ControlSocket::close()
{
	boost::system::error_code ec;
	retry_.cancel();
	if (acceptor_.is_open()) {
		acceptor_.close(ec);
		unlink(path_.c_str());
	}
	for (const auto &c : conns_) {
		c->open = false;
		c->sock.close(ec);
	}
	conns_.clear();
}

void ControlSocket::accept()
{
	acceptor_.async_accept([this](const boost::system::error_code &ec, stream_protocol::socket s) {
		if (!ec) /* not inherited by what the daemon runs */
			fcntl(s.native_handle(), F_SETFD, FD_CLOEXEC);
		if (ec == boost::asio::error::operation_aborted || !acceptor_.is_open())
			return;
		if (ec) { /* EMFILE and the like: try again a little later, not in a loop */
			retry_.expires_after(std::chrono::milliseconds(100));
			retry_.async_wait([this](const boost::system::error_code &e) {
				if (!e && acceptor_.is_open())
					accept();
			});
			return;
		}
		auto c = std::make_shared<Conn>(std::move(s));
		ucred cred{};
		socklen_t len = sizeof cred;
		bool allowed = getsockopt(c->sock.native_handle(), SOL_SOCKET, SO_PEERCRED, &cred, &len) == 0 &&
			(cred.uid == 0 || cred.uid == owner_);
		c->client = { { "source", "control" }, { "pid", cred.pid } };
		c->since = ++accepted_;
		if (allowed)
			admit(c);
		conns_.insert(c);
		if (!allowed)
			send(c,
			     { { "ok", false }, { "error", "permission denied: root or the instance's owner only" } },
			     true);
		else
			readNext(c);
		accept();
	});
}

/* A place for a connection: one of kMaxClients, else one of the reserve,
 * taking the oldest reserved one's when it is full */
void ControlSocket::admit(const std::shared_ptr<Conn> &c)
{
	size_t reserved = 0;
	std::shared_ptr<Conn> oldest;
	for (const auto &o : conns_)
		if (o->reserved) {
			reserved++;
			if (!oldest || o->since < oldest->since)
				oldest = o;
		}
	if (conns_.size() - reserved < kMaxClients)
		return;
	c->reserved = true;
	if (reserved >= kReserved)
		drop(oldest);
}

void ControlSocket::readNext(const std::shared_ptr<Conn> &c)
{
	boost::asio::async_read_until(c->sock, c->in, '\n', [this, c](const boost::system::error_code &ec, size_t n) {
		if (!c->open)
			return;
		if (ec == boost::asio::error::not_found) {
			send(c, { { "ok", false }, { "error", "request longer than 1 MiB" } }, true);
			return;
		}
		if (ec) /* the client went away; a partial line asked for nothing */
			return drop(c);
		std::string line(boost::asio::buffers_begin(c->in.data()),
				 boost::asio::buffers_begin(c->in.data()) + n);
		c->in.consume(n);
		if (tooDeep(line)) {
			send(c,
			     { { "ok", false },
			       { "error", "the request nests deeper than " + std::to_string(kMaxDepth) } },
			     false);
			return;
		}
		Json req = Json::parse(line, nullptr, false);
		if (req.is_discarded()) {
			send(c, { { "ok", false }, { "error", "the request is not JSON" } }, false);
			return;
		}
		/* one look in the tables: a stream, an op of the daemon's own,
		 * else the default handler (the fabric's operations) */
		const Handler *handler = &handler_;
		bool always = false;
		if (req.is_object() && req.contains("op") && req["op"].is_string()) {
			const std::string &op = req["op"].get_ref<const std::string &>();
			always = always_.contains(op);
			if (auto it = streams_.find(op); it != streams_.end() && !c->reserved)
				return startStream(c, it->second, req);
			if (auto it = ops_.find(op); it != ops_.end())
				handler = &it->second;
		}
		if (c->reserved && !always) {
			send(c,
			     { { "ok", false },
			       { "error", "too many control connections (" + std::to_string(kMaxClients) +
						  "): past them only scenario.stop, state and check are served" } },
			     true);
			return;
		}
		Json id = req.is_object() && req.contains("id") ? req["id"] : Json();
		c->busy = true;
		Cancel cancel;
		try {
			cancel = (*handler)(req, c->client, [this, c, id](Json reply) {
				c->busy = false;
				c->cancel = nullptr;
				if (!id.is_null())
					reply["id"] = id;
				send(c, reply, false);
			});
		} catch (const Json::exception &e) {
			/* a field of a type its handler did not look at: a
			 * refusal, never the daemon's end */
			if (c->busy) {
				c->busy = false;
				std::string why = std::string("bad request: ") + e.what();
				send(c, { { "ok", false }, { "error", why } }, false);
			}
			return;
		}
		/* no read is pending while it runs: watch for the client going */
		if (c->busy && c->open) {
			c->cancel = std::move(cancel);
			watchHangup(c);
		}
	});
}

/* Waits for the client to close its end (EPOLLHUP; a half close only
 * makes the socket readable, and a request sent ahead waits unread): then
 * its place is free and its running request cancelled */
void ControlSocket::watchHangup(const std::shared_ptr<Conn> &c)
{
	if (c->watching)
		return;
	c->watching = true;
	c->sock.async_wait(stream_protocol::socket::wait_error, [this, c](const boost::system::error_code &ec) {
		c->watching = false;
		if (!ec)
			drop(c);
	});
}

void ControlSocket::send(const std::shared_ptr<Conn> &c, const Json &reply, bool thenClose)
{
	if (!c->open)
		return;
	auto text = std::make_shared<std::string>(jsonText(reply) + "\n");
	boost::asio::async_write(c->sock, boost::asio::buffer(*text),
				 [this, c, text, thenClose](const boost::system::error_code &ec, size_t) {
					 if (!c->open)
						 return;
					 if (ec || thenClose) {
						 c->open = false;
						 boost::system::error_code ignored;
						 c->sock.close(ignored);
						 conns_.erase(c);
						 return;
					 }
					 readNext(c);
				 });
}

void ControlSocket::addStream(std::string op, StreamHandler fn)
{
	streams_[std::move(op)] = std::move(fn);
}

void ControlSocket::addOp(std::string op, Handler fn, bool always)
{
	if (always)
		always_.insert(op);
	ops_[std::move(op)] = std::move(fn);
}

void ControlSocket::startStream(const std::shared_ptr<Conn> &c, const StreamHandler &fn, const Json &req)
{
	/* the client says nothing more; reading only tells when it goes away */
	startWatch(c);
	fn(req, c->client, std::make_shared<ConnStream>(*this, c));
}

void ControlSocket::startWatch(const std::shared_ptr<Conn> &c)
{
	c->sock.async_read_some(boost::asio::buffer(c->discard),
				[this, c](const boost::system::error_code &ec, size_t) {
					if (!c->open)
						return;
					if (ec)
						return drop(c);
					startWatch(c);
				});
}

void ControlSocket::flush(const std::shared_ptr<Conn> &c)
{
	if (c->writing || !c->open)
		return;
	if (c->out.empty()) {
		if (c->closing) {
			c->open = false;
			boost::system::error_code ignored;
			c->sock.close(ignored);
			conns_.erase(c);
		}
		return;
	}
	c->writing = true;
	boost::asio::async_write(c->sock, boost::asio::buffer(c->out.front()),
				 [this, c](const boost::system::error_code &ec, size_t) {
					 c->writing = false;
					 if (!c->open)
						 return;
					 if (ec)
						 return drop(c);
					 c->queued -= c->out.front().size();
					 c->out.pop_front();
					 flush(c);
				 });
}

/* The client went away (or its reserved place was taken): what it still
 * had running ends */
void ControlSocket::drop(const std::shared_ptr<Conn> &c)
{
	if (!c->open)
		return;
	c->open = false;
	boost::system::error_code ignored;
	c->sock.close(ignored);
	conns_.erase(c);
	if (auto fn = std::move(c->onClosed))
		fn();
	if (auto fn = std::exchange(c->cancel, nullptr))
		fn();
}

} /* namespace ibemu::tools */
