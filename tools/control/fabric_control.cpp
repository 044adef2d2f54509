// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
#include "tools/control/fabric_control.h"

#include "fabric/port_counters.h"
#include "fabric/subnet.h"
#include "fabric/topology.h"

#include <boost/asio/steady_timer.hpp>

#include <cerrno>
#include <chrono>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <optional>
#include <sys/stat.h>
#include <sys/time.h>

namespace ibemu::tools {

namespace {

using Json = FabricControl::Json;

/* Which port an operation takes */
enum class PortArg {
	None, /* a whole node */
	Cable, /* a port that takes a cable: 1..N */
	CableOrAll, /* the same, or without "port" every one of them */
	Counters, /* a port with counters: 0 on a switch too */
};

struct OpSpec {
	const char *name;
	PortArg port;
	std::vector<const char *> keys; /* arguments besides op, node and port */
	bool node = true; /* takes a "node" */
};

const OpSpec kOps[] = {
	{ "link.down", PortArg::Cable, {} },
	{ "link.up", PortArg::Cable, {} },
	{ "link.flap", PortArg::Cable, { "count", "interval_ms" } },
	{ "link.degrade", PortArg::Cable, { "width", "speed" } },
	{ "link.connect", PortArg::Cable, { "peer", "peer_port" } },
	{ "node.silence", PortArg::None, {} },
	{ "node.restore", PortArg::None, {} },
	{ "node.remove", PortArg::None, {} },
	{ "node.add", PortArg::None, {} },
	{ "errors", PortArg::CableOrAll, { "drop", "corrupt", "seed" } },
	{ "counters.set", PortArg::Counters, { "counter", "value" } },
	{ "topology.add", PortArg::None, { "text", "file" }, false },
};

constexpr size_t kRecentEvents = 20;
constexpr uint64_t kEventLogMax = 64ull << 20;
constexpr unsigned kMaxFlaps = 100000;
constexpr unsigned kMaxIntervalMs = 3600 * 1000;

const OpSpec *findOp(const std::string &name)
{
	for (const auto &o : kOps)
		if (name == o.name)
			return &o;
	return nullptr;
}

/* "one of: link.down, ..." */
std::string opNames()
{
	std::string names = "one of:";
	for (const auto &o : kOps)
		names += std::string(" ") + o.name + (&o == &kOps[std::size(kOps) - 1] ? "" : ",");
	return names;
}

std::string guidString(uint64_t g)
{
	char buf[24];
	snprintf(buf, sizeof buf, "0x%016" PRIx64, g);
	return buf;
}

/* "Switch1"[3], as ibsim and the docs write a port */
std::string portName(const fabric::Port &p)
{
	return "\"" + p.node->desc + "\"[" + std::to_string(p.num) + "]";
}

std::string wallClock()
{
	timeval tv;
	gettimeofday(&tv, nullptr);
	tm t;
	gmtime_r(&tv.tv_sec, &t);
	char buf[64];
	size_t n = strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &t);
	snprintf(buf + n, sizeof buf - n, ".%03dZ", int(tv.tv_usec / 1000));
	return buf;
}

/* An integer of 0 or more (JSON text gives those unsigned, C++ literals signed) */
bool isCount(const Json &v)
{
	return v.is_number_unsigned() || (v.is_number_integer() && v.get<int64_t>() >= 0);
}

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

} /* namespace */

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
	std::string op() const { return spec->name; }
};

/* A link going down and up `count` times, `intervalMs` apart */
struct FabricControl::Flap {
	Flap(boost::asio::io_context &io) : timer(io) {}
	Action action;
	Json origin;
	Reply done;
	boost::asio::steady_timer timer;
	unsigned cycle = 0;
	bool down = false; /* the next step plugs the cable back */
};

FabricControl::FabricControl(boost::asio::io_context &io, fabric::Subnet &subnet, std::string eventLog)
	: io_(io), subnet_(subnet), eventLog_(std::move(eventLog))
{}

FabricControl::~FabricControl()
{
	stop();
}

std::vector<std::string> FabricControl::ops()
{
	std::vector<std::string> names;
	for (const auto &o : kOps)
		names.push_back(o.name);
	return names;
}

