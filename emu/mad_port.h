// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// The kernel MAD layer of one local HCA port (ib_mad_port_private): agent
// registration, sending (DR SMI processing, TID matching, timeouts and
// retries, RMPP) and receiving (process_mad, find_mad_agent, unmatched
// Get/Set answers).
//
// Every callback to an agent's client is made from a handler run by the
// io_context, never from inside a call the client made, so clients can
// call back into the MAD layer from their callbacks.
#pragma once

#include "emu/mad_agent.h"

#include <boost/asio/io_context.hpp>

#include <map>
#include <memory>
#include <unordered_map>

namespace ibemu::fabric {
class Subnet;
struct Port;
}

namespace ibemu::emu {

/* The global hi_tid table (the kernel's ib_mad_clients xarray): 1..2^24-1,
 * handed out cyclically, shared by every agent of every port. */
class MadClients {
public:
	uint32_t alloc(MadAgent *agent);
	void free(uint32_t hiTid);
	MadAgent *find(uint32_t hiTid) const;

private:
	std::unordered_map<uint32_t, MadAgent *> agents_;
	uint32_t next_ = 1;
};

/* kernel ib_get_mad_data_offset(): where a class's data starts */
size_t madDataOffset(uint8_t mgmtClass);
/* kernel ib_is_mad_class_rmpp() */
bool isRmppClass(uint8_t mgmtClass);

class MadPort final : public fabric::HostStack {
public:
	MadPort(boost::asio::io_context &io, fabric::Subnet &subnet, fabric::Port &port, MadClients &clients);
	~MadPort();
	MadPort(const MadPort &) = delete;
	MadPort &operator=(const MadPort &) = delete;

	fabric::Port &port() const { return port_; }
	fabric::Subnet &subnet() const { return subnet_; }
	boost::asio::io_context &io() const { return io_; }

	/* ib_register_mad_agent(). reg may be null (no unsolicited MADs);
	 * budget: what the agent's RMPP reassemblies are charged to (its
	 * user's), or null. Returns 0 and the agent, or a negative errno. */
	int registerAgent(uint8_t qpn, const MadRegistration *reg, uint8_t rmppVersion, uint32_t flags,
			  AgentClient *client, MemoryBudget *budget, MadAgent **out);
	/* ib_unregister_mad_agent(): outstanding sends are flushed silently. */
	void unregisterAgent(MadAgent *agent);

	/* ib_post_send_mad(). On success the MAD layer owns the send and reports
	 * it through AgentClient::madSendDone(). */
	int postSend(MadAgent &agent, std::shared_ptr<MadSend> send);
	/* ib_cancel_mad(): an outstanding send completes Flushed, later */
	void cancelSend(MadAgent &agent, uint64_t cookie);
	/* ib_modify_mad(): an outstanding send waits timeoutMs from now */
	void modifySend(MadAgent &agent, uint64_t cookie, uint32_t timeoutMs);

	/* GID table of the port: entry i is GidPrefix : GUIDInfo[i]. */
	unsigned gidTableLen() const;
	bool gid(unsigned index, fabric::Gid &out) const;

	/* fabric::HostStack: a packet for this port arrived. */
	void receive(fabric::Port &port, const fabric::Packet &pkt) override;

	/* Sends a raw segment for the RMPP engine and for replies. */
	void transmit(MadAgent &agent, const MadAddress &ah, const uint8_t *mad);

	/* Completion of a send: tells the client, drops the send. */
	void completeSend(MadAgent &agent, MadSend *send, SendStatus status);
	/* The same, from a handler of its own (not inside the caller's call). */
	void completeLater(const std::shared_ptr<MadSend> &send, SendStatus status);
	/* (Re)starts the send's timer; its expiry calls timeout(). */
	void armTimer(const std::shared_ptr<MadSend> &send, uint32_t ms);
	/* Takes a send off the wait list: it completed, or was cancelled. */
	void disarmTimer(MadSend &send);
	/* ib_find_send_mad(): the outstanding send a response or RMPP control MAD
	 * belongs to. anyState also finds sends not waiting for a response. */
	MadSend *findSend(MadAgent &agent, const uint8_t *mad, const MadAddress &src, bool anyState);
	bool sameRemote(const MadSend &s, const uint8_t *mad, const MadAddress &src) const;
	/* Hand a received MAD (or reassembled message) to an agent's client. */
	void deliver(MadAgent &agent, MadRecv &&recv);

private:
	struct TableKey {
		uint8_t classVersion;
		uint8_t mgmtClass;
		uint32_t oui; /* vendor range 2 only */
		bool operator<(const TableKey &o) const
		{
			return std::tie(classVersion, mgmtClass, oui) < std::tie(o.classVersion, o.mgmtClass, o.oui);
		}
	};
	using MethodTable = std::array<MadAgent *, 128>;

	void process(const fabric::Packet &pkt);
	/* pkt is the packet the MAD came in (for unmatched Get/Set answers), or
	 * null for a locally processed SMP */
	void dispatch(const fabric::Packet *pkt, MadRecv &&recv);
	MadAgent *findRequestAgent(const uint8_t *mad) const;
	int outgoingDrSmp(MadAgent &agent, const std::shared_ptr<MadSend> &send, bool &handled);
	void timeout(MadAgent &agent, const std::shared_ptr<MadSend> &send);
	void scheduleTimeouts();
	void timeoutsDue();
	fabric::Packet packetFor(const MadAgent &agent, const MadAddress &ah, const uint8_t *mad) const;
	MadAddress sourceOf(const fabric::Packet &pkt) const;

	boost::asio::io_context &io_;
	fabric::Subnet &subnet_;
	fabric::Port &port_;
	MadClients &clients_;
	std::unordered_map<MadAgent *, std::unique_ptr<MadAgent>> agents_;
	std::map<TableKey, MethodTable> table_;
	std::shared_ptr<bool> alive_;
	uint32_t kernelAgentTids_[2] = { 0, 0 };
	/* The sends waiting for a response or an RMPP ACK, by deadline, and one
	 * timer for the earliest (the kernel's wait_list and timed_work): a
	 * send that completes leaves the list without touching the timer,
	 * which fires at most once per deadline passed, so answering a MAD
	 * costs no timer operation (and no wakeup of the thread in the
	 * reactor, when a FUSE ring thread serves it). */
	std::multimap<Clock::time_point, std::weak_ptr<MadSend>> waiting_;
	Timer timeoutTimer_;
	bool timeoutArmed_ = false;

	friend struct RmppEngine;
};

} /* namespace ibemu::emu */
