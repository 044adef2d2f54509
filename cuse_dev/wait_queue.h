// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// What waits on one open device file over the FUSE protocol (the kernel
// file's wait queue): blocking reads parked until data comes, each with an
// interrupt handler so a signal frees its caller, and the poll handle to
// notify. Shared by the umad/issm and the uverbs files.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <vector>

struct fuse_pollhandle;
struct fuse_req;
typedef struct fuse_req *fuse_req_t;

namespace ibemu::cuse_dev {

struct PendingRead {
	fuse_req_t req;
	size_t size;
	bool nonblock; /* the file's flags at the time of this read(): fcntl may change them */
	std::vector<uint8_t> command; /* a parked write() instead: what to run again (rdma_cm's GET_EVENT) */
	uint64_t seq; /* which read this is: a request's address is reused */
};

class WaitQueue {
public:
	WaitQueue() = default;
	~WaitQueue();
	WaitQueue(const WaitQueue &) = delete;
	WaitQueue &operator=(const WaitQueue &) = delete;

	/* Queues a read; the caller serves the queue, then calls armInterrupt()
	 * if the read is still parked. */
	void park(fuse_req_t req, size_t size, bool nonblock, std::vector<uint8_t> command = {})
	{
		reads_.push_back({ req, size, nonblock, std::move(command), nextSeq_++ });
	}
	/* interrupted(req, data) must find the read and call cancel(). */
	void armInterrupt(fuse_req_t req, void (*interrupted)(fuse_req_t, void *), void *data);
	bool parked(fuse_req_t req) const;
	/* The read was interrupted: answers it EINTR. false if not ours. */
	bool cancel(fuse_req_t req);

	bool empty() const { return reads_.empty(); }
	size_t size() const { return reads_.size(); }
	const PendingRead &front() const { return reads_.front(); }
	/* Takes the first read off the queue, to be answered by the caller. */
	PendingRead pop();
	/* Answers every parked read with err. */
	void failAll(int err);

	/* poll(): keep the newest handle; notify it when something changes */
	void setPollHandle(fuse_pollhandle *ph);
	void notifyPoll();
	void dropPollHandle();

private:
	std::deque<PendingRead> reads_;
	uint64_t nextSeq_ = 1;
	fuse_pollhandle *ph_ = nullptr;
};

} /* namespace ibemu::cuse_dev */
