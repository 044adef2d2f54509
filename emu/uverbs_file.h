// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// One open /dev/infiniband/uverbsN (the kernel's ib_uverbs_file with its
// ucontext).
//
// Interface (what a transport calls):
//   write()   one command per call, in the legacy or extended write() ABI
//             (ib_uverbs_write); responses go into the caller's memory
//             through UserAccess; returns count or a negative errno
//   ioctl()   -ENOTTY for everything: libibverbs then uses write() alone
//   read()    one async event (16 bytes) per call; -EAGAIN when none (the
//             uverbs fd doubles as the async event fd, see docs/verbs.md)
//   poll()    POLLIN with an event queued, POLLERR once the device is gone
//   close     the destructor: objects go in the kernel's order
//             (uverbs_destroy_ufile_hw): creation order, skipping objects
//             still in use, pass after pass.
//
// Where it is (the kernel's files):
//   uverbs_file.cpp     write() and its header checks, the method table,
//                       read() and poll() of async events (uverbs_main.c)
//   uverbs_cmd.cpp      the command handlers (uverbs_cmd.c): context,
//                       device, PD, AH, MR; by object in uverbs_cmd_cq.cpp,
//                       uverbs_cmd_qp.cpp and uverbs_cmd_srq.cpp ...
//   uverbs_post.cpp     ... but the three that post work requests
//   uverbs_destroy.cpp  destroying objects, one or all (rdma_core.c)
#pragma once

#include "emu/comp_channel.h"
#include "emu/ibemu_user_verbs.h"
#include "emu/pinned_vm.h"
#include "emu/rdma_cgroup.h"
#include "emu/shared_mapping.h"
#include "emu/user_access.h"
#include "emu/uverbs_idr.h"
#include "emu/verbs_objects.h"

#include <algorithm>
#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <sys/types.h>
#include <vector>

namespace ibemu::emu {

class VerbsDevice;

class UverbsFile {
public:
	UverbsFile(VerbsDevice &dev, UserAccess &ua, PinnedVm &pinned);
	~UverbsFile();
	UverbsFile(const UverbsFile &) = delete;
	UverbsFile &operator=(const UverbsFile &) = delete;

	ssize_t write(pid_t tid, const uint8_t *buf, size_t count);
	/* The write() size the command at buf declares in its header, the only
	 * size write() takes (ib_uverbs_write); 0 when len holds no header. */
	static size_t commandSize(const uint8_t *buf, size_t len);
	/* The errno write() of count bytes gives before it reads past the
	 * headers, when only the first `have` bytes can be read: a command that
	 * runs into a hole gets what the kernel answers before it touches the
	 * rest (then -EFAULT). 0 when the command would go on to read it. */
	static int headerErrno(const uint8_t *buf, size_t have, size_t count)
	{
		const Method *m;
		int rc = checkHeaders(buf, have, count, m);
		if (rc == 0 && m->fn == &UverbsFile::notSupported) /* reads nothing */
			return -EOPNOTSUPP;
		return rc;
	}
	ssize_t read(uint8_t *buf, size_t count);
	/* the user who opened the file (the transport's, at open): its
	 * objects count against that user's share of the device's limits
	 * (VerbsDevice::room()); root's until set */
	void setOwner(uid_t uid) { owner_ = uid; }
	uid_t owner() const { return owner_; }
	/* the rdma cgroups of the file's opener for this device, read at open
	 * (emu/rdma_cgroup.h): GET_CONTEXT charges a handle, each object an
	 * object; past a limit EAGAIN */
	void setRdmaCgroup(RdmaCgroups &cgroups, RdmaCgChain chain)
	{
		cg_ = &cgroups;
		cgChain_ = std::move(chain);
	}
	/* read() in two steps, for a transport that learns only afterwards
	 * whether the event reached the caller: the head event, left queued;
	 * then taking it off (only after a peek() that gave one). */
	ssize_t peek(uint8_t *buf, size_t count) const;
	void consumeEvent();
	int ioctl(unsigned cmd) const;
	size_t queuedEvents() const { return events_.size(); }
	unsigned poll() const;

