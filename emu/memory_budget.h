// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// The bytes one user's open umad files may make the daemon hold: MADs
// queued for them to read, MADs they sent that have not completed, and
// RMPP messages being reassembled for their agents. Per-file bounds alone
// multiply with the number of files a user opens; this one does not.
// Shared by every file of one user and owned by the transport, which keeps
// it for as long as the daemon runs. Everything runs on the io thread.
#pragma once

#include <algorithm>
#include <cstddef>

namespace ibemu::emu {

class MemoryBudget {
public:
	static constexpr size_t kPerUser = size_t(256) << 20;

	explicit MemoryBudget(size_t limit = kPerUser) : limit_(limit) {}
	MemoryBudget(const MemoryBudget &) = delete;
	MemoryBudget &operator=(const MemoryBudget &) = delete;

	/* false, and nothing charged, when n more bytes do not fit */
	bool charge(size_t n)
	{
		if (n > limit_ - used_)
			return false;
		used_ += n;
		return true;
	}
	void release(size_t n) { used_ -= std::min(n, used_); }
	size_t used() const { return used_; }

private:
	size_t limit_;
	size_t used_ = 0;
};

} /* namespace ibemu::emu */
