// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// Scenario files: timed and conditional fault events, in TOML, played by
// the daemon (`ibemu up --scenario FILE`, `ibemu scenario run`).
//
//   seed = 42                       # every random choice comes from it
//   [[event]]
//   at = "5s"                       # after the start (or the condition)
//   after = "sm-master"             # optional: once an SM runs the subnet
//   every = "500ms"                 # optional: again and again (10ms at least) ...
//   count = 10                      # ... this many times (default: for ever)
//   probability = 0.3               # optional: each time, with this chance
//   op = "link.flap"                # a FabricControl operation ...
//   node = "Switch1"                # ... and its arguments
//   port = 3
//
// docs/faults.md is the reference. Each event draws from a generator of
// its own, seeded from the seed and the event's place in the file, so the
// same file and seed make the same choices however the events interleave.
#pragma once

#include "tools/control/fabric_control.h"

#include <boost/asio/steady_timer.hpp>
#include <nlohmann/json.hpp>

#include <cstdint>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <string_view>
#include <vector>

namespace ibemu::fabric {
class Subnet;
}

namespace ibemu::tools {

/* The shortest `every`: a shorter one is refused with its file and line */
constexpr uint64_t kMinEveryMs = 10;

struct ScenarioEvent {
	uint32_t line = 0; /* in the file, for messages and the event log */
	bool afterSmMaster = false;
	uint64_t atMs = 0;
	uint64_t everyMs = 0; /* 0: once */
	uint64_t count = 1; /* ticks; 0 with every: until the scenario stops */
	double probability = 1;
	nlohmann::ordered_json request; /* {"op": ..., arguments} */
};

struct Scenario {
	std::string file; /* as given, for messages and the log */
	uint64_t seed = 0;
	std::vector<ScenarioEvent> events;
};

/* Parses a scenario and checks each event's request (control.check(...,
 * false)). false with "file:line: what is wrong" in err. */
bool parseScenario(std::string_view text, const std::string &file, const FabricControl &control, Scenario &out,
		   std::string &err);

/* "5s", "250ms", "1.5s", "2m" in milliseconds; false when not a duration. */
bool parseDuration(std::string_view s, uint64_t &ms);

/* One scenario being played. Lives on the daemon's io_context thread. */
class ScenarioRun {
public:
	ScenarioRun(boost::asio::io_context &io, FabricControl &control, const fabric::Subnet &subnet,
		    Scenario scenario);
	~ScenarioRun();
	ScenarioRun(const ScenarioRun &) = delete;
	ScenarioRun &operator=(const ScenarioRun &) = delete;

	/* Starts the clock; `ended` is called once every event has fired. */
	void start(std::function<void()> ended);
	void stop();
	bool running() const { return running_; }
	nlohmann::ordered_json state() const;

private:
	struct Tick {
		uint64_t dueMs; /* since the start */
		size_t event;
		uint64_t n; /* which repetition */
		uint64_t anchorMs; /* when its clock started: 0, or when the condition held */
		bool operator>(const Tick &o) const
		{
			return std::tie(dueMs, event, n) > std::tie(o.dueMs, o.event, o.n);
		}
	};

	/* Ticks fired in one turn of the io thread at most: more due go on in
	 * the next turn, after what else is waiting */
	static constexpr unsigned kTicksPerTurn = 32;
	/* A repeated event this late (and a period late) skips the ticks it
	 * missed, as a timer that overran: the latest fires, the next is due
	 * a period after it */
	static constexpr uint64_t kLateMs = 1000;

	uint64_t nowMs() const;
	void schedule();
	void fire(Tick t, uint64_t now);
	void pollConditions();
	void checkEnd();

	FabricControl &control_;
	const fabric::Subnet &subnet_;
	Scenario sc_;
	std::vector<std::mt19937_64> rngs_; /* one per event */
	std::vector<Tick> queue_; /* a min-heap on dueMs */
	std::vector<size_t> waiting_; /* events whose condition does not hold yet */
	boost::asio::steady_timer timer_;
	boost::asio::steady_timer poll_;
	std::chrono::steady_clock::time_point start_;
	std::function<void()> ended_;
	uint64_t fired_ = 0;
	uint64_t skipped_ = 0; /* ticks missed by a late timer */
	bool running_ = false;
	/* false once destroyed: a timer's completion already queued when the
	 * run goes must not touch it */
	std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
};

} /* namespace ibemu::tools */
