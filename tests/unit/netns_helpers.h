// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// For tests: a network namespace of its own for an ib0
// (tools/netdev/ipoib_netdev.h; the daemon uses its hosts' ones), made by a
// helper thread that unshares and ends there: the calling threads stay in
// their namespace, and the namespace lives as long as its descriptor.
#pragma once

#include <string>

namespace ibemu::netdev {

/* A descriptor of a new network namespace (close-on-exec), or -1 with
 * what failed in *why. */
int newNetns(std::string *why = nullptr);

} /* namespace ibemu::netdev */
