// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
#include "cuse_dev/fuse_uring.h"

#include "cuse_dev/fuse_uring_abi.h"
#include "emu/work_queue.h"
#include "fabric/state_lock.h"

#include <liburing.h>
#include <linux/fuse.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <mutex>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <system_error>
#include <thread>
#include <unistd.h>
#include <vector>

namespace ibemu::cuse_dev {

namespace {

constexpr uint64_t kWakeTag = 0; /* user_data of the eventfd poll; entries use their address */
/* room in front of the payload for the request's headers (40 + at most
 * 128 bytes), so it is rebuilt as /dev/fuse delivers it without moving the
 * payload; small requests then touch one page of the entry */
constexpr size_t kSlack = 256;
constexpr size_t kPage = 4096;
/* A request that must wait (a blocking read, a blocking issm open) keeps
 * its entry until it is answered, and a queue without a free entry holds
 * every other request from its CPU. So a queue keeps kMinFree entries
 * free, registering more as requests park, up to kMaxEntries (then it
 * warns: that CPU's requests wait for a parked one to be answered).
 * An entry costs its payload in address space (the kernel's max_write,
 * reserved lazily) and about a page once used. */
constexpr unsigned kMinFree = 4;
constexpr unsigned kMaxEntries = 4096;

/* how many queues the kernel makes: one per possible CPU, numbered up to
 * the highest one in /sys/devices/system/cpu/possible ("0-1", "0-3,8") */
unsigned possibleCpus()
{
	std::ifstream f("/sys/devices/system/cpu/possible");
	std::string s;
	if (!std::getline(f, s))
		return 0;
	unsigned highest = 0;
	const char *p = s.c_str();
	while (*p) {
		char *end;
		unsigned long v = strtoul(p, &end, 10);
		if (end == p || v >= 4096)
			return 0; /* not what the kernel writes */
		highest = std::max(highest, static_cast<unsigned>(v));
		p = *end ? end + 1 : end;
	}
	return highest + 1;
}

bool noReply(uint32_t opcode)
{
	return opcode == FUSE_FORGET || opcode == FUSE_BATCH_FORGET || opcode == FUSE_INTERRUPT ||
		opcode == FUSE_NOTIFY_REPLY;
}

} /* namespace */

struct FuseUring::Entry {
	Queue *q = nullptr;
	uring::ReqHeader header{};
	uint8_t *region = nullptr; /* mmap: [kSlack][payload] */
	size_t regionLen = 0;
	uint8_t *payload = nullptr;
	size_t payloadCap = 0;
	iovec iov[2]{};
	uint64_t commitId = 0;
	/* the reply, kept apart until it is committed: the request's payload
	 * stays readable while its handler runs */
	std::vector<uint8_t> reply;
	fuse_out_header out{};

