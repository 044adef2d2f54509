// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// One line per captured packet, for people (`ibemu capture --text`):
// what the packet is (the MAD's method and attribute, or the data
// opcode), how it is routed, and the few fields a student follows in a
// sweep (LIDs, port states, node types).
//
// A PortInfo Set is shown against the last PortInfo the trace saw for
// that port ("LID 0 → 5"), so the trace keeps what it has seen.
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <string>

namespace ibemu::tools {

/* Where a packet was seen, as the capture's record says */
struct PacketPlace {
	std::string port; /* "NODE:PORT" */
	bool out = true;
	std::string peer; /* the port at the cable's other end */
	std::string src, dst; /* the MAD's two ends, when known */
};

class PacketText {
public:
	/* The packet's line, without time or place. */
	std::string describe(std::span<const uint8_t> packet, const PacketPlace &at);

private:
	struct PortSeen {
		uint16_t lid = 0;
		uint8_t state = 0;
	};
	std::map<std::string, PortSeen> ports_; /* "NODE:PORT" → last PortInfo seen */
};

/* The MAD method's name in its class ("SubnGet", "PerfGetResp", ...). */
std::string madMethodName(uint8_t mgmtClass, uint8_t method);
/* The attribute's name in its class ("PortInfo", "PathRecord", ...). */
std::string madAttrName(uint8_t mgmtClass, uint16_t attrId);
/* "RC SEND ONLY", "UD SEND ONLY", "RC ACKNOWLEDGE", ... */
std::string opcodeName(uint8_t opcode);

} /* namespace ibemu::tools */
