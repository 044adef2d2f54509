// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// How emu/ reaches a calling process: its memory (copy_to_user and the data
// path's DMA), its credentials (for pinning accounting), and its file
// descriptors. The transport implements this with /proc and
// process_vm_readv/writev; unit tests use a fake over their own memory.
#pragma once

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <sys/types.h>
#include <vector>

namespace ibemu::emu {

class UverbsFile;

/* What a descriptor taken from a program must be. Only these are ever
 * kept or looked into on the daemon's thread: their checks never call
 * into a filesystem, which a FUSE file (even ibemud's own sysfs) could
 * make wait for ever. A memfd's close() is safe there too; a socket's is
 * not: the last close of a unix socket releases the descriptors queued
 * in it, and those can be anything (a TCP socket with SO_LINGER that
 * waits as long as its owner chose, a CUSE file whose release waits for
 * its server), so every socket from a program is closed with
 * UserAccess::discardDescriptor(). */
enum class FdKind {
	UnixStream, /* a connected AF_UNIX stream socket */
	Memfd, /* a memfd (tmpfs, not hugetlbfs) */
};
/* Is fd of that kind? Safe on any descriptor: no filesystem calls. */
bool descriptorIs(int fd, FdKind kind);
/* Makes the unix socket fd refuse descriptors sent to it from now on
 * (SO_PASSRIGHTS off: the sender's sendmsg() fails with EPERM), where the
 * kernel has that option (6.16); a no-op before. */
void refuseDescriptors(int fd);

/* The most descriptors one message can carry (the kernel's SCM_MAX_FD). */
constexpr size_t kMaxFdsPerMessage = 253;

/* recvmsg(sock, flags | MSG_CMSG_CLOEXEC) of up to len bytes, with room
 * for every descriptor a message can carry: the kernel releases those
 * that do not fit (or that find no free number) itself, inside recvmsg,
 * in the receiver's thread, and such a release can wait for as long as
 * the sender chose. The descriptors received are appended to fds (the
 * caller's to close, with discardDescriptor); truncated is set when the
 * kernel still cut something (MSG_CTRUNC: we are out of descriptors):
 * the caller treats that as a protocol error. recvmsg's result. */
ssize_t receiveWithDescriptors(int sock, void *buf, size_t len, int flags, std::vector<int> &fds, bool &truncated);
/* sendmsg(sock, flags) of len bytes with nfds descriptors (SCM_RIGHTS,
 * at most kMaxFdsPerMessage): sendmsg's result. */
ssize_t sendWithDescriptors(int sock, const void *buf, size_t len, const int *fds, size_t nfds, int flags);

/* What ib_umem_get needs to know about the registering process. */
struct ProcessCreds {
	pid_t pid = 0; /* thread group id: the mm that pins */
	uint64_t memlockSoft = 0; /* soft RLIMIT_MEMLOCK in bytes (~0: unlimited) */
	bool capIpcLock = false; /* CAP_IPC_LOCK in the effective set */
	/* CAP_NET_BIND_SERVICE in the effective set, of a process in the
	 * daemon's user namespace (the kernel's capable(): the initial one) */
	bool capNetBindService = false;
};

class UserAccess {
public:
	/* Copies between our buffer and the address space of tid's process.
	 * 0 or a negative errno (EFAULT for an unmapped range). */
	virtual int read(pid_t tid, uint64_t addr, void *buf, size_t len) = 0;
	virtual int write(pid_t tid, uint64_t addr, const void *buf, size_t len) = 0;
	/* get_user_pages(): is the whole range mapped (and writable, if write)
	 * in the address space of thread tid, of process pid (ProcessCreds)? */
	virtual int pinnable(pid_t tid, pid_t pid, uint64_t addr, uint64_t len, bool write) = 0;
	virtual int credentials(pid_t tid, ProcessCreds &out) = 0;
	/* GET_CONTEXT's async event descriptor for `file`, in tid's process,
	 * or a negative errno. A transport that can put a descriptor into the
	 * caller makes a new one (the kernel's); one that cannot (CUSE) gives
	 * the number under which the process holds `file` itself, which then
	 * doubles as the async event file (docs/verbs.md). */
	virtual int descriptorOf(pid_t tid, const UverbsFile &file) = 0;
	/* CREATE_COMP_CHANNEL on a transport that can put a descriptor into
	 * the caller: a new connected AF_UNIX stream pair whose receiving end
	 * the caller now holds under the number returned (close-on-exec);
	 * sendFd and recvFd are the daemon's copies of the two ends, for
	 * CompChannel::adopt(). -ENOSYS where the transport cannot (the
	 * provider's spares serve then), or another negative errno. */
	virtual int newChannel(pid_t tid, int &sendFd, int &recvFd)
	{
		(void)tid, (void)sendFd, (void)recvFd;
		return -ENOSYS;
	}
	/* A copy, for the daemon, of descriptor fd of tid's process
	 * (pidfd_getfd), if it is of that kind: the daemon's own descriptor,
	 * or -EBADF (no such descriptor), -EINVAL (another kind: the copy is
	 * closed where that cannot stall the daemon), -ESRCH. */
	virtual int takeDescriptor(pid_t tid, int fd, FdKind kind) = 0;
	/* Closes a descriptor that came from a program (one that came over a
	 * socket the program writes to, or any socket the program made, with
	 * whatever it still holds) where that cannot stall the daemon:
	 * closing a FUSE file waits for its server, a unix socket's last close
	 * releases what is queued in it. */
	virtual void discardDescriptor(int fd) = 0;
	/* OPEN_XRCD: a copy, for the daemon, of descriptor fd of tid's
	 * process, whatever its file, with that file's mount and inode
	 * numbers. The copy keeps the inode (and so its number) as the
	 * kernel's domain table does (igrab()); it goes with
	 * discardDescriptor. -EBADF: no such descriptor, or an O_PATH one
	 * (fdget() refuses those); -ESRCH. Where no process can be reached:
	 * -EBADF. */
	virtual int takeFile(pid_t tid, int fd, uint64_t &mnt, uint64_t &ino)
	{
		(void)tid, (void)fd, (void)mnt, (void)ino;
		return -EBADF;
	}

	/* The address space tid's process has now, as a handle (>= 0) that
	 * stays bound to it: after the process exits or execs, reads and
	 * writes through it fail instead of reaching whoever has the PID
	 * then. Memory regions keep one for the data path. readMemory and
	 * writeMemory: 0, -EFAULT for an unmapped range, -ESRCH once that
	 * address space is gone (the process exited or exec'd; its files,
	 * and so its memory regions, are released only after that). */
	virtual int openMemory(pid_t tid) = 0;
	virtual void closeMemory(int mem) = 0;
	virtual int readMemory(int mem, uint64_t addr, void *buf, size_t len) = 0;
	virtual int writeMemory(int mem, uint64_t addr, const void *buf, size_t len) = 0;

protected:
	~UserAccess() = default;
};

} /* namespace ibemu::emu */
