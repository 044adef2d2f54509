// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// ibemu's libibverbs provider, libibemu-rdmav34.so: the user-space driver
// of the emulated HCA, as every real HCA has one. libibverbs loads it from
// RDMAV_DRIVERS, which `ibemu exec` sets, or, for a --global instance's
// programs, from the /etc/libibverbs.d entry the daemon writes while it
// runs (tools/instance/host_verbs.h), and hands it the ibemu devices by
// name.
//
// Every control verb is a write() command on the uverbs descriptor, served
// by ibemud (emu/uverbs_file.cpp), as with the stock ipathverbs provider;
// what this provider adds is what libibverbs cannot do without a driver's
// help, and a fast path:
//   - CQs in shared memory: completions are read without a system call;
//     the rings of a context in one area the device maps once
//     (provider_area.cpp);
//   - send and receive queues in shared memory: posting writes there, and
//     a send rings a doorbell, one byte on a socket (provider_ring.cpp);
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

/* The context's ring area (emu/ibemu_user_verbs.h; provider_area.cpp):
 * rings carved from one sealed memfd the device maps once. */
class RingArea {
public:
	RingArea() = default;
	~RingArea();
	RingArea(const RingArea &) = delete;
	RingArea &operator=(const RingArea &) = delete;
	/* makes and maps the memfd: its descriptor, to hand over and close,
	 * or -1 (no area: every ring gets a memfd of its own) */
	int create();
	/* unmaps it: the device did not take it */
	void drop();
	/* len bytes, zeroed, at *offset in the area; nullptr when none are free */
	void *take(size_t len, uint32_t &offset);
	/* gives back a ring take() returned; false if it is not the area's */
	bool give(void *ring, size_t len);
	/* A ring's memory, mapped and zeroed: len bytes of the area (fd
	 * IBEMU_RING_IN_AREA, *offset set), else a sealed memfd of its own
	 * named name (fd its descriptor, to hand over and close); nullptr and
	 * fd -1 when neither can be had. */
	void *ring(size_t len, const char *name, int &fd, uint32_t &offset);
	/* gives back or unmaps what ring() returned */
	void release(void *ring, size_t len);
	/* the bytes create() made: what the device must have mapped */
	static size_t bytes();

private:
	std::mutex lock_;
	uint8_t *base_ = nullptr;
	std::vector<bool> used_; /* a page each */
};

struct Context {
	verbs_context vctx; /* first: libibverbs allocates (calloc) Context around it */
	std::mutex *spareLock;
	std::vector<Spare> *spares; /* receiving ends the device holds as spares */
	RingArea *area;
};

/* struct ibv_context is the last member of struct verbs_context */
inline Context *ctxOf(ibv_context *c)
{
	return reinterpret_cast<Context *>(reinterpret_cast<char *>(c) - offsetof(verbs_context, context));
}

/* A QP's work queues in memory shared with the device, and its doorbell
 * (emu/ibemu_user_verbs.h; provider_ring.cpp). */
struct QpRing {
	void *map = nullptr; /* struct ibemu_qp_ring, send slots, receive slots */
	size_t len = 0;
	int bell = -1; /* the doorbell pair's sending end */
	uint32_t sqEntries = 0, sqStride = 0, rqEntries = 0, rqStride = 0;
	uint32_t sqProducer = 0, rqProducer = 0; /* ours; published to the header */
	/* what the device granted, and what modify_qp set */
	uint32_t maxSendWr = 0, maxRecvWr = 0, maxSendSge = 0, maxRecvSge = 0, maxInline = 0;
	uint8_t maxRdAtomic = 0;
};

struct Qp {
	verbs_qp vqp;
	/* wr_start .. wr_complete/wr_abort, and the send ring */
	std::mutex lock;
	/* ibv_qp_ex's builders collect work requests here until wr_complete() */
	std::vector<ibv_send_wr> wrs;
	std::deque<std::vector<ibv_sge>> sges; /* per WR; stable addresses */
	std::deque<std::vector<uint8_t>> inlineData; /* copied at set time */
	int err = 0; /* latched by a builder, returned by wr_complete */
	std::mutex recvLock; /* the receive ring */
	QpRing ring; /* map == nullptr: POST_SEND and POST_RECV commands */
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

/* provider_ring.cpp: after CREATE_QP, work queues in shared memory; a QP
 * the device will not take them for keeps the write() commands (0, or
 * why not: an errno). */
int attachRing(ibv_context *context, Qp *qp, const ibv_qp_init_attr_ex &granted);
void detachRing(Qp *qp);
/* qp->lock held */
int postSendLocked(Qp *qp, ibv_send_wr *wr, ibv_send_wr **bad);
int postSend(ibv_qp *qp, ibv_send_wr *wr, ibv_send_wr **bad);
int postRecv(ibv_qp *qp, ibv_recv_wr *wr, ibv_recv_wr **bad);
/* MODIFY_QP, and what the ring's checks need from it */
int modifyRingQp(Qp *qp, ibv_qp_attr *attr, int mask);

/* provider_ex.cpp */
ibv_qp *createQpEx(ibv_context *context, ibv_qp_init_attr_ex *attr);
ibv_cq_ex *createCqEx(ibv_context *context, ibv_cq_init_attr_ex *attr);
int pollCq(ibv_cq *cq, int n, ibv_wc *wc);

} /* namespace ibemu::provider */
