// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
#include "emu/qp_ring.h"

#include <atomic>
#include <cerrno>
#include <cstddef>
#include <cstring>
#include <sys/socket.h>
#include <vector>

namespace ibemu::emu {

namespace {

constexpr size_t kSendHead = sizeof(ibemu_send_wqe);
constexpr size_t kRecvHead = sizeof(ibemu_recv_wqe);
constexpr size_t kSge = sizeof(ib_uverbs_sge);

bool strideOk(uint32_t stride, size_t head)
{
	return stride >= head && stride <= IBEMU_QP_RING_MAX_STRIDE && stride % 16 == 0;
}

void readSges(const uint8_t *p, uint32_t n, std::vector<Sge> &out)
{
	for (uint32_t i = 0; i < n; i++) {
		ib_uverbs_sge s;
		memcpy(&s, p + i * kSge, sizeof s);
		out.push_back({ s.addr, s.length, s.lkey });
	}
}

} /* namespace */

int QpRing::adopt(boost::asio::io_context &io, UserAccess &ua, const RingMemory &mem, int doorbellFd, const Geometry &g,
		  const Qp &caps, std::unique_ptr<QpRing> &out)
{
	if (g.sqEntries != ibemu_cq_ring_entries(caps.maxSendWr) || g.sqEntries > IBEMU_QP_RING_MAX_ENTRIES ||
	    !strideOk(g.sqStride, kSendHead) || g.sqStride < kSendHead + size_t(caps.maxSendSge) * kSge ||
	    g.sqStride < kSendHead + caps.maxInline)
		return -EINVAL;
	if ((caps.srq || caps.qpType == IB_QPT_XRC_INI)
		    ? (g.rqEntries || g.rqStride) /* no receive queue */
		    : (g.rqEntries != ibemu_cq_ring_entries(caps.maxRecvWr) ||
		       g.rqEntries > IBEMU_QP_RING_MAX_ENTRIES || !strideOk(g.rqStride, kRecvHead) ||
		       g.rqStride < kRecvHead + size_t(caps.maxRecvSge) * kSge))
		return -EINVAL;
	std::unique_ptr<QpRing> ring(new QpRing(io, ua, g, caps));
	if (int ret = ring->mem_.attach(mem, ibemu_qp_ring_bytes(g.sqEntries, g.sqStride, g.rqEntries, g.rqStride)))
		return ret;
	boost::system::error_code ec;
	refuseDescriptors(doorbellFd);
	ring->doorbell_.assign(doorbellFd, ec);
	if (ec)
		return -EINVAL;
	ring->reset();
	out = std::move(ring);
	return 0;
}

QpRing::QpRing(boost::asio::io_context &io, UserAccess &ua, const Geometry &g, const Qp &caps)
	: g_(g), ud_(caps.qpType == IB_QPT_UD), maxSendWr_(caps.maxSendWr), maxRecvWr_(caps.maxRecvWr), ua_(ua),
	  doorbell_(io)
{}

QpRing::~QpRing()
{
	/* whatever the program left queued on the doorbell, descriptors too,
	 * goes with the socket: closed where that cannot stall us */
	if (doorbell_.is_open())
		ua_.discardDescriptor(doorbell_.release());
}

void QpRing::onDoorbell(std::function<void()> fn)
{
	rung_ = std::move(fn);
	wait();
}

void QpRing::wait()
{
	Liveness::Weak alive = alive_.weak();
	doorbell_.async_wait(boost::asio::posix::stream_descriptor::wait_read,
			     [this, alive](const boost::system::error_code &ec) {
				     if (ec || alive.expired())
					     return;
				     drainDoorbell();
				     if (peerGone_) /* the program closed its end (or broke it): no more rings */
					     return;
				     wait();
				     if (rung_)
					     rung_();
			     });
}

/* The bytes carry nothing: read what is there, a bounded amount per turn
 * (what is left wakes us again). A program can pass descriptors along with
 * them (before it handed the socket over: adopt() makes it refuse them
 * where the kernel can); those are taken, every one (the kernel would
 * release what does not fit right here, and that can wait as long as
 * their sender likes), and closed where that cannot stall us. A message
 * cut all the same (we are out of descriptors) ends the doorbell. */
void QpRing::drainDoorbell()
{
	for (int i = 0; i < 16; i++) {
		char buf[512];
		std::vector<int> fds;
		bool truncated;
		ssize_t n = receiveWithDescriptors(doorbell_.native_handle(), buf, sizeof buf, MSG_DONTWAIT, fds,
						   truncated);
		if (n < 0)
			return;
		for (int fd : fds)
			ua_.discardDescriptor(fd);
		if (n == 0 || truncated) {
			peerGone_ = true;
			return;
		}
		/* a short read without descriptors emptied the socket: one system
		 * call (each costs tens of microseconds in a TCG guest) */
		if (n < ssize_t(sizeof buf) && fds.empty())
			return;
	}
}

QpRing::Take QpRing::copyNext(size_t producerAt, uint32_t &taken, size_t held, uint32_t max, uint32_t entries,
			      uint32_t stride, size_t base, uint8_t *copy)
{
	uint32_t ahead = mem_.load(producerAt) - taken;
	if (ahead == 0)
		return Take::Empty;
	/* posted and not retired: at most what the queue holds */
	if (uint64_t(ahead) + held > max)
		return Take::Overrun;
	/* one copy of everything: the program may be rewriting the slot */
	memcpy(copy, mem_.at(base + size_t(taken & (entries - 1)) * stride), stride);
	taken++;
	return Take::Ok;
}

QpRing::Take QpRing::nextSend(SendWqe &out, size_t held)
{
	uint8_t copy[IBEMU_QP_RING_MAX_STRIDE];
	Take t = copyNext(offsetof(ibemu_qp_ring, sq_producer), sqTaken_, held, maxSendWr_, g_.sqEntries, g_.sqStride,
			  sizeof(ibemu_qp_ring), copy);
	if (t != Take::Ok)
		return t;
	ibemu_send_wqe h;
	memcpy(&h, copy, sizeof h);
	out = SendWqe{};
	out.wr.wr_id = h.wr_id;
	out.wr.opcode = h.opcode;
	out.wr.send_flags = h.send_flags;
	out.wr.num_sge = h.num_sge;
	out.wr.ex = h.imm_data;
	out.xrcSrqn = h.remote_srqn; /* read by an XRC_INI QP's requester alone */
	if (ud_) {
		out.wr.wr.ud.ah = h.ah;
		out.wr.wr.ud.remote_qpn = h.remote_qpn;
		out.wr.wr.ud.remote_qkey = h.remote_qkey;
	} else if (h.opcode == IB_WR_BIND_MW) {
		out.bind = { h.ah, h.imm_data, h.rkey, h.remote_qpn, h.remote_qkey, h.remote_addr, h.compare_add };
		out.wr.ex = 0;
	} else if (h.opcode == IB_WR_ATOMIC_CMP_AND_SWP || h.opcode == IB_WR_ATOMIC_FETCH_AND_ADD) {
		out.wr.wr.atomic.remote_addr = h.remote_addr;
		out.wr.wr.atomic.compare_add = h.compare_add;
		out.wr.wr.atomic.swap = h.swap;
		out.wr.wr.atomic.rkey = h.rkey;
	} else {
		out.wr.wr.rdma.remote_addr = h.remote_addr;
		out.wr.wr.rdma.rkey = h.rkey;
	}
	const size_t room = g_.sqStride - kSendHead;
	if (h.send_flags & IB_SEND_INLINE) {
		if (h.num_sge || h.inline_len > room)
			return Take::Malformed;
		out.isInline = true;
		out.inlineData.assign(copy + kSendHead, copy + kSendHead + h.inline_len);
		return Take::Ok;
	}
	if (h.num_sge > room / kSge)
		return Take::Malformed;
	readSges(copy + kSendHead, h.num_sge, out.sges);
	return Take::Ok;
}

QpRing::Take QpRing::nextRecv(RecvWqe &out, size_t held)
{
	if (!g_.rqEntries)
		return Take::Empty;
	uint8_t copy[IBEMU_QP_RING_MAX_STRIDE];
	Take t = copyNext(offsetof(ibemu_qp_ring, rq_producer), rqTaken_, held, maxRecvWr_, g_.rqEntries, g_.rqStride,
			  sizeof(ibemu_qp_ring) + size_t(g_.sqEntries) * g_.sqStride, copy);
	if (t != Take::Ok)
		return t;
	ibemu_recv_wqe h;
	memcpy(&h, copy, sizeof h);
	out = RecvWqe{};
	out.wrId = h.wr_id;
	if (h.num_sge > (g_.rqStride - kRecvHead) / kSge)
		return Take::Malformed;
	readSges(copy + kRecvHead, h.num_sge, out.sges);
	return Take::Ok;
}

void QpRing::publish(size_t sendsHeld, size_t recvsHeld)
{
	mem_.store(offsetof(ibemu_qp_ring, sq_consumer), sqTaken_ - static_cast<uint32_t>(sendsHeld));
	if (g_.rqEntries)
		mem_.store(offsetof(ibemu_qp_ring, rq_consumer), rqTaken_ - static_cast<uint32_t>(recvsHeld));
}

void QpRing::setRecvNotify(bool on)
{
	recvNotify_ = on;
	mem_.store(offsetof(ibemu_qp_ring, rq_notify), on);
	/* against the program's "producer, then rq_notify": after this, a
	 * look at the producer sees the program's receive, or the program
	 * sees the flag and rings (the provider fences the same way) */
	std::atomic_thread_fence(std::memory_order_seq_cst);
}

void QpRing::reset()
{
	sqTaken_ = mem_.load(offsetof(ibemu_qp_ring, sq_producer));
	rqTaken_ = g_.rqEntries ? mem_.load(offsetof(ibemu_qp_ring, rq_producer)) : 0;
	publish(0, 0);
	setRecvNotify(false);
}

} /* namespace ibemu::emu */
