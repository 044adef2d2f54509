// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
#include "emu/pinned_vm.h"

#include <cerrno>

namespace ibemu::emu {

int PinnedVm::account(UserAccess &ua, pid_t tid, uint64_t pages, pid_t &pid)
{
	ProcessCreds creds;
	if (int r = ua.credentials(tid, creds); r < 0)
		return r;
	/* 2. can_do_mlock() */
	if (creds.memlockSoft == 0 && !creds.capIpcLock)
		return -EPERM;
	/* 6-8. charge first, then compare: reaching the limit exactly is fine */
	uint64_t limit = creds.memlockSoft == ~uint64_t(0) ? ~uint64_t(0) : creds.memlockSoft / kPageSize;
	uint64_t &charged = pinned_[creds.pid];
	charged += pages;
	if (charged > limit && !creds.capIpcLock) {
		release(creds.pid, pages);
		return -ENOMEM;
	}
	pid = creds.pid;
	return 0;
}

int PinnedVm::pin(UserAccess &ua, pid_t tid, uint64_t addr, uint64_t len, bool writable, pid_t &pid, uint64_t &npages)
{
	/* 1. the range must not wrap, even once rounded up to a page */
	uint64_t end = addr + len;
	if (end < addr || end > ~uint64_t(0) - (kPageSize - 1))
		return -EINVAL;
	/* 5. every page touched counts, partial ones included */
	uint64_t first = addr & ~(kPageSize - 1);
	uint64_t last = (end + kPageSize - 1) & ~(kPageSize - 1);
	uint64_t pages = (last - first) / kPageSize;
	if (pages == 0 || pages > UINT32_MAX)
		return -EINVAL;
	pid_t owner;
	if (int r = account(ua, tid, pages, owner))
		return r;
	/* 9. pin_user_pages_fast(FOLL_WRITE, + FOLL_FORCE when not writable):
	 * only a writable MR needs a writable mapping */
	if (int r = ua.pinnable(tid, owner, addr, len, writable); r < 0) {
		release(owner, pages);
		return r;
	}
	pid = owner;
	npages = pages;
	return 0;
}

int PinnedVm::charge(UserAccess &ua, pid_t tid, uint64_t bytes, pid_t &pid, uint64_t &npages)
{
	uint64_t pages = (bytes + kPageSize - 1) / kPageSize;
	if (pages == 0 || pages > UINT32_MAX)
		return -EINVAL;
	if (int r = account(ua, tid, pages, pid))
		return r;
	npages = pages;
	return 0;
}

void PinnedVm::release(pid_t pid, uint64_t npages)
{
	auto it = pinned_.find(pid);
	if (it == pinned_.end())
		return;
	it->second -= npages < it->second ? npages : it->second;
	if (it->second == 0)
		pinned_.erase(it);
}

uint64_t PinnedVm::pinnedPages(pid_t pid) const
{
	auto it = pinned_.find(pid);
	return it == pinned_.end() ? 0 : it->second;
}

} /* namespace ibemu::emu */
