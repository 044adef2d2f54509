// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// The daemon's fabric (tools/daemon/daemon.h): the subnet built from the
// topology or generated, the other hosts' daemons of a split subnet, the
// --scenario and the topology's `do` lines checked and run before anything
// starts, and the CAs made local HCAs.
#include "tools/daemon/daemon.h"

#include "tools/control/ibsim_script.h"

#include <spdlog/spdlog.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>
#include <sstream>
#include <unistd.h>

namespace ibemu::tools {

namespace {

/* Finds a CA by node id, description, host name or GUID. */
fabric::Node *findCa(fabric::Subnet &subnet, const std::string &what)
{
	fabric::Node *n = subnet.resolveNode(what);
	return n && !n->isSwitch() ? n : nullptr;
}

} /* namespace */

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
				spdlog::error("--local: {} (give a CA's node id, description, host name or GUID)",
					      subnet_.resolveNode(item) ? "\"" + item + "\" is a switch, not a CA"
									: subnet_.noSuchNode(item));
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
		emu::Hca *hca = host_->addHca(*n, name);
		if (!hca) {
			spdlog::error("--local: \"{}\" is named twice", n->desc);
			return false;
		}
		/* the cluster host it sits in: its description's first word, as
		 * `--local` names hosts ("ibemu-host1 HCA-1": ibemu-host1); one
		 * without a description, or whose first word is no name for a
		 * directory (it names some: "..", "a/b"), is a host of its own,
		 * named after it */
		std::string_view word = fabric::descHost(n->desc);
		hca->hostName = fabric::isPathName(word) ? std::string(word) : name;
		if (!word.empty() && hca->hostName == name)
			spdlog::warn("local HCA {}: \"{}\" names no host (host names use letters, digits, '.', '_' "
				     "and '-', start with a letter or digit, and have at most 64 characters): host {}",
				     name, n->desc, name);
		spdlog::info("local HCA {}: \"{}\" (node GUID 0x{:016x}), host {}", name, n->desc, n->nodeGuid,
			     hca->hostName);
	}
	return true;
}

} /* namespace ibemu::tools */
