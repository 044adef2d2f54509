// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// The subnet management agent of every node (IBA vol. 1 14.2): answers
// SubnGet/SubnSet for the node's attributes, checks M_Keys and emits traps.
//
// Interface:
//   attributes  NodeDescription, NodeInfo, SwitchInfo*, GUIDInfo, PortInfo,
//               P_KeyTable, SLtoVLMappingTable, VLArbitrationTable,
//               LinearForwardingTable*, MulticastForwardingTable*,
//               SMInfo (passed up to the SM on ports with IsSM)
//               (* switches only; a CA answers 0x000c like real HCAs)
//   traps       128 (switch link state change), 144 (CA capability mask
//               change), 256 (bad M_Key)
#pragma once

#include "fabric/process_mad.h"

#include <cstdint>

namespace ibemu::fabric {

class Subnet;
struct Node;
struct Port;

/* SMP part of processMad(); `port` is the arrival port. */
MadResult smaProcess(Subnet &subnet, Port &port, const Packet &in, Mad &reply);

/* The SMA's traps (fabric/sma_traps.cpp). Trap 128 from a switch whose
 * port changed state (to the SM, if one is known). */
void sendTrap128(Subnet &subnet, Node &sw);
/* Trap 144 from a CA port whose CapabilityMask changed. */
void sendTrap144(Subnet &subnet, Port &port, uint32_t oldCapMask);
/* Trap 256 (bad M_Key) about the SMP `req` that arrived on `arrival`. */
void sendTrap256(Subnet &subnet, Node &node, Port &arrival, const ib_smp &req);

} /* namespace ibemu::fabric */
