// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// A fabric in words: what `ibemu topo show` prints without --format, for a
// topology file or (from the daemon's `picture` reply) a running
// instance. A line of counts, then each switch, CA and router with its
// GUID and ports, each cable with its far end, width, speed and states.
#pragma once

#include <string>

namespace ibemu::fabric {
class Subnet;
}

namespace ibemu::tools {

/* what: how the first line names the fabric (its file, an instance) */
std::string fabricSummary(const fabric::Subnet &subnet, const std::string &what);

} /* namespace ibemu::tools */
