// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// RMPP sender and receiver, following the kernel's mad_rmpp.c.
//
// Sender: segment 1 goes out alone (window 1); each ACK moves last_ack and
// the window (newwin) and releases the next segments; an ACK timer (2 s, or
// the send's timeout if shorter) resends from last_ack + 1 ("go back N"),
// with the send's retries counted per window. Fully ACKed, a send completes,
// or starts waiting for its response if it has a timeout.
//
// Receiver: segment 1 opens a record and is ACKed with a window of 64 more;
// in-order segments are chained, out-of-order ones kept, duplicates re-ACKed;
// an ACK goes out at every window end and on the last segment. A whole
// message is handed up; a record that does not complete in 40 s is aborted
// with status T2L; a completed one is kept 10 s to re-ACK duplicates.
#include "emu/mad_rmpp.h"

#include "emu/mad_port.h"
#include "emu/memory_budget.h"

#include <cstring>

namespace ibemu::emu {

namespace {

uint32_t be32At(const uint8_t *p)
{
	return overlay<be32>(p)->get();
}
void setBe32At(uint8_t *p, uint32_t v)
{
	overlay<be32>(p)->set(v);
}

size_t segSize(const MadSend &s)
{
	return kMadSize - s.hdrLen;
}
size_t padOf(const MadSend &s)
{
	return s.msg.size() - s.hdrLen - s.dataLen;
}

/* The address a reply to a MAD from `src` goes to. */
MadAddress replyAddress(const MadAddress &src)
{
	MadAddress ah = src;
	ah.remoteQkey = IB_QP1_QKEY;
	return ah;
}

/* An ACK/ABORT built from a received segment: its headers, the method's
 * response bit flipped (so it travels the other way), ACTIVE set. */
void formatControl(const uint8_t *from, size_t hdrLen, uint8_t type, uint8_t status, uint32_t seg, uint32_t newwin,
		   uint8_t *out)
{
	memset(out, 0, kMadSize);
	memcpy(out, from, hdrLen);
	out[3] ^= IB_MGMT_METHOD_RESP;
	out[24] = IB_MGMT_RMPP_VERSION;
	out[25] = type;
	out[26] = static_cast<uint8_t>((from[26] & 0xf8) | IB_MGMT_RMPP_FLAG_ACTIVE);
	out[27] = status;
	setBe32At(out + 28, seg);
	setBe32At(out + 32, newwin);
}

void sendControl(MadPort &port, MadAgent &agent, const uint8_t *from, const MadAddress &src, uint8_t type,
		 uint8_t status, uint32_t seg, uint32_t newwin)
{
	uint8_t out[kMadSize];
	formatControl(from, madDataOffset(from[1]), type, status, seg, newwin, out);
	port.transmit(agent, replyAddress(src), out);
}

void sendAbort(MadPort &port, MadAgent &agent, const uint8_t *from, const MadAddress &src, uint8_t status)
{
	sendControl(port, agent, from, src, IB_MGMT_RMPP_TYPE_ABORT, status, 0, 0);
}

} /* namespace */

/* what holding one segment costs, with its map node */
constexpr size_t kSegmentCost = kMadSize + 64;

RmppRecvState::~RmppRecvState()
{
	if (budget)
		budget->release(charged);
}

bool RmppRecvState::hold(uint32_t seg, const std::vector<uint8_t> &mad)
{
	if (budget && !budget->charge(kSegmentCost))
		return false;
	charged += kSegmentCost;
	segs.emplace(seg, mad);
	return true;
}

/* Friend of MadAgent and MadPort: the engine works on their RMPP state. */
struct RmppEngine {
	/* ---------------- sender ---------------- */

	static void buildSegment(const MadSend &s, uint32_t n, uint8_t *out)
	{
		const RmppSendState &st = *s.rmpp;
		size_t seg = segSize(s);
		memcpy(out, s.msg.data(), s.hdrLen);
		memcpy(out + s.hdrLen, s.msg.data() + s.hdrLen + size_t(n - 1) * seg, seg);
		uint8_t fl = IB_MGMT_RMPP_FLAG_ACTIVE;
		if (n == 1)
			fl |= IB_MGMT_RMPP_FLAG_FIRST;
		if (n == st.segCount)
			fl |= IB_MGMT_RMPP_FLAG_LAST;
		out[24] = IB_MGMT_RMPP_VERSION;
		out[25] = IB_MGMT_RMPP_TYPE_DATA;
		out[26] = fl;
		out[27] = 0;
		setBe32At(out + 28, n);
		uint32_t pad = static_cast<uint32_t>(padOf(s));
		uint32_t paylen = 0;
		if (n == 1)
			paylen = st.segCount * uint32_t(IB_MGMT_RMPP_DATA) - pad;
		else if (n == st.segCount)
			paylen = uint32_t(IB_MGMT_RMPP_DATA) - pad;
		setBe32At(out + 32, paylen);
	}

