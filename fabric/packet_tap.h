// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// A watcher of the wire: what a capture (tools/observe/packet_capture) plugs into the
// Subnet to see every packet that crosses a cable, as bytes.
//
// The Subnet asks watches() first and encodes a packet (fabric/
// packet_format.h) only for a port someone watches; with no tap set
// nothing is asked or encoded. A tap must not change the fabric: it is
// called in the middle of a delivery.
#pragma once

#include <cstdint>
#include <span>

namespace ibemu::fabric {

struct Port;

class PacketTap {
public:
	/* Whether packets sent or received at p are wanted. */
	virtual bool watches(const Port &p) const = 0;
	/* Whether verbs data packets are wanted at all: the data path builds
	 * a message's packets only then. */
	virtual bool wantsData() const = 0;
	/* A packet leaving p onto its cable (out) or arriving at p from it
	 * (!out), LRH to VCRC. Arrivals are told after cable losses: a
	 * packet lost on the cable was sent but never received. */
	virtual void onWire(const Port &p, bool out, std::span<const uint8_t> packet) = 0;

protected:
	~PacketTap() = default;
};

} /* namespace ibemu::fabric */
