// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// The performance management agent of every port (IBA vol. 1 16.1).
//
// Interface:
//   attributes  ClassPortInfo, PortCounters (Get, Set to clear),
//               PortCountersExtended (Get, Set to clear)
//   PortSelect  a port of the node; 0xff (AllPortSelect) on switches
#pragma once

#include "fabric/byteorder.h"
#include "fabric/process_mad.h"

#include <cstddef>
#include <cstdint>

namespace ibemu {

/* ClassPortInfo, IBA 13.4.8.1 (the part a PMA fills in) */
struct ib_class_port_info {
	uint8_t base_version;
	uint8_t class_version;
	be16 capability_mask;
	be32 cap_mask2_resp_time; /* CapabilityMask2(31:5) RespTimeValue(4:0) */
	uint8_t redirect_and_trap[64];
};
static_assert(sizeof(ib_class_port_info) == 72);

enum : uint16_t {
	IB_PMA_CLASS_CAP_ALLPORTSELECT = 0x0100,
	IB_PMA_CLASS_CAP_EXT_WIDTH = 0x0200,
	IB_PMA_CLASS_CAP_EXT_WIDTH_NOIETF = 0x0400,
	IB_PMA_CLASS_CAP_XMIT_WAIT = 0x1000,
};

/* PortCounters, IBA 16.1.3.5 */
struct ib_pma_portcounters {
	uint8_t reserved;
	uint8_t port_select;
	be16 counter_select;
	be16 symbol_error_counter;
	uint8_t link_error_recovery_counter;
	uint8_t link_downed_counter;
	be16 port_rcv_errors;
	be16 port_rcv_remphys_errors;
	be16 port_rcv_switch_relay_errors;
	be16 port_xmit_discards;
	uint8_t port_xmit_constraint_errors;
	uint8_t port_rcv_constraint_errors;
	uint8_t counter_select2;
	uint8_t link_overrun_errors; /* LocalLinkIntegrity(7:4) ExcessiveBufferOverrun(3:0) */
	be16 qp1_dropped;
	be16 vl15_dropped;
	be32 port_xmit_data;
	be32 port_rcv_data;
	be32 port_xmit_packets;
	be32 port_rcv_packets;
	be32 port_xmit_wait;
};
static_assert(sizeof(ib_pma_portcounters) == 44);
static_assert(offsetof(ib_pma_portcounters, vl15_dropped) == 22);
static_assert(offsetof(ib_pma_portcounters, port_xmit_data) == 24);

/* PortCounters CounterSelect bits */
enum : uint16_t {
	IB_PMA_SEL_SYMBOL_ERROR = 0x0001,
	IB_PMA_SEL_LINK_ERROR_RECOVERY = 0x0002,
	IB_PMA_SEL_LINK_DOWNED = 0x0004,
	IB_PMA_SEL_PORT_RCV_ERRORS = 0x0008,
	IB_PMA_SEL_PORT_RCV_REMPHYS_ERRORS = 0x0010,
	IB_PMA_SEL_PORT_RCV_SWITCH_RELAY_ERRORS = 0x0020,
	IB_PMA_SEL_PORT_XMIT_DISCARDS = 0x0040,
	IB_PMA_SEL_PORT_XMIT_CONSTRAINT_ERRORS = 0x0080,
	IB_PMA_SEL_PORT_RCV_CONSTRAINT_ERRORS = 0x0100,
	IB_PMA_SEL_LOCAL_LINK_INTEGRITY_ERRORS = 0x0200,
	IB_PMA_SEL_EXCESSIVE_BUFFER_OVERRUNS = 0x0400,
	IB_PMA_SEL_PORT_VL15_DROPPED = 0x0800,
	IB_PMA_SEL_PORT_XMIT_DATA = 0x1000,
	IB_PMA_SEL_PORT_RCV_DATA = 0x2000,
	IB_PMA_SEL_PORT_XMIT_PACKETS = 0x4000,
	IB_PMA_SEL_PORT_RCV_PACKETS = 0x8000,
};
constexpr uint8_t IB_PMA_SEL2_PORT_XMIT_WAIT = 0x01;

/* PortCountersExtended, IBA 16.1.4.11 */
struct ib_pma_portcounters_ext {
	uint8_t reserved;
	uint8_t port_select;
	be16 counter_select;
	be32 counter_select2;
	be64 port_xmit_data;
	be64 port_rcv_data;
	be64 port_xmit_packets;
	be64 port_rcv_packets;
	be64 port_unicast_xmit_packets;
	be64 port_unicast_rcv_packets;
	be64 port_multicast_xmit_packets;
	be64 port_multicast_rcv_packets;
};
static_assert(sizeof(ib_pma_portcounters_ext) == 72);
static_assert(offsetof(ib_pma_portcounters_ext, port_xmit_data) == 8);

enum : uint16_t {
	IB_PMA_SELX_PORT_XMIT_DATA = 0x0001,
	IB_PMA_SELX_PORT_RCV_DATA = 0x0002,
	IB_PMA_SELX_PORT_XMIT_PACKETS = 0x0004,
	IB_PMA_SELX_PORT_RCV_PACKETS = 0x0008,
	IB_PMA_SELX_PORT_UNI_XMIT_PACKETS = 0x0010,
	IB_PMA_SELX_PORT_UNI_RCV_PACKETS = 0x0020,
	IB_PMA_SELX_PORT_MULTI_XMIT_PACKETS = 0x0040,
	IB_PMA_SELX_PORT_MULTI_RCV_PACKETS = 0x0080,
};

constexpr uint8_t IB_PMA_ALL_PORTS = 0xff;

} /* namespace ibemu */

namespace ibemu::fabric {

class Subnet;
struct Port;

/* PerfMgt part of processMad(); `port` is the arrival port. */
MadResult pmaProcess(Subnet &subnet, Port &port, const Packet &in, Mad &reply);

/* PMA ClassPortInfo:CapabilityMask of a node. The kernel's sysfs picks the
 * counter files from it once, at device registration (get_counter_table()
 * in drivers/infiniband/core/sysfs.c): ExtWidth (bit 9) gives the 64-bit
 * data and packet counters plus the unicast/multicast ones. */
uint16_t pmaCapabilityMask(const struct Node &node);

} /* namespace ibemu::fabric */
