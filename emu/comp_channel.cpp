// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
#include "emu/comp_channel.h"

#include "emu/user_access.h"
#include "emu/verbs_objects.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <linux/sockios.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

namespace ibemu::emu {

namespace {

constexpr int kSendFlags = MSG_DONTWAIT | MSG_NOSIGNAL;

size_t queued(int fd, unsigned long request)
{
	int n = 0;
	return ioctl(fd, request, &n) == 0 && n > 0 ? size_t(n) : 0;
}

/* A non-blocking read of the program's end of a channel: never a plain
 * recv(), whose lack of room for descriptors a program sent along would
 * make the kernel release them here, in the io thread (they may linger);
 * any that came go to the helper thread */
ssize_t receiveOwn(UserAccess &ua, int recvFd, void *buf, size_t len)
{
	std::vector<int> fds;
	bool truncated = false;
	ssize_t n = receiveWithDescriptors(recvFd, buf, len, MSG_DONTWAIT, fds, truncated);
	for (int fd : fds)
		ua.discardDescriptor(fd);
	return n;
}

} /* namespace */

int CompChannel::adopt(boost::asio::io_context &io, UserAccess &ua, int sendFd, int recvFd, int recvNum,
		       std::unique_ptr<CompChannel> &out)
{
	/* sockets first: fstat() is safe on them, not on any descriptor */
	struct stat st;
	if (!descriptorIs(sendFd, FdKind::UnixStream) || !descriptorIs(recvFd, FdKind::UnixStream) ||
	    fstat(recvFd, &st) != 0)
		return -EINVAL;
	/* The program may write into its end: nothing it sends reaches ours
	 * from now on (EPIPE), descriptors least of all. What it sent before
	 * must not be there either: our last close would release it, and a
	 * descriptor among it can make that wait (emu/user_access.h). */
	shutdown(sendFd, SHUT_RD);
	refuseDescriptors(sendFd);
	/* the program may keep a copy of the sending end, too: what it sends
	 * our way on it carries no descriptors (6.16), and the reads below
	 * take any with room for them (receiveOwn()) */
	refuseDescriptors(recvFd);
	if (queued(sendFd, SIOCOUTQ) || queued(recvFd, SIOCINQ) || queued(sendFd, SIOCINQ))
		return -EINVAL;
	/* one probe event across proves the pairing, and measures what an
	 * unread event counts in the sender's queue */
	const uint64_t probe = 0x6962656d75ull ^ uint64_t(recvNum);
	if (send(sendFd, &probe, sizeof probe, kSendFlags) != ssize_t(sizeof probe))
		return -EINVAL;
	size_t skb = queued(sendFd, SIOCOUTQ);
	uint64_t got = 0;
	ssize_t n = receiveOwn(ua, recvFd, &got, sizeof got);
	if (n != ssize_t(sizeof got) || got != probe || skb == 0)
		return -EINVAL;
	out.reset(new CompChannel(io, ua, sendFd, recvNum, st.st_ino, st.st_dev, skb));
	return 0;
}

CompChannel::CompChannel(boost::asio::io_context &io, UserAccess &ua, int sendFd, int recvNum, uint64_t ino,
			 uint64_t dev, size_t skbSize)
	: ua_(ua), send_(sendFd), recvNum_(recvNum), ino_(ino), dev_(dev), skbSize_(skbSize), room_(io)
{}

CompChannel::~CompChannel()
{
	alive_.end();
	/* both copies of the program's socket: the last close is not ours to wait for */
	if (room_.is_open())
		ua_.discardDescriptor(room_.release());
	ua_.discardDescriptor(send_);
}

bool CompChannel::peerGone() const
{
	pollfd p{ send_, 0, 0 };
	return closed_ || (::poll(&p, 1, 0) == 1 && (p.revents & (POLLHUP | POLLERR)));
}

bool CompChannel::isOurs(int fd) const
{
	struct stat st;
	return fstat(fd, &st) == 0 && st.st_ino == ino_ && st.st_dev == dev_;
}

void CompChannel::settle()
{
	size_t unread = (queued(send_, SIOCOUTQ) + skbSize_ / 2) / skbSize_;
	while (inFlight_.size() > unread) {
		inFlight_.front()->compEventsReported++;
		inFlight_.pop_front();
	}
}

constexpr size_t kMaxPending = 4096;

bool CompChannel::sendOne(Cq &cq)
{
	ib_uverbs_comp_event_desc ev{ cq.userHandle };
	if (send(send_, &ev, sizeof ev, kSendFlags) == ssize_t(sizeof ev)) {
		inFlight_.push_back(&cq);
		return true;
	}
	if (errno == EPIPE || errno == ECONNRESET) { /* nobody will read them */
		closed_ = true;
		inFlight_.clear();
		pending_.clear();
	}
	return false;
}

void CompChannel::notify(Cq &cq)
{
	if (closed_)
		return;
	settle();
	if (pending_.empty() && sendOne(cq))
		return;
	if (closed_ || pending_.size() >= kMaxPending)
		return;
	pending_.push_back(&cq);
	flush();
}

void CompChannel::flush()
{
	while (!pending_.empty() && !closed_ && sendOne(*pending_.front()))
		pending_.pop_front();
	if (pending_.empty() || closed_ || waiting_)
		return;
	if (!room_.is_open()) {
		int copy = fcntl(send_, F_DUPFD_CLOEXEC, 0);
		if (copy < 0)
			return; /* they wait for the next event's flush */
		room_.assign(copy);
	}
	waiting_ = true;
	Liveness::Weak alive = alive_.weak();
	room_.async_wait(boost::asio::posix::stream_descriptor::wait_write,
			 [this, alive](const boost::system::error_code &ec) {
				 if (ec || alive.expired())
					 return;
				 waiting_ = false;
				 settle();
				 flush();
			 });
}

/* ib_uverbs_release_ucq(): the CQ's events that the program has not read
 * leave the event list; the ones it read are counted. */
void CompChannel::forget(Cq &cq, int recvFd)
{
	settle();
	std::erase(pending_, &cq); /* never sent: never reported */
	if (std::find(inFlight_.begin(), inFlight_.end(), &cq) == inFlight_.end())
		return;
	if (recvFd < 0 || closed_) {
		std::erase(inFlight_, &cq);
		return;
	}
	/* take every unread event out, in one recv(): it holds the socket's
	 * read lock, so the program's own reads fall before or after it, and
	 * the events it gets are the newest entries, in order */
	std::vector<ib_uverbs_comp_event_desc> unread(inFlight_.size());
	ssize_t n = receiveOwn(ua_, recvFd, unread.data(), unread.size() * sizeof unread[0]);
	unread.resize(n > 0 ? size_t(n) / sizeof unread[0] : 0);
	size_t keep = std::min(unread.size(), inFlight_.size());
	while (inFlight_.size() > keep) { /* read meanwhile */
		inFlight_.front()->compEventsReported++;
		inFlight_.pop_front();
	}
	std::deque<Cq *> still;
	for (size_t i = 0; i < inFlight_.size(); i++) {
		Cq *owner = inFlight_[i];
		if (owner == &cq)
			continue;
		if (send(send_, &unread[unread.size() - keep + i], sizeof unread[0], kSendFlags) ==
		    ssize_t(sizeof unread[0]))
			still.push_back(owner);
	}
	inFlight_ = std::move(still);
	flush(); /* the room it made */
}

} /* namespace ibemu::emu */
