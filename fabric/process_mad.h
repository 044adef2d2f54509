// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// The node's own management agents, the equivalent of a driver's process_mad
// hook: the SMA answers SMPs (QP0), the PMA answers PerfMgt GMPs (QP1).
#pragma once

#include "fabric/packet.h"

namespace ibemu::fabric {

class Subnet;
struct Port;

/* The kernel's IB_MAD_RESULT_* outcomes of process_mad. */
enum class MadResult {
	Consumed, /* handled, nothing to send (also: M_Key violation, TrapRepress) */
	Reply, /* `reply` holds the response to send back */
	PassUp, /* not for the node's agents: give it to the host's MAD layer */
};

/*
 * Offers a MAD that arrived at `port` (for a switch: the external port it
 * came in on, or 0) to the node's SMA or PMA. DR hop processing must already
 * be done. `pmaClaimedByHost` makes PerfMgt requests pass up (a user agent
 * registered for the class on a local HCA, as the kernel lets it).
 */
MadResult processMad(Subnet &subnet, Port &port, const Packet &in, Mad &reply, bool pmaClaimedByHost = false);

/*
 * The kernel's generate_unmatched_resp(): a Get or Set nobody claimed is
 * answered with status 0x000c (plus the D bit for DR SMPs). Returns false for
 * other methods, which are dropped silently.
 */
bool unmatchedResponse(const Mad &in, Mad &reply);

/* Receive path of a node without an attached host stack: switches' port 0
 * and CAs that no local device represents. */
void idleHostReceive(Subnet &subnet, Port &port, const Packet &pkt);

} /* namespace ibemu::fabric */
