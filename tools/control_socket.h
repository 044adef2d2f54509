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
// refused unparsed. At most kMaxClients at once.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/local/stream_protocol.hpp>
#include <boost/asio/steady_timer.hpp>
#include <nlohmann/json.hpp>

#include <functional>
#include <memory>
#include <set>
#include <string>
#include <sys/types.h>

namespace ibemu::tools {

class ControlSocket {
public:
	using Json = nlohmann::ordered_json;
	using Reply = std::function<void(Json response)>;
	/* Answers a request; `client` is who sent it ({"source": "control",
	 * "pid": N}). Calls reply once, now or later. */
	using Handler = std::function<void(const Json &req, const Json &client, Reply reply)>;

	static constexpr size_t kMaxLine = 1 << 20;
	static constexpr size_t kMaxClients = 16;

	ControlSocket(boost::asio::io_context &io, Handler handler);
	~ControlSocket();

	/* Binds and listens at path; 0 or -errno with err set. */
	int listen(const std::string &path, uid_t owner, std::string &err);
	/* Stops accepting and closes every connection. */
	void close();

private:
	struct Conn;

	void accept();
	void readNext(const std::shared_ptr<Conn> &c);
	void send(const std::shared_ptr<Conn> &c, const Json &reply, bool thenClose);

	Handler handler_;
	boost::asio::local::stream_protocol::acceptor acceptor_;
	boost::asio::steady_timer retry_; /* accept again after an error */
	std::string path_;
	uid_t owner_ = 0;
	std::set<std::shared_ptr<Conn>> conns_;
};

} /* namespace ibemu::tools */
