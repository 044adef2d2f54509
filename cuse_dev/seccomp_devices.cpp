// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// The seccomp transport's files: where a trapped open, read, write or
// ioctl of a device file enters emu/ (seccomp_devices.h).
#include "cuse_dev/seccomp_devices.h"

#include "cuse_dev/caller.h"
#include "cuse_dev/caller_ids.h"
#include "cuse_dev/deferred_close.h"
#include "cuse_dev/open_limit.h"
#include "cuse_dev/process_access.h"
#include "cuse_dev/seccomp_filter.h"
#include "cuse_dev/seccomp_notif.h"
#include "emu/comp_channel.h"
#include "emu/host.h"
#include "emu/mad_rmpp.h"
#include "emu/memory_budget.h"
#include "emu/ucma_file.h"
#include "emu/umad_abi.h"
#include "emu/umad_file.h"
#include "emu/umad_port.h"
#include "emu/user_access.h"
#include "emu/uverbs_file.h"
#include "emu/verbs_device.h"
#include "emu/work_queue.h"

#include <boost/asio/post.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cstdio>
#include <cstring>
#include <deque>
#include <fcntl.h>
#include <linux/openat2.h>
#include <list>
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/uio.h>
#include <unistd.h>
#include <unordered_map>
#include <vector>

namespace ibemu::cuse_dev {

using seccomp::Notification;

namespace {

/* the longest uverbs write(): 24 header bytes and 2 x 0xffff 8-byte words */
constexpr size_t kMaxVerbsCommand = 24 + size_t(2) * 0xffff * 8;
/* the longest rdma_cm write(): a header and a 16-bit count of bytes */
constexpr size_t kMaxCmCommand = 8 + 0xffff;
/* the calls one listener gets served per turn of the io_context */
constexpr unsigned kPerTurn = 32;
/* iovecs of a readv()/writev() looked at (the kernel's UIO_MAXIOV is 1024) */
constexpr int kMaxIov = 1024;

enum class Kind { Umad, Issm, Uverbs, Async, RdmaCm };

/* A device path (/dev/infiniband/NAME), by kind and number. */
bool parseDevice(const char *path, NodeKind &kind, unsigned &num)
{
	const char *prefix = "/dev/infiniband/";
	if (strncmp(path, prefix, strlen(prefix)) != 0)
		return false;
	const char *name = path + strlen(prefix);
	if (strcmp(name, "rdma_cm") == 0) {
		kind = NodeKind::RdmaCm;
		num = 0;
		return true;
	}
	static const std::pair<const char *, NodeKind> kNames[] = { { "umad", NodeKind::Umad },
								    { "issm", NodeKind::Issm },
								    { "uverbs", NodeKind::Uverbs } };
	for (const auto &[stem, k] : kNames) {
		size_t n = strlen(stem);
		if (strncmp(name, stem, n) != 0 || !name[n])
			continue;
		char *end;
		errno = 0;
		unsigned long v = strtoul(name + n, &end, 10);
		if (*end || errno || v > 0xffff || (name[n] == '0' && name[n + 1]))
			return false;
		kind = k;
		num = static_cast<unsigned>(v);
		return true;
	}
	return false;
}

/* The real user of thread tid (whose open files and memory it is charged). */
uid_t realUid(pid_t tid)
{
	char path[64];
	snprintf(path, sizeof path, "/proc/%d/status", static_cast<int>(tid));
	uid_t uid = static_cast<uid_t>(-1);
	if (FILE *f = fopen(path, "re")) {
		char line[256];
		unsigned u;
		while (fgets(line, sizeof line, f))
			if (sscanf(line, "Uid: %u", &u) == 1) {
				uid = u;
				break;
			}
		fclose(f);
	}
	return uid;
}

/* Reads what is readable of len bytes at addr, a page at a time: the
 * number of bytes read from the start. */
size_t readPrefix(pid_t tid, uint64_t addr, uint8_t *out, size_t len)
{
	size_t have = 0;
	while (have < len) {
		size_t want = std::min(len - have, size_t(4096 - ((addr + have) & 4095)));
		ssize_t n = readOfCaller(tid, out + have, addr + have, want);
		if (n <= 0)
			break;
		have += size_t(n);
	}
	return have;
}

/* A socket's cookie (64 bits, never handed out twice, unlike an inode
 * number), without asking any filesystem: 0 for a descriptor that is no
 * socket (a socket option says ENOTSOCK for anything else). */
uint64_t socketCookie(int fd)
{
	uint64_t cookie = 0;
	socklen_t len = sizeof cookie;
	return getsockopt(fd, SOL_SOCKET, SO_COOKIE, &cookie, &len) == 0 ? cookie : 0;
}

bool isGenericIoctl(unsigned long cmd)
{
	/* do_vfs_ioctl() answers these for every file, before its driver */
	return cmd == FIONBIO || cmd == FIOASYNC || cmd == FIOCLEX || cmd == FIONCLEX;
}

} /* namespace */

std::pair<unsigned, unsigned> kernelNumbers(NodeKind kind, unsigned num)
{
	switch (kind) {
	case NodeKind::Umad:
		return { IB_UMAD_MAJOR, num };
	case NodeKind::Issm:
		return { IB_UMAD_MAJOR, IB_ISSM_MINOR_BASE + num };
	case NodeKind::Uverbs:
		return { IB_UMAD_MAJOR, 192 + num };
	case NodeKind::RdmaCm:
		return { 10, 59 };
	}
	return { 0, 0 };
}

struct SeccompDevices::Impl {
	/* A call that waits: a blocking read, GET_EVENT or issm open. */
	struct Waiting {
		Notification n;
		std::vector<uint8_t> command; /* GET_EVENT's */
	};

	struct File {
		Kind kind;
		unsigned num = 0; /* N of the device */
		uint64_t key = 0; /* the cookie of the program's end */
		std::unique_ptr<boost::asio::posix::stream_descriptor> peer; /* our end */
		bool token = false; /* the program's end holds our byte */
		int accmode = O_RDWR; /* the open's: read() and write() need theirs */
		OpenLimit::Slot slot;
		timespec born{};
		emu::UmadPort *port = nullptr; /* umad, issm */
		std::unique_ptr<emu::UmadFile> umad;
		std::unique_ptr<emu::UverbsFile> verbs;
		uint64_t asyncKey = 0; /* uverbs: its async event file */
		uint64_t cmdKey = 0; /* async event file: its uverbs file */
		std::unique_ptr<emu::UcmaFile> ucma;
		std::deque<Waiting> waiting;
	};

