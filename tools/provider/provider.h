// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// ibemu's libibverbs provider, libibemu-rdmav34.so: the user-space driver
// of the emulated HCA, as every real HCA has one. libibverbs loads it from
// RDMAV_DRIVERS, which `ibemu exec` sets (no /etc/libibverbs.d entry is
// installed: programs outside exec keep ipathverbs), and hands it the
// ibemu devices by name.
//
// Every verb but polling a CQ is a write() command on the uverbs
// descriptor, served by ibemud (emu/uverbs_file.cpp), as with the stock
// ipathverbs provider; what
// this provider adds is what libibverbs cannot do without a driver's help,
// and the start of a fast path:
//   - CQs in shared memory: completions are read without a system call;
//   - completion channels: spare socket pairs for the device to take
//     (emu/ibemu_user_verbs.h), kept topped up (provider.cpp);
//   - the extended API: ibv_create_qp_ex with send_ops_flags and the
//     ibv_wr_* builders, ibv_create_cq_ex and ibv_start_poll (provider_ex.cpp);
//   - an async event descriptor of its own, so ibv_close_device() closes
//     two different descriptors.
#pragma once

#include "tools/provider/pabi34.h"

#include <deque>
#include <mutex>
#include <sys/types.h>
#include <vector>

namespace ibemu::provider {

/* A spare's receiving end, as we made it: the number alone could be the
 * program's by now (closed and reused). */
struct Spare {
	int fd;
	dev_t dev;
	ino_t ino;
};

struct Context {
	verbs_context vctx; /* first: libibverbs allocates (calloc) Context around it */
	std::mutex *spareLock;
	std::vector<Spare> *spares; /* receiving ends the device holds as spares */
};

/* struct ibv_context is the last member of struct verbs_context */
inline Context *ctxOf(ibv_context *c)
{
	return reinterpret_cast<Context *>(reinterpret_cast<char *>(c) - offsetof(verbs_context, context));
}

/* ibv_qp_ex's builders collect work requests here until wr_complete(). */
struct Qp {
	verbs_qp vqp;
	std::mutex lock; /* wr_start .. wr_complete/wr_abort */
	std::vector<ibv_send_wr> wrs;
	std::deque<std::vector<ibv_sge>> sges; /* per WR; stable addresses */
	std::deque<std::vector<uint8_t>> inlineData; /* copied at set time */
	int err = 0; /* latched by a builder, returned by wr_complete */
};

inline Qp *qpOf(ibv_qp *q)
{
	return reinterpret_cast<Qp *>(q);
}

/* The completions: in a ring shared with the device (emu/cq_ring.h), or
 * polled from it; for ibv_cq_ex a batch of them, one current. */
struct Cq {
	verbs_cq vcq;
	std::mutex lock;
	void *ring = nullptr; /* struct ibemu_cq_ring, then the entries */
	size_t ringLen = 0;
	uint32_t ringEntries = 0;
	ibv_wc batch[16];
	int count = 0, next = 0; /* batch[next - 1] is the current one */
};

inline Cq *cqOf(ibv_cq *c)
{
	return reinterpret_cast<Cq *>(c);
}

/* A channel fd given to create_cq: a spare is used up; top the pool up. */
void channelUsed(ibv_context *context, ibv_comp_channel *channel);
/* CREATE_CQ; nullptr with errno set on failure */
Cq *newCq(ibv_context *context, int cqe, ibv_comp_channel *channel, int compVector);
/* up to n completions, from the ring or POLL_CQ; cq->lock held */
int fetch(Cq *cq, int n, ibv_wc *wc);

/* provider_ex.cpp */
ibv_qp *createQpEx(ibv_context *context, ibv_qp_init_attr_ex *attr);
ibv_cq_ex *createCqEx(ibv_context *context, ibv_cq_init_attr_ex *attr);
int pollCq(ibv_cq *cq, int n, ibv_wc *wc);

} /* namespace ibemu::provider */
