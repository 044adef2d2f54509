// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
#include "tools/control/scenario.h"

#include "fabric/subnet.h"

#include <toml++/toml.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>

namespace ibemu::tools {

namespace {

using Json = nlohmann::ordered_json;

constexpr auto kPollInterval = std::chrono::milliseconds(100);

std::string where(const std::string &file, const toml::source_region &src)
{
	return file + ":" + std::to_string(src.begin.line) + ": ";
}

/* An SM runs the subnet: some CA port is Active and knows its SM (OpenSM
 * moves ports to Active only as MASTER) */
bool smMaster(const fabric::Subnet &subnet)
{
	for (const auto &n : subnet.nodes()) {
		if (n->isSwitch())
			continue;
		for (const auto &p : n->ports)
			if (p.state == fabric::PortState::Active && p.smLid != 0)
				return true;
	}
	return false;
}

/* A TOML value as the JSON a request carries; false for tables, arrays and
 * dates, which no operation takes */
bool toJson(const toml::node &v, Json &out)
{
	if (auto s = v.value<std::string>(); s && v.is_string())
		out = *s;
	else if (v.is_integer() && *v.value<int64_t>() >= 0)
		out = uint64_t(*v.value<int64_t>());
	else if (v.is_integer())
		out = *v.value<int64_t>();
	else if (v.is_floating_point())
		out = *v.value<double>();
	else if (v.is_boolean())
		out = *v.value<bool>();
	else
		return false;
	return true;
}

bool parseEvent(const toml::table &t, const std::string &file, const FabricControl &control, ScenarioEvent &ev,
		std::string &err)
{
	ev.line = t.source().begin.line;
	for (auto &&[key, v] : t) {
		std::string k(key.str());
		std::string at = where(file, v.source());
		if (k == "at" || k == "every") {
			uint64_t ms = 0;
			auto s = v.value<std::string>();
			if (!v.is_string() || !parseDuration(*s, ms)) {
				err = at + k + " must be a duration like \"500ms\", \"5s\" or \"2m\"";
				return false;
			}
			if (k == "every" && ms < kMinEveryMs) {
				/* a scenario plays faults, it is no load generator */
				err = at + "every must be at least " + std::to_string(kMinEveryMs) + "ms";
				return false;
			}
			(k == "at" ? ev.atMs : ev.everyMs) = ms;
		} else if (k == "after") {
			if (!v.is_string() || *v.value<std::string>() != "sm-master") {
				err = at + "after must be \"sm-master\" (the only condition there is)";
				return false;
			}
			ev.afterSmMaster = true;
		} else if (k == "count") {
			if (!v.is_integer() || *v.value<int64_t>() < 1) {
				err = at + "count must be an integer of 1 or more";
				return false;
			}
			ev.count = uint64_t(*v.value<int64_t>());
		} else if (k == "probability") {
			double p = v.is_number() ? *v.value<double>() : -1;
			if (!(p >= 0 && p <= 1)) {
				err = at + "probability must be a number in [0, 1]";
				return false;
			}
			ev.probability = p;
		} else {
			Json j;
			if (!toJson(v, j)) {
				err = at + k + ": a string, number or boolean, not a table, array or date";
				return false;
			}
			ev.request[k] = j;
		}
	}
	if (t.contains("count") && !t.contains("every")) {
		err = where(file, t.source()) + "count goes with every";
		return false;
	}
	if (t.contains("every") && !t.contains("count"))
		ev.count = 0;
	if (!ev.request.contains("op")) {
		err = where(file, t.source()) + "the event has no op (";
		for (const auto &o : FabricControl::ops())
			err += o + (o == FabricControl::ops().back() ? ")" : ", ");
		return false;
	}
	if (std::string e = control.check(ev.request, false); !e.empty()) {
		err = where(file, t.source()) + e;
		return false;
	}
	return true;
}

} /* namespace */

bool parseDuration(std::string_view s, uint64_t &ms)
{
	std::string text(s);
	char *end = nullptr;
	errno = 0;
	double v = strtod(text.c_str(), &end);
	if (errno || end == text.c_str() || !(v >= 0) || !std::isfinite(v) || isspace(uint8_t(text[0])))
		return false;
	std::string unit(end);
	double scale = unit == "ms" ? 1 : unit == "s" ? 1000 : unit == "m" ? 60000 : 0;
	if (scale == 0 || v * scale > 1e12)
		return false;
	ms = uint64_t(std::llround(v * scale));
	return true;
}

bool parseScenario(std::string_view text, const std::string &file, const FabricControl &control, Scenario &out,
		   std::string &err)
{
	toml::table root;
	try {
		root = toml::parse(text, file);
	} catch (const toml::parse_error &e) {
		err = where(file, e.source()) + std::string(e.description());
		return false;
	}
	out.file = file;
	for (auto &&[key, v] : root) {
		std::string k(key.str());
		if (k == "seed") {
			if (!v.is_integer() || *v.value<int64_t>() < 0) {
				err = where(file, v.source()) + "seed must be an integer of 0 or more";
				return false;
			}
			out.seed = uint64_t(*v.value<int64_t>());
		} else if (k == "event") {
			const toml::array *events = v.as_array();
			if (!events || !events->is_array_of_tables()) {
				err = where(file, v.source()) + "events are [[event]] tables";
				return false;
			}
			for (const auto &e : *events) {
				ScenarioEvent ev;
				if (!parseEvent(*e.as_table(), file, control, ev, err))
					return false;
				out.events.push_back(std::move(ev));
			}
		} else {
			err = where(file, key.source()) + "unknown key \"" + k + "\" (seed, or [[event]] tables)";
			return false;
		}
	}
	if (out.events.empty()) {
		err = file + ": no [[event]] in the scenario";
		return false;
	}
	return true;
}

ScenarioRun::ScenarioRun(boost::asio::io_context &io, FabricControl &control, const fabric::Subnet &subnet,
			 Scenario scenario)
	: control_(control), subnet_(subnet), sc_(std::move(scenario)), timer_(io), poll_(io)
{
	for (size_t i = 0; i < sc_.events.size(); i++) {
		std::seed_seq seq{ uint32_t(sc_.seed), uint32_t(sc_.seed >> 32), uint32_t(i) };
		rngs_.emplace_back(seq);
	}
}

ScenarioRun::~ScenarioRun()
{
	*alive_ = false;
	stop();
}

uint64_t ScenarioRun::nowMs() const
{
	return uint64_t(std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start_)
				.count());
}

