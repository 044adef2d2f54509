// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// Wire layouts of the subnet management attributes, IBA vol. 1 14.2.5.
// Each is the 64-byte SMP data area (or the part of it the spec uses).
#pragma once

#include "fabric/byteorder.h"

#include <cstddef>
#include <cstdint>

namespace ibemu {

/* NodeInfo, 14.2.5.3 */
struct ib_node_info {
	uint8_t base_version;
	uint8_t class_version;
	uint8_t node_type;
	uint8_t num_ports;
	be64 sys_guid;
	be64 node_guid;
	be64 port_guid;
	be16 partition_cap;
	be16 device_id;
	be32 revision;
	uint8_t local_port_num;
	be24 vendor_id;
};
static_assert(sizeof(ib_node_info) == 40);
static_assert(offsetof(ib_node_info, port_guid) == 20);
static_assert(offsetof(ib_node_info, local_port_num) == 36);

/* PortInfo, 14.2.5.6 */
struct ib_port_info {
	be64 mkey;
	be64 gid_prefix;
	be16 lid;
	be16 sm_lid;
	be32 cap_mask;
	be16 diag_code;
	be16 mkey_lease_period;
	uint8_t local_port_num;
	uint8_t link_width_enabled;
	uint8_t link_width_supported;
	uint8_t link_width_active;
	uint8_t linkspeed_portstate; /* LinkSpeedSupported(7:4) PortState(3:0) */
	uint8_t portphysstate_linkdown; /* PortPhysicalState(7:4) LinkDownDefaultState(3:0) */
	uint8_t mkeyprot_resv_lmc; /* M_KeyProtectBits(7:6) LMC(2:0) */
	uint8_t linkspeedactive_enabled; /* LinkSpeedActive(7:4) LinkSpeedEnabled(3:0) */
	uint8_t neighbormtu_mastersmsl; /* NeighborMTU(7:4) MasterSMSL(3:0) */
	uint8_t vlcap_inittype; /* VLCap(7:4) InitType(3:0) */
	uint8_t vl_high_limit;
	uint8_t vl_arb_high_cap;
	uint8_t vl_arb_low_cap;
	uint8_t inittypereply_mtucap; /* InitTypeReply(7:4) MTUCap(3:0) */
	uint8_t vlstallcnt_hoqlife; /* VLStallCount(7:5) HOQLife(4:0) */
	uint8_t operationalvl_pei_peo_fpi_fpo; /* OperationalVLs(7:4) enforcement(3:0) */
	be16 mkey_violations;
	be16 pkey_violations;
	be16 qkey_violations;
	uint8_t guid_cap;
	uint8_t clientrereg_resv_subnetto; /* ClientReregister(7) SubnetTimeOut(4:0) */
	uint8_t resv_resptimevalue; /* RespTimeValue(4:0) */
	uint8_t localphyerrors_overrunerrors;
	be16 max_credit_hint;
	uint8_t link_speed_ext2; /* XDR fields, unused */
	be24 link_roundtrip_latency;
	be16 cap_mask2;
	uint8_t link_speed_ext_active_supported; /* LinkSpeedExtActive(7:4) Supported(3:0) */
	uint8_t link_speed_ext_enabled; /* LinkSpeedExtEnabled(4:0) */
};
static_assert(sizeof(ib_port_info) == 64);
static_assert(offsetof(ib_port_info, lid) == 16);
static_assert(offsetof(ib_port_info, cap_mask) == 20);
static_assert(offsetof(ib_port_info, local_port_num) == 28);
static_assert(offsetof(ib_port_info, linkspeed_portstate) == 32);
static_assert(offsetof(ib_port_info, mkey_violations) == 44);
static_assert(offsetof(ib_port_info, guid_cap) == 50);
static_assert(offsetof(ib_port_info, link_roundtrip_latency) == 57);
static_assert(offsetof(ib_port_info, cap_mask2) == 60);

/* SwitchInfo, 14.2.5.4 */
struct ib_switch_info {
	be16 linear_fdb_cap;
	be16 random_fdb_cap;
	be16 mcast_fdb_cap;
	be16 linear_fdb_top;
	uint8_t default_port;
	uint8_t default_mcast_primary_port;
	uint8_t default_mcast_not_primary_port;
	uint8_t lifetime_psc_optsl2vl; /* LifeTimeValue(7:3) PortStateChange(2) OptSL2VL(1:0) */
	be16 lids_per_port;
	be16 partition_enforcement_cap;
	uint8_t enforcement_caps_port0; /* InEnf(7) OutEnf(6) FilterRawIn(5) FilterRawOut(4) EnhancedPort0(3) */
	uint8_t reserved;
	be16 mcast_fdb_top;
};
static_assert(sizeof(ib_switch_info) == 20);
static_assert(offsetof(ib_switch_info, lifetime_psc_optsl2vl) == 11);
static_assert(offsetof(ib_switch_info, mcast_fdb_top) == 18);

constexpr uint8_t IB_SWITCH_PSC = 0x04;
constexpr uint8_t IB_SWITCH_ENHANCED_PORT0 = 0x08;

/* Notice (Trap), 14.2.5.1 / 13.4.8.2: the first 64 bytes, carried in an SMP. */
struct ib_notice {
	uint8_t generic_type; /* IsGeneric(7) Type(6:0) */
	be24 producer_type; /* or VendorID */
	be16 trap_num; /* or DeviceID */
	be16 issuer_lid;
	be16 toggle_count;
	uint8_t data_details[54];
};
static_assert(sizeof(ib_notice) == 64);
static_assert(offsetof(ib_notice, data_details) == 10);

constexpr uint8_t IB_NOTICE_GENERIC = 0x80;
enum : uint8_t {
	IB_NOTICE_TYPE_FATAL = 0,
	IB_NOTICE_TYPE_URGENT = 1,
	IB_NOTICE_TYPE_SECURITY = 2,
	IB_NOTICE_TYPE_SM = 3,
	IB_NOTICE_TYPE_INFO = 4,
};

/* Mellanox ExtendedPortInfo (vendor attribute 0xff90): FDR10 control. */
struct ib_mlnx_ext_port_info {
	uint8_t resvd1[3];
	uint8_t state_change_enable;
	uint8_t resvd2[3];
	uint8_t link_speed_supported; /* bit 0: FDR10 */
	uint8_t resvd3[3];
	uint8_t link_speed_enabled;
	uint8_t resvd4[3];
	uint8_t link_speed_active;
	uint8_t resvd5[48];
};
static_assert(sizeof(ib_mlnx_ext_port_info) == 64);
static_assert(offsetof(ib_mlnx_ext_port_info, link_speed_active) == 15);

/* Block sizes of the table attributes */
constexpr unsigned kPkeysPerBlock = 32;
constexpr unsigned kGuidsPerBlock = 8;
constexpr unsigned kLftEntriesPerBlock = 64;
constexpr unsigned kMftEntriesPerBlock = 32;
constexpr unsigned kVlArbEntriesPerBlock = 32;

} /* namespace ibemu */
