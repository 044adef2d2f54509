// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// What the verbs check tools (verbs_queues, verbs_mw) share: a check that
// counts its failures, and errnos by name as the tools print them.
#pragma once

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace verbs_check {

inline int failures = 0;

inline void check(bool ok, const char *what)
{
	if (!ok) {
		fprintf(stderr, "FAILED: %s\n", what);
		failures++;
	}
}

inline const char *errName(int e)
{
	switch (e) {
	case 0:
		return "ok";
	case EINVAL:
		return "EINVAL";
	case EOPNOTSUPP:
		return "EOPNOTSUPP";
	case ENOMEM:
		return "ENOMEM";
	case EPERM:
		return "EPERM";
	default:
		return strerror(e);
	}
}

} /* namespace verbs_check */
