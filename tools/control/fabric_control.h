// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// Live changes to a running fabric, by name: what the control socket,
// scenarios and ibsim scripts ask the daemon for. docs/faults.md is the
// reference for every operation and its arguments.
//
// A request is a JSON object {"op": NAME, ARGUMENTS...}. It is checked
// whole (the node exists, the port has a cable, a rate is in [0,1], no
// unknown argument) before anything changes, so a bad request leaves the
// fabric as it was. Every operation carried out is written to the event
// log, RUNDIR/events.jsonl, one JSON object per line.
// The operations themselves are one table, in fabric_ops.h.
//
// Runs on the daemon's io_context thread, like the Subnet it changes.
#pragma once

#include <boost/asio/io_context.hpp>
#include <nlohmann/json.hpp>

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace ibemu::fabric {
class Subnet;
}

namespace ibemu::tools {

class FabricControl {
public:
	using Json = nlohmann::ordered_json;
	/* Gets {"ok": true, ...} or {"ok": false, "error": "..."} */
	using Reply = std::function<void(Json response)>;

	FabricControl(boost::asio::io_context &io, fabric::Subnet &subnet, std::string eventLog);
	~FabricControl();
	FabricControl(const FabricControl &) = delete;
	FabricControl &operator=(const FabricControl &) = delete;

	/* What is wrong with a request, or "" when run() would carry it out.
	 * With `now`, also against the fabric as it stands (the port has a
	 * cable to pull, ...); without, only what never changes (the node
	 * and port exist, the arguments make sense): scenarios check their
	 * events so before any has run. Changes nothing. */
	std::string check(const Json &req, bool now = true) const;
	/* Logs a request that a scenario could not carry out, with why. */
	void logRejected(const Json &origin, const Json &req, const std::string &err);
	/* Ends a request still running early (its client went away). */
	using Cancel = std::function<void()>;

	/* Carries out a request. `origin` (who asked: {"source": "cli"}, or a
	 * scenario's file, line and time) goes into the event log with it.
	 * `done` is called once, at once or, for link.flap, when the flapping
	 * ends. For a request still running (link.flap) returns what ends it
	 * early: a cable the flap holds pulled is plugged back, and `done`
	 * says so; else an empty function. */
	Cancel run(const Json &req, const Json &origin, Reply done);
	/* What is faulty now (pulled cables, silent nodes, lossy and degraded
	 * links) and the last events, for `ibemu status`. */
	Json state() const;
	/* Cancels what is still to come (flapping links); their replies say
	 * so, and why. */
	void stop(const std::string &why = "the daemon is shutting down");

	/* The names of the operations, for messages and help. */
	static std::vector<std::string> ops();

	/* A request checked: its entry in the table of operations and what
	 * it names (fabric_control.cpp) */
	struct Action;

private:
	struct Flap;

	bool parse(const Json &req, Action &a, std::string &err, bool now = true) const;
	bool apply(const Action &a, Json &done, std::string &err);
	void flapStep(const std::shared_ptr<Flap> &f);
	void cancelFlap(const std::shared_ptr<Flap> &f, const std::string &why);
	void log(const Json &origin, const Action &a, const Json &result);
	void append(const Json &event);

	boost::asio::io_context &io_;
	fabric::Subnet &subnet_;
	std::string eventLog_;
	int logFd_ = -1; /* the event log, opened once (append() reopens it after a rotation) */
	uint64_t logSize_ = 0;
	uint64_t seq_ = 0;
	std::deque<Json> recent_; /* the last events, newest last */
	std::vector<std::shared_ptr<Flap>> flaps_;
};

} /* namespace ibemu::tools */
