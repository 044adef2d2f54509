// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// RMPP, the reliable multi-packet protocol (IBA 13.6), as the kernel's
// mad_rmpp.c runs it for agents registered with rmpp_version 1 (and not
// IB_USER_MAD_USER_RMPP): segmenting a long send into 256-byte DATA segments
// paced by the receiver's ACK window, and reassembling received segments
// into one message, ACKing them.
#pragma once

#include "emu/mad_agent.h"

#include <map>

namespace ibemu::emu {

enum : uint8_t {
	IB_MGMT_RMPP_VERSION = 1,
	IB_MGMT_RMPP_TYPE_DATA = 1,
	IB_MGMT_RMPP_TYPE_ACK = 2,
	IB_MGMT_RMPP_TYPE_STOP = 3,
	IB_MGMT_RMPP_TYPE_ABORT = 4,
	IB_MGMT_RMPP_FLAG_ACTIVE = 1,
	IB_MGMT_RMPP_FLAG_FIRST = 2,
	IB_MGMT_RMPP_FLAG_LAST = 4,
	IB_MGMT_RMPP_STATUS_SUCCESS = 0,
	IB_MGMT_RMPP_STATUS_RESX = 1,
	IB_MGMT_RMPP_STATUS_T2L = 118,
	IB_MGMT_RMPP_STATUS_BAD_SEG = 120,
	IB_MGMT_RMPP_STATUS_BADT = 121,
	IB_MGMT_RMPP_STATUS_W2S = 122,
	IB_MGMT_RMPP_STATUS_S2B = 123,
	IB_MGMT_RMPP_STATUS_BAD_STATUS = 124,
	IB_MGMT_RMPP_STATUS_UNV = 125,
	IB_MGMT_RMPP_STATUS_ABORT_MIN = 118,
	IB_MGMT_RMPP_STATUS_ABORT_MAX = 127,
};

constexpr size_t IB_MGMT_RMPP_HDR = 36;
constexpr size_t IB_MGMT_RMPP_DATA = 220;

/* One message being reassembled (mad_rmpp.c struct mad_rmpp_recv). */
struct RmppRecvState {
	enum class State { Active, Timeout, Complete };

	/* key: TID, source QP and LID, class, class version, method */
	uint64_t tid = 0;
	uint32_t srcQp = 0;
	uint16_t slid = 0;
	uint8_t mgmtClass = 0;
	uint8_t classVersion = 0;
	uint8_t method = 0;

	MadAddress src; /* where ACKs go */
	size_t hdrLen = 0;
	std::map<uint32_t, std::vector<uint8_t>> segs; /* by segment number */
	uint32_t segNum = 1; /* highest in-order segment */
	uint32_t lastAck = 0;
	uint32_t newwin = 1;
	State state = State::Active;
	Timer timer; /* 40 s reassembly limit, then the 10 s keep */
	MemoryBudget *budget = nullptr; /* the receiving agent's user's */
	size_t charged = 0; /* bytes of segments held, charged to it */

	explicit RmppRecvState(boost::asio::io_context &io) : timer(io) {}
	~RmppRecvState();
	RmppRecvState(const RmppRecvState &) = delete;
	RmppRecvState &operator=(const RmppRecvState &) = delete;
	/* holds one more segment: false when its user's budget is spent */
	bool hold(uint32_t seg, const std::vector<uint8_t> &mad);
};

namespace rmpp {

/* Receive window the reassembly side opens at a time (recv_queue_size 512 / 8). */
constexpr uint32_t kWindowSize = 64;
/* Sender's wait for an ACK when the send's own timeout is 0 or longer. */
constexpr uint32_t kAckTimeoutMs = 2000;
constexpr uint32_t kReassemblyTimeoutMs = 40000;
constexpr uint32_t kKeepCompletedMs = 10000;
/* Bounds of what a sender can make an agent hold (docs/mad-path.md): the
 * messages being reassembled at once, and the length of one. Past them
 * the sender gets a STOP with status RESX. */
constexpr size_t kMaxRecvRecords = 1024;
constexpr size_t kMaxMessageBytes = size_t(128) << 20;

inline uint8_t flags(const uint8_t *mad)
{
	return mad[26] & 0x7;
}
inline uint8_t type(const uint8_t *mad)
{
	return mad[25];
}
inline bool active(const uint8_t *mad)
{
	return flags(mad) & IB_MGMT_RMPP_FLAG_ACTIVE;
}

/* Starts an RMPP-active send: sets up the segments and sends the first window. */
void startSend(MadPort &port, MadAgent &agent, const std::shared_ptr<MadSend> &send);
/* The ACK timer of an RMPP-active send expired. */
void sendTimeout(MadPort &port, MadAgent &agent, const std::shared_ptr<MadSend> &send);

enum class RecvResult {
	PassThrough, /* not for the RMPP engine: deliver as it is */
	Consumed, /* a segment or control MAD the engine kept or answered */
	Completed, /* `recv` now holds the reassembled message */
};
/* A MAD of an RMPP class arrived for a kernel-RMPP agent. */
RecvResult receive(MadPort &port, MadAgent &agent, MadRecv &recv);

} /* namespace rmpp */

} /* namespace ibemu::emu */
