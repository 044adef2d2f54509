// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// What the device layer tells its users about a local HCA, as the kernel's
// drivers/infiniband/core/device.c does with ib_query_port(),
// ib_query_pkey() and ib_modify_device(), and the port counters the way
// sysfs.c's get_perf_mad() reads them: a PMA Get through the device's
// process_mad. Each call reads the fabric as it is now, so the answers
// follow whatever an SM set.
#pragma once

#include "fabric/types.h"

#include <cstdint>
#include <string>

namespace ibemu::emu {

struct Hca;
class MadPort;

/* The device's identity: the ib_device and ib_device_attr fields. */
struct DeviceAttr {
	fabric::NodeType nodeType = fabric::NodeType::CA;
	uint64_t nodeGuid = 0;
	uint64_t sysImageGuid = 0;
	uint16_t vendorPartId = 0; /* NodeInfo:DeviceID */
	std::string nodeDesc; /* NodeDescription */
};

DeviceAttr queryDevice(const Hca &hca);
/* ib_modify_device(IB_DEVICE_MODIFY_NODE_DESC): the NodeDescription the
 * SMA reports from now on. */
void modifyNodeDesc(Hca &hca, const std::string &desc);

/* struct ib_port_attr: the port's PortInfo */
struct PortAttr {
	fabric::PortState state = fabric::PortState::Down;
	fabric::PhysState physState = fabric::PhysState::Polling;
	uint16_t lid = 0;
	uint16_t smLid = 0;
	uint8_t lmc = 0;
	uint8_t smSl = 0;
	uint32_t capMask = 0; /* port_cap_flags */
	uint8_t activeWidth = 0; /* a LinkWidth bit; 0 while the link never trained */
	fabric::Speed activeSpeed = fabric::Speed::SDR;
	unsigned gidTblLen = 0;
	unsigned pkeyTblLen = 0;
};

PortAttr queryPort(const MadPort &port);
/* P_Key table entry index (< PortAttr::pkeyTblLen); entries no SM set are 0. */
uint16_t queryPkey(const MadPort &port, unsigned index);

/* The counters of a port's PMA that sysfs shows: PortCounters (IBA
 * 16.1.3.5), and for data and packets PortCountersExtended (IBA 16.1.4.11),
 * which the PMA supports (ClassPortInfo:CapabilityMask ExtWidth). */
enum class PortCounter : uint8_t {
	SymbolError,
	LinkErrorRecovery,
	LinkDowned,
	RcvErrors,
	RcvRemotePhysicalErrors,
	RcvSwitchRelayErrors,
	XmitDiscards,
	XmitConstraintErrors,
	RcvConstraintErrors,
	LocalLinkIntegrityErrors,
	ExcessiveBufferOverrunErrors,
	Vl15Dropped,
	XmitWait,
	XmitData, /* PortCountersExtended from here on */
	RcvData,
	XmitPackets,
	RcvPackets,
	UnicastXmitPackets,
	UnicastRcvPackets,
	MulticastXmitPackets,
	MulticastRcvPackets,
};

/* One PMA Get of the counter's attribute for this port through the node's
 * process_mad: 0 and the value, or -EINVAL when no response comes back. */
int queryCounter(MadPort &port, PortCounter counter, uint64_t &value);

} /* namespace ibemu::emu */
