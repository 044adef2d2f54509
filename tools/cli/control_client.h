// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// The CLI's end of an instance's control socket (tools/control/control_socket.h):
// one JSON request per line, one reply line each, or, for a stream
// (`ibemu capture`), a reply and then lines until either side closes.
#pragma once

#include <nlohmann/json.hpp>

#include <string>

namespace ibemu::tools {

/* Exit codes of the commands that talk to a daemon: 1 the daemon
 * refused, 2 bad usage, 3 the instance is not running */
constexpr int kRefused = 1, kUsage = 2, kNotRunning = 3;

class ControlClient {
public:
	using Json = nlohmann::ordered_json;

	ControlClient() = default;
	~ControlClient();
	ControlClient(const ControlClient &) = delete;
	ControlClient &operator=(const ControlClient &) = delete;

	/* 0, or an exit code with the reason printed */
	int connect(const std::string &instance, const char *cmd);
	/* Sends a request and waits for its reply; false (printed) when the
	 * daemon went away */
	bool call(const Json &req, Json &reply, const char *cmd);
	/* The same for a request already on one line, sent as it is */
	bool callLine(std::string line, Json &reply, const char *cmd);
	/* The next line of a stream: 1, 0 at its end, -1 (printed) for a line
	 * that is not JSON */
	int next(Json &line, const char *cmd);
	/* A whole line is already read in: next() will not wait. */
	bool hasLine() const { return in_.find('\n') != std::string::npos; }
	int fd() const { return fd_; }

private:
	bool readLine(std::string &line);

	int fd_ = -1;
	std::string in_;
};

} /* namespace ibemu::tools */