	struct Listener {
		Listener(boost::asio::io_context &io, int f, int b, std::string h)
			: fd(f), base(b), host(std::move(h)), wait(io, f)
		{}
		int fd;
		int base; /* of the reserved block */
		std::string host; /* the cluster host of its programs, "" for all */
		boost::asio::posix::stream_descriptor wait; /* owns fd */
		std::chrono::steady_clock::time_point last{}; /* its last call */
	};

	/* The call being served, for SeccompAccess. */
	struct Current {
		const Notification *n = nullptr;
		int base = 0;
		File *file = nullptr;
		int copy = -1; /* the caller's end, while its call is served */
	};

	/* emu::UserAccess for calls that come through the filter: descriptors
	 * are made in the caller, as the kernel makes them. */
	class Access final : public emu::UserAccess {
	public:
		explicit Access(Impl &s) : s_(s) {}
		int descriptorOf(pid_t tid, const emu::UverbsFile &file) override { return s_.newAsyncFile(tid, file); }
		int newChannel(pid_t tid, int &sendFd, int &recvFd) override
		{
			return s_.newChannel(tid, sendFd, recvFd);
		}
		/* the rest as for any caller reached through /proc */
		int read(pid_t tid, uint64_t addr, void *buf, size_t len) override
		{
			return p_.read(tid, addr, buf, len);
		}
		int write(pid_t tid, uint64_t addr, const void *buf, size_t len) override
		{
			return p_.write(tid, addr, buf, len);
		}
		int pinnable(pid_t tid, pid_t pid, uint64_t addr, uint64_t len, bool w) override
		{
			return p_.pinnable(tid, pid, addr, len, w);
		}
		int credentials(pid_t tid, emu::ProcessCreds &out) override { return p_.credentials(tid, out); }
		int takeDescriptor(pid_t tid, int fd, emu::FdKind kind) override
		{
			return p_.takeDescriptor(tid, fd, kind);
		}
		void discardDescriptor(int fd) override { p_.discardDescriptor(fd); }
		int takeFile(pid_t tid, int fd, uint64_t &mnt, uint64_t &ino) override
		{
			return p_.takeFile(tid, fd, mnt, ino);
		}
		int openMemory(pid_t tid) override { return p_.openMemory(tid); }
		void closeMemory(int mem) override { p_.closeMemory(mem); }
		int readMemory(int mem, uint64_t addr, void *buf, size_t len) override
		{
			return p_.readMemory(mem, addr, buf, len);
		}
		int writeMemory(int mem, uint64_t addr, const void *buf, size_t len) override
		{
			return p_.writeMemory(mem, addr, buf, len);
		}

	private:
		Impl &s_;
		ProcessAccess p_;
	};

	Impl(boost::asio::io_context &i, emu::Host &h, Numbers nums, unsigned spinUs)
		: io(i), host(h), numbers(std::move(nums)), access(*this), spin(spinUs)
	{}
	~Impl()
	{
		for (auto &[t, p] : pidfds)
			close(p);
	}

	boost::asio::io_context &io;
	emu::Host &host;
	Numbers numbers;
	Access access;
	std::chrono::microseconds spin; /* awake after a call (the FUSE pump's spinUs) */
	std::unordered_map<int, std::unique_ptr<Listener>> listeners; /* by descriptor */
	std::unordered_map<uint64_t, std::unique_ptr<File>> files; /* by their socket's cookie */
	struct IssmWait {
		Notification n;
		emu::UmadPort *port;
		unsigned num;
		int base;
		std::string host;
		bool cloexec;
	};
	std::list<IssmWait> issmWaiting;
	std::vector<std::pair<emu::UmadPort *, unsigned>> watched;
	OpenLimit limit;
	std::unordered_map<uid_t, std::unique_ptr<emu::MemoryBudget>> budgets;
	Current current;
	emu::RequestWork *turnWork = nullptr; /* readable()'s, while it runs */
	bool stopping = false;

	/* --- listeners --- */
	void arm(Listener &l);
	void readable(int fd);
	void turn(int fd); /* readable() again after the other handlers */
	void dropListener(int fd);
	void serve(Listener &l, Notification &n);

	/* pidfds of the threads that call, kept: two system calls fewer per
	 * call (at most kPidfds; a thread that ended says ESRCH, and its
	 * pidfd goes) */
	static constexpr size_t kPidfds = 256;
	mutable std::unordered_map<pid_t, int> pidfds;
	/* The copy of descriptor fd of thread tid's process, or -1. */
	int copyDescriptor(pid_t tid, int fd) const;

	/* --- files --- */
	File *fileOf(int copy) const;
	/* the file behind descriptor fd of thread tid, if it is ours */
	File *fileOf(pid_t tid, int fd, int *copyOut = nullptr) const;
	std::unique_ptr<File> newFile(Kind kind, unsigned num, int &programEnd);
	int freeNumber(pid_t tid, int from, int base) const;
	/* puts f's other end into the caller of n at a free number of the
	 * block, files f: the number, or a negative errno */
	int place(const Notification &n, int base, std::unique_ptr<File> f, int programEnd, bool cloexec,
		  bool asResult);
	void watchPeer(uint64_t key);
	void release(uint64_t key);
	/* calls that waited on a file the program closed meanwhile (release) */
	std::vector<Waiting> orphans;
	/* the file's readability after a change: the token sent, or taken
	 * back through copy (the caller's end, when a call holds it) */
	void level(File &f, int copy = -1, bool emptied = false);
	bool wantsReadable(const File &f) const;
	/* a file's state changed (a MAD, an event): waiting calls and poll */
	void changed(uint64_t key);
	void serveWaiting(File &f);
	void park(File &f, const Notification &n, std::vector<uint8_t> command = {});

	/* --- the calls --- */
	void open(const Listener &l, const Notification &n);
	/* claimed: an issm open whose claim was taken already */
	void openDevice(const Notification &n, int base, const std::string &scope, NodeKind kind, unsigned num,
			int flags, bool claimed = false);
	void retryIssm();
	/* 1 answered, 0 waits (parked) */
	int read(File &f, const Notification &n, bool nonblock);
	void write(File &f, const Notification &n, bool nonblock);
	/* one write() of len bytes at addr: its result */
	int64_t writeOne(File &f, const Notification &n, uint64_t addr, size_t len, bool nonblock, bool &parked);
	void ioctl(File &f, const Notification &n);
	void stat(File &f, const Notification &n);
	void dup(const Notification &n, int base, int copy);

