// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// Management datagram (MAD) wire formats and constants, IBA vol. 1 ch. 13-16.
//
// Names follow the kernel's include/rdma/ib_mad.h and ib_smi.h so that a
// reader can grep across both trees.
#pragma once

#include "fabric/byteorder.h"

#include <array>
#include <cstddef>
#include <cstdint>

namespace ibemu {

constexpr size_t kMadSize = 256;
using Mad = std::array<uint8_t, kMadSize>;

/* Management classes */
enum : uint8_t {
	IB_MGMT_CLASS_SUBN_LID_ROUTED = 0x01,
	IB_MGMT_CLASS_SUBN_ADM = 0x03,
	IB_MGMT_CLASS_PERF_MGMT = 0x04,
	IB_MGMT_CLASS_BM = 0x05,
	IB_MGMT_CLASS_DEVICE_MGMT = 0x06,
	IB_MGMT_CLASS_CM = 0x07,
	IB_MGMT_CLASS_SNMP = 0x08,
	IB_MGMT_CLASS_DEVICE_ADM = 0x10,
	IB_MGMT_CLASS_BIS = 0x12,
	IB_MGMT_CLASS_CONG_MGMT = 0x21,
	IB_MGMT_CLASS_VENDOR_RANGE2_START = 0x30,
	IB_MGMT_CLASS_VENDOR_RANGE2_END = 0x4f,
	IB_MGMT_CLASS_SUBN_DIRECTED_ROUTE = 0x81,
};

/* Methods */
enum : uint8_t {
	IB_MGMT_METHOD_GET = 0x01,
	IB_MGMT_METHOD_SET = 0x02,
	IB_MGMT_METHOD_SEND = 0x03,
	IB_MGMT_METHOD_TRAP = 0x05,
	IB_MGMT_METHOD_REPORT = 0x06,
	IB_MGMT_METHOD_TRAP_REPRESS = 0x07,
	IB_MGMT_METHOD_GET_RESP = 0x81,
	IB_MGMT_METHOD_REPORT_RESP = 0x86,
	IB_MGMT_METHOD_RESP = 0x80,
	IB_SA_METHOD_GET_TABLE = 0x12,
	IB_SA_METHOD_GET_TABLE_RESP = 0x92,
	IB_SA_METHOD_DELETE = 0x15,
};

/* MAD status field (IBA 13.4.7); the DR direction bit lives in the same u16. */
enum : uint16_t {
	IB_MGMT_MAD_STATUS_SUCCESS = 0x0000,
	IB_MGMT_MAD_STATUS_BUSY = 0x0001,
	IB_MGMT_MAD_STATUS_BAD_VERSION = 0x0004,
	IB_MGMT_MAD_STATUS_UNSUPPORTED_METHOD = 0x0008,
	IB_MGMT_MAD_STATUS_UNSUPPORTED_METHOD_ATTRIB = 0x000c,
	IB_MGMT_MAD_STATUS_INVALID_ATTRIB_VALUE = 0x001c,
	IB_SMP_DIRECTION = 0x8000,
};

/* Subnet management attributes (IBA 14.2.5) */
enum : uint16_t {
	IB_SMP_ATTR_NOTICE = 0x0002,
	IB_SMP_ATTR_NODE_DESC = 0x0010,
	IB_SMP_ATTR_NODE_INFO = 0x0011,
	IB_SMP_ATTR_SWITCH_INFO = 0x0012,
	IB_SMP_ATTR_GUID_INFO = 0x0014,
	IB_SMP_ATTR_PORT_INFO = 0x0015,
	IB_SMP_ATTR_PKEY_TABLE = 0x0016,
	IB_SMP_ATTR_SL_TO_VL_TABLE = 0x0017,
	IB_SMP_ATTR_VL_ARB_TABLE = 0x0018,
	IB_SMP_ATTR_LINEAR_FORWARD_TABLE = 0x0019,
	IB_SMP_ATTR_RANDOM_FORWARD_TABLE = 0x001a,
	IB_SMP_ATTR_MCAST_FORWARD_TABLE = 0x001b,
	IB_SMP_ATTR_SM_INFO = 0x0020,
	IB_SMP_ATTR_VENDOR_DIAG = 0x0030,
	IB_SMP_ATTR_LED_INFO = 0x0031,
	IB_SMP_ATTR_MLNX_EXT_PORT_INFO = 0xff90,
};

/* Performance management attributes (IBA 16.1.3) */
enum : uint16_t {
	IB_PMA_CLASS_PORT_INFO = 0x0001,
	IB_PMA_PORT_SAMPLES_CONTROL = 0x0010,
	IB_PMA_PORT_SAMPLES_RESULT = 0x0011,
	IB_PMA_PORT_COUNTERS = 0x0012,
	IB_PMA_PORT_COUNTERS_EXT = 0x001d,
};

constexpr uint16_t IB_LID_PERMISSIVE = 0xffff;
constexpr uint16_t IB_MULTICAST_LID_BASE = 0xc000;
constexpr uint8_t IB_SMP_MAX_PATH_HOPS = 64;
constexpr uint32_t IB_QP0 = 0;
constexpr uint32_t IB_QP1 = 1;
constexpr uint32_t IB_QP1_QKEY = 0x80010000;

/* Common MAD header, IBA 13.4.2, 24 bytes. */
struct ib_mad_hdr {
	uint8_t base_version;
	uint8_t mgmt_class;
	uint8_t class_version;
	uint8_t method;
	be16 status;
	be16 class_specific;
	be64 tid;
	be16 attr_id;
	be16 resv;
	be32 attr_mod;
};
static_assert(sizeof(ib_mad_hdr) == 24);
static_assert(offsetof(ib_mad_hdr, tid) == 8);
static_assert(offsetof(ib_mad_hdr, attr_mod) == 20);

/* RMPP header, IBA 13.6.2, 12 bytes following the MAD header. */
struct ib_rmpp_hdr {
	uint8_t rmpp_version;
	uint8_t rmpp_type;
	uint8_t rmpp_rtime_flags;
	uint8_t rmpp_status;
	be32 seg_num;
	be32 paylen_newwin;
};
static_assert(sizeof(ib_rmpp_hdr) == 12);

/* Directed-route and LID-routed SMP, IBA 14.2.1, 256 bytes. */
struct ib_smp {
	uint8_t base_version;
	uint8_t mgmt_class;
	uint8_t class_version;
	uint8_t method;
	be16 status;
	uint8_t hop_ptr;
	uint8_t hop_cnt;
	be64 tid;
	be16 attr_id;
	be16 resv;
	be32 attr_mod;
	be64 mkey;
	be16 dr_slid;
	be16 dr_dlid;
	uint8_t reserved[28];
	uint8_t data[64];
	uint8_t initial_path[IB_SMP_MAX_PATH_HOPS];
	uint8_t return_path[IB_SMP_MAX_PATH_HOPS];
};
static_assert(sizeof(ib_smp) == kMadSize);
static_assert(offsetof(ib_smp, mkey) == 24);
static_assert(offsetof(ib_smp, dr_slid) == 32);
static_assert(offsetof(ib_smp, data) == 64);
static_assert(offsetof(ib_smp, initial_path) == 128);
static_assert(offsetof(ib_smp, return_path) == 192);

/* LID-routed SMPs carry their 64-byte attribute at the same offset as DR ones. */
constexpr size_t kSmpDataOffset = offsetof(ib_smp, data);
/* GMP attributes of classes without a class header (PMA) start at byte 64 too. */
constexpr size_t kPmaDataOffset = 64;

inline ib_mad_hdr *madHdr(Mad &m)
{
	return overlay<ib_mad_hdr>(m.data());
}
inline const ib_mad_hdr *madHdr(const Mad &m)
{
	return overlay<ib_mad_hdr>(m.data());
}
inline ib_smp *smp(Mad &m)
{
	return overlay<ib_smp>(m.data());
}
inline const ib_smp *smp(const Mad &m)
{
	return overlay<ib_smp>(m.data());
}

/* kernel ib_response_mad(): is this MAD a response (no TID rewrite, routed by TID)? */
inline bool isResponseMad(const ib_mad_hdr &h)
{
	return (h.method & IB_MGMT_METHOD_RESP) || h.method == IB_MGMT_METHOD_TRAP_REPRESS ||
		(h.mgmt_class == IB_MGMT_CLASS_BM && (h.attr_mod.get() & 1));
}

inline bool isSmpClass(uint8_t mgmtClass)
{
	return mgmtClass == IB_MGMT_CLASS_SUBN_LID_ROUTED || mgmtClass == IB_MGMT_CLASS_SUBN_DIRECTED_ROUTE;
}

inline bool smpIsResponse(const ib_smp &s)
{
	return s.status.get() & IB_SMP_DIRECTION;
}

} /* namespace ibemu */
