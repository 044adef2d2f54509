// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// The daemon's control socket: a Unix stream socket in the run directory
// (RUNDIR/control.sock, mode 0600) that takes one JSON request per line
// and answers each with one JSON line, in order. docs/faults.md has the
// protocol.
//
// Only root and the run directory's owner may talk to it (the file mode,
// and SO_PEERCRED checked at accept). A line longer than kMaxLine, or one
// that is not JSON, gets an error reply; a client that goes away in the
// middle of a line has asked for nothing; one nested absurdly deep is
// refused unparsed.
//
// At most kMaxClients connections may ask for anything. Past them, kReserved
// more are taken for the requests that must always be served (addOp's
// `always`: scenario.stop, state, check), each answered at once; any other
// request there is refused and the connection closed. When the reserve is
// full too, a new connection takes the place of the oldest reserved one,
// which is closed: whoever holds the other places, `ibemu scenario stop`
// is always served.
//
// A request still running (a link.flap) keeps watching its connection: a
// client that goes away (closes its end; a shutdown of its writing half
// alone is not going away) frees its place at once and cancels what the
// request still had to do.
//
// A stream operation (a capture) turns its connection into a one-way
// flow of lines from the daemon: the client sends nothing more, and
// closing its end ends the stream. Lines that find the client kMaxQueued
// bytes behind are not queued (write() says so), so a slow reader loses
// lines, never stalls the daemon.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/local/stream_protocol.hpp>
#include <boost/asio/steady_timer.hpp>
#include <nlohmann/json.hpp>

#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <sys/types.h>

namespace ibemu::tools {

class ControlSocket {
public:
	using Json = nlohmann::ordered_json;
	using Reply = std::function<void(Json response)>;
	/* Ends a request still running, when its client goes away */
	using Cancel = std::function<void()>;
	/* Answers a request; `client` is who sent it ({"source": "control",
	 * "pid": N}). Calls reply once, now or later; a request answered later
	 * returns what cancels it (or nothing). */
	using Handler = std::function<Cancel(const Json &req, const Json &client, Reply reply)>;

	static constexpr size_t kMaxLine = 1 << 20;
	static constexpr size_t kMaxClients = 16;
	static constexpr size_t kReserved = 4;
	static constexpr size_t kMaxQueued = 8 << 20;

	/* The daemon's end of a stream. */
	class Stream {
	public:
		virtual ~Stream() = default;
		/* Queues one line (without its newline); false when the client
		 * is kMaxQueued bytes behind or gone, and the line was dropped. */
		virtual bool write(std::string line) = 0;
		/* Sends what is queued, then closes the connection. */
		virtual void close() = 0;
		virtual bool open() const = 0;
		/* Called once when the client goes away (not after close()). */
		virtual void onClosed(std::function<void()> fn) = 0;
	};
	/* Takes over a connection whose request's "op" named it. */
	using StreamHandler = std::function<void(const Json &req, const Json &client, std::shared_ptr<Stream> s)>;

	/* `handler` answers every request whose op was not added below. */
	ControlSocket(boost::asio::io_context &io, Handler handler);
	~ControlSocket();

	/* Binds and listens at path; 0 or -errno with err set. */
	int listen(const std::string &path, uid_t owner, std::string &err);
	/* Stops accepting and closes every connection. */
	void close();
	/* Requests with {"op": op} are streams, handed to fn. */
	void addStream(std::string op, StreamHandler fn);
	/* Requests with {"op": op} are answered by fn; with `always`, also
	 * on the reserved connections (fn answers at once, and cheaply). */
	void addOp(std::string op, Handler fn, bool always = false);

private:
	struct Conn;
	class ConnStream;

	void accept();
	void readNext(const std::shared_ptr<Conn> &c);
	void send(const std::shared_ptr<Conn> &c, const Json &reply, bool thenClose);
	void startStream(const std::shared_ptr<Conn> &c, const StreamHandler &fn, const Json &req);
	void startWatch(const std::shared_ptr<Conn> &c);
	void watchHangup(const std::shared_ptr<Conn> &c);
	void admit(const std::shared_ptr<Conn> &c);
	void flush(const std::shared_ptr<Conn> &c);
	void drop(const std::shared_ptr<Conn> &c);

	Handler handler_;
	boost::asio::local::stream_protocol::acceptor acceptor_;
	boost::asio::steady_timer retry_; /* accept again after an error */
	std::string path_;
	uid_t owner_ = 0;
	std::set<std::shared_ptr<Conn>> conns_;
	std::map<std::string, StreamHandler> streams_;
	std::map<std::string, Handler> ops_;
	std::set<std::string> always_; /* ops served on reserved connections */
	uint64_t accepted_ = 0; /* connections so far: the oldest reserved one goes first */
};

} /* namespace ibemu::tools */