	/* --- for Access --- */
	int newAsyncFile(pid_t tid, const emu::UverbsFile &file);
	int newChannel(pid_t tid, int &sendFd, int &recvFd);
};

/* --- listeners --- */

void SeccompDevices::Impl::arm(Listener &l)
{
	l.wait.async_wait(boost::asio::posix::stream_descriptor::wait_read,
			  [this, fd = l.fd](const boost::system::error_code &ec) {
				  if (!ec)
					  readable(fd);
			  });
}

void SeccompDevices::Impl::readable(int fd)
{
	auto it = listeners.find(fd);
	if (it == listeners.end())
		return;
	Listener &l = *it->second;
	/* the work a call leaves (the delivery of a MAD it sent, a file's
	 * wakeup) runs before the next call is taken, as on the FUSE pump */
	emu::RequestWork work(io);
	turnWork = &work;
	struct Forget {
		emu::RequestWork *&w;
		~Forget() { w = nullptr; }
	} forget{ turnWork };
	for (unsigned i = 0; i < kPerTurn; i++) {
		pollfd p{ fd, POLLIN, 0 };
		int ready = ::poll(&p, 1, 0);
		if (ready > 0 && !(p.revents & POLLIN) && (p.revents & (POLLHUP | POLLERR))) {
			work.postRest(); /* every task of its filter is gone */
			return dropListener(fd);
		}
		if (ready <= 0 || !(p.revents & POLLIN)) {
			work.postRest();
			/* A program's calls come in bursts (a write, a poll that is
			 * the kernel's, a read): stay awake for the spin window
			 * after the last one, turning the loop, before sleeping
			 * (a wakeup across CPUs costs more than the call). */
			if (std::chrono::steady_clock::now() - l.last < spin)
				return turn(fd);
			return arm(l);
		}
		Notification n;
		int rc = n.receive(fd);
		if (rc == -ENOENT)
			continue; /* taken back by a signal */
		if (rc) {
			spdlog::warn("seccomp: a listener failed ({}); its programs' calls fail from now on",
				     strerror(-rc));
			work.postRest();
			return dropListener(fd);
		}
		serve(l, n);
		l.last = std::chrono::steady_clock::now();
		work.runQueued();
	}
	work.postRest();
	turn(fd); /* more may wait: after the other handlers */
}

void SeccompDevices::Impl::turn(int fd)
{
	boost::asio::post(io, [this, fd] { readable(fd); });
}

void SeccompDevices::Impl::dropListener(int fd)
{
	auto it = listeners.find(fd);
	if (it == listeners.end())
		return;
	for (auto &[key, f] : files)
		std::erase_if(f->waiting, [fd](const Waiting &w) { return w.n.listener() == fd; });
	std::erase_if(orphans, [fd](const Waiting &w) { return w.n.listener() == fd; });
	std::erase_if(issmWaiting, [fd](const IssmWait &w) { return w.n.listener() == fd; });
	listeners.erase(it); /* the stream_descriptor closes it */
}

void SeccompDevices::Impl::serve(Listener &l, Notification &n)
{
	long nr = n.nr();
	if (nr == SYS_openat || nr == SYS_openat2
#ifdef SYS_open
	    || nr == SYS_open
#endif
	)
		return open(l, n);
	int copy = copyDescriptor(n.tid(), n.fdArg(0));
	if (copy < 0) {
		/* no such descriptor: the kernel says EBADF. Anything else (we
		 * are out of descriptors) must not let the call reach the bare
		 * socket. */
		int err = errno;
		err == EBADF ? n.proceed() : n.fail(err == EMFILE || err == ENFILE ? err : EIO);
		return;
	}
	File *f = fileOf(copy);
	if (!f) { /* the program's own file at a number of the block */
		/* a FUSE file's close could wait for its server, a socket's
		 * (the last, if the program closes its own meanwhile) for what
		 * is queued in it */
		deferredClose(copy);
		n.proceed();
		return;
	}
	int fl = fcntl(copy, F_GETFL);
	bool nonblock = fl >= 0 && (fl & O_NONBLOCK);
	current = { &n, l.base, f, copy };
	uint64_t key = f->key;
	switch (nr) {
	case SYS_read:
	case SYS_readv: /* vfs_read(): a file not open for reading */
		f->accmode == O_WRONLY ? (void)n.fail(EBADF) : (void)read(*f, n, nonblock);
		break;
	case SYS_write:
	case SYS_writev:
		f->accmode == O_RDONLY ? (void)n.fail(EBADF) : write(*f, n, nonblock);
		break;
	case SYS_ioctl:
		ioctl(*f, n);
		break;
#ifdef SYS_fstat
	case SYS_fstat:
#endif
	case SYS_newfstatat:
	case SYS_statx:
		stat(*f, n);
		break;
	case SYS_dup:
	case SYS_fcntl:
		dup(n, l.base, copy);
		break;
	default: /* the socket calls: the device is no socket */
		n.fail(ENOTSOCK);
		break;
	}
	current = {};
	/* the call may have closed files (a failed open of another) but not
	 * this one: its release comes from its socket */
	auto it = files.find(key);
	if (it != files.end())
		level(*it->second, copy);
	close(copy);
}

/* --- files --- */

int SeccompDevices::Impl::copyDescriptor(pid_t tid, int fd) const
{
	for (int attempt = 0; attempt < 2; attempt++) {
		auto it = pidfds.find(tid);
		if (it == pidfds.end()) {
			if (pidfds.size() >= kPidfds) {
				for (auto &[t, p] : pidfds)
					close(p);
				pidfds.clear();
			}
			int p = pidfdOf(tid);
			if (p < 0)
				return -1;
			it = pidfds.emplace(tid, p).first;
		}
		int copy = copyOfCallerFd(tid, it->second, fd);
		if (copy >= 0 || errno != ESRCH)
			return copy;
		close(it->second); /* that thread ended: its number may be another's now */
		pidfds.erase(it);
	}
	return -1;
}

SeccompDevices::Impl::File *SeccompDevices::Impl::fileOf(int copy) const
{
	uint64_t key = socketCookie(copy);
	auto it = key ? files.find(key) : files.end();
	return it == files.end() ? nullptr : it->second.get();
}

SeccompDevices::Impl::File *SeccompDevices::Impl::fileOf(pid_t tid, int fd, int *copyOut) const
{
	int copy = copyDescriptor(tid, fd);
	if (copy < 0)
		return nullptr;
	File *f = fileOf(copy);
	if (!f) {
		deferredClose(copy); /* not ours: its close could wait (serve()) */
		return nullptr;
	}
	if (f && copyOut)
		*copyOut = copy;
	else
		close(copy);
	return f;
}

std::unique_ptr<SeccompDevices::Impl::File> SeccompDevices::Impl::newFile(Kind kind, unsigned num, int &programEnd)
{
	int sv[2];
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0)
		return nullptr;
	auto f = std::make_unique<File>();
	f->kind = kind;
	f->num = num;
	f->key = socketCookie(sv[0]);
	/* the program can write to its end past the filter (io_uring, or
	 * another process it hands it to): no descriptors, whose release
	 * would be ours */
	emu::refuseDescriptors(sv[1]);
	f->peer = std::make_unique<boost::asio::posix::stream_descriptor>(io, sv[1]);
	clock_gettime(CLOCK_REALTIME, &f->born);
	programEnd = sv[0];
	return f;
}

