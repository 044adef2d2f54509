// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// The launch door's messages (docs/transports.md, "Launching across
// hosts"): how an `ibemu exec` that runs under an ibemu seccomp filter
// (which no second filter with a listener can join) asks the daemon to run
// `ibemu exec [--host H] -- CMD` for it, outside any filter.
//
// Over <run dir>/launch.sock (mode 0600, the daemon's user's):
//   caller -> daemon: a RequestHead, with the caller's descriptors 0, 1
//     and 2 (SCM_RIGHTS), then `bytes` bytes of NUL-terminated strings:
//     the host ("" for the whole instance), the working directory, argc
//     words of the command, envc words of its environment;
//   caller -> daemon, while it runs: a uint32_t signal number per signal
//     the caller got (SIGINT, SIGTERM, SIGHUP), for the command's process
//     group; the caller's end of the connection closing kills the group;
//   daemon -> caller: one Answer, and the connection ends.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace ibemu::tools::launch {

constexpr uint32_t kMagic = 0x31626c69; /* "ilb1" */
constexpr size_t kMaxBytes = 1 << 20; /* of the strings together */
constexpr uint32_t kMaxWords = 16384; /* argc + envc */
constexpr unsigned kMaxLaunches = 64; /* connections a daemon serves at once: one more gets EAGAIN */

struct RequestHead {
	uint32_t magic = kMagic;
	uint32_t argc = 0;
	uint32_t envc = 0;
	uint32_t bytes = 0;
};

struct Request {
	std::string host;
	std::string cwd;
	std::vector<std::string> argv; /* at least one word */
	std::vector<std::string> env;
};

enum class AnswerKind : uint32_t {
	Refused = 1, /* value: an errno; nothing ran */
	Exited = 2, /* value: the exit status */
	Signaled = 3, /* value: the signal that ended it */
};

struct Answer {
	AnswerKind kind;
	int32_t value;
};

/* The head and the strings of r; false when it breaks the limits above. */
bool encode(const Request &r, RequestHead &head, std::string &bytes);
/* The strings after head: 0, or -EINVAL (not as many words as the head
 * says, a word not NUL-terminated, no command). */
int decode(const RequestHead &head, const std::string &bytes, Request &r);
/* A head the daemon may read the strings of: magic, and within the limits. */
bool headOk(const RequestHead &head);

} /* namespace ibemu::tools::launch */
