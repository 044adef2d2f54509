// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// `ibemu link | node | errors | counters | scenario | ibsim | control`:
// live changes to a running instance, sent over its control socket
// (tools/control/control_socket.h) as the JSON requests docs/faults.md describes.
#include "tools/cli/commands.h"
#include "tools/cli/control_client.h"
#include "tools/control/ibsim_script.h"
#include "tools/control/json_text.h"
#include "tools/instance/instance.h"

#include <nlohmann/json.hpp>

#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <iterator>
#include <optional>
#include <sys/socket.h>
#include <sys/un.h>
#include <thread>
#include <unistd.h>

namespace ibemu::tools {

namespace {

using Json = nlohmann::ordered_json;

/* What an operation did, in a line */
std::string describe(const Json &req, const Json &r)
{
	std::string op = req.value("op", "");
	auto s = [&](const char *k) {
		return r.contains(k) ? (r[k].is_string() ? r[k].get<std::string>() : jsonText(r[k])) : std::string();
	};
	std::string at = "\"" + s("node") + "\"" + (r.contains("port") ? "[" + s("port") + "]" : "");
	if (op == "link.down")
		return "pulled the cable " + at + " -- " + s("peer");
	if (op == "link.up")
		return "plugged the cable " + at + " -- " + s("peer") + " back in";
	if (op == "link.connect")
		return "cabled " + at + " -- " + s("peer");
	if (op == "link.flap")
		return at + " went down and up " + s("flaps") + " times";
	if (op == "link.degrade")
		return at + " now trains at most " + s("width") + " " + s("speed");
	if (op == "node.silence")
		return at + ": its SMA and PMA are silent";
	if (op == "node.restore")
		return at + ": its SMA and PMA answer again";
	if (op == "node.remove")
		return at + " removed: pulled " + s("cables");
	if (op == "node.add")
		return at + " added back: plugged " + s("cables");
	if (op == "errors")
		return at + ": drop " + s("drop") + ", corrupt " + s("corrupt") + ", seed " + s("seed");
	if (op == "counters.set")
		return at + ": " + s("counter") + " = " + s("value");
	if (op == "scenario.run")
		return "playing " + s("scenario") + ": " + s("events") + " events, seed " + s("seed");
	if (op == "topology.add")
		return "added " + s("nodes");
	if (op == "scenario.stop")
		return "stopped " + s("stopped") + " scenarios";
	return jsonText(r);
}

/* Sends one request and prints what came of it; the exit code */
int request(const std::string &instance, const Json &req, bool json, const char *cmd)
{
	ControlClient c;
	if (int rc = c.connect(instance, cmd))
		return rc;
	Json reply;
	if (!c.call(req, reply, cmd))
		return kRefused;
	if (json)
		printf("%s\n", jsonText(reply).c_str());
	if (!reply.value("ok", false)) {
		if (!json)
			fprintf(stderr, "%s: %s\n", cmd, reply.value("error", "refused").c_str());
		return kRefused;
	}
	if (!json)
		printf("%s\n", describe(req, reply).c_str());
	return 0;
}

bool readAll(const std::string &path, std::string &text)
{
	if (path == "-") {
		text.assign(std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>());
		return true;
	}
	std::ifstream in(path);
	text.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
	return bool(in) || in.eof();
}

/* One ibsim line, translated, with where it came from */
struct IbsimStep {
	std::string where; /* file:line */
	IbsimLine line;
};

/* Translates an ibsim script (and the files it runs with !file) before
 * anything is sent, so a line with an error changes nothing. */
bool translateScript(const std::string &path, unsigned depth, std::vector<IbsimStep> &steps)
{
	std::string text;
	if (depth > 8) {
		fprintf(stderr, "ibemu ibsim: %s: !file nested more than 8 deep\n", path.c_str());
		return false;
	}
	if (!readAll(path, text)) {
		fprintf(stderr, "ibemu ibsim: %s: %s\n", path.c_str(), strerror(errno));
		return false;
	}
	size_t lineNo = 0, pos = 0;
	while (pos < text.size()) {
		size_t nl = text.find('\n', pos);
		std::string_view line(text.data() + pos, (nl == std::string::npos ? text.size() : nl) - pos);
		pos = nl == std::string::npos ? text.size() : nl + 1;
		IbsimStep step{ (path == "-" ? "stdin" : path) + ":" + std::to_string(++lineNo), {} };
		std::string err;
		if (!translateIbsimLine(line, step.line, err)) {
			fprintf(stderr, "ibemu ibsim: %s: %s\n", step.where.c_str(), err.c_str());
			return false;
		}
		if (!step.line.include.empty()) {
			std::string inc = step.line.include;
			if (inc[0] != '/' && path != "-" && path.find('/') != std::string::npos)
				inc = path.substr(0, path.rfind('/') + 1) + inc;
			if (!translateScript(inc, depth + 1, steps))
				return false;
			continue;
		}
		steps.push_back(std::move(step));
	}
	return true;
}

int runIbsim(const std::string &instance, const std::string &path, bool json)
{
	const char *cmd = "ibemu ibsim";
	std::vector<IbsimStep> steps;
	if (!translateScript(path, 0, steps))
		return kUsage;
	ControlClient c;
	if (int rc = c.connect(instance, cmd))
		return rc;
	/* every request checked against the fabric first: a node that does
	 * not exist stops the script before any line runs */
	for (const auto &st : steps)
		for (const auto &req : st.line.requests) {
			Json reply;
			if (!c.call({ { "op", "check" }, { "request", req } }, reply, cmd))
				return kRefused;
			if (!reply.value("ok", false)) {
				fprintf(stderr, "%s: %s: %s\n", cmd, st.where.c_str(),
					reply.value("error", "").c_str());
				return kRefused;
			}
		}
	for (const auto &st : steps) {
		if (!st.line.note.empty())
			fprintf(stderr, "%s: %s: %s\n", cmd, st.where.c_str(), st.line.note.c_str());
		if (st.line.waitMs)
			std::this_thread::sleep_for(std::chrono::milliseconds(st.line.waitMs));
		for (const auto &req : st.line.requests) {
			Json reply;
			if (!c.call(req, reply, cmd))
				return kRefused;
			if (json)
				printf("%s\n", jsonText(reply).c_str());
			if (!reply.value("ok", false)) {
				fprintf(stderr, "%s: %s: %s\n", cmd, st.where.c_str(),
					reply.value("error", "").c_str());
				return kRefused;
			}
			if (!json)
				printf("%s: %s\n", st.where.c_str(), describe(req, reply).c_str());
		}
	}
	return 0;
}

/* Raw requests, one JSON object per line, from the argument or stdin */
int runControl(const std::string &instance, const std::vector<std::string> &args)
{
	const char *cmd = "ibemu control";
	ControlClient c;
	if (int rc = c.connect(instance, cmd))
		return rc;
	std::vector<std::string> lines = args;
	if (lines.empty())
		for (std::string l; std::getline(std::cin, l);)
			if (!l.empty())
				lines.push_back(l);
	int rc = 0;
	for (const auto &l : lines) { /* as they are: the daemon checks them */
		if (l.find('\n') != std::string::npos) {
			fprintf(stderr, "%s: a request is one line\n", cmd);
			return kUsage;
		}
		Json reply;
		if (!c.callLine(l, reply, cmd))
			return kRefused;
		printf("%s\n", jsonText(reply).c_str());
		if (!reply.value("ok", false))
			rc = kRefused;
	}
	return rc;
}

struct FaultOpts {
	std::string instance = defaultInstance();
	bool json = false;
	std::string node;
	unsigned port = 0;
	std::optional<unsigned> optPort;
	unsigned count = 1;
	unsigned intervalMs = 500;
	std::string width, speed;
	std::string peer;
	unsigned peerPort = 0;
	std::optional<double> drop, corrupt;
	std::optional<uint64_t> seed;
	std::string counter;
	uint64_t value = 0;
	std::string file;
	std::vector<std::string> raw;
};

const char *const kInstanceHelp = "Instance name (default: $IBEMU_INSTANCE, else \"default\")";
const char *const kNodeHelp = "The node: node GUID (0x...), NodeDescription, host name or topology id";

CLI::App *subcommand(CLI::App &parent, const char *name, const char *help, FaultOpts &o)
{
	CLI::App *c = parent.add_subcommand(name, help);
	c->add_option("--instance", o.instance, kInstanceHelp);
	c->add_flag("--json", o.json, "Print the daemon's reply as JSON");
	return c;
}

/* NODE PORT arguments */
void nodePort(CLI::App *c, FaultOpts &o, const char *portHelp = "Port number")
{
	c->add_option("node", o.node, kNodeHelp)->required();
	c->add_option("port", o.port, portHelp)->required();
}

/* {"op": op, "node": ..., "port": ...} */
Json atPort(const char *op, const FaultOpts &o)
{
	return { { "op", op }, { "node", o.node }, { "port", o.port } };
}

} /* namespace */

void addFaultCommands(CLI::App &app, int &exitCode)
{
	auto o = std::make_shared<FaultOpts>();
	auto send = [o, &exitCode](const char *cmd, Json req) { exitCode = request(o->instance, req, o->json, cmd); };

	/* ibemu link down|up|flap|degrade|connect */
	CLI::App *link = app.add_subcommand("link", "Pull, plug, flap, degrade or add a cable of a running instance");
	link->require_subcommand(1);
	for (const char *verb : { "down", "up" }) {
		CLI::App *c = subcommand(*link, verb,
					 std::string(verb) == "down"
						 ? "Pull the cable out of a port (both ends go Down)"
						 : "Plug a pulled cable back in",
					 *o);
		nodePort(c, *o);
		c->callback([o, send, verb] {
			bool down = verb[0] == 'd';
			send(down ? "ibemu link down" : "ibemu link up", atPort(down ? "link.down" : "link.up", *o));
		});
	}
	CLI::App *flap = subcommand(*link, "flap", "Take a link down and up again, K times", *o);
	nodePort(flap, *o);
	flap->add_option("--count", o->count, "How many times (default 1)");
	flap->add_option("--interval", o->intervalMs, "Milliseconds between the edges (default 500)");
	flap->callback([o, send] {
		Json req = atPort("link.flap", *o);
		req["count"] = o->count;
		req["interval_ms"] = o->intervalMs;
		send("ibemu link flap", req);
	});

	CLI::App *degrade = subcommand(*link, "degrade", "A cable that trains narrower or slower (none: restore)", *o);
	nodePort(degrade, *o);
	degrade->add_option("--width", o->width, "At most this width: 1x, 2x, 4x, 8x, 12x");
	degrade->add_option("--speed", o->speed, "At most this speed: SDR, DDR, QDR, FDR10, FDR, EDR, HDR, NDR");
	degrade->callback([o, send] {
		Json req = atPort("link.degrade", *o);
		if (!o->width.empty())
			req["width"] = o->width;
		if (!o->speed.empty())
			req["speed"] = o->speed;
		send("ibemu link degrade", req);
	});
	CLI::App *connect = subcommand(*link, "connect", "Cable two free ports", *o);
	nodePort(connect, *o);
	connect->add_option("peer", o->peer, "The other node")->required();
	connect->add_option("peer_port", o->peerPort, "The other node's port")->required();
	connect->callback([o, send] {
		Json req = atPort("link.connect", *o);
		req["peer"] = o->peer;
		req["peer_port"] = o->peerPort;
		send("ibemu link connect", req);
	});

	/* ibemu node silence|restore|remove|add */
	CLI::App *node = app.add_subcommand("node", "Silence a node's agents, or unplug and replug a whole node");
	node->require_subcommand(1);
	const std::pair<const char *, const char *> nodeVerbs[] = {
		{ "silence", "Its SMA and PMA stop answering (requests time out); its links stay up" },
		{ "restore", "Its SMA and PMA answer again" },
		{ "remove", "Pull every cable of the node (hot unplug)" },
		{ "add", "Plug the cables `node remove` pulled back in, or add new nodes (--topology): hot plug" },
	};
	for (const auto &[verb, help] : nodeVerbs) {
		CLI::App *c = subcommand(*node, verb, help, *o);
		std::string v = verb;
		auto *nodeArg = c->add_option("node", o->node, kNodeHelp);
		if (v != "add") {
			nodeArg->required();
		} else {
			c->add_option("--topology", o->file,
				      "New nodes: a topology fragment whose port lines name the running fabric's "
				      "free ports they are cabled to")
				->excludes(nodeArg);
		}
		c->callback([o, send, v, &exitCode] {
			std::string cmd = "ibemu node " + v;
			if (v == "add" && !o->file.empty()) {
				std::string text;
				char real[PATH_MAX];
				if (!readAll(o->file, text) || !realpath(o->file.c_str(), real)) {
					fprintf(stderr, "%s: %s: %s\n", cmd.c_str(), o->file.c_str(), strerror(errno));
					exitCode = kUsage;
					return;
				}
				send(cmd.c_str(), { { "op", "topology.add" }, { "file", real }, { "text", text } });
				return;
			}
			if (o->node.empty()) {
				fprintf(stderr, "%s: give the node, or --topology FILE\n", cmd.c_str());
				exitCode = kUsage;
				return;
			}
			send(cmd.c_str(), { { "op", "node." + v }, { "node", o->node } });
		});
	}

	/* ibemu errors NODE [PORT] --drop R --corrupt R --seed S */
	CLI::App *errors = subcommand(app, "errors", "Lose or corrupt a share of the packets on a port's cable", *o);
	errors->add_option("node", o->node, kNodeHelp)->required();
	errors->add_option("port", o->optPort, "Port number (default: every port of the node)");
	errors->add_option("--drop", o->drop, "Probability a packet is lost to symbol errors, in [0,1]");
	errors->add_option("--corrupt", o->corrupt, "Probability a packet arrives with a bad CRC, in [0,1]");
	errors->add_option("--seed", o->seed, "Seed of the port's random losses (default 0)");
	errors->callback([o, send, &exitCode] {
		Json req = { { "op", "errors" }, { "node", o->node } };
		if (o->optPort)
			req["port"] = *o->optPort;
		if (!o->drop && !o->corrupt) {
			fprintf(stderr, "ibemu errors: give --drop or --corrupt (0 removes the fault)\n");
			exitCode = kUsage;
			return;
		}
		if (o->drop)
			req["drop"] = *o->drop;
		if (o->corrupt)
			req["corrupt"] = *o->corrupt;
		if (o->seed)
			req["seed"] = *o->seed;
		send("ibemu errors", req);
	});

	/* ibemu counters set NODE PORT COUNTER VALUE */
	CLI::App *counters = app.add_subcommand("counters", "Set a port's PMA counters (ibsim's PerformanceSet)");
	counters->require_subcommand(1);
	CLI::App *set = subcommand(*counters, "set", "Set one counter (perfquery's name) or all of them", *o);
	nodePort(set, *o, "Port number (0: a switch's management port)");
	set->add_option("counter", o->counter, "SymbolErrorCounter, PortRcvErrors, ... or all")->required();
	set->add_option("value", o->value, "The value")->required();
	set->callback([o, send] {
		Json req = atPort("counters.set", *o);
		req["counter"] = o->counter;
		req["value"] = o->value;
		send("ibemu counters set", req);
	});

	/* ibemu scenario run FILE [--seed S] | stop */
	CLI::App *scenario = app.add_subcommand("scenario", "Play a scenario file of fault events, or stop them");
	scenario->require_subcommand(1);
	CLI::App *run = subcommand(*scenario, "run", "Play a scenario (TOML; docs/faults.md)", *o);
	run->add_option("file", o->file, "The scenario file (- for stdin)")->required();
	run->add_option("--seed", o->seed, "The seed of its random choices, instead of the file's");
	run->callback([o, send, &exitCode] {
		std::string text;
		if (!readAll(o->file, text)) {
			fprintf(stderr, "ibemu scenario run: %s: %s\n", o->file.c_str(), strerror(errno));
			exitCode = kUsage;
			return;
		}
		Json req = { { "op", "scenario.run" },
			     { "file", o->file == "-" ? "stdin" : o->file },
			     { "text", text } };
		if (o->seed)
			req["seed"] = *o->seed;
		send("ibemu scenario run", req);
	});
	CLI::App *stop = subcommand(*scenario, "stop", "Stop every scenario playing", *o);
	stop->callback([send] { send("ibemu scenario stop", { { "op", "scenario.stop" } }); });

	/* ibemu ibsim [FILE] */
	CLI::App *ibsim = subcommand(app, "ibsim", "Run ibsim console commands (a script, or stdin)", *o);
	ibsim->add_option("file", o->file, "The script (default: stdin)");
	ibsim->callback([o, &exitCode] { exitCode = runIbsim(o->instance, o->file.empty() ? "-" : o->file, o->json); });

	/* ibemu control [JSON...] */
	CLI::App *control = subcommand(app, "control", "Send raw JSON requests (docs/faults.md), print the replies",
				       *o);
	control->add_option("request", o->raw, "Requests (default: one per line on stdin)");
	control->callback([o, &exitCode] { exitCode = runControl(o->instance, o->raw); });
}

} /* namespace ibemu::tools */