int SeccompDevices::Impl::freeNumber(pid_t tid, int from, int base) const
{
	char path[64];
	for (int k = std::max(from, base); k < base + seccomp::kBlock; k++) {
		snprintf(path, sizeof path, "/proc/%d/fd/%d", static_cast<int>(tid), k);
		char target[8];
		if (readlink(path, target, sizeof target) < 0 && errno == ENOENT)
			return k;
	}
	return -EMFILE;
}

int SeccompDevices::Impl::place(const Notification &n, int base, std::unique_ptr<File> f, int programEnd, bool cloexec,
				bool asResult)
{
	int at = freeNumber(n.tid(), base, base);
	int rc = at < 0 ? at : n.inject(programEnd, at, cloexec, asResult);
	close(programEnd);
	if (rc < 0)
		return rc; /* f goes: nobody holds its other end */
	uint64_t key = f->key;
	files.emplace(key, std::move(f));
	watchPeer(key);
	return rc;
}

void SeccompDevices::Impl::watchPeer(uint64_t key)
{
	auto it = files.find(key);
	if (it == files.end())
		return;
	it->second->peer->async_wait(boost::asio::posix::stream_descriptor::wait_read,
				     [this, key](const boost::system::error_code &ec) {
					     if (ec)
						     return;
					     auto f = files.find(key);
					     if (f == files.end())
						     return;
					     /* end-of-file: the last reference is gone;
					      * bytes: the program wrote to its end
					      * past the filter, which we drop */
					     char buf[4096];
					     std::vector<int> fds;
					     bool cut;
					     ssize_t got = emu::receiveWithDescriptors(
						     f->second->peer->native_handle(), buf, sizeof buf, MSG_DONTWAIT,
						     fds, cut);
					     for (int fd : fds)
						     deferredClose(fd);
					     if (got == 0 || cut || (got < 0 && errno != EAGAIN && errno != EINTR))
						     return release(key);
					     watchPeer(key);
				     });
}

/* The file's release: ib_umad_close(), ib_umad_sm_close(), ib_uverbs_close(),
 * ucma_close() */
void SeccompDevices::Impl::release(uint64_t key)
{
	auto it = files.find(key);
	if (it == files.end())
		return;
	std::unique_ptr<File> f = std::move(it->second);
	files.erase(it);
	/* a call that waits holds its file on the kernel, so another thread's
	 * close() does not release it: such a call waits on, until a signal
	 * takes it back or its process ends (rping's event thread, while its
	 * main thread closes the channel and returns) */
	std::erase_if(orphans, [](const Waiting &w) { return !w.n.valid(); });
	for (Waiting &w : f->waiting)
		orphans.push_back(std::move(w));
	if (f->kind == Kind::Issm)
		f->port->issmRelease();
	if (f->kind == Kind::Uverbs) {
		auto a = files.find(f->asyncKey);
		if (a != files.end()) {
			a->second->cmdKey = 0;
			changed(a->first); /* its readers learn it is closed */
		}
		f->verbs.reset(); /* the file's objects first, then the HCAs they kept */
		host.reapRetired();
	}
	if (f->kind == Kind::Async) {
		auto c = files.find(f->cmdKey);
		if (c != files.end())
			c->second->asyncKey = 0;
	}
}

bool SeccompDevices::Impl::wantsReadable(const File &f) const
{
	switch (f.kind) {
	case Kind::Umad:
		return f.umad->poll() & (POLLIN | POLLERR);
	case Kind::Uverbs:
		return true; /* no poll of its own: the kernel's default mask */
	case Kind::Async: {
		auto c = files.find(f.cmdKey);
		return c == files.end() || (c->second->verbs->poll() & (POLLIN | POLLERR));
	}
	case Kind::RdmaCm:
		return f.ucma->poll() & POLLIN;
	case Kind::Issm:
		return true; /* no poll of its own either */
	}
	return false;
}

void SeccompDevices::Impl::level(File &f, int copy, bool emptied)
{
	bool want = !emptied && wantsReadable(f);
	if (want && !f.token) {
		char b = 0;
		f.token = send(f.peer->native_handle(), &b, 1, MSG_DONTWAIT | MSG_NOSIGNAL) == 1;
	} else if (!want && f.token && copy >= 0) {
		char buf[64];
		while (recv(copy, buf, sizeof buf, MSG_DONTWAIT) > 0) {
		}
		f.token = false;
	}
}

void SeccompDevices::Impl::changed(uint64_t key)
{
	auto it = files.find(key);
	if (it == files.end())
		return;
	File &f = *it->second;
	serveWaiting(f);
	if (files.count(key))
		level(f);
}

void SeccompDevices::Impl::park(File &f, const Notification &n, std::vector<uint8_t> command)
{
	/* callers that were taken back meanwhile (a signal) go first */
	std::erase_if(f.waiting, [](const Waiting &w) { return !w.n.valid(); });
	f.waiting.push_back({ n, std::move(command) });
}

