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
	/* ib_umem_release() */
	void release(pid_t pid, uint64_t npages);

	uint64_t pinnedPages(pid_t pid) const;
	/* every process with pages pinned: pid -> pages */
	const std::map<pid_t, uint64_t> &all() const { return pinned_; }

private:
	std::map<pid_t, uint64_t> pinned_;
};

} /* namespace ibemu::emu */
