// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// What the live view (tools/observe/web_view) shows, as JSON: the fabric's ports
// and cables with their states and counters, the SM, and one node's
// NodeInfo, PortInfo and forwarding table when it is clicked.
//
// Keys are never shown: no M_Key, no SM_Key, no P_Key table.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>

namespace ibemu::fabric {
class Subnet;
struct Node;
struct Port;
}

namespace ibemu::tools {

/* Ports listed one by one up to this many; past it, counts by state */
constexpr size_t kMaxListedPorts = 2000;

/* {"cables": {ID: "active"|"up"|"down"|"pulled"}, "ports": [...],
 *  "states": {STATE: count}, "sm": {...}, "picture": N}. "picture"
 *  changes when the drawing would (LIDs, cables added, states of a
 *  summarized fabric), so a page knows to fetch it again. */
nlohmann::ordered_json fabricState(const fabric::Subnet &subnet);
/* What fabricState() gives as "picture": it changes when the drawing
 * would (LIDs, cables' states, widths and speeds, nodes added). */
size_t pictureKey(const fabric::Subnet &subnet);

/* What changes when fabricState() would: every port's state, LID,
 * counters and cable, the SM, the names, the picture. A hash: equal keys
 * mean (but for a collision) an equal state. */
size_t stateKey(const fabric::Subnet &subnet);

/* The id the state and the picture give p's cable ("l3p7": named from
 * the end on the node with the lower index), "" when p has none. */
std::string cableId(const fabric::Port &p);

/* One node, by its index: NodeInfo, each port's PortInfo and counters,
 * a switch's LFT. */
nlohmann::ordered_json nodeState(const fabric::Node &node);

} /* namespace ibemu::tools */