	/* Called when an event is queued or the device dies. It must not call
	 * back into this file synchronously. */
	void setWakeup(std::function<void()> fn) { wakeup_ = std::move(fn); }

	VerbsDevice &device() const { return dev_; }
	bool hasContext() const { return hasContext_; }

	/* --- called by the device and the data path --- */
	/* Queues an async event; obj: the QP, CQ or SRQ it is about (its
	 * events_reported counts the ones the application read). */
	void asyncEvent(uint64_t element, AsyncEvent type, UObject *obj = nullptr);
	void deviceDied();
	/* A BIND_MW work request's window: the one the handle names, or null */
	Mw *memoryWindow(uint32_t handle) const;

	/* One command being served: where its request is and where its
	 * response goes (the kernel's uverbs_attr_bundle ucore and driver_udata). */
	struct Request {
		pid_t tid;
		const uint8_t *in; /* the core request, then the driver's udata */
		size_t inLen;
		uint64_t response; /* user pointer; 0 for commands without one */
		size_t outLen;

		template <typename T> T cmd() const
		{
			T t{};
			memcpy(&t, in, std::min(sizeof t, inLen));
			return t;
		}
	};

private:
	using Handler = int (UverbsFile::*)(Request &);
	struct Method {
		Handler fn;
		size_t reqSize;
		size_t respSize;
	};
	static const Method *method(uint32_t command, bool &known);
	static int checkHeaders(const uint8_t *buf, size_t have, size_t count, const Method *&m);
	int notSupported(Request &r); /* ib_uverbs_notsupp */

	/* --- the command handlers and what they share (uverbs_cmd*.cpp) --- */

	/* handle lookups: 0, -ENOENT (not in this file's table) or -EINVAL
	 * (another type) */
	int lookup(uint32_t handle, UType type, UObject *&out) const;
	template <typename T> int get(uint32_t handle, T *&out) const
	{
		UObject *o;
		if (int ret = lookup(handle, T::kType, o))
			return ret;
		out = static_cast<T *>(o);
		return 0;
	}
	/* a create's handle: reserve() when it starts, commit() when it has
	 * succeeded; returning without commit() gives the handle back */
	using Reservation = Idr<UObject>::Reservation;
	Reservation reserve() { return idr_.reserve(); }
	void commit(Reservation &res, std::unique_ptr<UObject> obj);
	int respond(Request &r, const void *resp, size_t len);

