// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// The driver ABI between ibemu's libibverbs provider (tools/provider/) and
// the uverbs device (the role include/uapi/rdma/rdma_user_rxe.h plays for
// rxe): the driver data that follows the core request and response of a
// write() command, and the one command of ibemu's own.
//
// Completion channels. ibv_create_comp_channel() asks the device for a new
// descriptor in the caller, which a CUSE server cannot create. So the
// provider creates "spares" beforehand, connected AF_UNIX stream socket
// pairs, and hands both ends' numbers to the device with GET_CONTEXT (and
// later with IBEMU_CMD_ADD_SPARES). The device takes its own copies with
// pidfd_getfd() while the caller waits in the write(), checks that the two
// are one pair, keeps the sending end, and the provider closes its copy of
// it. CREATE_COMP_CHANNEL answers the number of a spare's receiving end;
// a completion event is 8 bytes (struct ib_uverbs_comp_event_desc) sent on
// the pair, which ibv_get_cq_event() reads. See docs/verbs.md.
//
// Completion queues in shared memory. With CREATE_CQ the provider hands
// over a sealed memfd (F_SEAL_SHRINK: it cannot shrink under the device's
// mapping) holding a ring header and ibemu_cq_ring_entries(cqe) entries of
// struct ib_uverbs_wc; the device writes completions there and the program
// polls them without a system call. The producer index is the device's,
// the consumer index the program's; both run free (the slot is the index
// modulo the entries), each written by one side only, with release
// ordering, and read by the other with acquire.
//
// Work queues in shared memory. After CREATE_QP, the provider attaches a
// second sealed memfd to an RC, UC, UD or XRC_INI QP with IBEMU_CMD_ATTACH_QP_RING:
// a header (struct ibemu_qp_ring), then the send queue's slots, then the
// receive queue's (none with an SRQ). ibv_post_send() writes work requests
// there and rings the doorbell: one byte sent on an AF_UNIX stream pair
// whose receiving end the device took with the command. ibv_post_recv()
// only writes: the device takes receives from the ring when a message
// needs one, and asks for the doorbell (rq_notify) only while a requester
// waits on an empty queue (RNR) or the QP is in Error. Producer indices are
// the program's, consumer indices the device's (work requests retired:
// completed, or done unsignaled); all run free. The device copies each
// slot out before it looks at it, and checks it as POST_SEND would.
//
// One area per context (version 2). Making, sealing, mapping and handing
// over a memfd for every ring costs both sides a dozen system calls and a
// page fault each, and the daemon's one thread serves every program: in
// the VM suite's TCG guest that was among the largest parts of the
// daemon's work for an rdma_cm connection (docs/performance.md). So the
// provider makes one sealed memfd per context, hands it over with
// GET_CONTEXT (area_fd), and carves its rings from it: a ring_fd of
// IBEMU_RING_IN_AREA names a ring at area_offset in the area instead of a
// memfd of its own. A ring that does not fit, or any when the device
// mapped no area, still comes in a memfd of its own. The area holds
// nothing the device trusts; rings in it may overlap, as two rings could
// share a memfd before: that only spoils the program's own queues.
//
// Plain C layout: the provider includes this file too.
#pragma once

#include <stdint.h>

#define IBEMU_UVERBS_MAGIC 0x4d454249u /* "IBEM" */
#define IBEMU_UVERBS_VERSION 2u /* 1: no area (the device takes both) */
#define IBEMU_MAX_SPARES 8u

/* ring_fd naming a ring in the context's area, at area_offset */
#define IBEMU_RING_IN_AREA (-2)
/* an area is at most this long; rings in it start at a multiple of
 * IBEMU_RING_ALIGN (the headers' cache lines) */
#define IBEMU_AREA_MAX_BYTES (16u << 20)
#define IBEMU_RING_ALIGN 64u

/* A legacy write() command index of ibemu's own (the kernel's table ends at
 * 40, IB_USER_VERBS_CMD_OPEN_QP); other providers never send it. */
#define IBEMU_CMD_ADD_SPARES 0xf0u
#define IBEMU_CMD_ATTACH_QP_RING 0xf1u

