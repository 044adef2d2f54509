// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// A completion event channel (the kernel's ib_uverbs_completion_event_file,
// ib_uverbs_comp_handler): where an armed CQ's completion event goes.
//
// The program holds one end of a connected AF_UNIX stream pair (a "spare"
// its provider made, emu/ibemu_user_verbs.h) and ibv_get_cq_event() reads
// 8-byte events from it; the device holds the other end and sends them.
// What the kernel keeps in its event list stays in the socket, so the
// channel learns what the program has read from the bytes still queued
// (SIOCOUTQ on its end), and takes a destroyed CQ's unread events back out
// with its own copy of the program's end.
//
// Lifetime: owned by the UverbsFile; a spare until CREATE_COMP_CHANNEL
// hands it out, then until the file closes. A CQ points at its channel; the
// channel's in-flight list points at CQs, which forget() unlinks before a
// CQ goes.
#pragma once

#include "emu/liveness.h"

#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>

#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>

namespace ibemu::emu {

struct Cq;
class UserAccess;

class CompChannel {
public:
	/* Checks that sendFd and recvFd (the device's copies of a spare the
	 * program holds as recvNum) are the two ends of one connected AF_UNIX
	 * stream pair with nothing queued either way, and makes a channel of
	 * them. It keeps sendFd on success (and only then), and closes it in
	 * the end with ua.discardDescriptor(); recvFd stays the caller's.
	 * 0 or -EINVAL. */
	static int adopt(boost::asio::io_context &io, UserAccess &ua, int sendFd, int recvFd, int recvNum,
			 std::unique_ptr<CompChannel> &out);
	~CompChannel();
	CompChannel(const CompChannel &) = delete;
	CompChannel &operator=(const CompChannel &) = delete;

	int number() const { return recvNum_; } /* the program's descriptor */
	/* is fd (a copy of a descriptor the program holds, known to be a
	 * unix socket) this channel's? */
	bool isOurs(int fd) const;
	bool handedOut = false; /* by CREATE_COMP_CHANNEL; a spare until then */
	uint32_t cqs = 0; /* CQs whose events come here */
	/* has the program closed its end (every copy of it)? */
	bool peerGone() const;

	/* ib_uverbs_comp_handler(): one event about cq. When the socket is
	 * full (hundreds unread), it waits here and goes when there is room,
	 * as the kernel's event list has no bound (ours: 4,096). */
	void notify(Cq &cq);
	/* Counts the events the program has read since the last call on
	 * their CQs (Cq::compEventsReported). */
	void settle();
	/* cq goes: settle, and take its unread events out of the socket
	 * (recvFd: the device's copy of the program's end, or -1 when it has
	 * none; the events are then only forgotten). */
	void forget(Cq &cq, int recvFd);

private:
	CompChannel(boost::asio::io_context &io, UserAccess &ua, int sendFd, int recvNum, uint64_t ino, uint64_t dev,
		    size_t skbSize);
	bool sendOne(Cq &cq); /* false: no room; closed_ set if nobody reads */
	void flush(); /* pending_ into the socket, as far as it takes them */
	UserAccess &ua_;
	int send_;
	int recvNum_;
	uint64_t ino_, dev_;
	size_t skbSize_; /* what one queued event counts in SIOCOUTQ */
	bool closed_ = false; /* the program closed its end */
	std::deque<Cq *> inFlight_; /* sent, not yet known to be read; oldest first */
	std::deque<Cq *> pending_; /* not sent yet: the socket was full */
	boost::asio::posix::stream_descriptor room_; /* a copy of send_, to wait for room */
	bool waiting_ = false;
	Liveness alive_; /* for the wait's handler */
};

} /* namespace ibemu::emu */
