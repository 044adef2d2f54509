// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// The uverbs write() command ABI (include/uapi/rdma/ib_user_verbs.h), x86-64
// layouts; the verbs enums it carries are in verbs_enums.h. Every struct is
// checked against the kernel's size and field offsets below.
#pragma once

#include "emu/verbs_enums.h"

#include <cstddef>
#include <cstdint>

namespace ibemu::emu {

constexpr unsigned IB_USER_VERBS_ABI_VERSION = 6;
constexpr uint32_t IB_USER_VERBS_CMD_COMMAND_MASK = 0xff;
constexpr uint32_t IB_USER_VERBS_CMD_FLAG_EXTENDED = 0x80000000u;

/* enum ib_uverbs_write_cmds */
enum UverbsCmd : uint32_t {
	CMD_GET_CONTEXT = 0,
	CMD_QUERY_DEVICE = 1,
	CMD_QUERY_PORT = 2,
	CMD_ALLOC_PD = 3,
	CMD_DEALLOC_PD = 4,
	CMD_CREATE_AH = 5,
	CMD_MODIFY_AH = 6,
	CMD_QUERY_AH = 7,
	CMD_DESTROY_AH = 8,
	CMD_REG_MR = 9,
	CMD_REG_SMR = 10,
	CMD_REREG_MR = 11,
	CMD_QUERY_MR = 12,
	CMD_DEREG_MR = 13,
	CMD_ALLOC_MW = 14,
	CMD_BIND_MW = 15,
	CMD_DEALLOC_MW = 16,
	CMD_CREATE_COMP_CHANNEL = 17,
	CMD_CREATE_CQ = 18,
	CMD_RESIZE_CQ = 19,
	CMD_DESTROY_CQ = 20,
	CMD_POLL_CQ = 21,
	CMD_PEEK_CQ = 22,
	CMD_REQ_NOTIFY_CQ = 23,
	CMD_CREATE_QP = 24,
	CMD_QUERY_QP = 25,
	CMD_MODIFY_QP = 26,
	CMD_DESTROY_QP = 27,
	CMD_POST_SEND = 28,
	CMD_POST_RECV = 29,
	CMD_ATTACH_MCAST = 30,
	CMD_DETACH_MCAST = 31,
	CMD_CREATE_SRQ = 32,
	CMD_MODIFY_SRQ = 33,
	CMD_QUERY_SRQ = 34,
	CMD_DESTROY_SRQ = 35,
	CMD_POST_SRQ_RECV = 36,
	CMD_OPEN_XRCD = 37,
	CMD_CLOSE_XRCD = 38,
	CMD_CREATE_XSRQ = 39,
	CMD_OPEN_QP = 40,
	CMD_LEGACY_COUNT = 41,
};
/* extended command indexes (with IB_USER_VERBS_CMD_FLAG_EXTENDED) */
enum UverbsExCmd : uint32_t {
	EX_CMD_QUERY_DEVICE = 1,
	EX_CMD_CREATE_CQ = 18,
	EX_CMD_CREATE_QP = 24,
	EX_CMD_MODIFY_QP = 26,
	EX_CMD_CREATE_FLOW = 50,
	EX_CMD_DESTROY_FLOW = 51,
	EX_CMD_CREATE_WQ = 52,
	EX_CMD_MODIFY_WQ = 53,
	EX_CMD_DESTROY_WQ = 54,
	EX_CMD_CREATE_RWQ_IND_TBL = 55,
	EX_CMD_DESTROY_RWQ_IND_TBL = 56,
	EX_CMD_MODIFY_CQ = 57,
	EX_CMD_COUNT = 58,
};

struct ib_uverbs_cmd_hdr {
	uint32_t command;
	uint16_t in_words;
	uint16_t out_words;
};
static_assert(sizeof(ib_uverbs_cmd_hdr) == 8);

struct ib_uverbs_ex_cmd_hdr {
	uint64_t response;
	uint16_t provider_in_words;
	uint16_t provider_out_words;
	uint32_t cmd_hdr_reserved;
};
static_assert(sizeof(ib_uverbs_ex_cmd_hdr) == 16);

struct ib_uverbs_get_context {
	uint64_t response;
};
struct ib_uverbs_get_context_resp {
	uint32_t async_fd;
	uint32_t num_comp_vectors;
};
static_assert(sizeof(ib_uverbs_get_context_resp) == 8);

struct ib_uverbs_query_device {
	uint64_t response;
};
struct ib_uverbs_query_device_resp {
	uint64_t fw_ver;
	uint64_t node_guid; /* big endian */
	uint64_t sys_image_guid; /* big endian */
	uint64_t max_mr_size;
	uint64_t page_size_cap;
	uint32_t vendor_id;
	uint32_t vendor_part_id;
	uint32_t hw_ver;
	uint32_t max_qp;
	uint32_t max_qp_wr;
	uint32_t device_cap_flags;
	uint32_t max_sge;
	uint32_t max_sge_rd;
	uint32_t max_cq;
	uint32_t max_cqe;
	uint32_t max_mr;
	uint32_t max_pd;
	uint32_t max_qp_rd_atom;
	uint32_t max_ee_rd_atom;
	uint32_t max_res_rd_atom;
	uint32_t max_qp_init_rd_atom;
	uint32_t max_ee_init_rd_atom;
	uint32_t atomic_cap;
	uint32_t max_ee;
	uint32_t max_rdd;
	uint32_t max_mw;
	uint32_t max_raw_ipv6_qp;
	uint32_t max_raw_ethy_qp;
	uint32_t max_mcast_grp;
	uint32_t max_mcast_qp_attach;
	uint32_t max_total_mcast_qp_attach;
	uint32_t max_ah;
	uint32_t max_fmr;
	uint32_t max_map_per_fmr;
	uint32_t max_srq;
	uint32_t max_srq_wr;
	uint32_t max_srq_sge;
	uint16_t max_pkeys;
	uint8_t local_ca_ack_delay;
	uint8_t phys_port_cnt;
	uint8_t reserved[4];
};
static_assert(sizeof(ib_uverbs_query_device_resp) == 176);
static_assert(offsetof(ib_uverbs_query_device_resp, vendor_id) == 40);
static_assert(offsetof(ib_uverbs_query_device_resp, max_srq_sge) == 164);
static_assert(offsetof(ib_uverbs_query_device_resp, max_pkeys) == 168);

struct ib_uverbs_ex_query_device {
	uint32_t comp_mask;
	uint32_t reserved;
};
struct ib_uverbs_ex_query_device_resp {
	ib_uverbs_query_device_resp base;
	uint32_t comp_mask;
	uint32_t response_length;
	uint64_t odp_general_caps;
	uint32_t odp_rc, odp_uc, odp_ud, odp_reserved;
	uint64_t timestamp_mask;
	uint64_t hca_core_clock;
	uint64_t device_cap_flags_ex;
	uint32_t rss_supported_qpts, rss_max_tables, rss_max_table_size, rss_reserved;
	uint32_t max_wq_type_rq;
	uint32_t raw_packet_caps;
	uint32_t tm_caps[6];
	uint16_t max_cq_moderation_count, max_cq_moderation_period;
	uint32_t cq_moderation_reserved;
	uint64_t max_dm_size;
	uint32_t xrc_odp_caps;
	uint32_t reserved;
};
static_assert(sizeof(ib_uverbs_ex_query_device_resp) == 304);
static_assert(offsetof(ib_uverbs_ex_query_device_resp, response_length) == 180);
static_assert(offsetof(ib_uverbs_ex_query_device_resp, timestamp_mask) == 208);
static_assert(offsetof(ib_uverbs_ex_query_device_resp, max_dm_size) == 288);

struct ib_uverbs_query_port {
	uint64_t response;
	uint8_t port_num;
	uint8_t reserved[7];
};
static_assert(sizeof(ib_uverbs_query_port) == 16);
struct ib_uverbs_query_port_resp {
	uint32_t port_cap_flags;
	uint32_t max_msg_sz;
	uint32_t bad_pkey_cntr;
	uint32_t qkey_viol_cntr;
	uint32_t gid_tbl_len;
	uint16_t pkey_tbl_len;
	uint16_t lid;
	uint16_t sm_lid;
	uint8_t state;
	uint8_t max_mtu;
	uint8_t active_mtu;
	uint8_t lmc;
	uint8_t max_vl_num;
	uint8_t sm_sl;
	uint8_t subnet_timeout;
	uint8_t init_type_reply;
	uint8_t active_width;
	uint8_t active_speed;
	uint8_t phys_state;
	uint8_t link_layer;
	uint8_t flags;
	uint8_t reserved;
};
static_assert(sizeof(ib_uverbs_query_port_resp) == 40);
static_assert(offsetof(ib_uverbs_query_port_resp, state) == 26);
static_assert(offsetof(ib_uverbs_query_port_resp, phys_state) == 36);

struct ib_uverbs_alloc_pd {
	uint64_t response;
};
struct ib_uverbs_alloc_pd_resp {
	uint32_t pd_handle;
};
struct ib_uverbs_dealloc_pd {
	uint32_t pd_handle;
};

struct ib_uverbs_global_route {
	uint8_t dgid[16];
	uint32_t flow_label;
	uint8_t sgid_index;
	uint8_t hop_limit;
	uint8_t traffic_class;
	uint8_t reserved;
};
static_assert(sizeof(ib_uverbs_global_route) == 24);
struct ib_uverbs_ah_attr {
	ib_uverbs_global_route grh;
	uint16_t dlid;
	uint8_t sl;
	uint8_t src_path_bits;
	uint8_t static_rate;
	uint8_t is_global;
	uint8_t port_num;
	uint8_t reserved;
};
static_assert(sizeof(ib_uverbs_ah_attr) == 32);
struct ib_uverbs_create_ah {
	uint64_t response;
	uint64_t user_handle;
	uint32_t pd_handle;
	uint32_t reserved;
	ib_uverbs_ah_attr attr;
};
static_assert(sizeof(ib_uverbs_create_ah) == 56);
struct ib_uverbs_create_ah_resp {
	uint32_t ah_handle;
};
struct ib_uverbs_destroy_ah {
	uint32_t ah_handle;
};

/* ATTACH_MCAST and DETACH_MCAST take the same command */
struct ib_uverbs_attach_mcast {
	uint8_t gid[16];
	uint32_t qp_handle;
	uint16_t mlid;
	uint16_t reserved;
};
static_assert(sizeof(ib_uverbs_attach_mcast) == 24);
using ib_uverbs_detach_mcast = ib_uverbs_attach_mcast;

struct ib_uverbs_reg_mr {
	uint64_t response;
	uint64_t start;
	uint64_t length;
	uint64_t hca_va;
	uint32_t pd_handle;
	uint32_t access_flags;
};
static_assert(sizeof(ib_uverbs_reg_mr) == 40);
struct ib_uverbs_reg_mr_resp {
	uint32_t mr_handle;
	uint32_t lkey;
	uint32_t rkey;
};
static_assert(sizeof(ib_uverbs_reg_mr_resp) == 12);
struct ib_uverbs_dereg_mr {
	uint32_t mr_handle;
};
struct ib_uverbs_alloc_mw {
	uint64_t response;
	uint32_t pd_handle;
	uint8_t mw_type;
	uint8_t reserved[3];
};
static_assert(sizeof(ib_uverbs_alloc_mw) == 16);
struct ib_uverbs_alloc_mw_resp {
	uint32_t mw_handle;
	uint32_t rkey;
};
struct ib_uverbs_dealloc_mw {
	uint32_t mw_handle;
};

struct ib_uverbs_create_comp_channel {
	uint64_t response;
};
struct ib_uverbs_create_comp_channel_resp {
	uint32_t fd;
};

struct ib_uverbs_create_cq {
	uint64_t response;
	uint64_t user_handle;
	uint32_t cqe;
	uint32_t comp_vector;
	int32_t comp_channel;
	uint32_t reserved;
};
static_assert(sizeof(ib_uverbs_create_cq) == 32);
struct ib_uverbs_create_cq_resp {
	uint32_t cq_handle;
	uint32_t cqe;
};
struct ib_uverbs_resize_cq {
	uint64_t response;
	uint32_t cq_handle;
	uint32_t cqe;
};
struct ib_uverbs_resize_cq_resp {
	uint32_t cqe;
	uint32_t reserved;
};
struct ib_uverbs_destroy_cq {
	uint64_t response;
	uint32_t cq_handle;
	uint32_t reserved;
};
struct ib_uverbs_destroy_cq_resp {
	uint32_t comp_events_reported;
	uint32_t async_events_reported;
};
struct ib_uverbs_poll_cq {
	uint64_t response;
	uint32_t cq_handle;
	uint32_t ne;
};
struct ib_uverbs_poll_cq_resp {
	uint32_t count;
	uint32_t reserved;
};
struct ib_uverbs_wc {
	uint64_t wr_id;
	uint32_t status;
	uint32_t opcode;
	uint32_t vendor_err;
	uint32_t byte_len;
	uint32_t ex; /* imm_data (big endian) or invalidate_rkey */
	uint32_t qp_num;
	uint32_t src_qp;
	uint32_t wc_flags;
	uint16_t pkey_index;
	uint16_t slid;
	uint8_t sl;
	uint8_t dlid_path_bits;
	uint8_t port_num;
	uint8_t reserved;
};
static_assert(sizeof(ib_uverbs_wc) == 48);
static_assert(offsetof(ib_uverbs_wc, pkey_index) == 40);
struct ib_uverbs_req_notify_cq {
	uint32_t cq_handle;
	uint32_t solicited_only;
};

struct ib_uverbs_create_qp {
	uint64_t response;
	uint64_t user_handle;
	uint32_t pd_handle;
	uint32_t send_cq_handle;
	uint32_t recv_cq_handle;
	uint32_t srq_handle;
	uint32_t max_send_wr;
	uint32_t max_recv_wr;
	uint32_t max_send_sge;
	uint32_t max_recv_sge;
	uint32_t max_inline_data;
	uint8_t sq_sig_all;
	uint8_t qp_type;
	uint8_t is_srq;
	uint8_t reserved;
};
static_assert(sizeof(ib_uverbs_create_qp) == 56);
struct ib_uverbs_create_qp_resp {
	uint32_t qp_handle;
	uint32_t qpn;
	uint32_t max_send_wr;
	uint32_t max_recv_wr;
	uint32_t max_send_sge;
	uint32_t max_recv_sge;
	uint32_t max_inline_data;
	uint32_t reserved;
};
static_assert(sizeof(ib_uverbs_create_qp_resp) == 32);

struct ib_uverbs_qp_dest {
	uint8_t dgid[16];
	uint32_t flow_label;
	uint16_t dlid;
	uint16_t reserved;
	uint8_t sgid_index;
	uint8_t hop_limit;
	uint8_t traffic_class;
	uint8_t sl;
	uint8_t src_path_bits;
	uint8_t static_rate;
	uint8_t is_global;
	uint8_t port_num;
};
static_assert(sizeof(ib_uverbs_qp_dest) == 32);

struct ib_uverbs_query_qp {
	uint64_t response;
	uint32_t qp_handle;
	uint32_t attr_mask;
};
struct ib_uverbs_query_qp_resp {
	ib_uverbs_qp_dest dest;
	ib_uverbs_qp_dest alt_dest;
	uint32_t max_send_wr;
	uint32_t max_recv_wr;
	uint32_t max_send_sge;
	uint32_t max_recv_sge;
	uint32_t max_inline_data;
	uint32_t qkey;
	uint32_t rq_psn;
	uint32_t sq_psn;
	uint32_t dest_qp_num;
	uint32_t qp_access_flags;
	uint16_t pkey_index;
	uint16_t alt_pkey_index;
	uint8_t qp_state;
	uint8_t cur_qp_state;
	uint8_t path_mtu;
	uint8_t path_mig_state;
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
	uint8_t sq_sig_all;
	uint8_t reserved[5];
};
static_assert(sizeof(ib_uverbs_query_qp_resp) == 128);
static_assert(offsetof(ib_uverbs_query_qp_resp, qp_state) == 108);

struct ib_uverbs_modify_qp {
	ib_uverbs_qp_dest dest;
	ib_uverbs_qp_dest alt_dest;
	uint32_t qp_handle;
	uint32_t attr_mask;
	uint32_t qkey;
	uint32_t rq_psn;
	uint32_t sq_psn;
	uint32_t dest_qp_num;
	uint32_t qp_access_flags;
	uint16_t pkey_index;
	uint16_t alt_pkey_index;
	uint8_t qp_state;
	uint8_t cur_qp_state;
	uint8_t path_mtu;
	uint8_t path_mig_state;
	uint8_t en_sqd_async_notify;
	uint8_t max_rd_atomic;
	uint8_t max_dest_rd_atomic;
	uint8_t min_rnr_timer;
	uint8_t port_num;
	uint8_t timeout;
	uint8_t retry_cnt;
	uint8_t rnr_retry;
	uint8_t alt_port_num;
	uint8_t alt_timeout;
	uint8_t reserved[2];
};
static_assert(sizeof(ib_uverbs_modify_qp) == 112);
static_assert(offsetof(ib_uverbs_modify_qp, qp_handle) == 64);
static_assert(offsetof(ib_uverbs_modify_qp, qp_state) == 96);
static_assert(offsetof(ib_uverbs_modify_qp, alt_timeout) == 109);

struct ib_uverbs_destroy_qp {
	uint64_t response;
	uint32_t qp_handle;
	uint32_t reserved;
};
struct ib_uverbs_destroy_qp_resp {
	uint32_t events_reported;
};

struct ib_uverbs_sge {
	uint64_t addr;
	uint32_t length;
	uint32_t lkey;
};
static_assert(sizeof(ib_uverbs_sge) == 16);

struct ib_uverbs_send_wr {
	uint64_t wr_id;
	uint32_t num_sge;
	uint32_t opcode;
	uint32_t send_flags;
	uint32_t ex; /* imm_data (big endian) or invalidate_rkey */
	union {
		struct {
			uint64_t remote_addr;
			uint32_t rkey;
			uint32_t reserved;
		} rdma;
		struct {
			uint64_t remote_addr;
			uint64_t compare_add;
			uint64_t swap;
			uint32_t rkey;
			uint32_t reserved;
		} atomic;
		struct {
			uint32_t ah;
			uint32_t remote_qpn;
			uint32_t remote_qkey;
			uint32_t reserved;
		} ud;
	} wr;
};
static_assert(sizeof(ib_uverbs_send_wr) == 56);
static_assert(offsetof(ib_uverbs_send_wr, wr) == 24);

struct ib_uverbs_post_send {
	uint64_t response;
	uint32_t qp_handle;
	uint32_t wr_count;
	uint32_t sge_count;
	uint32_t wqe_size;
};
static_assert(sizeof(ib_uverbs_post_send) == 24);
struct ib_uverbs_post_send_resp {
	uint32_t bad_wr;
};
struct ib_uverbs_recv_wr {
	uint64_t wr_id;
	uint32_t num_sge;
	uint32_t reserved;
};
static_assert(sizeof(ib_uverbs_recv_wr) == 16);
/* POST_RECV and POST_SRQ_RECV: qp_handle is the SRQ's handle for the latter */
struct ib_uverbs_post_recv {
	uint64_t response;
	uint32_t qp_handle;
	uint32_t wr_count;
	uint32_t sge_count;
	uint32_t wqe_size;
};
static_assert(sizeof(ib_uverbs_post_recv) == 24);
struct ib_uverbs_post_recv_resp {
	uint32_t bad_wr;
};

struct ib_uverbs_create_srq {
	uint64_t response;
	uint64_t user_handle;
	uint32_t pd_handle;
	uint32_t max_wr;
	uint32_t max_sge;
	uint32_t srq_limit;
};
static_assert(sizeof(ib_uverbs_create_srq) == 32);
struct ib_uverbs_create_srq_resp {
	uint32_t srq_handle;
	uint32_t max_wr;
	uint32_t max_sge;
	uint32_t srqn;
};
struct ib_uverbs_modify_srq {
	uint32_t srq_handle;
	uint32_t attr_mask;
	uint32_t max_wr;
	uint32_t srq_limit;
};
struct ib_uverbs_query_srq {
	uint64_t response;
	uint32_t srq_handle;
	uint32_t reserved;
};
struct ib_uverbs_query_srq_resp {
	uint32_t max_wr;
	uint32_t max_sge;
	uint32_t srq_limit;
	uint32_t reserved;
};
struct ib_uverbs_destroy_srq {
	uint64_t response;
	uint32_t srq_handle;
	uint32_t reserved;
};
struct ib_uverbs_destroy_srq_resp {
	uint32_t events_reported;
};

/* XRC domains, XRC SRQs and opening a shared QP */
struct ib_uverbs_open_xrcd {
	uint64_t response;
	uint32_t fd; /* -1: a domain of its own */
	uint32_t oflags; /* O_CREAT, O_EXCL */
};
static_assert(sizeof(ib_uverbs_open_xrcd) == 16);
struct ib_uverbs_open_xrcd_resp {
	uint32_t xrcd_handle;
};
struct ib_uverbs_close_xrcd {
	uint32_t xrcd_handle;
};
struct ib_uverbs_create_xsrq {
	uint64_t response;
	uint64_t user_handle;
	uint32_t srq_type; /* IB_SRQT_BASIC, _XRC, _TM */
	uint32_t pd_handle;
	uint32_t max_wr;
	uint32_t max_sge;
	uint32_t srq_limit;
	uint32_t max_num_tags;
	uint32_t xrcd_handle;
	uint32_t cq_handle;
};
static_assert(sizeof(ib_uverbs_create_xsrq) == 48);
struct ib_uverbs_open_qp {
	uint64_t response;
	uint64_t user_handle;
	uint32_t pd_handle; /* the XRCD's handle */
	uint32_t qpn;
	uint8_t qp_type;
	uint8_t reserved[7];
};
static_assert(sizeof(ib_uverbs_open_qp) == 32);

/* Event records read from the async event fd and completion channels. */
struct ib_uverbs_async_event_desc {
	uint64_t element;
	uint32_t event_type;
	uint32_t reserved;
};
static_assert(sizeof(ib_uverbs_async_event_desc) == 16);
struct ib_uverbs_comp_event_desc {
	uint64_t cq_handle;
};
static_assert(sizeof(ib_uverbs_comp_event_desc) == 8);

/* RDMA_VERBS_IOCTL: _IOWR(0x1b, 1, struct ib_uverbs_ioctl_hdr) */
constexpr unsigned RDMA_VERBS_IOCTL = 0xc0181b01;

} /* namespace ibemu::emu */