void SeccompDevices::Impl::serveWaiting(File &f)
{
	while (!f.waiting.empty()) {
		Waiting w = f.waiting.front();
		if (!w.n.valid()) {
			f.waiting.pop_front();
			continue;
		}
		auto l = listeners.find(w.n.listener());
		/* the caller's end again, to take the readability byte back
		 * when this call empties the file */
		int copy = copyDescriptor(w.n.tid(), w.n.fdArg(0));
		if (copy >= 0 && socketCookie(copy) != f.key) {
			deferredClose(copy); /* not ours: its close could wait (serve()) */
			copy = -1;
		}
		current = { &w.n, l == listeners.end() ? 0 : l->second->base, &f, copy };
		f.waiting.pop_front();
		bool done;
		if (f.kind == Kind::RdmaCm) {
			bool parked = false;
			ssize_t rc = stopping ? -EIO
					      : f.ucma->write(w.n.tid(), w.command.data(), w.command.size(), false);
			if (rc == emu::UcmaFile::kBlocked) {
				f.waiting.push_front(std::move(w));
				parked = true;
			} else if (rc < 0) {
				w.n.fail(static_cast<int>(-rc));
			} else {
				level(f, copy); /* before the answer: it took the last event */
				w.n.answer(int64_t(w.command.size()));
			}
			done = !parked;
		} else {
			done = read(f, w.n, false) != 0;
			if (!done) { /* parked again, at the back: put it first again */
				f.waiting.push_front(std::move(f.waiting.back()));
				f.waiting.pop_back();
			}
		}
		current = {};
		if (copy >= 0)
			close(copy);
		if (!done)
			break;
	}
}

/* --- open --- */

void SeccompDevices::Impl::open(const Listener &l, const Notification &n)
{
	long nr = n.nr();
	bool at = nr == SYS_openat || nr == SYS_openat2;
	char path[64];
	int len = seccomp::readString(n.tid(), n.arg(at ? 1 : 0), path, sizeof path);
	NodeKind kind;
	unsigned num;
	if (len < 0 || !parseDevice(path, kind, num)) {
		n.proceed();
		return;
	}
	uint64_t flags = 0;
	if (nr == SYS_openat2) {
		open_how how{};
		if (n.arg(3) < sizeof how || readCaller(n.tid(), n.arg(2), &how, sizeof how) != 0) {
			n.proceed(); /* the kernel says what is wrong with it */
			return;
		}
		flags = how.flags;
	} else {
		flags = n.arg(at ? 2 : 1);
	}
	if (!n.valid()) /* what we read may not have been the caller's */
		return;
	if (flags & O_PATH) /* no driver's open: the kernel's own */
		return (void)n.proceed();
	openDevice(n, l.base, l.host, kind, num, static_cast<int>(flags));
}

void SeccompDevices::Impl::openDevice(const Notification &n, int base, const std::string &scope, NodeKind kind,
				      unsigned num, int flags, bool claimed)
{
	if (stopping)
		return (void)n.fail(ENXIO);
	emu::UmadPort *port = nullptr;
	emu::Hca *hca = nullptr, *portHca = nullptr;
	for (const auto &h : host.hcas()) {
		if (kind == NodeKind::Uverbs && h->verbsNum == num && h->verbs)
			hca = h.get();
		for (const auto &u : h->umadPorts)
			if (u->devNum() == num) {
				port = u.get();
				portHca = h.get();
			}
	}
	if ((kind == NodeKind::Uverbs && !hca) || ((kind == NodeKind::Umad || kind == NodeKind::Issm) && !port))
		return (void)n.proceed(); /* no such device: the kernel's ENOENT */
	/* a program of a cluster host (its listener's, not the namespace it
	 * is in now: `unshare -rn` leaves it the host's) has its host's
	 * devices only: another host's path is left to the kernel, which
	 * finds no such file in the host's /dev/infiniband (ENOENT) */
	emu::Hca *owner = kind == NodeKind::Uverbs ? hca : kind == NodeKind::RdmaCm ? nullptr : portHca;
	if (owner && !scope.empty() && owner->hostName != scope)
		return (void)n.proceed();
	/* an issm claim taken for this open, given back unless the file gets it */
	struct Claim {
		emu::UmadPort *port = nullptr;
		~Claim()
		{
			if (port)
				port->issmRelease();
		}
	} claim;
	if (claimed)
		claim.port = port;
	uid_t uid = realUid(n.tid());
	pid_t tgid = tgidOf(n.tid());
	OpenLimit::Slot slot = limit.take(uid, tgid);
	if (!slot)
		return (void)n.fail(EMFILE);
	bool cloexec = flags & O_CLOEXEC;
	static const Kind kKinds[] = { Kind::Umad, Kind::Issm, Kind::Uverbs, Kind::RdmaCm };
	int programEnd;
	std::unique_ptr<File> f = newFile(kKinds[int(kind)], num, programEnd);
	if (!f)
		return (void)n.fail(ENFILE);
	f->slot = std::move(slot);
	f->accmode = flags & O_ACCMODE;
	uint64_t key = f->key;
	auto wake = [this, key] { emu::queueWork(io, [this, key] { changed(key); }); };
	switch (kind) {
	case NodeKind::Umad: { /* ib_umad_open() */
		if (int rc = port->openCheck()) {
			close(programEnd);
			return (void)n.fail(-rc);
		}
		auto &budget = budgets[uid];
		if (!budget)
			budget = std::make_unique<emu::MemoryBudget>();
		f->port = port;
		f->umad = std::make_unique<emu::UmadFile>(*port, budget.get());
		f->umad->setWakeup(wake);
		break;
	}
	case NodeKind::Issm: { /* ib_umad_sm_open(): one holder per port */
		int rc = claimed ? 0 : port->issmOpen();
		if (rc == -EAGAIN && !(flags & O_NONBLOCK)) {
			close(programEnd);
			if (std::find_if(watched.begin(), watched.end(),
					 [port](const auto &w) { return w.first == port; }) == watched.end())
				watched.emplace_back(port, port->watchIssm([this] {
					emu::queueWork(io, [this] { retryIssm(); });
				}));
			/* callers a signal took back (a restarted open is a new
			 * call) go first */
			std::erase_if(issmWaiting, [](const IssmWait &w) { return !w.n.valid(); });
			issmWaiting.push_back({ n, port, num, base, scope, cloexec });
			return;
		}
		if (rc) {
			close(programEnd);
			return (void)n.fail(-rc);
		}
		claim.port = port;
		f->port = port;
		break;
	}
	case NodeKind::Uverbs: /* ib_uverbs_open() */
		if (hca->verbs->dead()) {
			close(programEnd);
			return (void)n.fail(ENXIO);
		}
		f->verbs = std::make_unique<emu::UverbsFile>(*hca->verbs, access, host.pinned());
		f->verbs->setOwner(uid);
		f->verbs->setRdmaCgroup(host.rdmaCgroups(), rdmaCgroupOf(tgid, hca->name));
		f->verbs->setWakeup([this, key] {
			emu::queueWork(io, [this, key] {
				auto c = files.find(key);
				if (c != files.end() && c->second->asyncKey)
					changed(c->second->asyncKey);
			});
		});
		break;
	case NodeKind::RdmaCm: /* ucma_open() */
		f->ucma = std::make_unique<emu::UcmaFile>(host.cma(), access, tgid);
		f->ucma->setHostScope(scope);
		f->ucma->setWakeup(wake);
		/* the very file behind fd, as the kernel's check */
		f->ucma->setCmFileOf([this](pid_t tid, int fd, const emu::UcmaFile *&file) {
			int copy = fd < 0 ? -1 : copyDescriptor(tid, fd);
			if (copy < 0)
				return -ENOENT;
			File *cm = fileOf(copy);
			file = cm && cm->kind == Kind::RdmaCm ? cm->ucma.get() : nullptr;
			deferredClose(copy); /* whatever it is, its close may block */
			return file ? 0 : -EINVAL;
		});
		break;
	}
	if (flags & O_NONBLOCK)
		fcntl(programEnd, F_SETFL, O_NONBLOCK);
	int rc = place(n, base, std::move(f), programEnd, cloexec, true);
	if (rc < 0) {
		if (rc != -ENOENT)
			n.fail(-rc);
		return;
	}
	claim.port = nullptr; /* the file's now: its release gives it back */
	if (auto it = files.find(key); it != files.end())
		level(*it->second);
}

