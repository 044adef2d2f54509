// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// Directed-route SMP hop processing, IBA vol. 1 section 14.2.2.
//
// A DR SMP carries its own route: an initial path (one output port per hop)
// for the request, the return path that nodes fill in as the request passes,
// a hop count and a hop pointer, and the direction bit D (0 request,
// 1 response). DrSLID/DrDLID allow a LID-routed segment before and after the
// directed one; the permissive LID 0xffff in either means "no such segment".
//
// These functions are pure: they update hop_ptr/return_path in the SMP and say
// what the node must do next. Subnet applies the decision.
#pragma once

#include "fabric/mad.h"

#include <cstdint>

namespace ibemu::fabric::smi {

enum class Action {
	Drop, /* discard silently (spec C14-9:5, C14-13:5 and friends) */
	Local, /* give it to this node's SMA, or up to the SM on this node */
	SendPort, /* transmit out of Decision::port */
	SendLid, /* LID-route it to Decision::lid (the LID-routed segment) */
};

struct Decision {
	Action action = Action::Drop;
	uint8_t port = 0;
	uint16_t lid = 0;
};

/*
 * The node originates or answers a DR SMP (kernel smi_handle_dr_smp_send plus
 * the choice of where it goes). For a response, replyLid is the LRH SLID of
 * the request, used when the request's last segment was LID-routed.
 */
Decision send(ib_smp &smp, uint8_t numPorts, uint16_t replyLid = 0);

/*
 * A DR SMP in its directed segment (LRH DLID permissive) arrived on inPort
 * (kernel smi_handle_dr_smp_recv + smi_check_forward_dr_smp, then the send
 * step when the node forwards it).
 */
Decision receive(ib_smp &smp, bool isSwitch, uint8_t inPort, uint8_t numPorts);

/*
 * A DR SMP reached, by LID routing, the node that owns its LRH DLID: either
 * the start of the directed segment (request, hop pointer 0), the end of the
 * request's final LID-routed segment, or one of the response's LID-routed
 * segments.
 */
Decision lidArrival(ib_smp &smp, bool isSwitch, uint8_t inPort, uint8_t numPorts);

/* kernel smi_handle_dr_smp_send: false means "discard" (umad write gets EINVAL). */
bool prepareSend(ib_smp &smp, bool isSwitch, uint8_t portNum);

} /* namespace ibemu::fabric::smi */
