// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
#include "tools/control/fabric_ops.h"

#include "fabric/port_counters.h"
#include "fabric/subnet.h"
#include "fabric/topology.h"

#include <cerrno>
#include <cstdlib>

namespace ibemu::tools {

namespace {

using Json = FabricControl::Json;
using Action = FabricControl::Action;

constexpr unsigned kMaxFlaps = 100000;
constexpr unsigned kMaxIntervalMs = 3600 * 1000;

bool uintArg(const Json &req, const char *key, uint64_t min, uint64_t max, uint64_t &out, std::string &err)
{
	const Json &v = req.at(key);
	if (!isCount(v) || v.get<uint64_t>() < min || v.get<uint64_t>() > max) {
		err = std::string(key) + " must be an integer in [" + std::to_string(min) + ", " + std::to_string(max) +
			"]";
		return false;
	}
	out = v.get<uint64_t>();
	return true;
}

bool rateArg(const Json &req, const char *key, double &out, std::string &err)
{
	if (!req.contains(key))
		return true;
	const Json &v = req.at(key);
	if (!v.is_number() || !(v.get<double>() >= 0 && v.get<double>() <= 1)) {
		err = std::string(key) + " must be a probability in [0, 1], like 0.1 for 10%";
		return false;
	}
	out = v.get<double>();
	return true;
}


/* link.down, link.flap */
bool cabled(const Action &a, std::string &err)
{
	if (a.port->peer)
		return true;
	err = portName(*a.port) + " has no cable" +
		(a.port->pulledPeer ? " (it was pulled: `ibemu link up` plugs it back)" : "");
	return false;
}

bool pull(fabric::Subnet &s, const Action &a, Json &done, std::string &)
{
	fabric::Port *q = a.port->peer;
	s.pullCable(*a.port);
	done["peer"] = portName(*q);
	return true;
}

bool plugFits(const Action &a, std::string &err)
{
	const fabric::Port &p = *a.port;
	if (!p.pulledPeer) {
		err = portName(p) + (p.peer ? " is cabled already" : " has no pulled cable to plug back");
		return false;
	}
	if (p.peer || p.pulledPeer->peer) {
		err = portName(p) + ": an end of its pulled cable has been cabled elsewhere since";
		return false;
	}
	return true;
}

bool plug(fabric::Subnet &s, const Action &a, Json &done, std::string &)
{
	fabric::Port *q = a.port->pulledPeer;
	s.plugCable(*a.port);
	done["peer"] = portName(*q);
	return true;
}

bool flapArgs(fabric::Subnet &, const Json &req, Action &a, std::string &err)
{
	uint64_t v;
	if (req.contains("count")) {
		if (!uintArg(req, "count", 1, kMaxFlaps, v, err))
			return false;
		a.count = unsigned(v);
	}
	if (req.contains("interval_ms")) {
		if (!uintArg(req, "interval_ms", 1, kMaxIntervalMs, v, err))
			return false;
		a.intervalMs = unsigned(v);
	}
	return true;
}

bool degradeArgs(fabric::Subnet &, const Json &req, Action &a, std::string &err)
{
	if (req.contains("width") && !req["width"].is_null()) {
		const Json &w = req["width"];
		std::string s = w.is_string() ? w.get<std::string>() : "";
		unsigned lanes = 0;
		if (!s.empty() && (s.back() == 'x' || s.back() == 'X'))
			lanes = unsigned(atoi(s.c_str()));
		auto bit = fabric::widthFromLanes(lanes);
		if (!bit || std::to_string(lanes) + s.back() != s) {
			err = "width must be 1x, 2x, 4x, 8x or 12x";
			return false;
		}
		a.width = *bit;
	}
	if (req.contains("speed") && !req["speed"].is_null()) {
		const Json &s = req["speed"];
		a.speed = s.is_string() ? fabric::parseSpeed(s.get<std::string>()) : std::nullopt;
		if (!a.speed) {
			err = "speed must be SDR, DDR, QDR, FDR10, FDR, EDR, HDR or NDR";
			return false;
		}
	}
	return true;
}

bool degrade(fabric::Subnet &s, const Action &a, Json &done, std::string &)
{
	s.degradeLink(*a.port, a.width, a.speed);
	done["width"] = a.width ? std::to_string(fabric::widthLanes(a.width)) + "x" : "any";
	done["speed"] = a.speed ? fabric::speedName(*a.speed) : "any";
	return true;
}

bool connectArgs(fabric::Subnet &s, const Json &req, Action &a, std::string &err)
{
	std::string other = req.contains("peer") && req["peer"].is_string() ? req["peer"].get<std::string>() : "";
	bool ambiguous = false;
	fabric::Node *peer = s.resolveNode(other, &ambiguous);
	if (!peer) {
		err = other.empty() ? "link.connect: give the other end (\"peer\" and \"peer_port\")"
			: ambiguous ? "more than one node is \"" + other + "\": give its node GUID or topology id"
				    : s.noSuchNode(other);
		return false;
	}
	uint64_t v;
	if (!req.contains("peer_port") || !uintArg(req, "peer_port", 1, peer->numPorts, v, err)) {
		if (err.empty())
			err = "link.connect: give the other end's port (\"peer_port\")";
		return false;
	}
	a.peer = &peer->port(unsigned(v));
	if (peer->foreign) {
		err = "link.connect: \"" + peer->desc + "\" is simulated by another host's daemon";
		return false;
	}
	if (a.peer == a.port) {
		err = "link.connect: a cable needs two ports";
		return false;
	}
	return true;
}

bool connectFits(const Action &a, std::string &err)
{
	for (const fabric::Port *p : { a.port, a.peer })
		if (p->peer) {
			err = portName(*p) + " is cabled already (to " + portName(*p->peer) + ")";
			return false;
		}
	return true;
}

bool connect(fabric::Subnet &s, const Action &a, Json &done, std::string &)
{
	/* the new cable replaces any memory of pulled ones at both ends */
	for (fabric::Port *x : { a.port, a.peer }) {
		if (x->pulledPeer && x->pulledPeer->pulledPeer == x)
			x->pulledPeer->pulledPeer = nullptr;
		x->pulledPeer = nullptr;
	}
	s.connect(*a.port, *a.peer);
	done["peer"] = portName(*a.peer);
	return true;
}

bool silence(fabric::Subnet &s, const Action &a, Json &, std::string &)
{
	s.setSilent(*a.node, true);
	return true;
}

bool restore(fabric::Subnet &s, const Action &a, Json &, std::string &)
{
	s.setSilent(*a.node, false);
	return true;
}

bool removeFits(const Action &a, std::string &err)
{
	for (const auto &p : a.node->ports)
		if (p.peer)
			return true;
	err = "\"" + a.node->desc + "\" has no cable to pull";
	return false;
}

bool removeNode(fabric::Subnet &s, const Action &a, Json &done, std::string &)
{
	Json pulled = Json::array();
	for (auto &port : a.node->ports)
		if (port.peer) {
			pulled.push_back(portName(*port.peer));
			s.pullCable(port);
		}
	done["cables"] = pulled;
	return true;
}

/* node.add: a port whose pulled cable can go back */
bool pluggable(const fabric::Port &p)
{
	return p.pulledPeer && !p.peer && !p.pulledPeer->peer;
}

bool addFits(const Action &a, std::string &err)
{
	for (const auto &p : a.node->ports)
		if (pluggable(p))
			return true;
	err = "\"" + a.node->desc + "\" has no pulled cable to plug back";
	return false;
}

bool addNode(fabric::Subnet &s, const Action &a, Json &done, std::string &)
{
	Json plugged = Json::array();
	for (auto &port : a.node->ports)
		if (pluggable(port)) {
			plugged.push_back(portName(*port.pulledPeer));
			s.plugCable(port);
		}
	done["cables"] = plugged;
	return true;
}

bool errorsArgs(fabric::Subnet &, const Json &req, Action &a, std::string &err)
{
	if (!req.contains("drop") && !req.contains("corrupt")) {
		err = "errors: give a drop or corrupt rate (0 for none)";
		return false;
	}
	if (!rateArg(req, "drop", a.drop, err) || !rateArg(req, "corrupt", a.corrupt, err))
		return false;
	return !req.contains("seed") || uintArg(req, "seed", 0, UINT64_MAX, a.seed, err);
}

bool setErrors(fabric::Subnet &s, const Action &a, Json &done, std::string &)
{
	/* every port: each its own generator (seed + port number), so
	 * their losses do not fall in step */
	const fabric::Port *p = a.port;
	for (unsigned num = 1; num <= a.node->numPorts; num++)
		if (!p || p->num == num)
			s.setLinkErrors(a.node->port(num), a.drop, a.corrupt, p ? a.seed : a.seed + num);
	done["drop"] = a.drop;
	done["corrupt"] = a.corrupt;
	done["seed"] = a.seed;
	return true;
}

bool countersArgs(fabric::Subnet &, const Json &req, Action &a, std::string &err)
{
	if (!req.contains("counter") || !req["counter"].is_string()) {
		err = "counters.set: give the counter (\"counter\": a name perfquery prints)";
		return false;
	}
	a.counter = req["counter"].get<std::string>();
	if (!req.contains("value") || !uintArg(req, "value", 0, UINT64_MAX, a.value, err)) {
		if (err.empty())
			err = "counters.set: give the value";
		return false;
	}
	fabric::PortCounters scratch;
	int rc = fabric::setPortCounter(scratch, a.counter, a.value);
	if (rc == -ENOENT) {
		err = "no counter \"" + a.counter + "\" (one of:";
		for (auto name : fabric::portCounterNames())
			err += " " + std::string(name);
		err += ", or all)";
		return false;
	}
	if (rc == -ERANGE) {
		err = std::to_string(a.value) + " does not fit in " + a.counter;
		return false;
	}
	return true;
}

bool setCounter(fabric::Subnet &, const Action &a, Json &done, std::string &)
{
	fabric::setPortCounter(a.port->counters, a.counter, a.value);
	done["counter"] = a.counter;
	done["value"] = a.value;
	return true;
}

/* topology.add: the fragment parsed; graftTopology() checks the rest
 * against the fabric when it runs, and changes nothing if it fails */
bool fragmentArgs(fabric::Subnet &, const Json &req, Action &a, std::string &err)
{
	if (!req.contains("text") || !req["text"].is_string()) {
		err = "topology.add: give the fragment (\"text\", in the topology file format)";
		return false;
	}
	std::string file = req.contains("file") && req["file"].is_string() ? req["file"].get<std::string>()
									   : "fragment";
	a.fragment = std::make_shared<fabric::Topology>();
	fabric::TopologyError terr;
	/* no includes: the daemon reads no file a client names */
	if (fabric::parseTopology(req["text"].get<std::string>(), file, *a.fragment, terr, false) != 0) {
		err = terr.str();
		return false;
	}
	if (a.fragment->nodes.empty()) {
		err = file + ": no node in the fragment";
		return false;
	}
	if (!a.fragment->commands.empty()) {
		const auto &c = a.fragment->commands[0];
		err = a.fragment->files[c.file] + ":" + std::to_string(c.line) +
			": `do` lines are not run in a fragment (ibemu ibsim runs them)";
		return false;
	}
	if (!a.fragment->hosts.empty()) {
		/* in a split subnet the new nodes are this daemon's own */
		const auto &h = a.fragment->hosts[0];
		err = a.fragment->files[h.file] + ":" + std::to_string(h.line) +
			": host= lines are not for a fragment: its nodes belong to the daemon that adds them";
		return false;
	}
	return true;
}

bool graft(fabric::Subnet &s, const Action &a, Json &done, std::string &err)
{
	fabric::TopologyError terr;
	if (fabric::graftTopology(*a.fragment, s, terr) != 0) {
		err = terr.str();
		return false;
	}
	Json nodes = Json::array();
	for (const auto &n : a.fragment->nodes)
		nodes.push_back(s.findNode(n.id)->desc);
	done["nodes"] = nodes;
	return true;
}

const OpSpec kOps[] = {
	{ "link.down", PortArg::Cable, {}, true, nullptr, cabled, pull },
	{ "link.up", PortArg::Cable, {}, true, nullptr, plugFits, plug },
	{ "link.flap", PortArg::Cable, { "count", "interval_ms" }, true, flapArgs, cabled, nullptr, true },
	{ "link.degrade", PortArg::Cable, { "width", "speed" }, true, degradeArgs, nullptr, degrade },
	{ "link.connect", PortArg::Cable, { "peer", "peer_port" }, true, connectArgs, connectFits, connect },
	{ "node.silence", PortArg::None, {}, true, nullptr, nullptr, silence },
	{ "node.restore", PortArg::None, {}, true, nullptr, nullptr, restore },
	{ "node.remove", PortArg::None, {}, true, nullptr, removeFits, removeNode },
	{ "node.add", PortArg::None, {}, true, nullptr, addFits, addNode },
	{ "errors", PortArg::CableOrAll, { "drop", "corrupt", "seed" }, true, errorsArgs, nullptr, setErrors },
	{ "counters.set", PortArg::Counters, { "counter", "value" }, true, countersArgs, nullptr, setCounter },
	{ "topology.add", PortArg::None, { "text", "file" }, false, fragmentArgs, nullptr, graft },
};

} /* namespace */

const OpSpec *findOp(const std::string &name)
{
	for (const auto &o : kOps)
		if (name == o.name)
			return &o;
	return nullptr;
}

std::string opNames()
{
	std::string names = "one of:";
	for (const auto &o : kOps)
		names += std::string(" ") + o.name + (&o == &kOps[std::size(kOps) - 1] ? "" : ",");
	return names;
}


std::span<const OpSpec> allOps()
{
	return kOps;
}

/* "Switch1"[3], as ibsim and the docs write a port */
std::string portName(const fabric::Port &p)
{
	return "\"" + p.node->desc + "\"[" + std::to_string(p.num) + "]";
}

/* An integer of 0 or more (JSON text gives those unsigned, C++ literals signed) */
bool isCount(const Json &v)
{
	return v.is_number_unsigned() || (v.is_number_integer() && v.get<int64_t>() >= 0);
}

std::string FabricControl::Action::op() const
{
	return spec->name;
}

} /* namespace ibemu::tools */
