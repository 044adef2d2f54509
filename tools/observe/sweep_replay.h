// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// The last sweep that changed the fabric, step by step, for the live
// view's replay (tools/observe/web_view.h, GET /api/sweep): a student
// sees at a human pace what OpenSM did in a few milliseconds.
//
// The SMPs come from the ring (fabric/mad_ring.h). A step is an SMP
// request as it left its sender's port (an SM's Get or Set: where it
// went and what it said, as the text trace says it), and the cables it
// changed: a PortInfo Set of a PortState changes its port, and a cable
// is "active" once both its ends are Active, "up" before. The cables
// start as the sweep found them (the first PortInfo answer of each
// port in it, else the port's state now); a cable down, pulled or
// elsewhere now is left out of the replay.
//
//   {"mads": SMPs in it, "start": {CABLE: "up"|"active"},
//    "steps": [{"t": seconds since its first MAD, "to": "nK",
//               "text": "SubnSet(PortInfo) DR 0,1,7,1 → ...",
//               "cables": {CABLE: "active"}}, ...]}
#pragma once

#include <nlohmann/json.hpp>

namespace ibemu::fabric {
class MadRing;
class Subnet;
}

namespace ibemu::tools {

class PacketCapture;

nlohmann::ordered_json sweepReplay(const fabric::Subnet &subnet, const fabric::MadRing &ring,
				   const PacketCapture &capture);

} /* namespace ibemu::tools */
