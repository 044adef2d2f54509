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
// Plain C layout: the provider includes this file too.
#pragma once

#include <stdint.h>

#define IBEMU_UVERBS_MAGIC 0x4d454249u /* "IBEM" */
#define IBEMU_UVERBS_VERSION 1u
#define IBEMU_MAX_SPARES 8u

/* A legacy write() command index of ibemu's own (the kernel's table ends at
 * 40, IB_USER_VERBS_CMD_OPEN_QP); other providers never send it. */
#define IBEMU_CMD_ADD_SPARES 0xf0u

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
#endif