void ScenarioRun::start(std::function<void()> ended)
{
	ended_ = std::move(ended);
	running_ = true;
	start_ = std::chrono::steady_clock::now();
	for (size_t i = 0; i < sc_.events.size(); i++) {
		if (sc_.events[i].afterSmMaster) {
			waiting_.push_back(i);
			continue;
		}
		queue_.push_back({ sc_.events[i].atMs, i, 0, 0 });
		std::push_heap(queue_.begin(), queue_.end(), std::greater<>());
	}
	if (!waiting_.empty())
		pollConditions();
	schedule();
}

void ScenarioRun::pollConditions()
{
	if (!running_)
		return;
	if (smMaster(subnet_)) {
		uint64_t now = nowMs();
		for (size_t i : waiting_) {
			queue_.push_back({ now + sc_.events[i].atMs, i, 0, now });
			std::push_heap(queue_.begin(), queue_.end(), std::greater<>());
		}
		waiting_.clear();
		schedule();
		return;
	}
	poll_.expires_after(kPollInterval);
	poll_.async_wait([this, alive = alive_](const boost::system::error_code &ec) {
		if (!ec && *alive)
			pollConditions();
	});
}

/* Waits for the earliest tick */
void ScenarioRun::schedule()
{
	if (!running_)
		return;
	timer_.cancel();
	if (queue_.empty())
		return checkEnd();
	timer_.expires_at(start_ + std::chrono::milliseconds(queue_.front().dueMs));
	timer_.async_wait([this, alive = alive_](const boost::system::error_code &ec) {
		if (ec || !*alive || !running_)
			return;
		uint64_t now = nowMs();
		/* a few at a time: a timer already due again comes after what
		 * else the io thread has to do (SMPs, requests, signals) */
		for (unsigned n = 0; n < kTicksPerTurn && !queue_.empty() && queue_.front().dueMs <= now && running_;
		     n++) {
			std::pop_heap(queue_.begin(), queue_.end(), std::greater<>());
			Tick t = queue_.back();
			queue_.pop_back();
			fire(t, now);
		}
		schedule();
	});
}

void ScenarioRun::fire(Tick t, uint64_t now)
{
	const ScenarioEvent &ev = sc_.events[t.event];
	std::mt19937_64 &rng = rngs_[t.event];
	/* far behind (the io thread was busy, the machine suspended): the
	 * ticks missed are skipped, not fired in a burst; they count towards
	 * `count`, and draw nothing from the generator */
	uint64_t skipped = 0;
	if (ev.everyMs && now > t.dueMs + std::max(ev.everyMs, kLateMs)) {
		skipped = (now - t.dueMs) / ev.everyMs;
		if (ev.count)
			skipped = std::min(skipped, ev.count - 1 - t.n);
		t.n += skipped;
		t.dueMs += skipped * ev.everyMs;
		skipped_ += skipped;
	}
	bool happens = ev.probability >= 1 || std::bernoulli_distribution(ev.probability)(rng);
	if (ev.everyMs && (ev.count == 0 || t.n + 1 < ev.count)) {
		queue_.push_back({ t.dueMs + ev.everyMs, t.event, t.n + 1, t.anchorMs });
		std::push_heap(queue_.begin(), queue_.end(), std::greater<>());
	}
	if (!happens)
		return;
	Json req = ev.request;
	if (req["op"] == "errors" && !req.contains("seed"))
		req["seed"] = rng(); /* the lossy cable's own generator, from the scenario's */
	Json origin = { { "source", "scenario" },
			{ "scenario", sc_.file },
			{ "line", ev.line },
			{ "at_ms", t.dueMs - t.anchorMs } };
	if (ev.afterSmMaster)
		origin["after"] = "sm-master";
	if (ev.everyMs)
		origin["tick"] = t.n + 1;
	if (skipped)
		origin["skipped"] = skipped;
	fired_++;
	/* a flap may end after this run is gone: the reply needs only control */
	control_.run(req, origin, [control = &control_, origin, req](Json reply) {
		if (!reply.value("ok", false))
			control->logRejected(origin, req, reply.value("error", ""));
	});
}

void ScenarioRun::checkEnd()
{
	if (running_ && queue_.empty() && waiting_.empty()) {
		running_ = false;
		if (ended_)
			ended_();
	}
}

void ScenarioRun::stop()
{
	running_ = false;
	timer_.cancel();
	poll_.cancel();
	queue_.clear();
	waiting_.clear();
}

Json ScenarioRun::state() const
{
	return { { "file", sc_.file },
		 { "seed", sc_.seed },
		 { "running", running_ },
		 { "fired", fired_ },
		 { "skipped", skipped_ },
		 { "waiting_for_sm_master", !waiting_.empty() } };
}

} /* namespace ibemu::tools */