void SeccompDevices::Impl::retryIssm()
{
	for (auto it = issmWaiting.begin(); it != issmWaiting.end();) {
		if (!it->n.valid()) {
			it = issmWaiting.erase(it);
			continue;
		}
		int rc = it->port->issmOpen();
		if (rc == -EAGAIN && !stopping) {
			++it;
			continue;
		}
		IssmWait w = *it;
		it = issmWaiting.erase(it);
		if (rc) {
			w.n.fail(stopping ? EINTR : -rc);
			continue;
		}
		openDevice(w.n, w.base, w.host, NodeKind::Issm, w.num, w.cloexec ? O_CLOEXEC : 0, true);
	}
}

/* --- read, write --- */

int SeccompDevices::Impl::read(File &f, const Notification &n, bool nonblock)
{
	uint64_t addr = n.arg(1);
	size_t count = n.arg(2);
	if (n.nr() == SYS_readv) { /* the first buffer that has room; the kernel
				    * reads a file without read_iter into each
				    * in turn, and a MAD or an event never spans
				    * two */
		int cnt = n.fdArg(2);
		if (cnt < 0 || cnt > kMaxIov)
			return n.fail(EINVAL), 1;
		count = 0;
		for (int i = 0; i < cnt && !count; i++) {
			iovec v;
			if (readCaller(n.tid(), n.arg(1) + i * sizeof v, &v, sizeof v) != 0)
				return n.fail(EFAULT), 1;
			addr = reinterpret_cast<uint64_t>(v.iov_base);
			count = v.iov_len;
		}
		if (!count)
			return n.answer(0), 1;
	}
	std::vector<uint8_t> out;
	ssize_t got;
	switch (f.kind) {
	case Kind::Umad:
		if (count < f.umad->hdrSize())
			return n.fail(EINVAL), 1;
		got = f.umad->read(count, out); /* ib_umad_read() */
		break;
	case Kind::Async: {
		auto c = files.find(f.cmdKey);
		if (c == files.end())
			return n.fail(EIO), 1; /* its uverbs file is closed */
		out.resize(sizeof(emu::ib_uverbs_async_event_desc));
		got = c->second->verbs->peek(out.data(), std::min(count, out.size()));
		if (got >= 0)
			out.resize(size_t(got));
		break;
	}
	default: /* issm, uverbs and rdma_cm have no read() */
		return n.fail(EINVAL), 1;
	}
	if (got == -EAGAIN && !nonblock && !stopping) {
		park(f, n);
		return 0;
	}
	if (got == -ENOSPC) {
		/* the header (whose length says what is needed) and the first
		 * segment are copied, the MAD stays queued */
		if (writeCaller(n.tid(), addr, out.data(), out.size()) != 0)
			return n.fail(EFAULT), 1;
		return n.fail(ENOSPC), 1;
	}
	if (got < 0)
		return n.fail(static_cast<int>(-got)), 1;
	if (writeCaller(n.tid(), addr, out.data(), out.size()) != 0)
		return n.fail(EFAULT), 1; /* the MAD stays queued, as the kernel requeues it */
	/* a read that empties the file takes the readability byte back before
	 * it returns: a poll() right after must not see one */
	emu::UverbsFile *verbs = f.kind == Kind::Async ? files.at(f.cmdKey)->verbs.get() : nullptr;
	bool last = verbs ? verbs->queuedEvents() == 1 : f.umad->queued() == 1;
	if (last && current.copy >= 0)
		level(f, current.copy, true);
	if (n.answer(got) != 0) /* taken back meanwhile: it stays queued */
		return 1;
	if (verbs)
		verbs->consumeEvent();
	else
		f.umad->consume();
	return 1;
}

void SeccompDevices::Impl::write(File &f, const Notification &n, bool nonblock)
{
	if (n.nr() == SYS_write) {
		bool parked = false;
		int64_t rc = writeOne(f, n, n.arg(1), n.arg(2), nonblock, parked);
		if (parked)
			return;
		/* what the command changed (a GET_EVENT took the last event, a MAD
		 * was answered at once) shows in poll() before it returns: the
		 * delivery it queued runs first, so a poll() right after finds
		 * the answer instead of sleeping until it comes */
		uint64_t key = f.key;
		if (turnWork)
			turnWork->runQueued();
		if (auto it = files.find(key); it != files.end())
			level(*it->second, current.copy);
		rc < 0 ? n.fail(static_cast<int>(-rc)) : n.answer(rc);
		return;
	}
	/* writev(): a file without write_iter takes each buffer as a write() of
	 * its own, until one fails or is short */
	int cnt = n.fdArg(2);
	if (cnt < 0 || cnt > kMaxIov)
		return (void)n.fail(EINVAL);
	int64_t total = 0;
	for (int i = 0; i < cnt; i++) {
		iovec v;
		if (readCaller(n.tid(), n.arg(1) + i * sizeof v, &v, sizeof v) != 0) {
			if (!total)
				return (void)n.fail(EFAULT);
			break;
		}
		if (!v.iov_len)
			continue;
		bool parked = false;
		/* a GET_EVENT that would wait, after others: the kernel would
		 * wait there too; we answer what was done (or EAGAIN) */
		int64_t rc = writeOne(f, n, reinterpret_cast<uint64_t>(v.iov_base), v.iov_len, true, parked);
		if (rc < 0) {
			if (!total)
				return (void)n.fail(static_cast<int>(-rc));
			break;
		}
		total += rc;
		if (size_t(rc) != v.iov_len)
			break;
	}
	n.answer(total);
}