	int getContext(Request &r);
	int addSpares(Request &r); /* IBEMU_CMD_ADD_SPARES */
	int attachQpRing(Request &r); /* IBEMU_CMD_ATTACH_QP_RING */
	/* takes the provider's spare pairs (emu/ibemu_user_verbs.h): all of
	 * them, or none and an errno */
	int takeSpares(pid_t tid, const ibemu_spare *spares, uint32_t n);
	/* the channel behind descriptor fd of tid's process, or nullptr */
	CompChannel *channelOf(pid_t tid, int fd);
	int queryDevice(Request &r);
	int exQueryDevice(Request &r);
	int queryPort(Request &r);
	int allocPd(Request &r);
	int deallocPd(Request &r);
	int createAh(Request &r);
	int destroyAh(Request &r);
	int attachMcast(Request &r);
	int detachMcast(Request &r);
	int mcast(Request &r, bool attach);
	int regMr(Request &r);
	int deregMr(Request &r);
	int allocMw(Request &r);
	int deallocMw(Request &r);
	int createCompChannel(Request &r);
	int createCq(Request &r);
	int resizeCq(Request &r);
	int destroyCq(Request &r);
	int pollCq(Request &r);
	int reqNotifyCq(Request &r);
	int createQp(Request &r);
	int queryQp(Request &r);
	int modifyQp(Request &r);
	int destroyQp(Request &r);
	int createSrq(Request &r);
	int createXsrq(Request &r);
	int newSrq(Request &r, const ib_uverbs_create_xsrq &cmd);
	/* XRC domains (uverbs_cmd_xrc.cpp) */
	int openXrcd(Request &r);
	int closeXrcd(Request &r);
	int modifySrq(Request &r);
	int querySrq(Request &r);
	int destroySrq(Request &r);
	/* posting work requests (uverbs_post.cpp) */
	int postSend(Request &r);
	int postRecv(Request &r);
	int postSrqRecv(Request &r);
	/* a ring QP's doorbell rang: take its new sends, and its receives
	 * when it asked for the doorbell, then run it */
	void doorbell(Qp &qp);
	/* The sends a ring QP's program has posted, into qp.sq, checked. A
	 * command comes after the posts its program made before it, so the
	 * commands that change what a send means (MODIFY_QP, DESTROY_AH) take
	 * them first, as the kernel would have queued them already. */
	void takeSends(Qp &qp);
	/* the checks POST_SEND makes of one work request, -EINVAL if it fails
	 * one (the UD address is resolved here) */
	int checkSend(const Qp &qp, SendWqe &w) const;
	/* its opcode for the QP type, and UD's AH: 0, -EINVAL or the lookup's errno */
	int parseAddress(const Qp &qp, SendWqe &w, bool ring) const;

	/* --- teardown (uverbs_destroy.cpp) --- */
	int destroy(UObject &obj, bool force);
	int destroyHandle(uint32_t handle, UType type);
	/* the address space of tid's process, shared by its MRs on this file */
	int memoryOf(pid_t tid, pid_t pid, uint64_t addr, std::shared_ptr<const int> &out);
	/* A ring's memory as driver data names it: its own memfd, taken from
	 * tid (the caller closes mem.fd), or a window of the area. */
	int ringMemory(pid_t tid, int32_t ringFd, uint32_t areaOffset, RingMemory &mem);
	/* the CQ ring CREATE_CQ's or RESIZE_CQ's driver data names, if any (uverbs_cmd_cq.cpp) */
	int driverCqRing(const Request &r, size_t coreIn, size_t outNeeded, uint32_t cqe,
			 std::unique_ptr<CqRing> &ring);

	VerbsDevice &dev_;
	UserAccess &ua_;
	PinnedVm &pinned_;
	Idr<UObject> idr_;
	uint64_t nextSeq_ = 0;
	bool hasContext_ = false;
	bool dead_ = false;
	struct Event {
		ib_uverbs_async_event_desc desc;
		UObject *obj; /* null for port events; dropped when obj is destroyed */
	};
	std::deque<Event> events_;
	/* completion channels and the spares they are made from; they outlive
	 * every CQ (destroyed after the objects). At most kMaxChannels, those
	 * the program has closed and no CQ uses not counted. */
	static constexpr size_t kMaxChannels = 32;
	/* forgets the channels nobody uses any more: false when none is left
	 * for `more` new ones (EMFILE) */
	bool roomForChannels(size_t more);
	std::vector<std::unique_ptr<CompChannel>> channels_;
	bool ibemuProvider_ = false; /* GET_CONTEXT came from ibemu's provider */
	/* the context's area, which rings in it keep too (ibemu_user_verbs.h) */
	std::shared_ptr<const SharedMapping> area_;
	std::map<pid_t, std::weak_ptr<const int>> mems_; /* by process */
	uid_t owner_ = 0;
	RdmaCgroups *cg_ = nullptr;
	RdmaCgChain cgChain_;
	/* room for one more object of type t: the device's, the owner's
	 * share, the cgroups' (0, -ENOMEM or -EAGAIN) */
	int room(UType t) const;
	std::function<void()> wakeup_;
};

} /* namespace ibemu::emu */
