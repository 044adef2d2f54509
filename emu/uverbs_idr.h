// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// The per-file handle table of uverbs (ufile->idr, an XA_FLAGS_ALLOC
// xarray): one table shared by every object type, handing out the lowest
// free index from 0, reserved when a create command starts and either
// committed or given back when it ends.
#pragma once

#include <cstdint>
#include <memory>
#include <set>
#include <vector>

namespace ibemu::emu {

template <typename T> class Idr {
public:
	/* A handle held for a create in progress (uobj_alloc): commit() fills
	 * it (uobj_alloc_commit); a create that returns early without
	 * committing gives it back (uobj_alloc_abort). */
	class Reservation {
	public:
		~Reservation()
		{
			if (idr_)
				idr_->release(h_);
		}
		Reservation(const Reservation &) = delete;
		Reservation &operator=(const Reservation &) = delete;
		uint32_t handle() const { return h_; }

	private:
		friend class Idr;
		Reservation(Idr &idr, uint32_t h) : idr_(&idr), h_(h) {}
		Idr *idr_; /* null once committed */
		uint32_t h_;
	};

	/* xa_alloc(): reserve the lowest free handle */
	Reservation reserve()
	{
		uint32_t h;
		if (!free_.empty()) {
			h = *free_.begin();
			free_.erase(free_.begin());
		} else {
			h = static_cast<uint32_t>(slots_.size());
			slots_.emplace_back();
		}
		return Reservation(*this, h);
	}
	void commit(Reservation &r, std::unique_ptr<T> obj)
	{
		slots_[r.h_] = std::move(obj);
		r.idr_ = nullptr;
	}
	T *get(uint32_t h) const { return h < slots_.size() ? slots_[h].get() : nullptr; }
	std::unique_ptr<T> remove(uint32_t h)
	{
		std::unique_ptr<T> obj = std::move(slots_[h]);
		release(h);
		return obj;
	}
	bool empty() const { return slots_.size() == free_.size(); }
	template <typename Fn> void forEach(Fn &&fn) const
	{
		for (const auto &s : slots_)
			if (s)
				fn(static_cast<const T &>(*s));
	}
	template <typename Fn> void forEach(Fn &&fn)
	{
		for (auto &s : slots_)
			if (s)
				fn(*s);
	}

private:
	void release(uint32_t h)
	{
		slots_[h].reset();
		free_.insert(h);
		while (!slots_.empty() && free_.count(static_cast<uint32_t>(slots_.size() - 1))) {
			free_.erase(static_cast<uint32_t>(slots_.size() - 1));
			slots_.pop_back();
		}
	}

	std::vector<std::unique_ptr<T>> slots_;
	std::set<uint32_t> free_; /* holes below slots_.size() */
};

} /* namespace ibemu::emu */
