// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// The operations on a running fabric, one table (fabric_ops.cpp): for
// each op its arguments, what it needs of the fabric as it stands, and
// what it does. FabricControl (fabric_control.h) finds a request's entry
// once, by name, and follows it: it checks the request whole, then
// carries it out and logs it.
#pragma once

#include "tools/control/fabric_control.h"

#include "fabric/types.h"

#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace ibemu::fabric {
struct Node;
struct Port;
struct Topology;
}

namespace ibemu::tools {

/* Which port an operation takes */
enum class PortArg {
	None, /* a whole node */
	Cable, /* a port that takes a cable: 1..N */
	CableOrAll, /* the same, or without "port" every one of them */
	Counters, /* a port with counters: 0 on a switch too */
};

struct OpSpec;

/* A request checked and resolved: what its op carries out */
struct FabricControl::Action {
	const OpSpec *spec = nullptr;
	fabric::Node *node = nullptr;
	fabric::Port *port = nullptr; /* null: every port (errors) */
	fabric::Port *peer = nullptr; /* link.connect: the other end */
	std::shared_ptr<fabric::Topology> fragment; /* topology.add */
	double drop = 0;
	double corrupt = 0;
	uint64_t seed = 0;
	uint8_t width = 0;
	std::optional<fabric::Speed> speed;
	std::string counter;
	uint64_t value = 0;
	unsigned count = 1;
	unsigned intervalMs = 500;
	std::string op() const;
};

/* An operation: what it takes and what it does, each step a function of
 * its own (none where there is nothing to do). run() finds the entry once,
 * by name, and everything after follows from it. */
struct OpSpec {
	using Json = FabricControl::Json;
	using Action = FabricControl::Action;

	const char *name;
	PortArg port;
	std::vector<const char *> keys; /* arguments besides op, node and port */
	bool node = true; /* takes a "node" */
	/* its own arguments, after node and port */
	bool (*args)(fabric::Subnet &s, const Json &req, Action &a, std::string &err) = nullptr;
	/* what it needs of the fabric as it stands now */
	bool (*fits)(const Action &a, std::string &err) = nullptr;
	/* carries it out: what it did, for the reply and the event log */
	bool (*apply)(fabric::Subnet &s, const Action &a, Json &done, std::string &err) = nullptr;
	bool repeats = false; /* link.flap: applies link.down and link.up in turn, over time */
};

/* The op named so, or null */
const OpSpec *findOp(const std::string &name);
/* "one of: link.down, ..." */
std::string opNames();
std::span<const OpSpec> allOps();

/* "Switch1"[3], as ibsim and the docs write a port */
std::string portName(const fabric::Port &p);
/* An integer of 0 or more (JSON text gives those unsigned, C++ literals signed) */
bool isCount(const FabricControl::Json &v);

} /* namespace ibemu::tools */
