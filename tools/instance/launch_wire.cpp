// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// The launch door's messages (tools/instance/launch_wire.h).
#include "tools/instance/launch_wire.h"

#include <cerrno>
#include <cstring>

namespace ibemu::tools::launch {

bool headOk(const RequestHead &head)
{
	return head.magic == kMagic && head.argc >= 1 && head.argc <= kMaxWords && head.envc <= kMaxWords - head.argc &&
		head.bytes >= head.argc + 2 && head.bytes <= kMaxBytes;
}

bool encode(const Request &r, RequestHead &head, std::string &bytes)
{
	bytes.clear();
	for (const std::string *s : { &r.host, &r.cwd })
		bytes.append(s->c_str(), s->size() + 1);
	/* a word ends at its first NUL, as in execve() */
	for (const auto *words : { &r.argv, &r.env })
		for (const auto &w : *words)
			bytes.append(w.c_str(), strlen(w.c_str()) + 1);
	head = RequestHead{};
	head.argc = static_cast<uint32_t>(r.argv.size());
	head.envc = static_cast<uint32_t>(r.env.size());
	head.bytes = static_cast<uint32_t>(bytes.size());
	return r.argv.size() + r.env.size() <= kMaxWords && bytes.size() <= kMaxBytes && headOk(head);
}

int decode(const RequestHead &head, const std::string &bytes, Request &r)
{
	if (!headOk(head) || bytes.size() != head.bytes)
		return -EINVAL;
	std::vector<std::string> words;
	size_t at = 0;
	while (at < bytes.size()) {
		const char *s = bytes.data() + at;
		const void *end = memchr(s, '\0', bytes.size() - at);
		if (!end)
			return -EINVAL;
		size_t len = static_cast<const char *>(end) - s;
		words.emplace_back(s, len);
		at += len + 1;
	}
	if (words.size() != size_t(2) + head.argc + head.envc)
		return -EINVAL;
	r.host = std::move(words[0]);
	r.cwd = std::move(words[1]);
	r.argv.assign(words.begin() + 2, words.begin() + 2 + head.argc);
	r.env.assign(words.begin() + 2 + head.argc, words.end());
	return 0;
}

} /* namespace ibemu::tools::launch */
