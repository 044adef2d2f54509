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
// Plain C layout: the provider includes this file too.
#pragma once

#include <stdint.h>

#define IBEMU_UVERBS_MAGIC 0x4d454249u /* "IBEM" */
#define IBEMU_UVERBS_VERSION 1u
#define IBEMU_MAX_SPARES 8u

/* A legacy write() command index of ibemu's own (the kernel's table ends at
 * 40, IB_USER_VERBS_CMD_OPEN_QP); other providers never send it. */
#define IBEMU_CMD_ADD_SPARES 0xf0u

/* After struct ib_uverbs_create_cq (driver data of CREATE_CQ). */
struct ibemu_create_cq_req {
	int32_t ring_fd; /* the memfd, or -1: completions are read with POLL_CQ */
	uint32_t reserved;
};

/* After struct ib_uverbs_create_cq_resp. */
struct ibemu_create_cq_resp {
	uint32_t ring_entries; /* 0: no ring */
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

/* The entries of a CQ of cqe completions: a power of two, at least cqe. */
static inline uint32_t ibemu_cq_ring_entries(uint32_t cqe)
{
	uint32_t n = 1;
	while (n < cqe)
		n <<= 1;
	return n;
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
	uint32_t reserved;
	struct ibemu_spare spares[IBEMU_MAX_SPARES];
};

/* After struct ib_uverbs_get_context_resp. */
struct ibemu_get_context_resp {
	uint32_t magic;
	uint32_t version;
	uint32_t spares_taken; /* all of them, or the command failed */
	uint32_t reserved;
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

#ifdef __cplusplus
static_assert(sizeof(struct ibemu_spare) == 8);
static_assert(sizeof(struct ibemu_get_context_req) == 16 + 8 * IBEMU_MAX_SPARES);
static_assert(sizeof(struct ibemu_get_context_resp) == 16);
static_assert(sizeof(struct ibemu_add_spares) == 16 + 8 * IBEMU_MAX_SPARES);
static_assert(sizeof(struct ibemu_add_spares_resp) == 8);
static_assert(sizeof(struct ibemu_create_cq_req) == 8 && sizeof(struct ibemu_create_cq_resp) == 8);
static_assert(sizeof(struct ibemu_cq_ring) == 128);
#endif