/* After struct ib_uverbs_create_cq (driver data of CREATE_CQ). */
struct ibemu_create_cq_req {
	int32_t ring_fd; /* the memfd, IBEMU_RING_IN_AREA, or -1: completions are read with POLL_CQ */
	uint32_t area_offset; /* with IBEMU_RING_IN_AREA; else 0 */
};

/* After struct ib_uverbs_create_cq_resp. */
struct ibemu_create_cq_resp {
	uint32_t ring_entries; /* 0: no ring */
	uint32_t reserved;
};

/* RESIZE_CQ: after struct ib_uverbs_resize_cq, the ring the CQ moves to
 * (ibemu_cq_ring_bytes(cqe), zeroed), as CREATE_CQ names one; the
 * completions not yet read move to its start, in order. A ring_fd of -1
 * keeps the ring, if the new capacity fits it. After struct
 * ib_uverbs_resize_cq_resp, the ring's entries (0: no ring). */
struct ibemu_resize_cq_req {
	int32_t ring_fd;
	uint32_t area_offset;
};

struct ibemu_resize_cq_resp {
	uint32_t ring_entries;
	uint32_t reserved;
};

struct ibemu_cq_ring {
	uint32_t producer; /* completions written, by the device */
	uint32_t pad0[15];
	uint32_t consumer; /* completions read, by the program */
	uint32_t pad1[15];
	/* then the entries: struct ib_uverbs_wc[entries] */
};

#define IBEMU_CQ_RING_WC_SIZE 48u /* sizeof(struct ib_uverbs_wc) */

/* A queue asked to hold n entries holds what rxe's rxe_queue_init() makes
 * of it: one less than the power of two above n (n = 10 holds 15, n = 16
 * holds 31), and the CQ, QP and SRQ commands report that. */
static inline uint32_t ibemu_queue_capacity(uint32_t n)
{
	uint64_t slots = 1;
	while (slots < (uint64_t)n + 1)
		slots <<= 1;
	return (uint32_t)(slots - 1);
}

/* The entries of a CQ asked for cqe completions: a power of two, one more
 * than the ibemu_queue_capacity(cqe) it holds. */
static inline uint32_t ibemu_cq_ring_entries(uint32_t cqe)
{
	return ibemu_queue_capacity(cqe) + 1;
}

static inline uint64_t ibemu_cq_ring_bytes(uint32_t cqe)
{
	return sizeof(struct ibemu_cq_ring) + (uint64_t)ibemu_cq_ring_entries(cqe) * IBEMU_CQ_RING_WC_SIZE;
}

struct ibemu_spare {
	int32_t recv_fd; /* the end the program reads: becomes the channel's fd */
	int32_t send_fd; /* the end the device sends on */
};

/* After struct ib_uverbs_get_context (driver data of GET_CONTEXT). */
struct ibemu_get_context_req {
	uint32_t magic;
	uint32_t version;
	uint32_t nspares;
	int32_t area_fd; /* version 2: a sealed memfd for rings, or -1 (version 1: 0, unused) */
	struct ibemu_spare spares[IBEMU_MAX_SPARES];
};

/* After struct ib_uverbs_get_context_resp. */
struct ibemu_get_context_resp {
	uint32_t magic;
	uint32_t version;
	uint32_t spares_taken; /* all of them, or the command failed */
	uint32_t area_bytes; /* the area the device mapped: all of it, or 0 without one */
};

/* IBEMU_CMD_ADD_SPARES: response pointer first, as every legacy command
 * with a response has it. */
struct ibemu_add_spares {
	uint64_t response;
	uint32_t nspares;
	uint32_t reserved;
	struct ibemu_spare spares[IBEMU_MAX_SPARES];
};

struct ibemu_add_spares_resp {
	uint32_t spares_held; /* spares the device holds now, not yet channels */
	uint32_t reserved;
};

/* IBEMU_CMD_ATTACH_QP_RING: no response. The QP must be in RESET with
 * nothing posted. Slot counts are ibemu_cq_ring_entries() of the QP's
 * max_send_wr / max_recv_wr (the power of two above: 2 slots for 1 WR);
 * none for the receive queue with an SRQ or of an XRC send QP. A send
 * slot holds a struct ibemu_send_wqe then max(max_send_sge SGEs,
 * max_inline_data bytes), a receive slot a struct ibemu_recv_wqe then
 * max_recv_sge SGEs (struct ib_uverbs_sge); strides are multiples of 16. */