	static void sendWindow(MadPort &port, MadAgent &agent, const std::shared_ptr<MadSend> &send)
	{
		RmppSendState &st = *send->rmpp;
		uint8_t seg[kMadSize];
		while (st.segNum < st.newwin && st.segNum < st.segCount) {
			st.segNum++;
			buildSegment(*send, st.segNum, seg);
			port.transmit(agent, send->ah, seg);
		}
		uint32_t ms = send->timeoutMs == 0 || send->timeoutMs > rmpp::kAckTimeoutMs ? rmpp::kAckTimeoutMs
											    : send->timeoutMs;
		port.armTimer(send, ms);
	}

	static void abortSend(MadPort &port, MadAgent &agent, MadSend *send)
	{
		if (send && !send->done && send->rmpp && send->rmpp->lastAck < send->rmpp->segCount)
			port.completeSend(agent, send, SendStatus::Aborted);
	}

	static void ack(MadPort &port, MadAgent &agent, MadRecv &recv)
	{
		const uint8_t *mad = recv.mad.data();
		uint32_t seg = be32At(mad + 28);
		uint32_t newwin = be32At(mad + 32);
		MadSend *send = port.findSend(agent, mad, recv.src, true);
		if (mad[27] != 0) {
			abortSend(port, agent, send);
			return sendAbort(port, agent, mad, recv.src, IB_MGMT_RMPP_STATUS_BAD_STATUS);
		}
		if (newwin < seg) {
			abortSend(port, agent, send);
			return sendAbort(port, agent, mad, recv.src, IB_MGMT_RMPP_STATUS_W2S);
		}
		if (!send || !send->rmpp || send->done)
			return; /* unknown, a dual-sided window hand-over, or finished */
		RmppSendState &st = *send->rmpp;
		if (st.lastAck == st.segCount)
			return; /* already all ACKed, waiting for the response */
		if (seg > st.segCount || seg > st.newwin) {
			abortSend(port, agent, send);
			return sendAbort(port, agent, mad, recv.src, IB_MGMT_RMPP_STATUS_S2B);
		}
		if (newwin < st.newwin || seg < st.lastAck)
			return; /* an old ACK */
		if (seg > st.lastAck) {
			st.lastAck = seg;
			send->retriesLeft = st.maxRetries; /* retries count per window */
		}
		st.newwin = newwin;

		std::shared_ptr<MadSend> keep;
		auto [from, to] = agent.sends_.equal_range(send->tid);
		for (auto it = from; it != to; ++it)
			if (it->second.get() == send)
				keep = it->second;
		if (st.lastAck == st.segCount) {
			if (send->timeoutMs == 0)
				return port.completeSend(agent, send, SendStatus::Success);
			send->awaitingResponse = true;
			port.armTimer(keep, send->timeoutMs);
			return;
		}
		if (st.segNum < st.newwin && st.segNum < st.segCount)
			sendWindow(port, agent, keep);
	}

	static void stopOrAbort(MadPort &port, MadAgent &agent, MadRecv &recv)
	{
		const uint8_t *mad = recv.mad.data();
		uint8_t status = mad[27];
		MadSend *send = port.findSend(agent, mad, recv.src, true);
		bool valid = rmpp::type(mad) == IB_MGMT_RMPP_TYPE_STOP
			? status == IB_MGMT_RMPP_STATUS_RESX
			: status >= IB_MGMT_RMPP_STATUS_ABORT_MIN && status <= IB_MGMT_RMPP_STATUS_ABORT_MAX;
		abortSend(port, agent, send);
		if (!valid)
			sendAbort(port, agent, mad, recv.src, IB_MGMT_RMPP_STATUS_BAD_STATUS);
	}

	/* ---------------- receiver ---------------- */

	static RmppKey keyOf(const MadRecv &recv)
	{
		const ib_mad_hdr &h = *overlay<ib_mad_hdr>(recv.mad.data());
		return { h.tid.get(), recv.src.remoteQpn, recv.src.lid, h.mgmt_class, h.class_version, h.method };
	}

	static std::shared_ptr<RmppRecvState> findRecord(MadAgent &agent, const MadRecv &recv)
	{
		auto it = agent.rmppRecvs_.find(keyOf(recv));
		return it == agent.rmppRecvs_.end() ? nullptr : it->second;
	}

