// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
#include "emu/work_queue.h"

#include <boost/asio/post.hpp>

#include <iterator>
#include <utility>

namespace ibemu::emu {

namespace {
thread_local RequestWork *current = nullptr;
}

void queueWork(boost::asio::io_context &io, std::function<void()> fn)
{
	if (current)
		current->work_.push_back(std::move(fn));
	else
		boost::asio::post(io, std::move(fn));
}

RequestWork::RequestWork() : outer_(current)
{
	current = this;
}

RequestWork::RequestWork(boost::asio::io_context &io) : RequestWork()
{
	postTo_ = &io;
}

RequestWork::~RequestWork()
{
	postRest();
	current = outer_;
}

void RequestWork::run()
{
	while (!work_.empty())
		runQueued();
}

void RequestWork::runQueued()
{
	for (size_t n = work_.size(); n && !work_.empty(); n--) {
		auto fn = std::move(work_.front());
		work_.pop_front();
		fn();
	}
}

void RequestWork::postRest()
{
	if (!postTo_)
		return run();
	while (!work_.empty()) {
		boost::asio::post(*postTo_, std::move(work_.front()));
		work_.pop_front();
	}
}

RequestWork::Work RequestWork::takeRest()
{
	return std::exchange(work_, {});
}

void RequestWork::resume(Work &&left)
{
	work_.insert(work_.begin(), std::make_move_iterator(left.begin()), std::make_move_iterator(left.end()));
	left.clear();
}

} /* namespace ibemu::emu */
