// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// The daemon's control socket and live view (tools/daemon/daemon.h): the
// requests it answers itself (check, state, picture, scenario.run and
// scenario.stop; every other one is FabricControl's) and the scenarios it
// plays.
#include "tools/daemon/daemon.h"

#include "tools/observe/fabric_picture.h"
#include "tools/observe/fabric_summary.h"

#include <boost/asio/post.hpp>
#include <spdlog/spdlog.h>

#include <sys/stat.h>

namespace ibemu::tools {

namespace {

/* Scenarios playing at once, at most */
constexpr size_t kMaxScenarios = 16;

} /* namespace */

bool Daemon::startControl()
{
	/* every op the daemon does not answer itself is a change to the
	 * fabric, found in FabricControl's table of operations */
	controlSocket_ = std::make_unique<tools::ControlSocket>(
		io_, [this](const auto &req, const auto &client, auto reply) {
			return control_->run(req, client, std::move(reply));
		});
	/* always: answered at once, and served past the 16 clients too (the
	 * control socket's reserve), so that `ibemu scenario stop` and
	 * `status` work whoever holds the other places */
	const struct {
		const char *op;
		void (Daemon::*serve)(const Json &, Reply);
		bool always;
	} ops[] = {
		{ "check", &Daemon::checkRequest, true },	  { "state", &Daemon::stateRequest, true },
		{ "picture", &Daemon::pictureRequest, false },	  { "scenario.stop", &Daemon::scenarioStop, true },
		{ "scenario.run", &Daemon::scenarioRun, false },
	};
	for (const auto &[op, serve, always] : ops)
		controlSocket_->addOp(
			op,
			[this, fn = serve](const auto &req, const auto &, auto reply) -> tools::ControlSocket::Cancel {
				(this->*fn)(req, std::move(reply));
				return {};
			},
			always);
	capture_ = std::make_unique<tools::PacketCapture>(subnet_);
	controlSocket_->addStream("capture", [this](const auto &req, const auto &, auto stream) {
		capture_->start(req, std::move(stream));
	});
	struct stat st;
	std::string err;
	if (stat(inst_.runDir.c_str(), &st) != 0 ||
	    controlSocket_->listen(inst_.controlSocket(), st.st_uid, err) != 0) {
		spdlog::error("{}", err.empty() ? "the run directory went away" : err);
		return false;
	}
	return true;
}

/* --web: the live view, read only */
bool Daemon::startWeb()
{
	if (!opts_.webOn)
		return true;
	web_ = std::make_unique<tools::WebView>(
		io_, subnet_, *capture_,
		[this] {
			return nlohmann::ordered_json{ { "instance", inst_.name }, { "faults", control_->state() } };
		},
		splitOrNull());
	std::string err;
	if (web_->listen(opts_.web, err) != 0) {
		spdlog::error("{}", err);
		return false;
	}
	spdlog::info("live view at {}", web_->url());
	return true;
}

/* check: a request checked, not carried out (ibemu ibsim, before it starts) */
void Daemon::checkRequest(const Json &req, Reply reply)
{
	std::string err = req.contains("request") ? control_->check(req["request"], false)
						  : "check: give the \"request\" to check";
	reply(err.empty() ? Json{ { "ok", true } } : Json{ { "ok", false }, { "error", err } });
}

/* state: what is faulty, and the scenarios playing (ibemu status) */
void Daemon::stateRequest(const Json &, Reply reply)
{
	reply({ { "ok", true }, { "faults", control_->state() }, { "scenarios", scenarioStates() } });
}

/* picture: the fabric as dot, or with "summary": true in words (ibemu topo
 * show --instance, with and without --format) */
void Daemon::pictureRequest(const Json &req, Reply reply)
{
	if (req.contains("summary") && !req["summary"].is_boolean())
		return reply({ { "ok", false }, { "error", "picture: \"summary\" must be true or false" } });
	if (req.value("summary", false))
		reply({ { "ok", true },
			{ "summary", tools::fabricSummary(subnet_, "of instance \"" + inst_.name + "\"") } });
	else
		reply({ { "ok", true }, { "dot", tools::fabricDot(subnet_, { .split = splitOrNull() }) } });
}

void Daemon::scenarioStop(const Json &, Reply reply)
{
	size_t n = scenarios_.size();
	scenarios_.clear();
	control_->stop("scenario stop"); /* and the links they (or anyone) left flapping */
	reply({ { "ok", true }, { "stopped", n } });
}

void Daemon::scenarioRun(const Json &req, Reply reply)
{
	if (!req.contains("text") || !req["text"].is_string()) {
		reply({ { "ok", false }, { "error", "scenario.run: give the scenario (\"text\")" } });
		return;
	}
	if (scenarios_.size() >= kMaxScenarios) {
		reply({ { "ok", false }, { "error", "already " + std::to_string(kMaxScenarios) + " scenarios playing" } });
		return;
	}
	std::string file = req.contains("file") && req["file"].is_string() ? req["file"].get<std::string>()
									   : "scenario";
	tools::Scenario sc;
	std::string err;
	if (!tools::parseScenario(req["text"].get<std::string>(), file, *control_, sc, err)) {
		reply({ { "ok", false }, { "error", err } });
		return;
	}
	if (req.contains("seed")) {
		if (!req["seed"].is_number_unsigned()) {
			reply({ { "ok", false }, { "error", "seed must be an integer of 0 or more" } });
			return;
		}
		sc.seed = req["seed"].get<uint64_t>();
	}
	Json r = { { "ok", true }, { "scenario", file }, { "seed", sc.seed }, { "events", sc.events.size() } };
	runScenario(std::move(sc));
	reply(r);
}

void Daemon::runScenario(tools::Scenario sc)
{
	spdlog::info("scenario {}: {} events, seed {}", sc.file, sc.events.size(), sc.seed);
	uint64_t id = ++lastScenario_;
	auto &run = scenarios_[id] = std::make_unique<tools::ScenarioRun>(io_, *control_, subnet_, std::move(sc));
	/* an ended run goes later, not from inside its own call */
	run->start([this, id] { boost::asio::post(io_, [this, id] { scenarios_.erase(id); }); });
}

nlohmann::ordered_json Daemon::scenarioStates() const
{
	nlohmann::ordered_json a = nlohmann::ordered_json::array();
	for (const auto &[id, s] : scenarios_)
		a.push_back(s->state());
	return a;
}

} /* namespace ibemu::tools */
