// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// ibsim's console commands (the lines of its `!file` scripts and of `do`
// lines in topology files), translated into FabricControl requests, so an
// ibsim user's scripts drive ibemu. docs/faults.md has the mapping.
//
//   Link "A"[p] "B"[q]        link.connect
//   Unlink "A"[p] | "A"       link.down | node.remove
//   ReLink "A"[p] | "A"       link.up | node.add
//   Error "A"[p] | "A" RATE   errors, corrupt = RATE / 100 (ibsim counts
//                             PortRcvErrors only, as a bad CRC does)
//   PerformanceSet "A"[p] PortCounters.FIELD=VALUE   counters.set
//   Wait SEC                  a pause between lines
//
// Command names are matched whole and in any case, as ibsim does. Lines
// that only show ibsim's own state (Dump, Route, Attached, Verbose, Help,
// Start) change nothing here and are skipped with a note; what ibemu does
// not model (Clear, Baselid, Guid, an Error attribute filter, X, Quit) is
// an error naming the line.
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <string_view>
#include <vector>

namespace ibemu::tools {

struct IbsimLine {
	std::vector<nlohmann::ordered_json> requests; /* to send, in order */
	unsigned waitMs = 0; /* Wait: pause this long */
	std::string include; /* !file: run that file's lines here */
	std::string note; /* skipped: why */
};

/* Translates one line. false with what is wrong in err; blank lines and
 * comments give an empty IbsimLine. */
bool translateIbsimLine(std::string_view line, IbsimLine &out, std::string &err);

} /* namespace ibemu::tools */
