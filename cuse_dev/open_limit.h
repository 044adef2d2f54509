// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// Open device files per user. Each costs the daemon memory, and a user's
// RLIMIT_NOFILE is the user's own to raise, so this bounds it for every
// user alike: past the limit open() fails with EMFILE.
#pragma once

#include <cstddef>
#include <sys/types.h>
#include <unordered_map>
#include <utility>

namespace ibemu::cuse_dev {

class OpenLimit {
public:
	static constexpr size_t kMaxPerUser = 4096;

	/* One open file's share; given back when the Slot goes. */
	class Slot {
	public:
		Slot() = default;
		Slot(Slot &&o) noexcept : limit_(o.limit_), uid_(o.uid_), process_(o.process_) { o.limit_ = nullptr; }
		Slot &operator=(Slot &&o) noexcept
		{
			std::swap(limit_, o.limit_);
			std::swap(uid_, o.uid_);
			std::swap(process_, o.process_);
			return *this;
		}
		~Slot()
		{
			if (limit_)
				limit_->give(uid_);
		}
		explicit operator bool() const { return limit_ != nullptr; }
		/* the process that opened the file (a child may hold it now) */
		pid_t process() const { return process_; }

	private:
		friend class OpenLimit;
		Slot(OpenLimit *l, uid_t uid, pid_t process) : limit_(l), uid_(uid), process_(process) {}
		OpenLimit *limit_ = nullptr;
		uid_t uid_ = 0;
		pid_t process_ = 0;
	};

	/* An empty Slot when uid is at its limit. */
	Slot take(uid_t uid, pid_t process)
	{
		size_t &n = counts_[uid];
		if (n >= kMaxPerUser)
			return {};
		n++;
		return { this, uid, process };
	}

private:
	void give(uid_t uid)
	{
		auto it = counts_.find(uid);
		if (it != counts_.end() && --it->second == 0)
			counts_.erase(it);
	}

	std::unordered_map<uid_t, size_t> counts_;
};

} /* namespace ibemu::cuse_dev */
