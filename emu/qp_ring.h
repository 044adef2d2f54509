// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// A QP's work queues in memory shared with the program, and its doorbell
// (emu/ibemu_user_verbs.h, IBEMU_CMD_ATTACH_QP_RING): the device's side.
// The program writes work requests into slots and moves its producer
// indices; the device takes them from here one at a time, a copy of each,
// and publishes how many it has retired.
//
// Nothing the program writes is trusted: an index that runs ahead of the
// ring is an overrun (the QP goes to Error), a slot whose counts do not fit
// its stride is malformed (that work request fails), and everything else a
// slot says is checked by the caller as POST_SEND or POST_RECV would.
//
// Lifetime: owned by its Qp; the doorbell's wait is cancelled and its
// descriptor closed with it.
#pragma once

#include "emu/ibemu_user_verbs.h"
#include "emu/liveness.h"
#include "emu/shared_mapping.h"
#include "emu/user_access.h"
#include "emu/verbs_objects.h"

#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>

#include <cstdint>
#include <functional>
#include <memory>

namespace ibemu::emu {

class QpRing {
public:
	struct Geometry {
		uint32_t sqEntries, sqStride, rqEntries, rqStride;
	};
	/* Maps mem (a memfd that stays the caller's, or a window of the
	 * context's area) for the geometry, which must be the one a QP of these
	 * capabilities has (slots: the power of two at or above its max WRs),
	 * and keeps doorbellFd (the receiving end of an AF_UNIX stream pair) on
	 * success; ua closes what the program passes through it, and the
	 * doorbell itself in the end. 0 or -EINVAL. */
	static int adopt(boost::asio::io_context &io, UserAccess &ua, const RingMemory &mem, int doorbellFd,
			 const Geometry &g, const Qp &caps, std::unique_ptr<QpRing> &out);
	~QpRing();
	QpRing(const QpRing &) = delete;
	QpRing &operator=(const QpRing &) = delete;

	/* fn runs, in a turn of its own, each time the doorbell rings (the
	 * bytes are read first, so a ring during fn is not lost). */
	void onDoorbell(std::function<void()> fn);

	enum class Take {
		Ok, /* out holds the next work request */
		Empty,
		Malformed, /* a slot whose counts exceed it: out has its wr_id and opcode */
		Overrun, /* more posted than the queue holds: the producer index is garbage */
	};
	/* held: the work requests taken and not yet retired (the QP's sq or
	 * rq); with them, at most max_send_wr (max_recv_wr) may be posted */
	Take nextSend(SendWqe &out, size_t held);
	Take nextRecv(RecvWqe &out, size_t held);
	/* Work requests the device took and still holds (in the QP's queues):
	 * the rest are retired, and the program may reuse their slots. */
	void publish(size_t sendsHeld, size_t recvsHeld);
	/* ask the program to ring the doorbell after its next receive */
	void setRecvNotify(bool on);
	bool recvNotify() const { return recvNotify_; }
	/* RESET: whatever the rings hold is dropped, unseen */
	void reset();

private:
	QpRing(boost::asio::io_context &io, UserAccess &ua, const Geometry &g, const Qp &caps);
	void wait();
	void drainDoorbell(); /* peerGone_ once the program closed its end (or broke the doorbell) */
	/* the next slot of one queue into copy (stride bytes), if there is one */
	Take copyNext(size_t producerAt, uint32_t &taken, size_t held, uint32_t max, uint32_t entries, uint32_t stride,
		      size_t base, uint8_t *copy);
	Geometry g_;
	bool ud_; /* send slots address by AH */
	uint32_t maxSendWr_, maxRecvWr_;
	UserAccess &ua_;
	bool peerGone_ = false;
	SharedMapping mem_;
	uint32_t sqTaken_ = 0, rqTaken_ = 0; /* slots copied out (free-running) */
	bool recvNotify_ = false;
	boost::asio::posix::stream_descriptor doorbell_;
	std::function<void()> rung_;
	Liveness alive_; /* for the doorbell wait's handler */
};

} /* namespace ibemu::emu */
