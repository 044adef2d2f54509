// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// The completer (rxe_comp.c): completions into the CQs, flushing, the
// Error state, and what a responder's answer does to the requester's WQE
// (applyAnswer), whether the responder is in this daemon or another
// (replyArrived reads its packets).
#include "emu/comp_channel.h"
#include "emu/host.h"
#include "emu/qp_ring.h"
#include "emu/verbs_path.h"

namespace ibemu::emu {

void VerbsDevice::complete(Cq &cq, const ib_uverbs_wc &wc, bool solicited)
{
	if ((cq.ring ? cq.ring->used() : cq.queue.size()) >= cq.cqe) { /* overrun: IBA 11.4.2.1 */
		if (!cq.overflowed)
			objectEvent(cq.file, cq, IB_EVENT_CQ_ERR);
		cq.overflowed = true;
		return;
	}
	if (cq.ring)
		cq.ring->push(wc);
	else
		cq.queue.push_back(wc);
	/* rvt_cq_enter(): an armed CQ sends one event and disarms */
	if (cq.notify == IB_CQ_NEXT_COMP ||
	    (cq.notify == IB_CQ_SOLICITED && (solicited || wc.status != IB_WC_SUCCESS))) {
		cq.notify = 0;
		if (cq.channel)
			cq.channel->notify(cq);
	}
}

/* A ring QP's work requests left its queues: its program may reuse their
 * slots. Before the completion is written, or the program could see the
 * completion, post again and find the ring still full. */
void retired(Qp &qp)
{
	if (qp.ring)
		qp.ring->publish(qp.sq.size(), qp.rq.size());
}

void VerbsDevice::flush(Qp &qp)
{
	forget(qp);
	if (qp.ring) /* receives posted from now on flush at once too: ask
		      * for the doorbell, then look (in that order) */
		qp.ring->setRecvNotify(true);
	takeRecvs(qp);
	auto flushWc = [&](uint64_t wrId, uint32_t opcode) {
		ib_uverbs_wc wc{};
		wc.wr_id = wrId;
		wc.status = IB_WC_WR_FLUSH_ERR;
		wc.opcode = opcode;
		wc.qp_num = qp.qpn;
		wc.port_num = qp.portNum;
		return wc;
	};
	while (!qp.sq.empty()) {
		ib_uverbs_wc wc = flushWc(qp.sq.front().wr.wr_id, wcOpcode(qp.sq.front().wr.opcode));
		qp.sq.pop_front();
		retired(qp);
		complete(*qp.sendCq, wc);
	}
	while (!qp.rq.empty()) {
		ib_uverbs_wc wc = flushWc(qp.rq.front().wrId, IB_WC_RECV);
		qp.rq.pop_front();
		retired(qp);
		complete(*qp.recvCq, wc);
	}
}

void VerbsDevice::enterError(Qp &qp)
{
	qp.state = IB_QPS_ERR;
	flush(qp);
	if (qp.srq) /* IBA 11.5.2.1: the last WQE of an SRQ QP */
		objectEvent(qp.file, qp, IB_EVENT_QP_LAST_WQE_REACHED);
}

void toError(VerbsDevice &dev, Qp &qp)
{
	if (qp.state != IB_QPS_ERR)
		dev.enterError(qp);
}

void VerbsDevice::finishHead(Qp &qp, WcStatus status, uint32_t byteLen)
{
	SendWqe w = std::move(qp.sq.front());
	qp.sq.pop_front();
	retired(qp);
	if (status != IB_WC_SUCCESS || qp.sqSigAll || (w.wr.send_flags & IB_SEND_SIGNALED)) {
		ib_uverbs_wc wc{};
		wc.wr_id = w.wr.wr_id;
		wc.status = status;
		wc.opcode = wcOpcode(w.wr.opcode);
		wc.byte_len = byteLen;
		wc.qp_num = qp.qpn;
		wc.port_num = qp.portNum;
		complete(*qp.sendCq, wc);
	}
	if (status != IB_WC_SUCCESS)
		toError(*this, qp);
}

/* The completer (rxe_comp.c): what the answer a to qp's head WQE w does
 * to it, whichever responder sent it. `here`: the responder QP when it is
 * in this daemon; it wrote a READ's bytes into our buffer already, and a
 * receive posted to it ends an RNR wait early. From another daemon (null),
 * a READ's bytes come in a.readData. */
VerbsDevice::Outcome VerbsDevice::applyAnswer(Qp &qp, SendWqe &w, const Answer &a, const std::vector<Seg> &local,
					      uint64_t len, const Qp *here, WcStatus &status)
{
	switch (a.kind) {
	case WireReply::RnrNak: {
		if (w.rnrRetriesLeft == 0) {
			status = IB_WC_RNR_RETRY_EXC_ERR;
			return Outcome::Error;
		}
		if (w.rnrRetriesLeft != 7)
			w.rnrRetriesLeft--;
		/* wait for the RNR timer, or until a responder here gets a
		 * receive; retrying for ever needs no fast timer (here the
		 * receive wakes us; from afar, not faster than that) */
		auto delay = std::chrono::duration_cast<std::chrono::nanoseconds>(rnrDelay(a.syndrome & 0x1f));
		if (w.rnrRetriesLeft == 7)
			delay = std::max<std::chrono::nanoseconds>(delay, std::chrono::milliseconds(100));
		if (here) {
			qp.rnrTarget = here;
			rnrWaiting_.insert(&qp);
		}
		waitForRetry(qp, delay);
		return Outcome::Wait;
	}
	case WireReply::Nak: /* lost or not, the requester fails (IBA 9.9.3.1.3) */
		status = nakStatus(a.syndrome);
		return Outcome::Error;
	case WireReply::ReadResponse:
		if (here) {
			if (!a.requesterFault)
				return Outcome::Done;
		} else {
			Seg in{ -1, 0, std::min<uint64_t>(a.readData.size(), len), a.readData.data() };
			if (a.readData.size() == len && (!len || copySegs(host_.access(), { in }, local, len) == 0))
				return Outcome::Done;
		}
		status = IB_WC_LOC_PROT_ERR;
		return Outcome::Error;
	case WireReply::AtomicAck: {
		Seg orig8{ -1, 0, 8, reinterpret_cast<const uint8_t *>(&a.atomicOrig) };
		if (copySegs(host_.access(), { orig8 }, local, 8) == 0)
			return Outcome::Done;
		status = IB_WC_LOC_PROT_ERR;
		return Outcome::Error;
	}
	default:
		return Outcome::Done;
	}
}

/* The reply to the head WQE of a QP of ours, from a responder in another
 * daemon: anything else (a late reply to a try given up, a stray) is
 * dropped, as a requester drops a reply it does not expect. */
void VerbsDevice::replyArrived(fabric::Port &port, const fabric::PacketView &v, const fabric::DataPackets &packets)
{
	using namespace fabric;
	Qp *q = qp(v.destQp);
	if (!q || q->qpType != IB_QPT_RC || q->portNum != port.num || !q->awaitingReply || q->sq.empty())
		return;
	SendWqe &w = q->sq.front();
	const uint32_t op = w.wr.opcode;
	const bool isRead = op == IB_WR_RDMA_READ;
	const bool isAtomic = op == IB_WR_ATOMIC_CMP_AND_SWP || op == IB_WR_ATOMIC_FETCH_AND_ADD;
	const uint8_t code = v.opcode & 0x1f;
	if (v.eth + kAethBytes > packets.front().size())
		return;
	const uint8_t syndrome = packets.front()[v.eth];
	const bool ack = (syndrome >> 5) == 0;
	/* an ACK names the last PSN, anything else the first */
	std::vector<Seg> local;
	uint64_t len = 0;
	if (w.isInline)
		len = w.inlineData.size();
	else if (!resolveLocal(*this, q->pd, w.sges, isRead || isAtomic, local, len))
		return;
	const unsigned mtu = mtuBytes(q->pathMtu);
	const uint32_t lastPsn = (w.psn + psnsFor(op, isAtomic ? 8 : len, mtu) - 1) & 0xffffff;
	const uint32_t want = code == IB_OPCODE_ACKNOWLEDGE && ack ? lastPsn : w.psn;
	if (v.psn != want)
		return;
	if (ack && isRead && code != IB_OPCODE_RDMA_READ_RESPONSE_FIRST && code != IB_OPCODE_RDMA_READ_RESPONSE_ONLY)
		return;
	if (ack && isAtomic && code != IB_OPCODE_ATOMIC_ACKNOWLEDGE)
		return;
	/* a READ's responses are the PSNs it took, one per packet: others
	 * (a responder cutting at another MTU) are not its own */
	if (ack && isRead && packets.size() != psnsFor(op, len, mtu))
		return;

	forget(*q); /* its ACK timer */
	q->awaitingReply = false;
	w.timedOut = false;
	Answer a;
	a.reply = true;
	a.syndrome = syndrome;
	a.kind = (syndrome >> 5) == 1 ? WireReply::RnrNak
		: !ack                ? WireReply::Nak
		: isRead              ? WireReply::ReadResponse
		: isAtomic            ? WireReply::AtomicAck
				      : WireReply::Ack;
	if (a.kind == WireReply::ReadResponse) {
		for (const auto &b : packets) {
			PacketView p;
			if (!parsePacket(b, p))
				return;
			a.readData.insert(a.readData.end(), b.begin() + p.payload, b.begin() + p.payload + p.payloadLen);
		}
	} else if (a.kind == WireReply::AtomicAck) {
		if (v.eth + kAethBytes + kAtomicAckEthBytes > packets.front().size())
			return;
		a.atomicOrig = be64At(packets.front().data() + v.eth + kAethBytes);
	}
	WcStatus status = IB_WC_SUCCESS;
	if (applyAnswer(*q, w, a, local, len, nullptr, status) == Outcome::Wait)
		return;
	finishHead(*q, status, status == IB_WC_SUCCESS ? static_cast<uint32_t>(isAtomic ? 8 : len) : 0);
	progress(*q);
}

} /* namespace ibemu::emu */
