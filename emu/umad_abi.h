// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// The ib_umad user ABI: structures and ioctl numbers of
// include/uapi/rdma/ib_user_mad.h, with the kernel's names and layouts.
#pragma once

#include "fabric/byteorder.h"

#include <cstddef>
#include <cstdint>

namespace ibemu {

constexpr unsigned IB_USER_MAD_ABI_VERSION = 5;
constexpr unsigned IB_UMAD_MAX_AGENTS = 32;
constexpr size_t MAX_UMAD_RECV_LIST_SIZE = 200000;
constexpr unsigned IB_UMAD_MAJOR = 231;
constexpr unsigned IB_ISSM_MINOR_BASE = 64;

/* 56-byte header, used until ENABLE_PKEY or a first REGISTER_AGENT2. */
struct ib_user_mad_hdr_old {
	uint32_t id;
	uint32_t status;
	uint32_t timeout_ms;
	uint32_t retries;
	uint32_t length;
	be32 qpn;
	be32 qkey;
	be16 lid;
	uint8_t sl;
	uint8_t path_bits;
	uint8_t grh_present;
	uint8_t gid_index;
	uint8_t hop_limit;
	uint8_t traffic_class;
	uint8_t gid[16];
	be32 flow_label;
};
static_assert(sizeof(ib_user_mad_hdr_old) == 56);
static_assert(offsetof(ib_user_mad_hdr_old, qpn) == 20);
static_assert(offsetof(ib_user_mad_hdr_old, lid) == 28);
static_assert(offsetof(ib_user_mad_hdr_old, gid) == 36);
static_assert(offsetof(ib_user_mad_hdr_old, flow_label) == 52);

/* 64-byte header: the old one plus pkey_index (host order). */
struct ib_user_mad_hdr {
	uint32_t id;
	uint32_t status;
	uint32_t timeout_ms;
	uint32_t retries;
	uint32_t length;
	be32 qpn;
	be32 qkey;
	be16 lid;
	uint8_t sl;
	uint8_t path_bits;
	uint8_t grh_present;
	uint8_t gid_index;
	uint8_t hop_limit;
	uint8_t traffic_class;
	uint8_t gid[16];
	be32 flow_label;
	uint16_t pkey_index;
	uint8_t reserved[6];
};
static_assert(sizeof(ib_user_mad_hdr) == 64);
static_assert(offsetof(ib_user_mad_hdr, pkey_index) == 56);

/* REGISTER_AGENT argument, 28 bytes (method_mask as 4 x u32, 4-byte aligned). */
struct ib_user_mad_reg_req {
	uint32_t id;
	uint32_t method_mask[4];
	uint8_t qpn;
	uint8_t mgmt_class;
	uint8_t mgmt_class_version;
	uint8_t oui[3];
	uint8_t rmpp_version;
};
static_assert(sizeof(ib_user_mad_reg_req) == 28);
static_assert(offsetof(ib_user_mad_reg_req, qpn) == 20);
static_assert(offsetof(ib_user_mad_reg_req, rmpp_version) == 26);

/* REGISTER_AGENT2 argument, 40 bytes. */
struct ib_user_mad_reg_req2 {
	uint32_t id;
	uint32_t qpn;
	uint8_t mgmt_class;
	uint8_t mgmt_class_version;
	uint16_t res;
	uint32_t flags;
	uint64_t method_mask[2];
	uint32_t oui;
	uint8_t rmpp_version;
	uint8_t reserved[3];
};
static_assert(sizeof(ib_user_mad_reg_req2) == 40);
static_assert(offsetof(ib_user_mad_reg_req2, flags) == 12);
static_assert(offsetof(ib_user_mad_reg_req2, method_mask) == 16);
static_assert(offsetof(ib_user_mad_reg_req2, oui) == 32);

constexpr uint32_t IB_USER_MAD_USER_RMPP = 1;
constexpr uint32_t IB_USER_MAD_REG_FLAGS_CAP = IB_USER_MAD_USER_RMPP;

/* _IOC encoding, as <asm-generic/ioctl.h> */
constexpr unsigned iocEncode(unsigned dir, unsigned type, unsigned nr, unsigned size)
{
	return (dir << 30) | (size << 16) | (type << 8) | nr;
}
constexpr unsigned IOC_NONE = 0, IOC_WRITE = 1, IOC_READ = 2;
constexpr unsigned iocSize(unsigned cmd)
{
	return (cmd >> 16) & 0x3fff;
}
constexpr unsigned iocDir(unsigned cmd)
{
	return cmd >> 30;
}

constexpr unsigned IB_IOCTL_MAGIC = 0x1b;
constexpr unsigned IB_USER_MAD_REGISTER_AGENT = iocEncode(IOC_READ | IOC_WRITE, IB_IOCTL_MAGIC, 1,
							  sizeof(ib_user_mad_reg_req));
constexpr unsigned IB_USER_MAD_UNREGISTER_AGENT = iocEncode(IOC_WRITE, IB_IOCTL_MAGIC, 2, sizeof(uint32_t));
constexpr unsigned IB_USER_MAD_ENABLE_PKEY = iocEncode(IOC_NONE, IB_IOCTL_MAGIC, 3, 0);
constexpr unsigned IB_USER_MAD_REGISTER_AGENT2 = iocEncode(IOC_READ | IOC_WRITE, IB_IOCTL_MAGIC, 4,
							   sizeof(ib_user_mad_reg_req2));
static_assert(IB_USER_MAD_REGISTER_AGENT == 0xc01c1b01);
static_assert(IB_USER_MAD_UNREGISTER_AGENT == 0x40041b02);
static_assert(IB_USER_MAD_ENABLE_PKEY == 0x00001b03);
static_assert(IB_USER_MAD_REGISTER_AGENT2 == 0xc0281b04);

} /* namespace ibemu */
