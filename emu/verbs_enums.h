// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// The verbs enums the uverbs ABI carries (include/rdma/ib_verbs.h and
// include/uapi/rdma/ib_user_verbs.h): QP types and states, attribute
// masks, access flags, work request and completion opcodes and statuses,
// async events, capabilities.
#pragma once

#include <cstdint>

namespace ibemu::emu {

enum QpType : uint8_t { IB_QPT_RC = 2, IB_QPT_UC = 3, IB_QPT_UD = 4, IB_QPT_XRC_INI = 9, IB_QPT_XRC_TGT = 10 };
/* enum ib_srq_type */
enum SrqType : uint32_t { IB_SRQT_BASIC = 0, IB_SRQT_XRC = 1, IB_SRQT_TM = 2 };

enum QpState : uint8_t {
	IB_QPS_RESET = 0,
	IB_QPS_INIT,
	IB_QPS_RTR,
	IB_QPS_RTS,
	IB_QPS_SQD,
	IB_QPS_SQE,
	IB_QPS_ERR,
};

/* enum ib_qp_attr_mask */
enum : uint32_t {
	IB_QP_STATE = 1u << 0,
	IB_QP_CUR_STATE = 1u << 1,
	IB_QP_EN_SQD_ASYNC_NOTIFY = 1u << 2,
	IB_QP_ACCESS_FLAGS = 1u << 3,
	IB_QP_PKEY_INDEX = 1u << 4,
	IB_QP_PORT = 1u << 5,
	IB_QP_QKEY = 1u << 6,
	IB_QP_AV = 1u << 7,
	IB_QP_PATH_MTU = 1u << 8,
	IB_QP_TIMEOUT = 1u << 9,
	IB_QP_RETRY_CNT = 1u << 10,
	IB_QP_RNR_RETRY = 1u << 11,
	IB_QP_RQ_PSN = 1u << 12,
	IB_QP_MAX_QP_RD_ATOMIC = 1u << 13,
	IB_QP_ALT_PATH = 1u << 14,
	IB_QP_MIN_RNR_TIMER = 1u << 15,
	IB_QP_SQ_PSN = 1u << 16,
	IB_QP_MAX_DEST_RD_ATOMIC = 1u << 17,
	IB_QP_PATH_MIG_STATE = 1u << 18,
	IB_QP_CAP = 1u << 19,
	IB_QP_DEST_QPN = 1u << 20,
	IB_QP_RATE_LIMIT = 1u << 25,
};

/* enum ib_access_flags */
enum : uint32_t {
	IB_ACCESS_LOCAL_WRITE = 1u << 0,
	IB_ACCESS_REMOTE_WRITE = 1u << 1,
	IB_ACCESS_REMOTE_READ = 1u << 2,
	IB_ACCESS_REMOTE_ATOMIC = 1u << 3,
	IB_ACCESS_MW_BIND = 1u << 4,
	IB_ZERO_BASED = 1u << 5,
	IB_ACCESS_ON_DEMAND = 1u << 6,
	IB_ACCESS_HUGETLB = 1u << 7,
	/* IB_ACCESS_OPTIONAL: bits 20..29, ignored by devices that lack them */
	IB_ACCESS_OPTIONAL = 0x3ff00000u,
	IB_ACCESS_SUPPORTED = ((IB_ACCESS_HUGETLB << 1) - 1) | IB_ACCESS_OPTIONAL,
};

/* enum ib_mw_type */
enum : uint32_t { IB_MW_TYPE_1 = 1, IB_MW_TYPE_2 = 2 };

/* enum ib_uverbs_wr_opcode */
enum : uint32_t {
	IB_WR_RDMA_WRITE = 0,
	IB_WR_RDMA_WRITE_WITH_IMM = 1,
	IB_WR_SEND = 2,
	IB_WR_SEND_WITH_IMM = 3,
	IB_WR_RDMA_READ = 4,
	IB_WR_ATOMIC_CMP_AND_SWP = 5,
	IB_WR_ATOMIC_FETCH_AND_ADD = 6,
	IB_WR_LOCAL_INV = 7,
	IB_WR_BIND_MW = 8,
	IB_WR_SEND_WITH_INV = 9,
};

/* enum ib_send_flags */
enum : uint32_t {
	IB_SEND_FENCE = 1,
	IB_SEND_SIGNALED = 2,
	IB_SEND_SOLICITED = 4,
	IB_SEND_INLINE = 8,
};

/* enum ib_cq_notify_flags: what an armed CQ waits for */
enum : uint32_t {
	IB_CQ_SOLICITED = 1,
	IB_CQ_NEXT_COMP = 2,
};

/* enum ib_wc_status */
enum WcStatus : uint32_t {
	IB_WC_SUCCESS = 0,
	IB_WC_LOC_LEN_ERR = 1,
	IB_WC_LOC_QP_OP_ERR = 2,
	IB_WC_LOC_PROT_ERR = 4,
	IB_WC_WR_FLUSH_ERR = 5,
	IB_WC_MW_BIND_ERR = 6,
	IB_WC_LOC_ACCESS_ERR = 8,
	IB_WC_REM_INV_REQ_ERR = 9,
	IB_WC_REM_ACCESS_ERR = 10,
	IB_WC_REM_OP_ERR = 11,
	IB_WC_RETRY_EXC_ERR = 12,
	IB_WC_RNR_RETRY_EXC_ERR = 13,
	IB_WC_FATAL_ERR = 19,
	IB_WC_GENERAL_ERR = 21,
};

/* enum ib_wc_opcode */
enum WcOpcode : uint32_t {
	IB_WC_SEND = 0,
	IB_WC_RDMA_WRITE = 1,
	IB_WC_RDMA_READ = 2,
	IB_WC_COMP_SWAP = 3,
	IB_WC_FETCH_ADD = 4,
	IB_WC_BIND_MW = 5,
	IB_WC_LOCAL_INV = 6,
	IB_WC_RECV = 128,
	IB_WC_RECV_RDMA_WITH_IMM = 129,
};

enum : uint32_t { IB_WC_GRH = 1, IB_WC_WITH_IMM = 2, IB_WC_WITH_INVALIDATE = 4 };

/* enum ib_event_type */
enum AsyncEvent : uint32_t {
	IB_EVENT_CQ_ERR = 0,
	IB_EVENT_QP_FATAL = 1,
	IB_EVENT_QP_REQ_ERR = 2,
	IB_EVENT_QP_ACCESS_ERR = 3,
	IB_EVENT_COMM_EST = 4,
	IB_EVENT_SQ_DRAINED = 5,
	IB_EVENT_PATH_MIG = 6,
	IB_EVENT_PATH_MIG_ERR = 7,
	IB_EVENT_DEVICE_FATAL = 8,
	IB_EVENT_PORT_ACTIVE = 9,
	IB_EVENT_PORT_ERR = 10,
	IB_EVENT_LID_CHANGE = 11,
	IB_EVENT_PKEY_CHANGE = 12,
	IB_EVENT_SM_CHANGE = 13,
	IB_EVENT_SRQ_ERR = 14,
	IB_EVENT_SRQ_LIMIT_REACHED = 15,
	IB_EVENT_QP_LAST_WQE_REACHED = 16,
	IB_EVENT_CLIENT_REREGISTER = 17,
};

/* enum ib_srq_attr_mask */
enum : uint32_t { IB_SRQ_MAX_WR = 1, IB_SRQ_LIMIT = 2 };

/* enum ib_atomic_cap */
enum : uint32_t { IB_ATOMIC_NONE = 0, IB_ATOMIC_HCA = 1, IB_ATOMIC_GLOB = 2 };

} /* namespace ibemu::emu */