	~Entry()
	{
		if (region)
			munmap(region, regionLen);
	}
};

struct FuseUring::Queue {
	unsigned qid = 0;
	io_uring ring{};
	bool ringUp = false;
	int wakeFd = -1;
	std::vector<std::unique_ptr<Entry>> entries;
	unsigned live = 0; /* entries the kernel holds or we serve */
	unsigned idle = 0; /* of those, the ones the kernel holds, waiting for a request */
	bool fullWarned = false;
	std::vector<Entry *> ready; /* replies made on the queue's thread */
	std::mutex lock;
	std::vector<Entry *> handed; /* replies made on other threads, under lock */
	uint64_t handedCount = 0; /* ever handed, under lock */
	uint64_t committedCount = 0; /* of those, committed, under lock */
	bool ended = false; /* the thread is gone, under lock */
	std::condition_variable committed;
	std::atomic<bool> go{ false };
	std::atomic<bool> quit{ false };
	std::thread thread;
};

namespace {
thread_local FuseUring::Queue *tlsQueue = nullptr;

/* Wakes a queue's thread: from its eventfd read before the ring starts,
 * from its ring's poll of the eventfd after. */
void wake(FuseUring::Queue &q)
{
	uint64_t one = 1;
	if (::write(q.wakeFd, &one, sizeof one) < 0)
		spdlog::error("fuse-uring: waking queue {}: {}", q.qid, strerror(errno));
}

io_uring_sqe *nextSqe(io_uring &ring)
{
	io_uring_sqe *sqe = io_uring_get_sqe(&ring);
	if (!sqe) { /* full: hand what is there to the kernel first */
		io_uring_submit(&ring);
		sqe = io_uring_get_sqe(&ring);
	}
	if (sqe)
		memset(sqe, 0, 2 * sizeof(*sqe)); /* a 128-byte SQE; stale fields give EINVAL */
	return sqe;
}

bool fuseCmd(io_uring &ring, int fd, uint32_t op, unsigned qid, FuseUring::Entry &e)
{
	io_uring_sqe *sqe = nextSqe(ring);
	if (!sqe)
		return false;
	sqe->opcode = IORING_OP_URING_CMD;
	sqe->fd = fd;
	sqe->cmd_op = op;
	if (op == uring::kCmdRegister) {
		sqe->addr = reinterpret_cast<uintptr_t>(e.iov);
		sqe->len = 2;
	}
	sqe->user_data = reinterpret_cast<uintptr_t>(&e);
	uring::CmdReq req{};
	req.commitId = e.commitId;
	req.qid = static_cast<uint16_t>(qid);
	memcpy(reinterpret_cast<uint8_t *>(sqe) + uring::kSqeCmdOffset, &req, sizeof req);
	return true;
}

void armWake(io_uring &ring, int wakeFd)
{
	if (io_uring_sqe *sqe = nextSqe(ring)) {
		io_uring_prep_poll_add(sqe, wakeFd, POLLIN);
		sqe->user_data = kWakeTag;
	}
}

} /* namespace */

std::unique_ptr<FuseUring> FuseUring::prepare(int fuseFd, unsigned depth, Serve serve, std::string &why)
{
	std::unique_ptr<FuseUring> u(new FuseUring);
	u->fd_ = fuseFd;
	u->depth_ = depth;
	u->serve_ = std::move(serve);
	u->nQueues_ = possibleCpus();
	if (u->nQueues_ == 0) {
		why = "cannot read /sys/devices/system/cpu/possible";
		return nullptr;
	}
	u->queues_ = std::make_unique<std::unique_ptr<Queue>[]>(u->nQueues_);
	for (unsigned qid = 0; qid < u->nQueues_; qid++) {
		auto q = std::make_unique<Queue>();
		q->qid = qid;
		io_uring_params p{};
		p.flags = IORING_SETUP_SQE128 | IORING_SETUP_CQSIZE | IORING_SETUP_SUBMIT_ALL;
		p.cq_entries = 2 * (depth + 1);
		if (int rc = io_uring_queue_init_params(depth + 1, &q->ring, &p); rc < 0) {
			why = std::string("io_uring_setup: ") + strerror(-rc);
			u->queues_[qid] = std::move(q);
			u->stop();
			return nullptr;
		}
		q->ringUp = true;
		q->wakeFd = eventfd(0, EFD_CLOEXEC);
		u->queues_[qid] = std::move(q);
		if (u->queues_[qid]->wakeFd < 0) {
			why = std::string("eventfd: ") + strerror(errno);
			u->stop();
			return nullptr;
		}
	}
	/* the threads take no signals: the io thread's signal_set handles them */
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	try {
		for (unsigned qid = 0; qid < u->nQueues_; qid++) {
			Queue *q = u->queues_[qid].get();
			q->thread = std::thread([raw = u.get(), q] { raw->run(*q); });
		}
	} catch (const std::system_error &e) {
		why = std::string("cannot start the queue threads: ") + e.what();
	}
	pthread_sigmask(SIG_SETMASK, &old, nullptr);
	if (!why.empty()) {
		u->stop();
		return nullptr;
	}
	return u;
}

FuseUring::~FuseUring()
{
	stop();
}

bool FuseUring::active() const
{
	return active_ && !refused_;
}

unsigned FuseUring::queues() const
{
	return nQueues_;
}

unsigned FuseUring::depth() const
{
	return depth_;
}

/* ------------------------------------------------------------ INIT --- */

ssize_t FuseUring::read(int fd, void *buf, size_t len)
{
	ssize_t n = ::read(fd, buf, len);
	if (initUnique_ == 0 && n >= static_cast<ssize_t>(sizeof(fuse_in_header))) {
		fuse_in_header in;
		memcpy(&in, buf, sizeof in);
		if (in.opcode == FUSE_INIT) {
			fuse_init_in arg{};
			memcpy(&arg, static_cast<uint8_t *>(buf) + sizeof in,
			       std::min(sizeof arg, static_cast<size_t>(n) - sizeof in));
			initUnique_ = in.unique;
			offered_ = (arg.flags & FUSE_INIT_EXT) && (arg.flags2 & uring::kInitFlags2OverIoUring);
		}
	}
	return n;
}

FuseUring::Entry *FuseUring::addEntry(Queue &q)
{
	auto e = std::make_unique<Entry>();
	e->q = &q;
	e->regionLen = kSlack + payloadCap_;
	void *m = mmap(nullptr, e->regionLen, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1,
		       0);
	if (m == MAP_FAILED)
		return nullptr;
	e->region = static_cast<uint8_t *>(m);
	e->payload = e->region + kSlack;
	e->payloadCap = payloadCap_;
	e->iov[0] = { &e->header, sizeof e->header };
	e->iov[1] = { e->payload, payloadCap_ };
	q.entries.push_back(std::move(e));
	return q.entries.back().get();
}

bool FuseUring::allocate(size_t payload, std::string &why)
{
	payloadCap_ = (payload + kPage - 1) / kPage * kPage;
	for (unsigned qid = 0; qid < nQueues_; qid++)
		for (unsigned i = 0; i < depth_; i++)
			if (!addEntry(*queues_[qid])) {
				why = std::string("cannot map the ring buffers: ") + strerror(errno);
				return false;
			}
	return true;
}

void FuseUring::dropRing(const std::string &why)
{
	spdlog::info("fuse-uring: not in use ({}); requests go through /dev/fuse", why);
	for (unsigned qid = 0; qid < nQueues_; qid++) {
		queues_[qid]->quit = true;
		wake(*queues_[qid]);
	}
}

void FuseUring::start()
{
	active_ = true;
	for (unsigned qid = 0; qid < nQueues_; qid++) {
		queues_[qid]->go = true;
		wake(*queues_[qid]);
	}
	spdlog::info("fuse-uring: {} queues of {} entries, one per CPU", nQueues_, depth_);
}

/* ----------------------------------------------------------- replies --- */

ssize_t FuseUring::writev(int fd, struct iovec *iov, int count)
{
	if (count < 1 || iov[0].iov_len < sizeof(fuse_out_header))
		return ::writev(fd, iov, count);
	fuse_out_header out;
	memcpy(&out, iov[0].iov_base, sizeof out);
	size_t total = 0;
	for (int i = 0; i < count; i++)
		total += iov[i].iov_len;

	if (!initSeen_ && initUnique_ != 0 && out.unique == initUnique_) {
		initSeen_ = true;
		fuse_init_out arg{};
		if (out.error || count != 2 || iov[1].iov_len < offsetof(fuse_init_out, flags2) + sizeof arg.flags2) {
			dropRing("INIT was refused");
			return ::writev(fd, iov, count);
		}
		if (!offered_) {
			dropRing("the kernel did not offer it: /sys/module/fuse/parameters/enable_uring is N");
			return ::writev(fd, iov, count);
		}
		memcpy(&arg, iov[1].iov_base, std::min(sizeof arg, iov[1].iov_len));
		size_t pages = (arg.flags & FUSE_MAX_PAGES) ? arg.max_pages : 32;
		size_t payload = std::max<size_t>({ 8192, arg.max_write, pages * kPage });
		std::string why;
		if (!allocate(payload, why)) {
			dropRing(why);
			return ::writev(fd, iov, count);
		}
		arg.flags |= FUSE_INIT_EXT;
		arg.flags2 |= uring::kInitFlags2OverIoUring;
		iovec v[2] = { iov[0], { &arg, iov[1].iov_len } };
		ssize_t r = ::writev(fd, v, 2);
		if (r < 0) {
			int err = errno;
			dropRing(std::string("the INIT reply failed: ") + strerror(err));
			errno = err;
			return r;
		}
		start();
		return r;
	}

	auto it = serving_.find(out.unique);
	if (out.unique == 0 || it == serving_.end())
		return ::writev(fd, iov, count); /* notifications, and /dev/fuse's requests */
	Entry &e = *it->second;
	serving_.erase(it);
	e.out = out;
	e.reply.clear();
	for (int i = 1; i < count; i++) {
		const auto *p = static_cast<const uint8_t *>(iov[i].iov_base);
		e.reply.insert(e.reply.end(), p, p + iov[i].iov_len);
	}
	if (e.reply.size() > e.payloadCap) { /* cannot happen: the kernel sized the payload */
		e.out.error = -EIO;
		e.reply.clear();
	}
	Queue &q = *e.q;
	if (tlsQueue == &q) {
		q.ready.push_back(&e);
	} else {
		{
			std::lock_guard<std::mutex> l(q.lock);
			q.handed.push_back(&e);
			q.handedCount++;
		}
		wake(q);
	}
	return static_cast<ssize_t>(total);
}

/* ----------------------------------------------------- queue threads --- */

void FuseUring::serve(Queue &q, Entry &e)
{
	fuse_in_header in;
	memcpy(&in, e.header.inOut, sizeof in);
	uint32_t payload = e.header.ent.payloadSz;
	e.commitId = e.header.ent.commitId;
	size_t opLen = in.len >= sizeof in + payload ? in.len - sizeof in - payload : SIZE_MAX;
	if (opLen > sizeof e.header.opIn || payload > e.payloadCap) {
		spdlog::error("fuse-uring: request {} (opcode {}) has a layout we do not know: len {}, payload {}",
			      in.unique, in.opcode, in.len, payload);
		e.out = { sizeof(fuse_out_header), -EIO, in.unique };
		e.reply.clear();
		q.ready.push_back(&e);
		return;
	}
	uint8_t *start = e.payload - sizeof in - opLen;
	memcpy(start, &in, sizeof in);
	memcpy(start + sizeof in, e.header.opIn, opLen);

	fabric::StateGuard g;
	if (closing_ || stopped_) { /* the files are gone: as a request after the unmount */
		e.out = { sizeof(fuse_out_header), -ENOTCONN, in.unique };
		e.reply.clear();
		q.ready.push_back(&e);
		return;
	}
	serving_[in.unique] = &e;
	{
		emu::RequestWork work;
		serve_(reinterpret_cast<const char *>(start), in.len);
	}
	if (noReply(in.opcode) && serving_.erase(in.unique)) {
		e.out = { sizeof(fuse_out_header), 0, in.unique };
		e.reply.clear();
		q.ready.push_back(&e);
	}
}

void FuseUring::run(Queue &q)
{
	tlsQueue = &q;
	char name[16];
	snprintf(name, sizeof name, "fuse-ring-%u", q.qid);
	pthread_setname_np(pthread_self(), name);
	cpu_set_t cpus;
	CPU_ZERO(&cpus);
	CPU_SET(q.qid, &cpus);
	if (int rc = pthread_setaffinity_np(pthread_self(), sizeof cpus, &cpus))
		spdlog::debug("fuse-uring: queue {} not pinned to its CPU: {}", q.qid, strerror(rc));

	uint64_t v;
	while (!q.go && !q.quit)
		if (::read(q.wakeFd, &v, sizeof v) < 0 && errno != EINTR)
			return;
	if (q.quit)
		return;

	for (auto &e : q.entries)
		if (fuseCmd(q.ring, fd_, uring::kCmdRegister, q.qid, *e)) {
			q.live++;
			q.idle++;
		}
	armWake(q.ring, q.wakeFd);
	bool warned = false;
	uint64_t taken = 0, published = 0; /* handed replies queued for commit, and said committed */
	while (!q.quit && q.live > 0) {
		/* One io_uring_enter commits the answers and waits for the next
		 * request. Answers handed from other threads are committed
		 * first, on their own, so close() learns when they are in. (No
		 * spin window here, unlike SessionPump: a queue thread already
		 * runs on its caller's CPU, and spinning measured slower.) */
		if (taken != published) {
			io_uring_submit(&q.ring);
			std::lock_guard<std::mutex> l(q.lock);
			q.committedCount = published = taken;
			q.committed.notify_all();
		}
		int rc = io_uring_submit_and_wait(&q.ring, 1);
		if (rc < 0 && rc != -EINTR && rc != -EAGAIN && rc != -EBUSY) {
			spdlog::error("fuse-uring: queue {}: io_uring_enter: {}", q.qid, strerror(-rc));
			break;
		}
		io_uring_cqe *cqe;
		unsigned head, seen = 0;
		io_uring_for_each_cqe(&q.ring, head, cqe)
		{
			seen++;
			if (cqe->user_data == kWakeTag) {
				if (::read(q.wakeFd, &v, sizeof v) < 0 && errno != EAGAIN)
					spdlog::debug("fuse-uring: queue {}: eventfd: {}", q.qid, strerror(errno));
				std::lock_guard<std::mutex> l(q.lock);
				q.ready.insert(q.ready.end(), q.handed.begin(), q.handed.end());
				q.handed.clear();
				taken = q.handedCount;
				armWake(q.ring, q.wakeFd);
				continue;
			}
			Entry &e = *reinterpret_cast<Entry *>(static_cast<uintptr_t>(cqe->user_data));
			if (cqe->res == 0) {
				q.idle--;
				serve(q, e);
				if (q.idle < kMinFree)
					grow(q);
			} else if (cqe->res == -EAGAIN || cqe->res == -EINTR) {
				fuseCmd(q.ring, fd_, uring::kCmdRegister, q.qid, e);
			} else {
				/* ENOTCONN: the connection is gone (unmounted); the rest
				 * are refusals, after which the kernel serves /dev/fuse */
				q.live--;
				q.idle--;
				if (cqe->res != -ENOTCONN && cqe->res != -ECANCELED && !warned) {
					refused_ = true;
					spdlog::warn("fuse-uring: queue {}: the kernel returned an entry: {}; "
						     "requests go through /dev/fuse",
						     q.qid, strerror(-cqe->res));
					warned = true;
				}
			}
		}
		io_uring_cq_advance(&q.ring, seen);
		for (Entry *e : q.ready) {
			fuse_out_header out = e->out;
			if (!e->reply.empty())
				memcpy(e->payload, e->reply.data(), e->reply.size());
			memcpy(e->header.inOut, &out, sizeof out);
			e->header.ent.payloadSz = static_cast<uint32_t>(e->reply.size());
			if (fuseCmd(q.ring, fd_, uring::kCmdCommitAndFetch, q.qid, *e))
				q.idle++;
		}
		q.ready.clear();
	}
	std::lock_guard<std::mutex> l(q.lock);
	q.ended = true;
	q.committed.notify_all();
}

/* More entries for a queue whose requests park (called on its thread). */
void FuseUring::grow(Queue &q)
{
	while (q.idle < kMinFree) {
		Entry *e = q.entries.size() < kMaxEntries ? addEntry(q) : nullptr;
		if (!e) {
			if (!q.fullWarned)
				spdlog::warn("fuse-uring: queue {} has {} requests waiting for answers and no room for "
					     "more: requests from CPU {} wait until one is answered",
					     q.qid, q.entries.size() - q.idle, q.qid);
			q.fullWarned = true;
			return;
		}
		if (!fuseCmd(q.ring, fd_, uring::kCmdRegister, q.qid, *e))
			return;
		q.live++;
		q.idle++;
	}
}

void FuseUring::close()
{
	closing_ = true;
	if (!queues_ || stopped_)
		return;
	fabric::StateUnlocked unlocked; /* a queue thread may be waiting for the lock */
	for (unsigned qid = 0; qid < nQueues_; qid++) {
		Queue &q = *queues_[qid];
		std::unique_lock<std::mutex> l(q.lock);
		uint64_t target = q.handedCount;
		/* bounded: a thread stuck in the kernel must not hang the daemon */
		if (!q.committed.wait_for(l, std::chrono::seconds(5),
					  [&] { return q.ended || q.committedCount >= target; }))
			spdlog::warn("fuse-uring: queue {} did not commit its replies in time", qid);
	}
}

void FuseUring::stop()
{
	if (stopped_)
		return;
	stopped_ = true;
	if (!queues_)
		return;
	for (unsigned qid = 0; qid < nQueues_; qid++) {
		Queue *q = queues_[qid].get();
		if (!q)
			continue;
		q->quit = true;
		if (q->wakeFd >= 0)
			wake(*q);
	}
	{
		fabric::StateUnlocked unlocked; /* a queue thread may wait for the lock */
		for (unsigned qid = 0; qid < nQueues_; qid++)
			if (queues_[qid] && queues_[qid]->thread.joinable())
				queues_[qid]->thread.join();
	}
	for (unsigned qid = 0; qid < nQueues_; qid++) {
		Queue *q = queues_[qid].get();
		if (!q)
			continue;
		if (q->ringUp) /* cancels the commands the kernel still holds */
			io_uring_queue_exit(&q->ring);
		if (q->wakeFd >= 0)
			::close(q->wakeFd);
	}
	serving_.clear();
	queues_.reset(); /* the entries' memory: only once the rings are gone */
	active_ = false;
}

} /* namespace ibemu::cuse_dev */