	static void sendAck(MadPort &port, MadAgent &agent, RmppRecvState &r)
	{
		const std::vector<uint8_t> &first = r.segs.begin()->second;
		uint8_t out[kMadSize];
		formatControl(first.data(), r.hdrLen, IB_MGMT_RMPP_TYPE_ACK, 0, r.segNum, r.newwin, out);
		r.lastAck = r.segNum;
		port.transmit(agent, replyAddress(r.src), out);
	}

	static void dropRecord(MadAgent &agent, const RmppRecvState &r)
	{
		agent.rmppRecvs_.erase(RmppKey{ r.tid, r.srcQp, r.slid, r.mgmtClass, r.classVersion, r.method });
	}

	/* The agent owns its records, so a record still alive when its timer
	 * fires means the agent and its port are alive too. */
	static void keepThenDrop(MadPort &port, MadAgent &agent, const std::shared_ptr<RmppRecvState> &r, uint32_t ms)
	{
		std::weak_ptr<RmppRecvState> weak = r;
		MadPort *p = &port;
		MadAgent *a = &agent;
		r->timer.expires_after(std::chrono::milliseconds(ms));
		r->timer.async_wait([p, a, weak](const boost::system::error_code &ec) {
			auto rec = weak.lock();
			if (ec || !rec || rec->timer.expiry() > Clock::now())
				return;
			if (rec->state == RmppRecvState::State::Active) { /* 40 s ran out */
				rec->state = RmppRecvState::State::Timeout;
				sendAbort(*p, *a, rec->segs.begin()->second.data(), rec->src, IB_MGMT_RMPP_STATUS_T2L);
			}
			dropRecord(*a, *rec);
		});
	}

	/* mad_rmpp.c complete_rmpp(): ACK, compute the length, hand the message up. */
	static void complete(MadPort &port, MadAgent &agent, const std::shared_ptr<RmppRecvState> &r, MadRecv &recv)
	{
		r->state = RmppRecvState::State::Complete;
		sendAck(port, agent, *r);
		const std::vector<uint8_t> &last = r->segs.at(r->segNum);
		int64_t pad = int64_t(IB_MGMT_RMPP_DATA) - be32At(last.data() + 32);
		if (pad < 0 || pad > int64_t(IB_MGMT_RMPP_DATA))
			pad = 0;
		size_t madLen = r->hdrLen + size_t(r->segNum) * (kMadSize - r->hdrLen) - size_t(pad);

		std::vector<uint8_t> msg;
		msg.reserve(r->hdrLen + size_t(r->segNum) * (kMadSize - r->hdrLen));
		for (uint32_t n = 1; n <= r->segNum; n++) {
			const std::vector<uint8_t> &seg = r->segs.at(n);
			msg.insert(msg.end(), seg.begin() + (n == 1 ? 0 : long(r->hdrLen)), seg.end());
		}
		msg.resize(madLen);
		recv.src = r->src;
		recv.mad = std::move(msg);
		/* keep only the first segment, for re-ACKs during the 10 s */
		auto first = r->segs.begin();
		r->segs.erase(std::next(first), r->segs.end());
		if (r->budget)
			r->budget->release(r->charged - kSegmentCost);
		r->charged = kSegmentCost;
		keepThenDrop(port, agent, r, rmpp::kKeepCompletedMs);
	}