int64_t SeccompDevices::Impl::writeOne(File &f, const Notification &n, uint64_t addr, size_t len, bool nonblock,
				       bool &parked)
{
	pid_t tid = n.tid();
	std::vector<uint8_t> data;
	switch (f.kind) {
	case Kind::Umad: { /* ib_umad_write() */
		if (len > f.umad->hdrSize() + emu::rmpp::kMaxMessageBytes)
			return -ENOMEM;
		data.resize(len);
		if (readCaller(tid, addr, data.data(), len) != 0)
			return -EFAULT;
		if (!n.valid())
			return -EINTR;
		ssize_t rc = f.umad->write(data.data(), len);
		return rc < 0 ? rc : int64_t(len);
	}
	case Kind::Uverbs: { /* ib_uverbs_write() */
		data.resize(std::min(len, kMaxVerbsCommand));
		size_t have = readPrefix(tid, addr, data.data(), data.size());
		if (have < len) { /* too long, or a hole: the header checks first */
			int h = emu::UverbsFile::headerErrno(data.data(), have, len);
			return h ? h : (len > kMaxVerbsCommand ? -EINVAL : -EFAULT);
		}
		if (!n.valid())
			return -EINTR;
		ssize_t rc = f.verbs->write(tid, data.data(), len);
		return rc < 0 ? rc : int64_t(len);
	}
	case Kind::RdmaCm: { /* ucma_write() */
		if (len > kMaxCmCommand)
			return -EINVAL;
		data.resize(len);
		if (readCaller(tid, addr, data.data(), len) != 0)
			return -EFAULT;
		if (!n.valid())
			return -EINTR;
		ssize_t rc = f.ucma->write(tid, data.data(), len, nonblock);
		if (rc == emu::UcmaFile::kBlocked) {
			if (nonblock)
				return -EAGAIN;
			park(f, n, std::move(data));
			parked = true;
			return 0;
		}
		return rc < 0 ? rc : int64_t(len);
	}
	default: /* issm and the async event file have no write() */
		return -EINVAL;
	}
}

/* --- ioctl, stat, dup --- */

void SeccompDevices::Impl::ioctl(File &f, const Notification &n)
{
	unsigned long cmd = static_cast<unsigned>(n.arg(1));
	if (isGenericIoctl(cmd))
		return (void)n.proceed(); /* they work on our socket as on any file */
	if (f.kind == Kind::Uverbs)
		return (void)n.fail(-f.verbs->ioctl(static_cast<unsigned>(cmd)));
	if (f.kind != Kind::Umad)
		return (void)n.fail(ENOTTY);
	/* ib_umad_ioctl(): the argument is copied in and out by its size */
	uint64_t argp = n.arg(2);
	size_t size = iocSize(static_cast<unsigned>(cmd));
	bool known = cmd == IB_USER_MAD_REGISTER_AGENT || cmd == IB_USER_MAD_UNREGISTER_AGENT ||
		cmd == IB_USER_MAD_ENABLE_PKEY || cmd == IB_USER_MAD_REGISTER_AGENT2;
	std::vector<uint8_t> arg(std::max<size_t>(size, 1), 0);
	if (known && size && readCaller(n.tid(), argp, arg.data(), size) != 0)
		return (void)n.fail(EFAULT);
	if (!n.valid())
		return;
	int rc = f.umad->ioctl(static_cast<unsigned>(cmd), arg.data(), known ? size : 0);
	bool reg = cmd == IB_USER_MAD_REGISTER_AGENT || cmd == IB_USER_MAD_REGISTER_AGENT2;
	/* REGISTER_AGENT2 writes the supported flags back even when it fails */
	if (reg && (rc == 0 || (rc == -EINVAL && cmd == IB_USER_MAD_REGISTER_AGENT2))) {
		if (writeCaller(n.tid(), argp, arg.data(), size) != 0) {
			if (rc == 0) { /* ib_umad_reg_agent() unregisters then */
				size_t idAt = cmd == IB_USER_MAD_REGISTER_AGENT ? offsetof(ib_user_mad_reg_req, id)
										 : offsetof(ib_user_mad_reg_req2, id);
				uint32_t id;
				memcpy(&id, arg.data() + idAt, sizeof id);
				f.umad->ioctl(IB_USER_MAD_UNREGISTER_AGENT, reinterpret_cast<uint8_t *>(&id), sizeof id);
			}
			return (void)n.fail(EFAULT);
		}
	}
	rc < 0 ? n.fail(-rc) : n.answer(rc);
}

