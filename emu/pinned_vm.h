// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// Pinned-memory accounting as the kernel's ib_umem_get/ib_umem_release do
// it: pages are charged to the registering process (its mm->pinned_vm),
// checked against its soft RLIMIT_MEMLOCK unless it has CAP_IPC_LOCK, and
// counted again each time the same page is pinned.
#pragma once

#include "emu/user_access.h"

#include <cstdint>
#include <map>

namespace ibemu::emu {

constexpr uint64_t kPageSize = 4096;

class PinnedVm {
public:
	/* ib_umem_get(): charges the pages of [addr, addr+len) to tid's process.
	 * Returns 0 with pid and npages set (what release() needs), or
	 * -EINVAL, -EPERM, -ENOMEM, -EFAULT in the kernel's order. */
	int pin(UserAccess &ua, pid_t tid, uint64_t addr, uint64_t len, bool writable, pid_t &pid, uint64_t &npages);
	/* ib_umem_get() of memory the driver itself maps for a queue (mlx5's
	 * CQ buffer, ibemu's CQ ring or the completions it keeps): charges
	 * the pages bytes spans to tid's process against its RLIMIT_MEMLOCK
	 * as pin() does, without judging an address range. 0 with pid and
	 * npages set, or -EINVAL, -EPERM, -ENOMEM. */
	int charge(UserAccess &ua, pid_t tid, uint64_t bytes, pid_t &pid, uint64_t &npages);
	/* ib_umem_release() */
	void release(pid_t pid, uint64_t npages);

	uint64_t pinnedPages(pid_t pid) const;
	/* every process with pages pinned: pid -> pages */
	const std::map<pid_t, uint64_t> &all() const { return pinned_; }

private:
	/* can_do_mlock(), then the charge against the limit (steps 2, 6-8) */
	int account(UserAccess &ua, pid_t tid, uint64_t pages, pid_t &pid);
	std::map<pid_t, uint64_t> pinned_;
};

/* One charge of a command that may still fail: released when the guard
 * goes out of scope unless the object that pays for it took it (take()). */
class PinnedCharge {
public:
	explicit PinnedCharge(PinnedVm &vm) : vm_(vm) {}
	~PinnedCharge()
	{
		if (npages_)
			vm_.release(pid_, npages_);
	}
	PinnedCharge(const PinnedCharge &) = delete;
	PinnedCharge &operator=(const PinnedCharge &) = delete;

	int pin(UserAccess &ua, pid_t tid, uint64_t addr, uint64_t len, bool writable)
	{
		return vm_.pin(ua, tid, addr, len, writable, pid_, npages_);
	}
	int charge(UserAccess &ua, pid_t tid, uint64_t bytes) { return vm_.charge(ua, tid, bytes, pid_, npages_); }
	pid_t pid() const { return pid_; }
	/* the charge is the caller's now: its pid and pages */
	void take(pid_t &pid, uint64_t &npages)
	{
		pid = pid_;
		npages = npages_;
		npages_ = 0;
	}

private:
	PinnedVm &vm_;
	pid_t pid_ = 0;
	uint64_t npages_ = 0;
};

} /* namespace ibemu::emu */
