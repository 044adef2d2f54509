// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// MAD agents: the kernel MAD layer's registered clients (ib_mad_agent), their
// outstanding sends (ib_mad_send_wr_private) and what they receive
// (ib_mad_recv_wc).
//
// Lifetime rules: a MadPort owns its agents (unique_ptr in MadPort::agents_);
// an agent owns its outstanding sends. The client (a umad file) holds a raw
// MadAgent pointer from registration until it calls unregisterAgent(), after
// which the agent and its sends are gone and no callback reaches the client.
#pragma once

#include "emu/clock.h"
#include "fabric/packet.h"

#include <array>
#include <bitset>
#include <cstdint>
#include <map>
#include <memory>
#include <tuple>
#include <unordered_map>
#include <vector>

namespace ibemu::emu {

class MadAgent;
class MadPort;
class MemoryBudget;
struct RmppRecvState;

/* Sender state of an RMPP-active send (mad_rmpp.cpp). */
struct RmppSendState {
	uint32_t segCount = 0;
	uint32_t segNum = 0; /* last segment posted */
	uint32_t lastAck = 0; /* highest segment ACKed */
	uint32_t newwin = 1; /* highest segment the receiver accepts */
	uint32_t maxRetries = 0;
};

/* Address of a MAD: the AH of a send, or the source of a receive (wc + GRH). */
struct MadAddress {
	uint16_t lid = 0; /* send: DLID; receive: SLID */
	uint8_t sl = 0;
	uint8_t pathBits = 0;
	uint32_t remoteQpn = 0; /* send: destination QP; receive: source QP */
	uint32_t remoteQkey = 0;
	uint16_t pkeyIndex = 0;
	bool grh = false;
	uint8_t gidIndex = 0;
	uint8_t hopLimit = 0;
	uint8_t trafficClass = 0;
	fabric::Gid gid{}; /* send: DGID; receive: SGID */
	uint32_t flowLabel = 0;
};

/* A received MAD, or a reassembled RMPP message (then longer than 256). */
struct MadRecv {
	MadAddress src;
	std::vector<uint8_t> mad;
};

enum class SendStatus {
	Success, /* sent, and answered if an answer was awaited */
	ResponseTimeout, /* IB_WC_RESP_TIMEOUT_ERR: no answer after all retries */
	Flushed, /* IB_WC_WR_FLUSH_ERR: the agent went away */
	Aborted, /* RMPP transfer aborted or stopped by the peer */
};

/* The owner of an agent; callbacks run on the io_context thread. */
class AgentClient {
public:
	virtual void madReceived(MadAgent &agent, MadRecv &&recv) = 0;
	virtual void madSendDone(MadAgent &agent, uint64_t cookie, SendStatus status) = 0;

protected:
	~AgentClient() = default;
};

/* What an agent wants unsolicited (ib_mad_reg_req). */
struct MadRegistration {
	uint8_t mgmtClass = 0;
	uint8_t classVersion = 0;
	std::array<uint8_t, 3> oui{};
	std::bitset<128> methods;
};

/* An outstanding send. */
struct MadSend {
	MadAgent *agent = nullptr;
	uint64_t cookie = 0; /* the client's handle for it */
	uint64_t tid = 0; /* after hi_tid rewrite */
	uint8_t mgmtClass = 0;
	MadAddress ah;
	std::vector<uint8_t> msg; /* the whole message (RMPP: headers + all data + pad) */
	size_t hdrLen = 24; /* class header end: where RMPP segment payloads start */
	size_t dataLen = 0;
	uint32_t timeoutMs = 0;
	uint32_t retries = 0; /* as posted */
	uint32_t retriesLeft = 0;
	bool rmppActive = false; /* the MAD layer segments it */
	bool awaitingResponse = false;
	bool done = false;
	/* when its timeout() is due, while it is on its port's wait list
	 * (MadPort::armTimer) */
	Clock::time_point deadline{};
	bool waiting = false;
	std::unique_ptr<RmppSendState> rmpp;

	MadSend() = default;
	~MadSend();
};

/* What identifies a message being reassembled (mad_rmpp.c find_rmpp_recv):
 * TID, source QP, source LID, class, class version, method. */
using RmppKey = std::tuple<uint64_t, uint32_t, uint16_t, uint8_t, uint8_t, uint8_t>;

class MadAgent {
public:
	MadAgent(MadPort &port, uint8_t qpn, uint32_t hiTid, AgentClient *client, MemoryBudget *budget);
	~MadAgent();
	MadAgent(const MadAgent &) = delete;
	MadAgent &operator=(const MadAgent &) = delete;

	MadPort &port() const { return port_; }
	uint8_t qpn() const { return qpn_; }
	uint32_t hiTid() const { return hiTid_; }
	AgentClient *client() const { return client_; }
	/* what RMPP reassemblies for this agent are charged to; may be null */
	MemoryBudget *budget() const { return budget_; }
	bool hasRegistration() const { return hasReg_; }
	const MadRegistration &registration() const { return reg_; }
	uint8_t rmppVersion() const { return rmppVersion_; }
	bool userRmpp() const { return userRmpp_; }
	/* ib_mad_kernel_rmpp_agent(): the MAD layer segments and reassembles */
	bool kernelRmpp() const { return rmppVersion_ && !userRmpp_; }

private:
	friend class MadPort;
	friend struct RmppRecvState;
	friend struct RmppEngine;

	MadPort &port_;
	uint8_t qpn_;
	uint32_t hiTid_;
	AgentClient *client_;
	MemoryBudget *budget_;
	bool hasReg_ = false;
	MadRegistration reg_;
	uint8_t rmppVersion_ = 0;
	bool userRmpp_ = false;
	/* outstanding sends by TID: responses find theirs without a scan */
	std::unordered_multimap<uint64_t, std::shared_ptr<MadSend>> sends_;
	std::map<RmppKey, std::shared_ptr<RmppRecvState>> rmppRecvs_;
};

} /* namespace ibemu::emu */
