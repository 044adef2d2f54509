// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// The daemon of one instance (ibemud): what it owns and the steps it goes
// through. Its members live in several files, one per part of its work:
//   daemon.cpp           run(): the start in order, readiness, stopping
//   daemon_fabric.cpp    the fabric, the other hosts' daemons, scenarios and
//                        do lines loaded at start, the local HCAs
//   daemon_requests.cpp  the control socket, the live view, the requests the
//                        daemon answers itself, the scenarios playing
//   daemon_devices.cpp   the namespace, the transport and the mounts
//   daemon_status.cpp    what the ready file and `ibemu status` show
// main() and the options are in ibemud.cpp.
//
// Threads: main runs the io_context, which owns the subnet, the emulated
// host and the FUSE session. One short-lived thread does the mounts that
// need the FUSE filesystem answering (it touches no emu state).
#pragma once

#include "cuse_dev/cuse_devices.h"
#include "cuse_dev/fuse_fs.h"
#include "cuse_dev/seccomp_devices.h"
#include "emu/host.h"
#include "fabric/subnet.h"
#include "tools/control/control_socket.h"
#include "tools/control/fabric_control.h"
#include "tools/control/scenario.h"
#include "tools/daemon/host_namespaces.h"
#include "tools/daemon/launch_door.h"
#include "tools/daemon/seccomp_door.h"
#include "tools/daemon/sm_process.h"
#include "tools/daemon/uring_switch.h"
#include "tools/instance/fabric_source.h"
#include "tools/instance/host_verbs.h"
#include "tools/instance/instance.h"
#include "tools/netdev/ipoib_netdev.h"
#include "tools/observe/packet_capture.h"
#include "tools/observe/web_view.h"
#include "tools/peer/peer_links.h"

#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <nlohmann/json.hpp>

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace ibemu::tools {

struct DaemonOptions {
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
	bool ipoib = false; /* ib0, ib1, ... in every cluster host's namespace */
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

class Daemon {
public:
	Daemon(const DaemonOptions &opts, const tools::Instance &inst)
		: opts_(opts), inst_(inst), signals_(io_, SIGINT, SIGTERM), verbsProvider_(opts.verbsProvider)
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
	void startIpoib();
	nlohmann::ordered_json ipoibJson(const std::string &hostName) const;
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
	void listGlobalProvider();
	bool startTransport();
	bool chooseFuseUring();
	Links linkTable() const;
	/* what each cluster host's mount namespace shows, from the links */
	std::vector<tools::HostView> hostViews(const Links &t) const;
	int mountAll(const Links &t, std::string &err) const;
	void startMounter();
	void awaitStop();
	void stop(int code);
	void teardown();
	void ready();
	nlohmann::ordered_json describe() const;
	nlohmann::ordered_json hostsJson() const;
	nlohmann::ordered_json otherHostsJson() const;
	nlohmann::ordered_json globalVerbsWarnings() const;
	std::string liveStatus() const;

	const DaemonOptions &opts_;
	const tools::Instance &inst_;
	boost::asio::io_context io_{ 1 };
	boost::asio::signal_set signals_;
	fabric::Subnet subnet_;
	std::unique_ptr<emu::Host> host_;
	std::unique_ptr<cuse_dev::FuseFs> fs_;
	std::unique_ptr<cuse_dev::CuseDevices> cuse_;
	bool useCuse_ = false;
	/* programs under `ibemu exec` and OpenSM: the seccomp transport */
	std::unique_ptr<cuse_dev::SeccompDevices> seccomp_;
	std::unique_ptr<tools::SeccompDoor> door_;
	/* where a program under the filter has `ibemu exec` run for it */
	std::unique_ptr<tools::LaunchDoor> launchDoor_;
	bool startSeccomp();
	/* the numbers of a device, as sysfs and fstat() give them */
	std::pair<unsigned, unsigned> numbers(cuse_dev::NodeKind kind, unsigned num) const;
	std::string seccompSocket() const { return inst_.runDir + "/seccomp.sock"; }
	std::string launchSocket() const { return inst_.runDir + "/launch.sock"; }
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
	/* the provider programs get: opts_.verbsProvider, or "stock" when a
	 * --global instance could not list ibemu's (providerWhy_ says why) */
	std::string verbsProvider_;
	std::string providerWhy_;
	std::unique_ptr<tools::GlobalVerbsDriver> verbsDriver_; /* --global: ibemu's listed */
	/* the hosts' ib0, ib1, ... (daemon_ipoib.cpp), made when ready */
	struct IpoibIf {
		std::string host;
		std::string hca;
		unsigned port = 0;
		uint32_t addr = 0; /* network order */
		std::unique_ptr<netdev::IpoibNetdev> dev;
	};
	std::vector<IpoibIf> ipoib_;
	std::thread mounter_;
	/* the cluster hosts' namespaces (docs/cluster.md); netns() gives a
	 * host's network namespace */
	tools::HostNamespaces hostNs_;
	tools::UringSwitch uringSwitch_; /* --fuse-uring=on: held while we run */
	bool stopping_ = false;
	int exitCode_ = 0;
};

} /* namespace ibemu::tools */