void SeccompDevices::Impl::stat(File &f, const Notification &n)
{
	if (f.kind == Kind::Async) /* an anonymous file on the kernel too */
		return (void)n.proceed();
	long nr = n.nr();
	uint64_t buf = n.arg(1);
	if (nr == SYS_newfstatat || nr == SYS_statx) { /* only (fd, "", AT_EMPTY_PATH) is the file */
		char path[2];
		uint64_t flags = n.arg(nr == SYS_statx ? 2 : 3);
		if (!(flags & AT_EMPTY_PATH) || seccomp::readString(n.tid(), n.arg(1), path, sizeof path) != 0)
			return (void)n.proceed();
		buf = n.arg(nr == SYS_statx ? 4 : 2);
	}
	static const NodeKind kNodes[] = { NodeKind::Umad, NodeKind::Issm, NodeKind::Uverbs, NodeKind::Uverbs,
					   NodeKind::RdmaCm };
	auto [maj, min] = numbers(kNodes[int(f.kind)], f.num);
	int rc;
	if (nr == SYS_statx) {
		struct statx sx{};
		sx.stx_mask = STATX_BASIC_STATS;
		sx.stx_blksize = 4096;
		sx.stx_nlink = 1;
		sx.stx_mode = S_IFCHR | 0666;
		sx.stx_ino = 1000 + (uint64_t(maj) << 20 | min);
		sx.stx_atime = sx.stx_mtime = sx.stx_ctime = { f.born.tv_sec, uint32_t(f.born.tv_nsec), 0 };
		sx.stx_rdev_major = maj;
		sx.stx_rdev_minor = min;
		sx.stx_dev_minor = 5; /* devtmpfs' usual 0:5 */
		rc = writeCaller(n.tid(), buf, &sx, sizeof sx);
	} else {
		struct stat st{};
		st.st_mode = S_IFCHR | 0666;
		st.st_nlink = 1;
		st.st_rdev = makedev(maj, min);
		st.st_dev = makedev(0, 5);
		st.st_ino = 1000 + (uint64_t(maj) << 20 | min);
		st.st_blksize = 4096;
		st.st_atim = st.st_mtim = st.st_ctim = f.born;
		rc = writeCaller(n.tid(), buf, &st, sizeof st);
	}
	rc ? n.fail(EFAULT) : n.answer(0);
}

void SeccompDevices::Impl::dup(const Notification &n, int base, int copy)
{
	/* dup() and fcntl(F_DUPFD*) of a device file: the copy stays in the
	 * block, where its calls are trapped (the lowest free number there at
	 * or above the one asked for) */
	bool cloexec = n.nr() == SYS_fcntl && n.arg(1) == F_DUPFD_CLOEXEC;
	int from = n.nr() == SYS_fcntl ? static_cast<int>(std::min<uint64_t>(n.arg(2), INT_MAX)) : base;
	if (n.nr() == SYS_fcntl && from >= base + seccomp::kBlock)
		return (void)n.proceed();
	int at = freeNumber(n.tid(), from, base);
	int rc = at < 0 ? at : n.inject(copy, at, cloexec, true);
	if (rc < 0 && rc != -ENOENT)
		n.fail(-rc);
}

/* --- descriptors made for emu/ --- */

int SeccompDevices::Impl::newAsyncFile(pid_t tid, const emu::UverbsFile &file)
{
	File *cmd = current.file;
	if (!current.n || !cmd || cmd->verbs.get() != &file || tid != current.n->tid())
		return -EBADF;
	int programEnd;
	std::unique_ptr<File> f = newFile(Kind::Async, cmd->num, programEnd);
	if (!f)
		return -ENFILE;
	f->cmdKey = cmd->key;
	f->accmode = O_RDONLY; /* as the kernel makes it */
	uint64_t key = f->key;
	int rc = place(*current.n, current.base, std::move(f), programEnd, true, false);
	if (rc >= 0)
		cmd->asyncKey = key;
	return rc;
}

int SeccompDevices::Impl::newChannel(pid_t tid, int &sendFd, int &recvFd)
{
	if (!current.n || tid != current.n->tid())
		return -EBADF;
	int sv[2];
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0)
		return -ENFILE;
	/* ib_uverbs_create_comp_channel(): the lowest free number, close-on-exec */
	int num = current.n->inject(sv[1], -1, true, false);
	if (num < 0) {
		close(sv[0]);
		close(sv[1]);
		return num;
	}
	sendFd = sv[0];
	recvFd = sv[1];
	return num;
}

/* --- SeccompDevices --- */

SeccompDevices::SeccompDevices(boost::asio::io_context &io, emu::Host &host, Numbers numbers, unsigned spinUs)
	: impl_(std::make_unique<Impl>(io, host, std::move(numbers), spinUs))
{}

SeccompDevices::~SeccompDevices()
{
	shutdown();
}

int SeccompDevices::adopt(int listener, int base, const std::string &host)
{
	Impl &s = *impl_;
	char target[64];
	char link[64];
	snprintf(link, sizeof link, "/proc/self/fd/%d", listener);
	ssize_t n = readlink(link, target, sizeof target - 1);
	bool isListener = n > 0 && std::string(target, size_t(n)) == "anon_inode:seccomp notify";
	/* the same listener twice would have two of our readers race for one
	 * call, and the loser's SECCOMP_IOCTL_NOTIF_RECV wait */
	bool again = false;
	for (const auto &[fd, l] : s.listeners)
		again = again || syscall(SYS_kcmp, getpid(), getpid(), 0 /* KCMP_FILE */, fd, listener) == 0;
	if (!isListener || again || base < seccomp::kBlock || base % seccomp::kBlock || s.stopping) {
		deferredClose(listener);
		return -EINVAL;
	}
	/* 6.6: wake the caller on our CPU and us on its CPU, rather than
	 * sending each other across (bookworm's headers predate it) */
	constexpr unsigned long kSetFlags = SECCOMP_IOW(4, uint64_t); /* SECCOMP_IOCTL_NOTIF_SET_FLAGS */
	constexpr uint64_t kSyncWakeUp = 1; /* SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP */
	ioctl(listener, kSetFlags, kSyncWakeUp); /* a speed-up only: older kernels say EINVAL */
	auto l = std::make_unique<Impl::Listener>(s.io, listener, base, host);
	Impl::Listener &ref = *l;
	s.listeners.emplace(listener, std::move(l));
	s.arm(ref);
	return 0;
}

emu::UserAccess &SeccompDevices::access()
{
	return impl_->access;
}

void SeccompDevices::openers(std::map<pid_t, unsigned> &out) const
{
	for (const auto &[key, f] : impl_->files)
		if (f->kind != Kind::Async)
			out[f->slot.process()]++;
}

void SeccompDevices::shutdown()
{
	Impl &s = *impl_;
	if (s.stopping)
		return;
	s.stopping = true;
	for (auto &[key, f] : s.files) {
		for (auto &w : f->waiting)
			w.n.fail(EIO);
		f->waiting.clear();
	}
	for (auto &w : s.orphans)
		w.n.fail(EIO);
	s.orphans.clear();
	for (auto &w : s.issmWaiting)
		w.n.fail(ENXIO);
	s.issmWaiting.clear();
	for (auto [p, id] : s.watched)
		p->unwatchIssm(id);
	s.watched.clear();
	std::vector<uint64_t> keys;
	for (auto &[key, f] : s.files)
		keys.push_back(key);
	for (uint64_t key : keys)
		s.release(key);
	s.listeners.clear();
}

} /* namespace ibemu::cuse_dev */
