// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// ibemud: the foreground daemon of one instance. It simulates the subnet,
// makes the chosen CAs local HCAs, and serves their devices and sysfs view
// in a private mount namespace. `ibemu up` starts it in the background.
//
// Threads: main runs the io_context, which owns the subnet, the emulated
// host and the FUSE session. One short-lived thread does the mounts that
// need the FUSE filesystem answering (it touches no emu state).
//
// With --sm it also runs OpenSM in the instance (tools/daemon/sm_process.h) and at
// shutdown stops it before any device goes.
//
// Live changes (ibemu link/node/errors/counters/scenario) come in through
// the control socket (tools/control/control_socket.h) and are carried out by
// tools/control/fabric_control.h; scenarios are played by tools/control/scenario.h.
#include "cuse_dev/cuse_devices.h"
#include "cuse_dev/fuse_fs.h"
#include "emu/hca_attrs.h"
#include "emu/host.h"
#include "fabric/subnet.h"
#include "tools/control/control_socket.h"
#include "tools/control/fabric_control.h"
#include "tools/observe/fabric_picture.h"
#include "tools/instance/fabric_source.h"
#include "tools/control/ibsim_script.h"
#include "tools/instance/instance.h"
#include "tools/instance/namespace.h"
#include "tools/observe/packet_capture.h"
#include "tools/peer/peer_links.h"
#include "tools/control/scenario.h"
#include "tools/daemon/sm_process.h"
#include "tools/daemon/uring_switch.h"
#include "tools/observe/web_view.h"

#include <CLI/CLI.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/signal_set.hpp>
#include <nlohmann/json.hpp>
#include <spdlog/sinks/basic_file_sink.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <arpa/inet.h>
#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <map>
#include <optional>
#include <sstream>
#ifdef IBEMU_HAVE_SD_NOTIFY
#include <systemd/sd-daemon.h>
#endif
#include <sys/resource.h>
#include <sys/stat.h>
#include <thread>
#include <unistd.h>

namespace {

using namespace ibemu;

struct Options {
	std::string instance = "default";
	std::string topology;
	std::string gen;
	std::string local;
	std::string transport = "auto";
	std::string logLevel = "info";
	bool global = false;
	std::string verbsProvider = "ibemu"; /* what `ibemu exec` loads: ibemu or stock */
	unsigned spinUs = 50;
	/* FUSE over io_uring: "auto" (if the host already enables it), "on"
	 * (enable it), "off" */
	std::string fuseUring = "auto";
	bool sm = false; /* run OpenSM in the instance */
	std::vector<std::string> smArgs; /* its arguments, after -- */
	std::string scenario; /* a scenario file to play once ready */
	std::optional<uint64_t> seed; /* instead of the scenario's own */
	bool webOn = false; /* --web: the live view */
	std::string web; /* ... at this ADDR:PORT ("": 127.0.0.1, any free port) */
	/* a subnet split across hosts (docs/multihost.md) */
	std::string host; /* which host= of the topology this daemon is ("": the host name) */
	std::string subnetKey; /* the file holding the subnet's key */
	std::string listen; /* ADDR:PORT to listen on instead of the file's addr= */
};

/* Scenarios playing at once, at most */
constexpr size_t kMaxScenarios = 16;

/* How long OpenSM gets to exit after SIGTERM before SIGKILL */
constexpr std::chrono::seconds kSmGrace{ 5 };

/* Finds a CA by node id, description, host name or GUID. */
fabric::Node *findCa(fabric::Subnet &subnet, const std::string &what)
{
	fabric::Node *n = subnet.resolveNode(what);
	return n && !n->isSwitch() ? n : nullptr;
}

/* Type=notify units (tools/daemon/ibemud@.service.in): a no-op elsewhere */
void notifyServiceManager(const char *state)
{
#ifdef IBEMU_HAVE_SD_NOTIFY
	sd_notify(0, state);
#else
	(void)state;
#endif
}

class Daemon {
public:
	Daemon(const Options &opts, const tools::Instance &inst)
		: opts_(opts), inst_(inst), signals_(io_, SIGINT, SIGTERM)
	{}

	int run();

private:
	/* what the namespace's /dev/infiniband holds */
	struct Links {
		std::vector<std::pair<std::string, std::string>> links; /* name, target */
		std::vector<std::string> nodes; /* CUSE nodes to wait for */
		std::vector<std::string> verbsNodes; /* of them, those of mode 0666: uverbs, rdma_cm */
	};

