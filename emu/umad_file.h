// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// One open /dev/infiniband/umadN (the kernel's struct ib_umad_file).
//
// Interface (what a transport calls, with plain byte buffers):
//   read()    the MAD at the head of the queue, as ib_umad_read would copy
//             it into a buffer of `count` bytes: header (56 or 64 bytes) +
//             MAD or message; consume() then takes it off the queue (a
//             transport that cannot hand it over leaves it there, as the
//             kernel requeues a MAD whose copy to the user failed)
//   write()   one MAD or RMPP message per call; returns count
//   ioctl()   IB_USER_MAD_REGISTER_AGENT(2), UNREGISTER_AGENT, ENABLE_PKEY
//   poll()    POLLOUT always, POLLIN with a MAD queued, POLLERR when dead
//   close     the destructor: unregisters the agents, drops the queue
// All return a byte count, 0, or a negative errno exactly as user_mad.c.
// read() never blocks: on an empty queue it returns -EAGAIN and a transport
// serving a blocking reader waits for the wakeup hook, then calls again.
#pragma once

#include "emu/mad_agent.h"
#include "emu/umad_abi.h"

#include <deque>
#include <functional>
#include <list>
#include <unordered_map>

namespace ibemu::emu {

class MemoryBudget;
class UmadPort;

/* ibemu's bounds on what one open file can make the daemon hold (the
 * kernel's only one is the receive list length): past them a write()
 * fails with ENOMEM, as ib_create_send_mad() does when it cannot allocate,
 * and a received MAD is dropped, as on a full receive list. */
constexpr size_t kMaxOutstandingSends = 4096;
constexpr size_t kMaxOutstandingBytes = size_t(128) << 20;
constexpr size_t kMaxQueuedBytes = size_t(128) << 20; /* with each MAD's bookkeeping */

class UmadFile final : public AgentClient {
public:
	/* budget: the opening user's (shared by all their files), or null for
	 * only the per-file bounds */
	explicit UmadFile(UmadPort &port, MemoryBudget *budget = nullptr);
	~UmadFile();
	UmadFile(const UmadFile &) = delete;
	UmadFile &operator=(const UmadFile &) = delete;

	/* Fills `out` with what read() of `count` bytes returns: the whole MAD
	 * (returns its length), or for -ENOSPC the header and first segment.
	 * `out` never grows past the MAD itself, whatever `count` says. */
	ssize_t read(size_t count, std::vector<uint8_t> &out) const;
	/* The length a read() of the head MAD needs; 0 with nothing queued. */
	size_t nextLength() const;
	/* Takes the head MAD off the queue, once read() handed it over. */
	void consume();
	ssize_t write(const uint8_t *buf, size_t count);
	/* arg: the ioctl argument, already copied in; results are written back
	 * into it (argLen = the size the command's _IOC encoding gives). */
	int ioctl(unsigned cmd, uint8_t *arg, size_t argLen);
	unsigned poll() const;

	/* Called when a MAD is queued or the file dies (poll/blocked reads).
	 * It must not call back into this file synchronously. */
	void setWakeup(std::function<void()> fn) { wakeup_ = std::move(fn); }

	size_t hdrSize() const { return usePkeyIndex_ ? sizeof(ib_user_mad_hdr) : sizeof(ib_user_mad_hdr_old); }
	size_t queued() const { return recv_.size(); }
	size_t outstanding() const { return sends_.size(); }

	/* AgentClient */
	void madReceived(MadAgent &agent, MadRecv &&recv) override;
	void madSendDone(MadAgent &agent, uint64_t cookie, SendStatus status) override;

private:
	friend class UmadPort;

	struct RecvPacket {
		ib_user_mad_hdr hdr;
		std::vector<uint8_t> data; /* the MAD, a reassembled message, or 24 bytes of a timed-out send */
		bool timeoutReport = false;
	};
	struct Outstanding {
		MadAgent *agent;
		ib_user_mad_hdr hdr; /* as written, for timeout reports */
		uint8_t madHdr[24]; /* with the TID rewritten */
		size_t bytes; /* the message's length */
	};

	void killed();
	int registerAgent(const ib_user_mad_reg_req &req, bool v2, uint32_t flags, uint32_t oui,
			  const uint8_t *methodMask, uint32_t &id);
	int slotOf(const MadAgent *agent) const;
	bool isDuplicate(const ib_user_mad_hdr &hdr, const uint8_t *mad) const;
	static size_t costOf(const RecvPacket &p);
	void queue(RecvPacket &&p);
	void forgetSend(uint64_t cookie);
	bool charge(size_t n);
	void release(size_t n);

	UmadPort &port_;
	MemoryBudget *budget_;
	std::array<MadAgent *, IB_UMAD_MAX_AGENTS> agents_{};
	std::deque<RecvPacket> recv_;
	size_t recvBytes_ = 0;
	std::unordered_map<uint64_t, Outstanding> sends_; /* by cookie */
	std::unordered_multimap<uint64_t, uint64_t> sendTids_; /* TID -> cookie: is_duplicate() */
	size_t sendBytes_ = 0;
	std::list<UmadFile *>::iterator portLink_; /* in port_.files_ */
	bool usePkeyIndex_ = false;
	bool alreadyUsed_ = false;
	bool agentsDead_ = false;
	uint64_t nextCookie_ = 1;
	std::function<void()> wakeup_;
};

} /* namespace ibemu::emu */
