// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
#include "tools/control/fabric_control.h"
#include "tools/control/fabric_ops.h"
#include "tools/control/json_text.h"

#include "fabric/subnet.h"

#include <boost/asio/steady_timer.hpp>

#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <ctime>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

namespace ibemu::tools {

namespace {

using Json = FabricControl::Json;

constexpr size_t kRecentEvents = 20;
constexpr uint64_t kEventLogMax = 64ull << 20;

std::string guidString(uint64_t g)
{
	char buf[24];
	snprintf(buf, sizeof buf, "0x%016" PRIx64, g);
	return buf;
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

} /* namespace */

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
	if (logFd_ >= 0)
		::close(logFd_);
}

std::vector<std::string> FabricControl::ops()
{
	std::vector<std::string> names;
	for (const auto &o : allOps())
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
		return spec.args(subnet_, req, a, err);
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
			: subnet_.noSuchNode(what) + " (give a node GUID, NodeDescription or host name)";
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
				(p ? "; there is no port " + jsonText(*p) : "; give one (\"port\")");
			return false;
		}
		a.port = &a.node->port(unsigned(p->get<uint64_t>()));
	}

	if (spec.args && !spec.args(subnet_, req, a, err))
		return false;
	return !now || !spec.fits || spec.fits(a, err);
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

/* Carries out a parsed action: what it did, for the reply and the log */
bool FabricControl::apply(const Action &a, Json &done, std::string &err)
{
	if (a.node) {
		done["node"] = a.node->desc;
		done["guid"] = guidString(a.node->nodeGuid);
	}
	if (a.port)
		done["port"] = a.port->num;
	return a.spec->apply(subnet_, a, done, err);
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
	/* opened once, not per event: a scenario firing every few
	 * milliseconds for days costs a write() per event and fills no
	 * disk: the log moves to events.jsonl.1 past kEventLogMax */
	if (logFd_ >= 0 && logSize_ > kEventLogMax) {
		rename(eventLog_.c_str(), (eventLog_ + ".1").c_str());
		::close(logFd_);
		logFd_ = -1;
	}
	if (logFd_ < 0) {
		logFd_ = open(eventLog_.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0666);
		struct stat st;
		logSize_ = logFd_ >= 0 && fstat(logFd_, &st) == 0 ? uint64_t(st.st_size) : 0;
		if (logFd_ < 0)
			return;
	}
	std::string line = jsonText(e) + "\n";
	/* one write() per line, whole (O_APPEND): a reader never sees half */
	ssize_t n = write(logFd_, line.data(), line.size());
	if (n > 0)
		logSize_ += uint64_t(n);
}

FabricControl::Cancel FabricControl::run(const Json &req, const Json &origin, Reply done)
{
	Action a;
	std::string err;
	if (!parse(req, a, err)) {
		done({ { "ok", false }, { "error", err } });
		return {};
	}
	if (a.spec->repeats) {
		auto f = std::make_shared<Flap>(io_);
		f->action = a;
		f->origin = origin;
		f->done = std::move(done);
		flaps_.push_back(f);
		flapStep(f);
		if (!f->done)
			return {};
		return [this, w = std::weak_ptr<Flap>(f)] {
			if (auto flap = w.lock())
				cancelFlap(flap, "its client went away");
		};
	}
	Json r;
	if (!apply(a, r, err)) {
		done({ { "ok", false }, { "error", err } });
		return {};
	}
	log(origin, a, r);
	Json reply = { { "ok", true } };
	for (const auto &[k, v] : r.items())
		reply[k] = v;
	done(reply);
	return {};
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
	Json r;
	/* someone else may have changed the cable in between */
	if (!step.spec->fits(step, why) || !apply(step, r, why)) {
		finish({ { "ok", false }, { "error", "the flapping stopped: " + why } });
		return;
	}
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

/* A flap ended before its last cycle: the cable it holds pulled goes
 * back, as at the end of a cycle, unless someone has changed it since */
void FabricControl::cancelFlap(const std::shared_ptr<Flap> &f, const std::string &why)
{
	if (!f->done)
		return;
	f->timer.cancel();
	std::erase(flaps_, f);
	Json reply = { { "ok", false }, { "error", "the flapping stopped: " + why }, { "flaps", f->cycle } };
	Action up = f->action;
	up.spec = findOp("link.up");
	std::string err;
	Json r;
	if (f->down && up.spec->fits(up, err) && apply(up, r, err)) {
		Json origin = f->origin;
		origin["flap"] = f->cycle + 1;
		log(origin, up, r);
	}
	auto done = std::move(f->done);
	f->done = nullptr;
	done(std::move(reply));
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