	bool setupFabric();
	bool setupPeers();
	bool startPeers();
	bool loadScenario();
	bool runDoLines();
	bool startControl();
	bool startWeb();
	/* the control socket's requests the daemon answers itself */
	using Json = nlohmann::ordered_json;
	using Reply = tools::ControlSocket::Reply;
	void checkRequest(const Json &req, Reply reply);
	void stateRequest(const Json &req, Reply reply);
	void pictureRequest(const Json &req, Reply reply);
	void scenarioStop(const Json &req, Reply reply);
	void scenarioRun(const Json &req, Reply reply);
	void runScenario(tools::Scenario sc);
	nlohmann::ordered_json scenarioStates() const;
	bool chooseLocal();
	bool isolate();
	bool startTransport();
	bool chooseFuseUring();
	Links linkTable() const;
	int mountAll(const Links &t, std::string &err) const;
	void startMounter();
	void awaitStop();
	void stop(int code);
	void teardown();
	void ready();
	nlohmann::ordered_json describe() const;
	std::string liveStatus() const;

	const Options &opts_;
	const tools::Instance &inst_;
	boost::asio::io_context io_{ 1 };
	boost::asio::signal_set signals_;
	fabric::Subnet subnet_;
	std::unique_ptr<emu::Host> host_;
	std::unique_ptr<cuse_dev::FuseFs> fs_;
	std::unique_ptr<cuse_dev::CuseDevices> cuse_;
	bool useCuse_ = false;
	std::unique_ptr<tools::SmProcess> sm_;
	std::unique_ptr<tools::FabricControl> control_;
	std::unique_ptr<tools::ControlSocket> controlSocket_;
	std::unique_ptr<tools::PacketCapture> capture_; /* `ibemu capture` clients */
	std::unique_ptr<tools::WebView> web_; /* --web */
	tools::SubnetSplit split_; /* the topology's host= lines */
	const tools::SubnetSplit *splitOrNull() const { return split_.hosts.empty() ? nullptr : &split_; }
	std::unique_ptr<tools::PeerLinks> peers_; /* cables to the other hosts' daemons */
	std::map<uint64_t, std::unique_ptr<tools::ScenarioRun>> scenarios_; /* by a number of their own */
	uint64_t lastScenario_ = 0;
	tools::Scenario startScenario_; /* --scenario, played once ready */
	std::vector<tools::DoLine> doLines_; /* the topology file's ibsim `do` lines */
	std::thread mounter_;
	tools::UringSwitch uringSwitch_; /* --fuse-uring=on: held while we run */
	bool stopping_ = false;
	int exitCode_ = 0;
};

bool Daemon::setupFabric()
{
	bool ok = opts_.gen.empty() ? tools::loadFabric(opts_.topology, subnet_, &doLines_, &split_)
				    : tools::generateFabric(opts_.gen, subnet_);
	if (ok)
		spdlog::info("fabric: {} switches, {} CAs, {} routers, {} links", subnet_.numSwitches(),
			     subnet_.numCas(), subnet_.numRouters(), subnet_.numLinks());
	return ok && setupPeers();
}

/* A topology with host= lines: this daemon simulates its host's nodes,
 * and the others' through their daemons (docs/multihost.md) */
bool Daemon::setupPeers()
{
	if (split_.hosts.empty()) {
		if (!opts_.host.empty() || !opts_.subnetKey.empty() || !opts_.listen.empty()) {
			spdlog::error("--host, --subnet-key and --listen need a topology file with host= lines");
			return false;
		}
		return true;
	}
	std::string me = opts_.host;
	if (me.empty()) {
		char name[256] = {};
		gethostname(name, sizeof name - 1);
		me = name;
	}
	int index = -1;
	std::string names;
	for (size_t i = 0; i < split_.hosts.size(); i++) {
		names += (i ? ", " : "") + split_.hosts[i].name;
		if (split_.hosts[i].name == me)
			index = static_cast<int>(i);
	}
	if (index < 0) {
		spdlog::error("this is host \"{}\", which the topology does not name (its hosts: {}); give --host NAME",
			      me, names);
		return false;
	}
	if (opts_.subnetKey.empty()) {
		spdlog::error("a topology with host= lines needs --subnet-key FILE (the key its hosts share)");
		return false;
	}
	std::vector<uint8_t> key;
	std::string err;
	if (!tools::readSubnetKey(opts_.subnetKey, key, err)) {
		spdlog::error("--subnet-key {}", err);
		return false;
	}
	peers_ = std::make_unique<tools::PeerLinks>(io_, subnet_, split_, index, std::move(key));
	return true;
}

bool Daemon::startPeers()
{
	std::string err;
	if (peers_ && !peers_->start(opts_.listen, err)) {
		spdlog::error("{}", err);
		return false;
	}
	return true;
}

/* --scenario: read and checked before anything starts, played once ready */
bool Daemon::loadScenario()
{
	control_ = std::make_unique<tools::FabricControl>(io_, subnet_, inst_.eventLog());
	if (opts_.scenario.empty())
		return true;
	std::ifstream in(opts_.scenario);
	std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
	if (!in) {
		spdlog::error("--scenario {}: {}", opts_.scenario, strerror(errno));
		return false;
	}
	std::string err;
	if (!tools::parseScenario(text, opts_.scenario, *control_, startScenario_, err)) {
		spdlog::error("{}", err);
		return false;
	}
	if (opts_.seed)
		startScenario_.seed = *opts_.seed;
	return true;
}

/* The topology file's `do` lines, as ibsim console commands, on the
 * built fabric before anything runs on it; one that fails stops the start,
 * as it stops ibsim */
bool Daemon::runDoLines()
{
	for (const auto &d : doLines_) {
		tools::IbsimLine line;
		std::string err;
		if (!tools::translateIbsimLine(d.text, line, err)) {
			spdlog::error("{}: do {}: {}", d.where, d.text, err);
			return false;
		}
		if (!line.include.empty() || line.waitMs) {
			spdlog::error("{}: do {}: not in a topology file (ibemu ibsim runs it)", d.where, d.text);
			return false;
		}
		if (!line.note.empty())
			spdlog::info("{}: {}", d.where, line.note);
		for (const auto &req : line.requests) {
			/* in a split subnet, a line about another host's node is
			 * carried out by that host's daemon, which loads it too */
			if (req.contains("node") && req["node"].is_string())
				if (const fabric::Node *n = subnet_.resolveNode(req["node"].get<std::string>());
				    n && n->foreign) {
					spdlog::info("{}: do {}: another host's node: its daemon runs it", d.where,
						     d.text);
					continue;
				}
			bool ok = false;
			control_->run(req, { { "source", "topology" }, { "where", d.where } },
				      [&](nlohmann::ordered_json r) {
					      ok = r.value("ok", false);
					      err = r.value("error", "");
				      });
			if (!ok) { /* every op a do line maps to answers at once */
				spdlog::error("{}: do {}: {}", d.where, d.text, err);
				return false;
			}
		}
	}
	return true;
}

bool Daemon::startControl()
{
	/* every op the daemon does not answer itself is a change to the
	 * fabric, found in FabricControl's table of operations */
	controlSocket_ = std::make_unique<tools::ControlSocket>(
		io_, [this](const auto &req, const auto &client, auto reply) { control_->run(req, client, std::move(reply)); });
	const std::pair<const char *, void (Daemon::*)(const Json &, Reply)> ops[] = {
		{ "check", &Daemon::checkRequest },	  { "state", &Daemon::stateRequest },
		{ "picture", &Daemon::pictureRequest },	  { "scenario.stop", &Daemon::scenarioStop },
		{ "scenario.run", &Daemon::scenarioRun },
	};
	for (auto [op, fn] : ops)
		controlSocket_->addOp(op, [this, fn](const auto &req, const auto &, auto reply) {
			(this->*fn)(req, std::move(reply));
		});
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

/* picture: the fabric as dot (ibemu topo show --instance) */
void Daemon::pictureRequest(const Json &, Reply reply)
{
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

bool Daemon::chooseLocal()
{
	host_ = std::make_unique<emu::Host>(io_, subnet_);
	std::vector<fabric::Node *> chosen;
	if (opts_.local.empty()) {
		/* by default the first two CAs (of this host's, in a split
		 * subnet): a server and a client on one host */
		for (const auto &n : subnet_.nodes())
			if (n->type == fabric::NodeType::CA && !n->foreign && chosen.size() < 2)
				chosen.push_back(n.get());
	} else {
		std::stringstream ss(opts_.local);
		std::string item;
		while (std::getline(ss, item, ',')) {
			fabric::Node *n = findCa(subnet_, item);
			if (!n) {
				spdlog::error(
					"--local: no CA \"{}\" in the fabric (give a node id, description or GUID)",
					item);
				return false;
			}
			if (n->foreign) {
				spdlog::error("--local: \"{}\" belongs to host \"{}\" (its daemon simulates it)", item,
					      split_.hosts[size_t(split_.ownerOf[n->index])].name);
				return false;
			}
			chosen.push_back(n);
		}
	}
	if (chosen.empty()) {
		spdlog::error("the fabric has no CA to make local");
		return false;
	}
	for (fabric::Node *n : chosen) {
		std::string name = "ibemu" + std::to_string(host_->hcas().size());
		if (!host_->addHca(*n, name)) {
			spdlog::error("--local: \"{}\" is named twice", n->desc);
			return false;
		}
		spdlog::info("local HCA {}: \"{}\" (node GUID 0x{:016x})", name, n->desc, n->nodeGuid);
	}
	return true;
}

nlohmann::ordered_json Daemon::describe() const
{
	nlohmann::ordered_json j;
	j["instance"] = inst_.name;
	j["pid"] = getpid();
	j["transport"] = cuse_ ? "cuse" : "fuse";
	/* how FUSE requests reach the daemon: "io_uring" (a queue per CPU) or
	 * "/dev/fuse" */
	j["fuse_requests"] = fs_ && fs_->overIoUring() ? "io_uring" : "/dev/fuse";
	j["global"] = opts_.global; /* CUSE nodes under the standard names */
	j["verbs_provider"] = opts_.verbsProvider;
	j["topology"] = !opts_.gen.empty() ? "gen " + opts_.gen
		: opts_.topology.empty()   ? "(built-in default)"
					   : opts_.topology;
	if (web_)
		j["web"] = web_->url();
	if (peers_)
		j["split"] = peers_->status();
	j["fabric"] = { { "switches", subnet_.numSwitches() },
			{ "cas", subnet_.numCas() },
			{ "routers", subnet_.numRouters() },
			{ "links", subnet_.numLinks() } };
	nlohmann::ordered_json devs = nlohmann::ordered_json::array();
	for (const auto &h : host_->hcas()) {
		nlohmann::ordered_json d;
		d["ibdev"] = h->name;
		d["node"] = h->node->desc;
		char guid[24];
		snprintf(guid, sizeof(guid), "0x%016" PRIx64, h->node->nodeGuid);
		d["node_guid"] = guid;
		nlohmann::ordered_json ports = nlohmann::ordered_json::array();
		for (size_t k = 0; k < h->umadPorts.size(); k++) {
			const emu::UmadPort &u = *h->umadPorts[k];
			char v4[INET_ADDRSTRLEN], v6[INET6_ADDRSTRLEN];
			uint32_t a4 = host_->cma().ipv4Of(*h->node, u.portNum());
			if (a4)
				inet_ntop(AF_INET, &a4, v4, sizeof v4);
			else
				v4[0] = '\0'; /* a CA past the 256th of a split subnet */
			inet_ntop(AF_INET6, emu::Cma::ipv6Of(h->madPorts[k]->port().guid).data(), v6, sizeof v6);
			ports.push_back({ { "port", u.portNum() },
					  { "umad", "/dev/infiniband/umad" + std::to_string(u.devNum()) },
					  { "issm", "/dev/infiniband/issm" + std::to_string(u.devNum()) },
					  { "ipv4", v4 },
					  { "ipv6", v6 } });
		}
		d["ports"] = ports;
		if (cuse_)
			d["uverbs"] = "/dev/infiniband/uverbs" + std::to_string(h->verbsNum);
		devs.push_back(d);
	}
	j["devices"] = devs;
	if (cuse_)
		j["rdma_cm"] = "/dev/infiniband/rdma_cm";
	if (sm_)
		j["sm"] = { { "pid", sm_->pid() },
			    { "state", sm_->state() },
			    { "log", sm_->logFile() },
			    { "output", sm_->outFile() } };
	return j;
}

/* What `ibemu status` shows: the description plus each port's state now. */
std::string Daemon::liveStatus() const
{
	nlohmann::ordered_json j = describe();
	size_t i = 0;
	for (const auto &h : host_->hcas()) {
		auto &ports = j["devices"][i++]["ports"];
		for (size_t k = 0; k < h->umadPorts.size(); k++) {
			const emu::UmadPort &u = *h->umadPorts[k];
			const emu::PortAttr a = emu::queryPort(*h->madPorts[k]);
			auto &o = ports[k];
			o["state"] = fabric::portStateName(a.state);
			o["phys_state"] = fabric::physStateName(a.physState);
			o["lid"] = a.lid;
			o["lmc"] = a.lmc;
			o["sm_lid"] = a.smLid;
			o["rate"] = fabric::rateString(a.activeWidth ? a.activeWidth : uint8_t(fabric::kWidth1x),
						       a.activeSpeed);
			char cap[16];
			snprintf(cap, sizeof(cap), "0x%08x", a.capMask);
			o["cap_mask"] = cap;
			o["issm_held"] = u.issmHeld();
			o["open_files"] = u.openFiles();
		}
	}
	i = 0;
	for (const auto &h : host_->hcas())
		j["devices"][i++]["verbs_open_files"] = h->verbs->openFiles();
	/* pinned memory per process, as the kernel's pinned_vm (VmPin) */
	nlohmann::ordered_json pinned = nlohmann::ordered_json::array();
	for (const auto &[pid, pages] : host_->pinned().all())
		pinned.push_back(
			{ { "pid", pid }, { "pinned_pages", pages }, { "pinned_bytes", pages * emu::kPageSize } });
	j["pinned"] = pinned;
	/* who holds the devices, by the process that opened them */
	std::map<pid_t, unsigned> openers;
	if (fs_)
		fs_->openers(openers);
	if (cuse_)
		cuse_->openers(openers);
	nlohmann::ordered_json clients = nlohmann::ordered_json::array();
	for (const auto &[pid, files] : openers)
		clients.push_back({ { "pid", pid }, { "files", files } });
	j["clients"] = clients;
	j["dropped_packets"] = subnet_.droppedPackets();
	j["faults"] = control_->state();
	j["scenarios"] = scenarioStates();
	return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

void Daemon::ready()
{
	if (opts_.sm) {
		std::string err;
		sm_ = std::make_unique<tools::SmProcess>(io_, inst_.runDir + "/opensm");
		if (sm_->start(opts_.smArgs, err) != 0) {
			spdlog::error("{}", err);
			stop(1);
			return;
		}
	}
	if (!startScenario_.events.empty())
		runScenario(std::move(startScenario_));
	std::string tmp = inst_.readyFile() + ".tmp";
	std::ofstream(tmp) << describe().dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
	rename(tmp.c_str(), inst_.readyFile().c_str());
	spdlog::info("ready: devices under /dev/infiniband and /sys/class/infiniband* in this instance's namespace");
	notifyServiceManager("READY=1");
}

void Daemon::awaitStop()
{
	signals_.async_wait([this](const boost::system::error_code &ec, int sig) {
		if (ec)
			return;
		spdlog::info("signal {}: shutting down", sig);
		stop(0);
	});
}

/* OpenSM first, and only once it is gone everything else: it hangs when
 * its files vanish under it. */
void Daemon::stop(int code)
{
	if (stopping_)
		return;
	stopping_ = true;
	exitCode_ = code;
	notifyServiceManager("STOPPING=1");
	if (sm_ && sm_->running()) {
		sm_->stop(kSmGrace, [this] { teardown(); });
		return;
	}
	teardown();
}

void Daemon::teardown()
{
	/* no more live changes: scenarios, flapping links, the socket */
	scenarios_.clear();
	if (control_)
		control_->stop();
	if (web_)
		web_->close();
	if (capture_)
		capture_->stopAll();
	if (controlSocket_)
		controlSocket_->close();
	/* the other hosts see our cables go down */
	if (peers_)
		peers_->stop();
	/* clients first: every open file dies and every parked request is
	 * answered, then the mount goes */
	if (host_)
		for (const auto &h : host_->hcas())
			for (const auto &u : h->umadPorts)
				u->kill();
	if (cuse_)
		cuse_->shutdown();
	if (opts_.global)
		tools::unmountSysClass(inst_.scratchDir()); /* before the FUSE mount it binds goes */
	if (fs_)
		fs_->shutdown();
	signals_.cancel();
	io_.stop();
}

/* Registered memory holds a descriptor per process and file: use every
 * descriptor the hard limit allows. */
void raiseFileLimit()
{
	rlimit nofile;
	if (getrlimit(RLIMIT_NOFILE, &nofile) == 0 && nofile.rlim_cur < nofile.rlim_max) {
		nofile.rlim_cur = nofile.rlim_max;
		setrlimit(RLIMIT_NOFILE, &nofile);
	}
}

bool Daemon::isolate()
{
	std::string err;
	if (opts_.global) {
		/* --global: the standard device names and the host's /sys/class;
		 * one such instance per host */
		if (access("/dev/infiniband/umad0", F_OK) == 0 || access("/sys/class/infiniband_mad", F_OK) == 0) {
			spdlog::error("--global: this host already has InfiniBand devices or a global instance");
			return false;
		}
	} else if (tools::enterPrivateMountNamespace(err) != 0) {
		spdlog::error("{}", err);
		return false;
	}
	return true;
}

/* Whether the FUSE files go over io_uring (cuse_dev/fuse_uring.h). The
 * kernel offers the ring only while the host-wide enable_uring is Y; it is
 * turned on only when asked (--fuse-uring), said so in the log, and put
 * back at exit. The CUSE transport stays on /dev/cuse: the kernel's CUSE
 * never offers the ring. */
bool Daemon::chooseFuseUring()
{
	const char *param = "/sys/module/fuse/parameters/enable_uring";
	if (opts_.fuseUring == "off")
		return false;
	std::string v = tools::UringSwitch::state();
	if (v.empty()) {
		spdlog::info("fuse-uring: not in use (this kernel has no {}); requests go through /dev/fuse", param);
		return false;
	}
	if (opts_.fuseUring == "auto") {
		if (v != "Y")
			spdlog::info("fuse-uring: not in use ({} is N; --fuse-uring turns it on); requests go "
				     "through /dev/fuse",
				     param);
		return v == "Y";
	}
	bool turnedOn;
	std::string why;
	if (!uringSwitch_.hold(turnedOn, why)) {
		spdlog::warn("fuse-uring: not in use ({}); requests go through /dev/fuse", why);
		return false;
	}
	if (!why.empty())
		spdlog::warn("fuse-uring: {}: {} will stay Y after the last instance", why, param);
	if (turnedOn)
		spdlog::info("fuse-uring: turned on {} (host-wide); the last ibemu instance that asked for it sets "
			     "it back to N",
			     param);
	return true;
}

/* CUSE character devices where asked or usable, else FUSE files; the
 * FUSE filesystem serves sysfs either way. */
bool Daemon::startTransport()
{
	std::string err;
	useCuse_ = opts_.global || opts_.transport == "cuse" ||
		(opts_.transport == "auto" && cuse_dev::cuseAvailable());
	if (useCuse_) {
		/* per-instance names under /dev, so instances never collide; a
		 * global instance takes the standard ones */
		std::string prefix = opts_.global ? "infiniband/" : "infiniband/ibemu-" + inst_.name + "/";
		cuse_ = std::make_unique<cuse_dev::CuseDevices>(io_, *host_, prefix, opts_.spinUs);
		if (cuse_->start(err) != 0) {
			spdlog::error("{}", err);
			return false;
		}
	}
	cuse_dev::FuseFs::Options fsOpts;
	fsOpts.deviceFiles = !useCuse_;
	fsOpts.spinUs = opts_.spinUs;
	fsOpts.fuseUring = !useCuse_ && chooseFuseUring();
	fsOpts.status = [this] { return liveStatus(); };
	if (useCuse_) {
		cuse_dev::CuseDevices *c = cuse_.get();
		fsOpts.umadNumbers = [c](unsigned dev, bool issm) {
			return c->numbers(issm ? cuse_dev::NodeKind::Issm : cuse_dev::NodeKind::Umad, dev);
		};
		fsOpts.uverbsNumbers = [c](unsigned n) { return c->numbers(cuse_dev::NodeKind::Uverbs, n); };
		fsOpts.rdmaCmNumbers = [c] { return c->numbers(cuse_dev::NodeKind::RdmaCm, 0); };
	}
	mkdir(inst_.fsDir().c_str(), 0755);
	fs_ = std::make_unique<cuse_dev::FuseFs>(io_, *host_, fsOpts);
	if (fs_->mount(inst_.fsDir(), err) != 0) {
		spdlog::error("{}", err);
		return false;
	}
	spdlog::info("transport: {}", useCuse_ ? "CUSE character devices" : "FUSE files");
	return true;
}

/* Which /dev/infiniband names point where: the CUSE nodes (reached
 * through the host's /dev/infiniband, kept at scratch/dev-infiniband) or
 * the FUSE files. */
Daemon::Links Daemon::linkTable() const
{
	Links t;
	std::string keep = inst_.scratchDir() + "/dev-infiniband";
	auto cuseNode = [&](cuse_dev::NodeKind kind, unsigned num, const std::string &name) {
		std::string p = cuse_->path(kind, num);
		t.nodes.push_back(p);
		t.links.emplace_back(name, keep + p.substr(strlen("/dev/infiniband")));
		return p;
	};
	for (const auto &h : host_->hcas()) {
		for (const auto &u : h->umadPorts)
			for (bool issm : { false, true }) {
				std::string name = (issm ? "issm" : "umad") + std::to_string(u->devNum());
				if (useCuse_)
					cuseNode(issm ? cuse_dev::NodeKind::Issm : cuse_dev::NodeKind::Umad,
						 u->devNum(), name);
				else
					t.links.emplace_back(name, inst_.fsDir() + "/dev/" + name);
			}
		if (useCuse_) /* verbs exist only as character devices */
			t.verbsNodes.push_back(cuseNode(cuse_dev::NodeKind::Uverbs, h->verbsNum,
							"uverbs" + std::to_string(h->verbsNum)));
	}
	if (useCuse_) /* ucma's misc device: 0666 too */
		t.verbsNodes.push_back(cuseNode(cuse_dev::NodeKind::RdmaCm, 0, "rdma_cm"));
	return t;
}

/* On the mounter thread: waits for the CUSE nodes, then mounts the sysfs
 * view and the device links. 0 or a negative errno with err set. */
int Daemon::mountAll(const Links &t, std::string &err) const
{
	int rc = 0;
	for (const auto &n : t.nodes) { /* devtmpfs makes the CUSE nodes soon after INIT */
		struct stat st;
		int tries = 0;
		while (stat(n.c_str(), &st) != 0 && tries++ < 500)
			usleep(10000);
		if (tries > 500) {
			rc = -ENODEV;
			err = "the CUSE device " + n + " did not appear";
			break;
		}
	}
	for (const auto &n : t.verbsNodes) /* uverbs_devnode(): 0666 */
		if (rc == 0)
			chmod(n.c_str(), 0666);
	std::vector<std::string> classes = { "infiniband", "infiniband_mad" }, merged;
	if (useCuse_) {
		classes.push_back("infiniband_verbs");
		merged.push_back("misc"); /* misc/rdma_cm next to the host's */
	}
	if (rc == 0)
		rc = tools::mountSysClass(inst_.fsDir(), classes, merged, inst_.scratchDir(), err);
	if (rc == 0 && !opts_.global)
		rc = tools::mountDevInfiniband(t.links, inst_.scratchDir(), err);
	std::string why;
	if (rc == 0 && !opts_.global && tools::mountVerbsDrivers(why) != 0) /* a speed-up only */
		spdlog::warn("{}; programs load every provider the host lists", why);
	return rc;
}

/* The bind mounts look things up in our FUSE filesystem, which the io
 * thread serves: so they happen on a thread of their own, which then
 * hands the outcome back to the io thread. */
void Daemon::startMounter()
{
	if (useCuse_) { /* the host's /dev/infiniband, at scratch/dev-infiniband once covered */
		std::string node = cuse_->path(cuse_dev::NodeKind::RdmaCm, 0);
		if (!opts_.global)
			node = inst_.scratchDir() + "/dev-infiniband" + node.substr(strlen("/dev/infiniband"));
		cuse_->setRdmaCmNode(node);
	}
	mounter_ = std::thread([this, links = linkTable()] {
		std::string e;
		int rc = mountAll(links, e);
		boost::asio::post(io_, [this, rc, e] {
			if (rc) {
				spdlog::error("{}", e);
				stop(1);
				return;
			}
			ready();
		});
	});
}

int Daemon::run()
{
	raiseFileLimit();
	if (!setupFabric() || !loadScenario() || !runDoLines() || !chooseLocal() || !isolate() || !startTransport() ||
	    !startControl() || !startWeb() || !startPeers())
		return 1;
	awaitStop();
	startMounter();

	io_.run();
	if (mounter_.joinable())
		mounter_.join();
	sm_.reset();
	peers_.reset();
	scenarios_.clear();
	web_.reset();
	capture_.reset();
	controlSocket_.reset();
	control_.reset();
	cuse_.reset();
	fs_.reset();
	host_.reset();
	if (uringSwitch_.release()) /* mounts made meanwhile keep the ring */
		spdlog::info("fuse-uring: set /sys/module/fuse/parameters/enable_uring back to N");
	unlink(inst_.readyFile().c_str());
	spdlog::info("stopped");
	return exitCode_;
}

} /* namespace */

int main(int argc, char **argv)
{
	Options opts;
	CLI::App app{ "ibemud: the ibemu daemon (foreground); `ibemu up` starts it in the background" };
	app.add_option("--instance", opts.instance, "Instance name");
	auto *topo = app.add_option("--topology", opts.topology, "Topology file (ibnetdiscover format)");
	app.add_option("--gen", opts.gen, "Generate the fabric, e.g. fat-tree:levels=2,hosts=16,radix=8")
		->excludes(topo);
	app.add_option("--local", opts.local,
		       "CAs to make local HCAs: node ids, descriptions or GUIDs, comma-separated");
	app.add_option("--transport", opts.transport, "auto, fuse or cuse")
		->check(CLI::IsMember({ "auto", "fuse", "cuse" }));
	app.add_option("--log-level", opts.logLevel, "trace, debug, info, warn, error");
	app.add_flag("--global", opts.global, "CUSE only: devices and sysfs visible host-wide, no namespace");
	app.add_option("--verbs-provider", opts.verbsProvider,
		       "ibemu (ibemu's own provider, what `ibemu exec` loads) or stock (ipathverbs)")
		->check(CLI::IsMember({ "ibemu", "stock" }));
	app.add_option("--spin-us", opts.spinUs,
		       "Stay awake this long after a request before sleeping (0: never spin)");
	app.add_flag("--fuse-uring{on}", opts.fuseUring,
		     "FUSE transport over io_uring, a queue per CPU: --fuse-uring (or =on) turns on the host-wide "
		     "fuse parameter enable_uring (the last instance that asked puts it back); =auto (the default) "
		     "uses the ring if the host "
		     "enables it already; =off never")
		->check(CLI::IsMember({ "auto", "on", "off" }));
	app.add_option("--host", opts.host,
		       "With a topology of several hosts: which host= this daemon is (default: the host name)");
	app.add_option("--subnet-key", opts.subnetKey,
		       "With a topology of several hosts: a file (mode 600) with the key its hosts share");
	app.add_option("--listen", opts.listen,
		       "With a topology of several hosts: ADDR:PORT to listen on instead of the file's addr=");
	app.add_flag("--sm", opts.sm, "Run OpenSM in the instance (cache, temp files and log in the run directory)");
	app.add_option("--scenario", opts.scenario, "A scenario file (TOML) of fault events to play once ready");
	app.add_option("--seed", opts.seed, "With --scenario: the seed of its random choices, instead of the file's");
	auto *web = app.add_option("--web", opts.web,
				   "Serve the live view, read only, at ADDR:PORT (default 127.0.0.1 and any free port)")
			    ->expected(0, 1);
	app.add_option("opensm_args", opts.smArgs, "With --sm: OpenSM's own arguments, after --");
	CLI11_PARSE(app, argc, argv);
	opts.webOn = web->count() > 0;

	tools::Instance inst;
	std::string err;
	if (!tools::makeInstance(opts.instance, inst, err)) {
		fprintf(stderr, "ibemud: %s\n", err.c_str());
		return 2;
	}
	if ((opts.transport == "cuse" || opts.global) && !cuse_dev::cuseAvailable()) {
		fprintf(stderr,
			"ibemud: --transport cuse: /dev/cuse is missing or not writable (load the cuse module)\n");
		return 1;
	}
	if (geteuid() != 0) {
		fprintf(stderr, "ibemud: must run as root (it mounts a FUSE filesystem and a private namespace)\n");
		return 1;
	}
	if (!tools::prepareRunDir(inst, err)) {
		fprintf(stderr, "ibemud: %s\n", err.c_str());
		return 1;
	}
	int holder = 0;
	int pidFd = tools::lockPidFile(inst, holder, err);
	if (pidFd < 0) {
		if (holder)
			fprintf(stderr, "ibemud: instance \"%s\" is already running (pid %d)\n", inst.name.c_str(),
				holder);
		else
			fprintf(stderr, "ibemud: %s\n", err.c_str());
		return 1;
	}

	auto console = std::make_shared<spdlog::sinks::stderr_color_sink_mt>();
	auto file = std::make_shared<spdlog::sinks::basic_file_sink_mt>(inst.logFile(), true);
	auto logger = std::make_shared<spdlog::logger>("ibemud", spdlog::sinks_init_list{ console, file });
	logger->set_level(spdlog::level::from_str(opts.logLevel));
	logger->flush_on(spdlog::level::info);
	spdlog::set_default_logger(logger);
	spdlog::info("instance \"{}\", run directory {}", inst.name, inst.runDir);

	Daemon d(opts, inst);
	int rc = d.run();
	unlink(inst.pidFile().c_str());
	close(pidFd); /* the lock goes with it */
	return rc;
}
