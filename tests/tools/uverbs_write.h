// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// One legacy uverbs write() command, without libibverbs, for the probes
// that speak the ABI themselves.
#pragma once

#include "emu/uverbs_abi.h"

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <unistd.h>
#include <vector>

namespace ibemu::test {

/* command with req (its first 8 bytes the response pointer, when resp is
 * given); 0 or errno */
template <typename Req> int uverbsCmd(int fd, uint32_t command, Req req, void *resp = nullptr, size_t respLen = 0)
{
	std::vector<uint8_t> b(8 + sizeof req);
	emu::ib_uverbs_cmd_hdr h{ command, static_cast<uint16_t>(b.size() / 4), static_cast<uint16_t>(respLen / 4) };
	memcpy(b.data(), &h, 8);
	memcpy(b.data() + 8, &req, sizeof req);
	if constexpr (sizeof req >= 8) { /* the commands with a response */
		if (resp) {
			uint64_t p = reinterpret_cast<uint64_t>(resp);
			memcpy(b.data() + 8, &p, 8);
		}
	}
	ssize_t n = write(fd, b.data(), b.size());
	return n == ssize_t(b.size()) ? 0 : errno;
}

} /* namespace ibemu::test */