bool FabricControl::parse(const Json &req, Action &a, std::string &err, bool now) const
{
	if (!req.is_object()) {
		err = "a request is a JSON object with an \"op\"";
		return false;
	}
	if (!req.contains("op") || !req["op"].is_string()) {
		err = "the request has no \"op\" (" + opNames() + ")";
		return false;
	}
	std::string op = req["op"].get<std::string>();
	a.spec = findOp(op);
	if (!a.spec) {
		err = "unknown op \"" + op + "\" (" + opNames() + ")";
		return false;
	}
	const OpSpec &spec = *a.spec;
	for (const auto &[key, v] : req.items()) {
		bool known = key == "op" || key == "id" || (key == "node" && spec.node) ||
			(key == "port" && spec.port != PortArg::None);
		for (const char *k : spec.keys)
			known |= key == k;
		if (!known) {
			err = op + ": unknown argument \"" + key + "\"";
			return false;
		}
	}

	if (!spec.node)
		return parseFragment(req, a, err);
	if (!req.contains("node") || !req["node"].is_string()) {
		err = op + ": give the node (\"node\": a node GUID, NodeDescription or host name)";
		return false;
	}
	std::string what = req["node"].get<std::string>();
	bool ambiguous = false;
	a.node = subnet_.resolveNode(what, &ambiguous);
	if (!a.node) {
		err = ambiguous
			? "more than one node is \"" + what + "\": give its node GUID or topology id"
			: "no node \"" + what + "\" in the fabric (give a node GUID, NodeDescription or host name)";
		return false;
	}
	if (a.node->foreign) {
		/* a stand-in here: only its own daemon can change it */
		err = "\"" + a.node->desc + "\" is simulated by another host's daemon: change it there";
		return false;
	}
	const fabric::Node &n = *a.node;
	if (spec.port != PortArg::None && !(spec.port == PortArg::CableOrAll && !req.contains("port"))) {
		unsigned first = spec.port == PortArg::Counters ? n.firstPort() : 1;
		const Json *p = req.contains("port") ? &req["port"] : nullptr;
		if (!p || !isCount(*p) || p->get<uint64_t>() < first || p->get<uint64_t>() > n.numPorts) {
			err = "\"" + n.desc + "\" has ports " + std::to_string(first) + "-" +
				std::to_string(n.numPorts) +
				(p ? "; there is no port " + p->dump() : "; give one (\"port\")");
			return false;
		}
		a.port = &a.node->port(unsigned(p->get<uint64_t>()));
	}

	if (op == "link.connect") {
		std::string other = req.contains("peer") && req["peer"].is_string() ? req["peer"].get<std::string>()
										    : "";
		ambiguous = false;
		fabric::Node *peer = subnet_.resolveNode(other, &ambiguous);
		if (!peer) {
			err = other.empty() ? "link.connect: give the other end (\"peer\" and \"peer_port\")"
				: ambiguous
				? "more than one node is \"" + other + "\": give its node GUID or topology id"
				: "no node \"" + other + "\" in the fabric";
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
	}
	if (now && !fits(a, err))
		return false;

	if (op == "link.flap") {
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
	} else if (op == "link.degrade") {
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
	} else if (op == "errors") {
		if (!req.contains("drop") && !req.contains("corrupt")) {
			err = "errors: give a drop or corrupt rate (0 for none)";
			return false;
		}
		if (!rateArg(req, "drop", a.drop, err) || !rateArg(req, "corrupt", a.corrupt, err))
			return false;
		if (req.contains("seed") && !uintArg(req, "seed", 0, UINT64_MAX, a.seed, err))
			return false;
	} else if (op == "counters.set") {
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
	}
	return true;
}

/* What a request needs of the fabric as it stands now */
bool FabricControl::fits(const Action &a, std::string &err) const
{
	const fabric::Port *port = a.port;
	const fabric::Node &n = *a.node;
	const std::string op = a.op();
	if (op == "link.down" || op == "link.flap") {
		if (!port->peer) {
			err = portName(*port) + " has no cable" +
				(port->pulledPeer ? " (it was pulled: `ibemu link up` plugs it back)" : "");
			return false;
		}
	} else if (op == "link.up") {
		if (!port->pulledPeer) {
			err = portName(*port) +
				(port->peer ? " is cabled already" : " has no pulled cable to plug back");
			return false;
		}
		if (port->peer || port->pulledPeer->peer) {
			err = portName(*port) + ": an end of its pulled cable has been cabled elsewhere since";
			return false;
		}
	} else if (op == "link.connect") {
		for (const fabric::Port *p : { port, static_cast<const fabric::Port *>(a.peer) })
			if (p->peer) {
				err = portName(*p) + " is cabled already (to " + portName(*p->peer) + ")";
				return false;
			}
	} else if (op == "node.remove") {
		bool any = false;
		for (const auto &p : n.ports)
			any |= p.peer != nullptr;
		if (!any) {
			err = "\"" + n.desc + "\" has no cable to pull";
			return false;
		}
	} else if (op == "node.add") {
		bool any = false;
		for (const auto &p : n.ports)
			any |= p.pulledPeer && !p.peer && !p.pulledPeer->peer;
		if (!any) {
			err = "\"" + n.desc + "\" has no pulled cable to plug back";
			return false;
		}
	}
	return true;
}

/* topology.add: the fragment parsed; graftTopology() checks the rest
 * against the fabric when it runs, and changes nothing if it fails */
bool FabricControl::parseFragment(const Json &req, Action &a, std::string &err) const
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

std::string FabricControl::check(const Json &req, bool now) const
{
	Action a;
	std::string err;
	parse(req, a, err, now);
	return err;
}

void FabricControl::logRejected(const Json &origin, const Json &req, const std::string &err)
{
	Json e = origin;
	e["seq"] = ++seq_;
	e["time"] = wallClock();
	for (const auto &[k, v] : req.items())
		e[k] = v;
	e["error"] = err;
	append(e);
}

/* Carries out a parsed action; what it did, for the reply and the log */
Json FabricControl::apply(const Action &a)
{
	Json r;
	r["node"] = a.node->desc;
	r["guid"] = guidString(a.node->nodeGuid);
	if (a.port)
		r["port"] = a.port->num;
	const std::string op = a.op();
	fabric::Port *p = a.port;
	if (op == "link.down") {
		fabric::Port *q = p->peer;
		subnet_.pullCable(*p);
		r["peer"] = portName(*q);
	} else if (op == "link.up") {
		fabric::Port *q = p->pulledPeer;
		subnet_.plugCable(*p);
		r["peer"] = portName(*q);
	} else if (op == "link.degrade") {
		subnet_.degradeLink(*p, a.width, a.speed);
		r["width"] = a.width ? std::to_string(fabric::widthLanes(a.width)) + "x" : "any";
		r["speed"] = a.speed ? fabric::speedName(*a.speed) : "any";
	} else if (op == "node.silence" || op == "node.restore") {
		subnet_.setSilent(*a.node, op == "node.silence");
	} else if (op == "node.remove") {
		Json pulled = Json::array();
		for (auto &port : a.node->ports)
			if (port.peer) {
				pulled.push_back(portName(*port.peer));
				subnet_.pullCable(port);
			}
		r["cables"] = pulled;
	} else if (op == "node.add") {
		Json plugged = Json::array();
		for (auto &port : a.node->ports)
			if (port.pulledPeer && !port.peer && !port.pulledPeer->peer) {
				plugged.push_back(portName(*port.pulledPeer));
				subnet_.plugCable(port);
			}
		r["cables"] = plugged;
	} else if (op == "link.connect") {
		/* the new cable replaces any memory of pulled ones at both ends */
		for (fabric::Port *x : { p, a.peer }) {
			if (x->pulledPeer && x->pulledPeer->pulledPeer == x)
				x->pulledPeer->pulledPeer = nullptr;
			x->pulledPeer = nullptr;
		}
		subnet_.connect(*p, *a.peer);
		r["peer"] = portName(*a.peer);
	} else if (op == "errors") {
		/* every port: each its own generator (seed + port number), so
		 * their losses do not fall in step */
		for (unsigned num = 1; num <= a.node->numPorts; num++)
			if (!p || p->num == num)
				subnet_.setLinkErrors(a.node->port(num), a.drop, a.corrupt, p ? a.seed : a.seed + num);
		r["drop"] = a.drop;
		r["corrupt"] = a.corrupt;
		r["seed"] = a.seed;
	} else if (op == "counters.set") {
		fabric::setPortCounter(p->counters, a.counter, a.value);
		r["counter"] = a.counter;
		r["value"] = a.value;
	}
	return r;
}

void FabricControl::log(const Json &origin, const Action &a, const Json &result)
{
	Json e = origin;
	e["seq"] = ++seq_;
	e["time"] = wallClock();
	e["op"] = a.op();
	for (const auto &[k, v] : result.items())
		e[k] = v;
	append(e);
}

void FabricControl::append(const Json &e)
{
	recent_.push_back(e);
	if (recent_.size() > kRecentEvents)
		recent_.pop_front();
	/* a scenario firing every millisecond for days fills no disk: the
	 * log moves to events.jsonl.1 past kEventLogMax */
	struct stat st;
	if (stat(eventLog_.c_str(), &st) == 0 && uint64_t(st.st_size) > kEventLogMax)
		rename(eventLog_.c_str(), (eventLog_ + ".1").c_str());
	std::ofstream out(eventLog_, std::ios::app);
	out << e.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
}

void FabricControl::run(const Json &req, const Json &origin, Reply done)
{
	Action a;
	std::string err;
	if (!parse(req, a, err)) {
		done({ { "ok", false }, { "error", err } });
		return;
	}
	if (a.op() == "topology.add") {
		fabric::TopologyError terr;
		if (fabric::graftTopology(*a.fragment, subnet_, terr) != 0) {
			done({ { "ok", false }, { "error", terr.str() } });
			return;
		}
		Json nodes = Json::array();
		for (const auto &n : a.fragment->nodes)
			nodes.push_back(subnet_.findNode(n.id)->desc);
		log(origin, a, { { "nodes", nodes } });
		done({ { "ok", true }, { "nodes", nodes } });
		return;
	}
	if (a.op() == "link.flap") {
		auto f = std::make_shared<Flap>(io_);
		f->action = a;
		f->origin = origin;
		f->done = std::move(done);
		flaps_.push_back(f);
		flapStep(f);
		return;
	}
	Json r = apply(a);
	log(origin, a, r);
	Json reply = { { "ok", true } };
	for (const auto &[k, v] : r.items())
		reply[k] = v;
	done(reply);
}

/* One edge of a flapping link: down (pulled), or up again; the reply
 * when the last cycle is up */
void FabricControl::flapStep(const std::shared_ptr<Flap> &f)
{
	auto finish = [this, f](Json reply) {
		std::erase(flaps_, f);
		if (f->done)
			f->done(std::move(reply));
		f->done = nullptr;
	};
	Action step = f->action;
	step.spec = findOp(f->down ? "link.up" : "link.down");
	std::string why;
	if (!fits(step, why)) { /* someone else changed the cable in between */
		finish({ { "ok", false }, { "error", "the flapping stopped: " + why } });
		return;
	}
	Json r = apply(step);
	Json origin = f->origin;
	origin["flap"] = f->cycle + 1;
	log(origin, step, r);
	f->down = !f->down;
	if (!f->down && ++f->cycle == f->action.count) {
		finish({ { "ok", true }, { "node", r["node"] }, { "port", r["port"] }, { "flaps", f->cycle } });
		return;
	}
	f->timer.expires_after(std::chrono::milliseconds(f->action.intervalMs));
	f->timer.async_wait([this, f](const boost::system::error_code &ec) {
		if (!ec && f->done) /* stop() clears done: this may be gone then */
			flapStep(f);
	});
}

void FabricControl::stop(const std::string &why)
{
	auto flaps = std::move(flaps_);
	flaps_.clear();
	for (auto &f : flaps) {
		f->timer.cancel();
		if (f->done)
			f->done({ { "ok", false }, { "error", "stopped: " + why } });
		f->done = nullptr;
	}
}

Json FabricControl::state() const
{
	Json pulled = Json::array(), silent = Json::array(), lossy = Json::array(), degraded = Json::array();
	for (const auto &n : subnet_.nodes()) {
		if (n->silent)
			silent.push_back(n->desc);
		for (const auto &p : n->ports) {
			/* each pulled cable once, from the end met first */
			if (p.pulledPeer &&
			    (p.pulledPeer->node->index > n->index ||
			     (p.pulledPeer->node == n.get() && p.pulledPeer->num > p.num)))
				pulled.push_back({ { "port", portName(p) }, { "peer", portName(*p.pulledPeer) } });
			if (p.errors)
				lossy.push_back({ { "port", portName(p) },
						  { "drop", p.errors->dropRate },
						  { "corrupt", p.errors->corruptRate },
						  { "seed", p.errors->seed },
						  { "dropped", p.errors->dropped },
						  { "corrupted", p.errors->corrupted } });
			if (p.degradedWidth || p.degradedSpeed)
				degraded.push_back(
					{ { "port", portName(p) },
					  { "width",
					    p.degradedWidth ? std::to_string(fabric::widthLanes(p.degradedWidth)) + "x"
							    : "any" },
					  { "speed", p.degradedSpeed ? fabric::speedName(*p.degradedSpeed) : "any" } });
		}
	}
	Json events = Json::array();
	for (const auto &e : recent_)
		events.push_back(e);
	return { { "pulled_cables", pulled },    { "silent_nodes", silent },    { "lossy_ports", lossy },
		 { "degraded_links", degraded }, { "flapping", flaps_.size() }, { "events_file", eventLog_ },
		 { "recent_events", events } };
}

} /* namespace ibemu::tools */
