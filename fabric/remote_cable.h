// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// Cables across daemons: a subnet split over several ibemuds
// (docs/multihost.md).
//
// Every daemon builds the whole subnet from the same topology file and
// simulates only the nodes its host owns. The others are foreign
// (Node::foreign): stand-ins whose ports mirror what their own daemon
// reports (Port::farEnd). A packet that reaches a foreign port leaves
// through RemoteCables::transmit() and continues in the daemon that owns
// it, which hands it to Subnet::arriveFromFar() as having just crossed
// the cable. A cable between a local and a foreign port trains only
// while that daemon is reachable and both ends are plugged in and
// enabled; both daemons decide training from the same two CableEnds, so
// they agree without a protocol of their own.
//
// Nothing here does I/O: the channel between daemons is the daemon's
// (tools/peer/peer_links.h).
#pragma once

#include "fabric/node.h"
#include "fabric/packet.h"

#include <cstdint>
#include <functional>
#include <vector>

namespace ibemu::fabric {

/* The packets of one data message, each LRH to VCRC */
using DataPackets = std::vector<std::vector<uint8_t>>;

/* Told once when a data message's packets have all left this daemon
 * (true), or never will (false: the connection is gone or the message is
 * too big to carry). A requester starts its ACK timer then, as an HCA
 * does when the last packet is on the wire. */
using OnWire = std::function<void(bool sent)>;

/* Packets of one data message that can cross between daemons, at most:
 * a message of the largest size (VerbsLimits::maxMsgSize, 16 MiB) at
 * the smallest MTU (256) */
constexpr size_t kMaxAwayPackets = 65536;

/* Where a data message left for another daemon (Subnet::routeData) */
struct Away {
	Port *far = nullptr; /* the foreign port it reached; null: it did not leave */
	unsigned hops = 0; /* cables crossed before that one */
};

class RemoteCables {
public:
	/* pkt crosses a cable from a local port to `far`, a foreign port,
	 * having crossed `hops` cables before it (so a loop across daemons
	 * ends at the hop limit, as one inside a daemon does) */
	virtual void transmit(const Port &far, const Packet &pkt, unsigned hops) = 0;
	/* The same for the packets of a data message (verbs traffic);
	 * onWire, when set, is called later, never from inside this call */
	virtual void transmitData(const Port &far, DataPackets packets, unsigned hops, OnWire onWire) = 0;
	/* The CableEnd of `local`, a local port cabled (or once cabled) to
	 * the foreign port `far`, changed: tell far's daemon (when a
	 * connection comes up, its daemon is told every end anyway). */
	virtual void endChanged(const Port &local, const Port &far) = 0;

protected:
	~RemoteCables() = default;
};

/* What p's daemon tells the daemon at the other end of p's cable. */
CableEnd cableEndOf(const Port &p);

} /* namespace ibemu::fabric */
