// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
#include "tools/cli/control_client.h"

#include "tools/control/json_text.h"
#include "tools/instance/instance.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

namespace ibemu::tools {

ControlClient::~ControlClient()
{
	if (fd_ >= 0)
		close(fd_);
}

int ControlClient::connect(const std::string &instance, const char *cmd)
{
	Instance inst;
	std::string err;
	if (!makeInstance(instance, inst, err)) {
		fprintf(stderr, "%s: %s\n", cmd, err.c_str());
		return kUsage;
	}
	sockaddr_un addr{};
	addr.sun_family = AF_UNIX;
	std::string path = inst.controlSocket();
	if (path.size() >= sizeof addr.sun_path) {
		fprintf(stderr, "%s: the run directory's path is too long for a socket: %s\n", cmd, path.c_str());
		return kUsage;
	}
	memcpy(addr.sun_path, path.c_str(), path.size() + 1);
	fd_ = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd_ < 0 || ::connect(fd_, reinterpret_cast<sockaddr *>(&addr), sizeof addr) != 0) {
		int e = errno;
		if (e == EACCES || e == EPERM)
			fprintf(stderr, "%s: %s: permission denied (root or the instance's owner only)\n", cmd,
				path.c_str());
		else if (e == ENOENT || e == ECONNREFUSED)
			fprintf(stderr, "%s: instance \"%s\" is not running\n", cmd, instance.c_str());
		else
			fprintf(stderr, "%s: %s: %s\n", cmd, path.c_str(), strerror(e));
		return e == EACCES || e == EPERM ? kRefused : kNotRunning;
	}
	return 0;
}

bool ControlClient::call(const Json &req, Json &reply, const char *cmd)
{
	return callLine(jsonText(req), reply, cmd);
}

bool ControlClient::callLine(std::string line, Json &reply, const char *cmd)
{
	line += "\n";
	for (size_t off = 0; off < line.size();) {
		ssize_t n = send(fd_, line.data() + off, line.size() - off, MSG_NOSIGNAL);
		if (n <= 0) {
			fprintf(stderr, "%s: the daemon closed the control socket\n", cmd);
			return false;
		}
		off += size_t(n);
	}
	int r = next(reply, cmd);
	if (r == 0)
		fprintf(stderr, "%s: the daemon closed the control socket\n", cmd);
	return r == 1;
}

bool ControlClient::readLine(std::string &line)
{
	for (;;) {
		size_t nl = in_.find('\n');
		if (nl != std::string::npos) {
			line = in_.substr(0, nl);
			in_.erase(0, nl + 1);
			return true;
		}
		char buf[65536];
		/* a signal the program catches (^C of a capture) ends the wait */
		ssize_t n = read(fd_, buf, sizeof buf);
		if (n <= 0)
			return false;
		in_.append(buf, size_t(n));
	}
}

int ControlClient::next(Json &reply, const char *cmd)
{
	std::string line;
	if (!readLine(line))
		return 0;
	reply = Json::parse(line, nullptr, false);
	if (reply.is_discarded()) {
		fprintf(stderr, "%s: the daemon's reply is not JSON\n", cmd);
		return -1;
	}
	return 1;
}

} /* namespace ibemu::tools */
