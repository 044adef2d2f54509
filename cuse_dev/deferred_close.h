// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// Closing a descriptor taken from a program that turned out to be
// something unknown: close() flushes a FUSE file (FUSE_FLUSH) and waits for
// its server, which may never answer, or be ibemud itself. One helper
// thread does those closes, so the io thread never waits on one.
#pragma once

namespace ibemu::cuse_dev {

/* Takes fd and closes it on the helper thread. If that thread is stuck on
 * earlier closes (its queue full), fd is left open, with an error logged:
 * a leak rather than a stall. */
void deferredClose(int fd);

} /* namespace ibemu::cuse_dev */
