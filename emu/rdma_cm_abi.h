// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// The rdma_ucm write() ABI (the kernel's include/uapi/rdma/rdma_user_cm.h,
// ABI version 4), as librdmacm writes it to /dev/infiniband/rdma_cm: a
// command header, then the command; responses go to the user pointer the
// command carries. Layouts are the kernel's, checked below.
#pragma once

#include "emu/uverbs_abi.h"

#include <cstddef>
#include <cstdint>
#include <netinet/in.h>

namespace ibemu::emu {

constexpr uint32_t RDMA_USER_CM_ABI_VERSION = 4;
constexpr size_t RDMA_MAX_PRIVATE_DATA = 256;

enum RdmaUcmCommand : uint32_t {
	RDMA_USER_CM_CMD_CREATE_ID,
	RDMA_USER_CM_CMD_DESTROY_ID,
	RDMA_USER_CM_CMD_BIND_IP,
	RDMA_USER_CM_CMD_RESOLVE_IP,
	RDMA_USER_CM_CMD_RESOLVE_ROUTE,
	RDMA_USER_CM_CMD_QUERY_ROUTE,
	RDMA_USER_CM_CMD_CONNECT,
	RDMA_USER_CM_CMD_LISTEN,
	RDMA_USER_CM_CMD_ACCEPT,
	RDMA_USER_CM_CMD_REJECT,
	RDMA_USER_CM_CMD_DISCONNECT,
	RDMA_USER_CM_CMD_INIT_QP_ATTR,
	RDMA_USER_CM_CMD_GET_EVENT,
	RDMA_USER_CM_CMD_GET_OPTION,
	RDMA_USER_CM_CMD_SET_OPTION,
	RDMA_USER_CM_CMD_NOTIFY,
	RDMA_USER_CM_CMD_JOIN_IP_MCAST,
	RDMA_USER_CM_CMD_LEAVE_MCAST,
	RDMA_USER_CM_CMD_MIGRATE_ID,
	RDMA_USER_CM_CMD_QUERY,
	RDMA_USER_CM_CMD_BIND,
	RDMA_USER_CM_CMD_RESOLVE_ADDR,
	RDMA_USER_CM_CMD_JOIN_MCAST,
	RDMA_USER_CM_CMD_COUNT
};

/* port spaces (IBTA Annex A11: bytes 4 and 5 of the service ID) */
enum : uint16_t {
	RDMA_PS_IPOIB = 0x0002,
	RDMA_PS_IB = 0x013F,
	RDMA_PS_TCP = 0x0106,
	RDMA_PS_UDP = 0x0111,
};

/* struct rdma_cm_event's types */
enum RdmaCmEventType : uint32_t {
	RDMA_CM_EVENT_ADDR_RESOLVED,
	RDMA_CM_EVENT_ADDR_ERROR,
	RDMA_CM_EVENT_ROUTE_RESOLVED,
	RDMA_CM_EVENT_ROUTE_ERROR,
	RDMA_CM_EVENT_CONNECT_REQUEST,
	RDMA_CM_EVENT_CONNECT_RESPONSE,
	RDMA_CM_EVENT_CONNECT_ERROR,
	RDMA_CM_EVENT_UNREACHABLE,
	RDMA_CM_EVENT_REJECTED,
	RDMA_CM_EVENT_ESTABLISHED,
	RDMA_CM_EVENT_DISCONNECTED,
	RDMA_CM_EVENT_DEVICE_REMOVAL,
	RDMA_CM_EVENT_MULTICAST_JOIN,
	RDMA_CM_EVENT_MULTICAST_ERROR,
	RDMA_CM_EVENT_ADDR_CHANGE,
	RDMA_CM_EVENT_TIMEWAIT_EXIT,
};

enum : uint32_t { RDMA_USER_CM_QUERY_ADDR, RDMA_USER_CM_QUERY_PATH, RDMA_USER_CM_QUERY_GID };
enum : uint32_t { RDMA_OPTION_ID = 0, RDMA_OPTION_IB = 1 };
enum : uint32_t {
	RDMA_OPTION_ID_TOS = 0,
	RDMA_OPTION_ID_REUSEADDR = 1,
	RDMA_OPTION_ID_AFONLY = 2,
	RDMA_OPTION_ID_ACK_TIMEOUT = 3,
};
enum : uint32_t { RDMA_OPTION_IB_PATH = 1 };

/* AF_IB (linux/socket.h) and struct sockaddr_ib (rdma/ib.h) */
constexpr uint16_t kAfIb = 27;
struct sockaddr_ib {
	uint16_t sib_family;
	uint16_t sib_pkey; /* big-endian */
	uint32_t sib_flowinfo; /* big-endian */
	uint8_t sib_addr[16];
	uint64_t sib_sid; /* big-endian */
	uint64_t sib_sid_mask; /* big-endian */
	uint64_t sib_scope_id;
};
static_assert(sizeof(sockaddr_ib) == 48);

/* __kernel_sockaddr_storage */
struct kernel_sockaddr_storage {
	uint8_t data[128];
};

struct rdma_ucm_cmd_hdr {
	uint32_t cmd;
	uint16_t in;
	uint16_t out;
};
static_assert(sizeof(rdma_ucm_cmd_hdr) == 8);

struct rdma_ucm_create_id {
	uint64_t uid;
	uint64_t response;
	uint16_t ps;
	uint8_t qp_type;
	uint8_t reserved[5];
};
static_assert(sizeof(rdma_ucm_create_id) == 24);
struct rdma_ucm_create_id_resp {
	uint32_t id;
};

struct rdma_ucm_destroy_id {
	uint64_t response;
	uint32_t id;
	uint32_t reserved;
};
static_assert(sizeof(rdma_ucm_destroy_id) == 16);
struct rdma_ucm_destroy_id_resp {
	uint32_t events_reported;
};

struct rdma_ucm_bind_ip {
	uint64_t response;
	sockaddr_in6 addr;
	uint32_t id;
};
static_assert(sizeof(rdma_ucm_bind_ip) == 40);

struct rdma_ucm_bind {
	uint32_t id;
	uint16_t addr_size;
	uint16_t reserved;
	kernel_sockaddr_storage addr;
};
static_assert(sizeof(rdma_ucm_bind) == 136);

struct rdma_ucm_resolve_ip {
	sockaddr_in6 src_addr;
	sockaddr_in6 dst_addr;
	uint32_t id;
	uint32_t timeout_ms;
};
static_assert(sizeof(rdma_ucm_resolve_ip) == 64);

struct rdma_ucm_resolve_addr {
	uint32_t id;
	uint32_t timeout_ms;
	uint16_t src_size;
	uint16_t dst_size;
	uint32_t reserved;
	kernel_sockaddr_storage src_addr;
	kernel_sockaddr_storage dst_addr;
};
static_assert(sizeof(rdma_ucm_resolve_addr) == 272);

struct rdma_ucm_resolve_route {
	uint32_t id;
	uint32_t timeout_ms;
};

struct rdma_ucm_query {
	uint64_t response;
	uint32_t id;
	uint32_t option;
};
static_assert(sizeof(rdma_ucm_query) == 16);

/* struct ib_user_path_rec (rdma/ib_user_sa.h) */
struct ib_user_path_rec {
	uint8_t dgid[16];
	uint8_t sgid[16];
	uint16_t dlid; /* big-endian */
	uint16_t slid; /* big-endian */
	uint32_t raw_traffic;
	uint32_t flow_label; /* big-endian */
	uint32_t reversible;
	uint32_t mtu;
	uint16_t pkey; /* big-endian */
	uint8_t hop_limit;
	uint8_t traffic_class;
	uint8_t numb_path;
	uint8_t sl;
	uint8_t mtu_selector;
	uint8_t rate_selector;
	uint8_t rate;
	uint8_t packet_life_time_selector;
	uint8_t packet_life_time;
	uint8_t preference;
};
static_assert(sizeof(ib_user_path_rec) == 64);

enum : uint32_t {
	IB_PATH_GMP = 1,
	IB_PATH_PRIMARY = 1 << 1,
	IB_PATH_OUTBOUND = 1 << 3,
	IB_PATH_INBOUND_REVERSE = 1 << 5,
	IB_PATH_BIDIRECTIONAL = IB_PATH_OUTBOUND | IB_PATH_INBOUND_REVERSE,
};
/* struct ib_path_rec_data: a PathRecord as the SA sends it (64 bytes) */
struct ib_path_rec_data {
	uint32_t flags;
	uint32_t reserved;
	uint8_t path_rec[64];
};
static_assert(sizeof(ib_path_rec_data) == 72);

struct rdma_ucm_query_route_resp {
	uint64_t node_guid; /* big-endian */
	ib_user_path_rec ib_route[2];
	sockaddr_in6 src_addr;
	sockaddr_in6 dst_addr;
	uint32_t num_paths;
	uint8_t port_num;
	uint8_t reserved[3];
	uint32_t ibdev_index;
	uint32_t reserved1;
};
static_assert(sizeof(rdma_ucm_query_route_resp) == 208);

struct rdma_ucm_query_addr_resp {
	uint64_t node_guid; /* big-endian */
	uint8_t port_num;
	uint8_t reserved;
	uint16_t pkey; /* big-endian */
	uint16_t src_size;
	uint16_t dst_size;
	kernel_sockaddr_storage src_addr;
	kernel_sockaddr_storage dst_addr;
	uint32_t ibdev_index;
	uint32_t reserved1;
};
static_assert(sizeof(rdma_ucm_query_addr_resp) == 280);

struct rdma_ucm_query_path_resp {
	uint32_t num_paths;
	uint32_t reserved;
	/* ib_path_rec_data path_data[num_paths] follows */
};

struct rdma_ucm_conn_param {
	uint32_t qp_num;
	uint32_t qkey;
	uint8_t private_data[RDMA_MAX_PRIVATE_DATA];
	uint8_t private_data_len;
	uint8_t srq;
	uint8_t responder_resources;
	uint8_t initiator_depth;
	uint8_t flow_control;
	uint8_t retry_count;
	uint8_t rnr_retry_count;
	uint8_t valid;
};
static_assert(sizeof(rdma_ucm_conn_param) == 272);

struct rdma_ucm_ud_param {
	uint32_t qp_num;
	uint32_t qkey;
	ib_uverbs_ah_attr ah_attr;
	uint8_t private_data[RDMA_MAX_PRIVATE_DATA];
	uint8_t private_data_len;
	uint8_t reserved[7];
};
static_assert(sizeof(rdma_ucm_ud_param) == 304);

struct rdma_ucm_ece {
	uint32_t vendor_id;
	uint32_t attr_mod;
};

struct rdma_ucm_connect {
	rdma_ucm_conn_param conn_param;
	uint32_t id;
	uint32_t reserved;
	rdma_ucm_ece ece;
};
static_assert(sizeof(rdma_ucm_connect) == 288);

struct rdma_ucm_listen {
	uint32_t id;
	uint32_t backlog;
};

struct rdma_ucm_accept {
	uint64_t uid;
	rdma_ucm_conn_param conn_param;
	uint32_t id;
	uint32_t reserved;
	rdma_ucm_ece ece;
};
static_assert(sizeof(rdma_ucm_accept) == 296);

struct rdma_ucm_reject {
	uint32_t id;
	uint8_t private_data_len;
	uint8_t reason;
	uint8_t reserved[2];
	uint8_t private_data[RDMA_MAX_PRIVATE_DATA];
};
static_assert(sizeof(rdma_ucm_reject) == 264);

struct rdma_ucm_disconnect {
	uint32_t id;
};

struct rdma_ucm_init_qp_attr {
	uint64_t response;
	uint32_t id;
	uint32_t qp_state;
};
static_assert(sizeof(rdma_ucm_init_qp_attr) == 16);

struct rdma_ucm_notify {
	uint32_t id;
	uint32_t event;
};

enum : uint16_t { RDMA_MC_JOIN_FLAG_FULLMEMBER = 0, RDMA_MC_JOIN_FLAG_SENDONLY_FULLMEMBER = 1 };

struct rdma_ucm_join_ip_mcast {
	uint64_t response;
	uint64_t uid;
	sockaddr_in6 addr;
	uint32_t id;
};
static_assert(sizeof(rdma_ucm_join_ip_mcast) == 48);

struct rdma_ucm_join_mcast {
	uint64_t response;
	uint64_t uid;
	uint32_t id;
	uint16_t addr_size;
	uint16_t join_flags;
	kernel_sockaddr_storage addr;
};
static_assert(sizeof(rdma_ucm_join_mcast) == 152);

struct rdma_ucm_get_event {
	uint64_t response;
};

struct rdma_ucm_event_resp {
	uint64_t uid;
	uint32_t id;
	uint32_t event;
	uint32_t status;
	union {
		rdma_ucm_conn_param conn;
		rdma_ucm_ud_param ud;
	} param;
	uint32_t reserved;
	rdma_ucm_ece ece;
};
static_assert(offsetof(rdma_ucm_event_resp, param) == 20);
static_assert(sizeof(rdma_ucm_event_resp) == 336);

struct rdma_ucm_set_option {
	uint64_t optval;
	uint32_t id;
	uint32_t level;
	uint32_t optname;
	uint32_t optlen;
};
static_assert(sizeof(rdma_ucm_set_option) == 24);

struct rdma_ucm_migrate_id {
	uint64_t response;
	uint32_t id;
	uint32_t fd;
};
static_assert(sizeof(rdma_ucm_migrate_id) == 16);
struct rdma_ucm_migrate_resp {
	uint32_t events_reported;
};

/* struct ib_uverbs_qp_attr: INIT_QP_ATTR's response */
struct ib_uverbs_qp_attr {
	uint32_t qp_attr_mask;
	uint32_t qp_state;
	uint32_t cur_qp_state;
	uint32_t path_mtu;
	uint32_t path_mig_state;
	uint32_t qkey;
	uint32_t rq_psn;
	uint32_t sq_psn;
	uint32_t dest_qp_num;
	uint32_t qp_access_flags;
	ib_uverbs_ah_attr ah_attr;
	ib_uverbs_ah_attr alt_ah_attr;
	uint32_t max_send_wr;
	uint32_t max_recv_wr;
	uint32_t max_send_sge;
	uint32_t max_recv_sge;
	uint32_t max_inline_data;
	uint16_t pkey_index;
	uint16_t alt_pkey_index;
	uint8_t en_sqd_async_notify;
	uint8_t sq_draining;
	uint8_t max_rd_atomic;
	uint8_t max_dest_rd_atomic;
	uint8_t min_rnr_timer;
	uint8_t port_num;
	uint8_t timeout;
	uint8_t retry_cnt;
	uint8_t rnr_retry;
	uint8_t alt_port_num;
	uint8_t alt_timeout;
	uint8_t reserved[5];
};
static_assert(sizeof(ib_uverbs_qp_attr) == 144);

} /* namespace ibemu::emu */
