// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// PortInfo:CapabilityMask bits (IBA 14.2.5.6, kernel ib_port_capability_mask_bits)
// and the identities the simulated devices present.
#pragma once

#include <cstdint>

namespace ibemu::fabric {

enum : uint32_t {
	IB_PORT_SM = 1u << 1,
	IB_PORT_NOTICE_SUP = 1u << 2,
	IB_PORT_TRAP_SUP = 1u << 3,
	IB_PORT_OPT_IPD_SUP = 1u << 4,
	IB_PORT_AUTO_MIGR_SUP = 1u << 5,
	IB_PORT_SL_MAP_SUP = 1u << 6,
	IB_PORT_MKEY_NVRAM = 1u << 7,
	IB_PORT_PKEY_NVRAM = 1u << 8,
	IB_PORT_LED_INFO_SUP = 1u << 9,
	IB_PORT_SM_DISABLED = 1u << 10,
	IB_PORT_SYS_IMAGE_GUID_SUP = 1u << 11,
	IB_PORT_PKEY_SW_EXT_PORT_TRAP_SUP = 1u << 12,
	IB_PORT_EXTENDED_SPEEDS_SUP = 1u << 14,
	IB_PORT_CAP_MASK2_SUP = 1u << 15,
	IB_PORT_CM_SUP = 1u << 16,
	IB_PORT_SNMP_TUNNEL_SUP = 1u << 17,
	IB_PORT_REINIT_SUP = 1u << 18,
	IB_PORT_DEVICE_MGMT_SUP = 1u << 19,
	IB_PORT_VENDOR_CLASS_SUP = 1u << 20,
	IB_PORT_DR_NOTICE_SUP = 1u << 21,
	IB_PORT_CAP_MASK_NOTICE_SUP = 1u << 22,
	IB_PORT_BOOT_MGMT_SUP = 1u << 23,
	IB_PORT_LINK_LATENCY_SUP = 1u << 24,
	IB_PORT_CLIENT_REG_SUP = 1u << 25,
	IB_PORT_OTHER_LOCAL_CHANGES_SUP = 1u << 26,
	IB_PORT_LINK_SPEED_WIDTH_TABLE_SUP = 1u << 27,
};

/* A CA port: what a ConnectX HCA advertises, minus automatic path migration,
 * which the emulator does not model. */
constexpr uint32_t kCaPortCapMask = IB_PORT_TRAP_SUP | IB_PORT_SL_MAP_SUP | IB_PORT_SYS_IMAGE_GUID_SUP |
	IB_PORT_EXTENDED_SPEEDS_SUP | IB_PORT_CM_SUP | IB_PORT_VENDOR_CLASS_SUP | IB_PORT_CAP_MASK_NOTICE_SUP |
	IB_PORT_CLIENT_REG_SUP;

/* Switch management port 0. */
constexpr uint32_t kSwitchPort0CapMask = IB_PORT_TRAP_SUP | IB_PORT_SL_MAP_SUP | IB_PORT_SYS_IMAGE_GUID_SUP |
	IB_PORT_EXTENDED_SPEEDS_SUP;

/* Mellanox's OUI and ConnectX-5 / InfiniScale IV device ids, so that tools that
 * print vendor and device names show something familiar. (The switch id is
 * deliberately not one libibnetdisc queries Mellanox ExtPortInfo on.) */
constexpr uint32_t kDefaultVendorId = 0x0002c9;
constexpr uint16_t kDefaultCaDeviceId = 0x1017; /* 4119, ConnectX-5 */
constexpr uint16_t kDefaultSwitchDeviceId = 0xbd36; /* InfiniScale IV */

} /* namespace ibemu::fabric */