	static rmpp::RecvResult data(MadPort &port, MadAgent &agent, MadRecv &recv)
	{
		using rmpp::RecvResult;
		const uint8_t *mad = recv.mad.data();
		uint32_t seg = be32At(mad + 28);
		uint8_t fl = rmpp::flags(mad);
		if (mad[27] != 0) {
			sendAbort(port, agent, mad, recv.src, IB_MGMT_RMPP_STATUS_BAD_STATUS);
			return RecvResult::Consumed;
		}
		if ((seg == 1) != bool(fl & IB_MGMT_RMPP_FLAG_FIRST)) {
			sendAbort(port, agent, mad, recv.src, IB_MGMT_RMPP_STATUS_BAD_SEG);
			return RecvResult::Consumed;
		}
		std::shared_ptr<RmppRecvState> r = findRecord(agent, recv);
		if (!r) {
			if (seg != 1)
				return RecvResult::Consumed;
			if (agent.rmppRecvs_.size() >= rmpp::kMaxRecvRecords) {
				/* out of reassembly resources: the sender stops (IBA 13.6.3) */
				sendControl(port, agent, mad, recv.src, IB_MGMT_RMPP_TYPE_STOP,
					    IB_MGMT_RMPP_STATUS_RESX, 0, 0);
				return RecvResult::Consumed;
			}
			const ib_mad_hdr &h = *overlay<ib_mad_hdr>(mad);
			r = std::make_shared<RmppRecvState>(port.io());
			r->tid = h.tid.get();
			r->srcQp = recv.src.remoteQpn;
			r->slid = recv.src.lid;
			r->mgmtClass = h.mgmt_class;
			r->classVersion = h.class_version;
			r->method = h.method;
			r->src = recv.src;
			r->hdrLen = madDataOffset(h.mgmt_class);
			r->budget = agent.budget();
			if (!r->hold(1, recv.mad)) {
				sendControl(port, agent, mad, recv.src, IB_MGMT_RMPP_TYPE_STOP,
					    IB_MGMT_RMPP_STATUS_RESX, 0, 0);
				return RecvResult::Consumed;
			}
			agent.rmppRecvs_.emplace(keyOf(recv), r);
			if (fl & IB_MGMT_RMPP_FLAG_LAST) {
				complete(port, agent, r, recv);
				return RecvResult::Completed;
			}
			r->newwin = 1 + rmpp::kWindowSize;
			sendAck(port, agent, *r);
			keepThenDrop(port, agent, r, rmpp::kReassemblyTimeoutMs);
			return RecvResult::Consumed;
		}

		if (r->state == RmppRecvState::State::Timeout || seg > r->newwin)
			return RecvResult::Consumed;
		if (seg <= r->lastAck || r->state == RmppRecvState::State::Complete) {
			sendAck(port, agent, *r); /* a duplicate: tell the sender where we are */
			return RecvResult::Consumed;
		}
		if (r->segs.count(seg))
			return RecvResult::Consumed;
		if (size_t(seg) * kMadSize > rmpp::kMaxMessageBytes || !r->hold(seg, recv.mad)) {
			/* longer than any message we take, or more than its user may
			 * hold: stop it and forget it */
			sendControl(port, agent, mad, recv.src, IB_MGMT_RMPP_TYPE_STOP, IB_MGMT_RMPP_STATUS_RESX, 0, 0);
			dropRecord(agent, *r);
			return RecvResult::Consumed;
		}
		while (r->segs.count(r->segNum + 1))
			r->segNum++;
		if (rmpp::flags(r->segs.at(r->segNum).data()) & IB_MGMT_RMPP_FLAG_LAST) {
			complete(port, agent, r, recv);
			return RecvResult::Completed;
		}
		if (r->segNum == r->newwin) {
			r->newwin += rmpp::kWindowSize;
			sendAck(port, agent, *r);
		}
		return RecvResult::Consumed;
	}
};

namespace rmpp {

void startSend(MadPort &port, MadAgent &agent, const std::shared_ptr<MadSend> &send)
{
	auto st = std::make_unique<RmppSendState>();
	st->segCount = static_cast<uint32_t>((send->msg.size() - send->hdrLen) / segSize(*send));
	st->maxRetries = send->retries;
	send->rmpp = std::move(st);
	RmppEngine::sendWindow(port, agent, send);
}

void sendTimeout(MadPort &port, MadAgent &agent, const std::shared_ptr<MadSend> &send)
{
	RmppSendState &st = *send->rmpp;
	if (send->retriesLeft == 0 || st.lastAck == st.segCount)
		return port.completeSend(agent, send.get(), SendStatus::ResponseTimeout);
	send->retriesLeft--;
	st.segNum = st.lastAck; /* go back to the first unacknowledged segment */
	RmppEngine::sendWindow(port, agent, send);
}

RecvResult receive(MadPort &port, MadAgent &agent, MadRecv &recv)
{
	const uint8_t *mad = recv.mad.data();
	if (!active(mad))
		return RecvResult::PassThrough;
	if (mad[24] != IB_MGMT_RMPP_VERSION) {
		RmppEngine::abortSend(port, agent, port.findSend(agent, mad, recv.src, true));
		sendAbort(port, agent, mad, recv.src, IB_MGMT_RMPP_STATUS_UNV);
		return RecvResult::Consumed;
	}
	switch (type(mad)) {
	case IB_MGMT_RMPP_TYPE_DATA:
		return RmppEngine::data(port, agent, recv);
	case IB_MGMT_RMPP_TYPE_ACK:
		RmppEngine::ack(port, agent, recv);
		return RecvResult::Consumed;
	case IB_MGMT_RMPP_TYPE_STOP:
	case IB_MGMT_RMPP_TYPE_ABORT:
		RmppEngine::stopOrAbort(port, agent, recv);
		return RecvResult::Consumed;
	default:
		RmppEngine::abortSend(port, agent, port.findSend(agent, mad, recv.src, true));
		sendAbort(port, agent, mad, recv.src, IB_MGMT_RMPP_STATUS_BADT);
		return RecvResult::Consumed;
	}
}

} /* namespace rmpp */

} /* namespace ibemu::emu */
