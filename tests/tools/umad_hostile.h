// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// The modes of umad_hostile (umad_hostile.cpp has the list and main()):
// each runs one attack on the umad files it is given, prints one line per
// result and returns main()'s exit code.
#pragma once

#include <cstddef>
#include <string>

namespace ibemu::hostile {

/* umad_hostile_memory.cpp */
int hugeread(const char *dev);
int regfault(const char *dev);
int badptr(const char *dev);
int tiny(const char *dev);
/* umad_hostile_rmpp.cpp */
int unaligned(const char *devA, const char *devB, size_t size);
int unread(const char *devA, const char *devB, long n, size_t size, int files);
int rmppflood(const char *devA, const char *devB, long n);
/* umad_hostile_limits.cpp */
int flood(const char *dev, long n);
int outstanding(const char *dev);
int agents(const char *dev, long nfiles);
/* umad_hostile_wait.cpp */
int pollwait(const char *dev);
int block(const char *dev, const std::string &kind);

} /* namespace ibemu::hostile */