struct ibemu_attach_qp_ring {
	uint32_t qp_handle;
	int32_t ring_fd; /* the memfd (header, send slots, receive slots) or IBEMU_RING_IN_AREA */
	int32_t doorbell_fd; /* the receiving end of the doorbell pair */
	uint32_t sq_entries;
	uint32_t sq_stride;
	uint32_t rq_entries; /* 0 with an SRQ */
	uint32_t rq_stride;
	uint32_t area_offset; /* with a ring_fd of IBEMU_RING_IN_AREA; else 0 */
};

#define IBEMU_QP_RING_MAX_ENTRIES 16384u
#define IBEMU_QP_RING_MAX_STRIDE 4096u

struct ibemu_qp_ring {
	uint32_t sq_producer; /* by the program */
	uint32_t pad0[15];
	uint32_t sq_consumer; /* by the device: retired */
	uint32_t pad1[15];
	uint32_t rq_producer; /* by the program */
	uint32_t pad2[15];
	uint32_t rq_consumer; /* by the device: taken and completed */
	uint32_t rq_notify; /* by the device: ring the doorbell after posting a receive */
	uint32_t pad3[14];
	/* then sq_entries send slots, then rq_entries receive slots */
};

/* A send slot's head; the SGEs (struct ib_uverbs_sge) or the inline data
 * follow. opcode and send_flags as in struct ib_uverbs_send_wr. */
struct ibemu_send_wqe {
	uint64_t wr_id;
	uint32_t opcode;
	uint32_t send_flags;
	uint32_t num_sge; /* SGEs that follow (0 with IB_SEND_INLINE) */
	uint32_t inline_len; /* IB_SEND_INLINE: bytes that follow */
	uint32_t imm_data; /* big-endian, as given (or the rkey to invalidate) */
	uint32_t rkey; /* RDMA and atomics */
	uint64_t remote_addr;
	uint64_t compare_add;
	uint64_t swap;
	uint32_t ah; /* UD: the AH's handle */
	uint32_t remote_qpn; /* UD */
	uint32_t remote_qkey; /* UD */
	uint32_t remote_srqn; /* XRC_INI: the remote XRC SRQ (the XRCETH) */
	uint32_t reserved[2];
};
/* IB_WR_BIND_MW puts its bind in those fields: ah the window's handle,
 * imm_data its rkey as the program knows it, rkey the new one, remote_qpn
 * the MR's lkey (0 to unbind), remote_qkey the window's access flags,
 * remote_addr and compare_add its address and length. IB_WR_LOCAL_INV
 * has the rkey to invalidate in imm_data. */

struct ibemu_recv_wqe {
	uint64_t wr_id;
	uint32_t num_sge;
	uint32_t reserved;
};

static inline uint64_t ibemu_qp_ring_bytes(uint32_t sq_entries, uint32_t sq_stride, uint32_t rq_entries,
					   uint32_t rq_stride)
{
	return sizeof(struct ibemu_qp_ring) + (uint64_t)sq_entries * sq_stride + (uint64_t)rq_entries * rq_stride;
}

#ifdef __cplusplus
static_assert(sizeof(struct ibemu_attach_qp_ring) == 32);
static_assert(sizeof(struct ibemu_qp_ring) == 256);
static_assert(sizeof(struct ibemu_send_wqe) == 80 && sizeof(struct ibemu_recv_wqe) == 16);
static_assert(sizeof(struct ibemu_spare) == 8);
static_assert(sizeof(struct ibemu_get_context_req) == 16 + 8 * IBEMU_MAX_SPARES);
static_assert(sizeof(struct ibemu_get_context_resp) == 16);
static_assert(sizeof(struct ibemu_add_spares) == 16 + 8 * IBEMU_MAX_SPARES);
static_assert(sizeof(struct ibemu_add_spares_resp) == 8);
static_assert(sizeof(struct ibemu_create_cq_req) == 8 && sizeof(struct ibemu_create_cq_resp) == 8);
static_assert(sizeof(struct ibemu_resize_cq_req) == 8 && sizeof(struct ibemu_resize_cq_resp) == 8);
static_assert(sizeof(struct ibemu_cq_ring) == 128);
#endif
