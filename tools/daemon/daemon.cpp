// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// The daemon's life (tools/daemon/daemon.h): run() takes the steps of the
// start in order; ready() once the mounts are done; stop() and teardown()
// at a signal or a failure.
//
// With --sm it also runs OpenSM in the instance (tools/daemon/sm_process.h) and at
// shutdown stops it before any device goes.
#include "tools/daemon/daemon.h"

#include "cuse_dev/seccomp_filter.h"

#include "tools/control/json_text.h"
#include "tools/instance/namespace.h"

#include <spdlog/spdlog.h>

#include <cstdio>
#include <fstream>
#ifdef IBEMU_HAVE_SD_NOTIFY
#include <systemd/sd-daemon.h>
#endif
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

namespace ibemu::tools {

namespace {

/* How long OpenSM gets to exit after SIGTERM before SIGKILL */
constexpr std::chrono::seconds kSmGrace{ 5 };

/* Type=notify units (tools/daemon/ibemud@.service.in): a no-op elsewhere */
void notifyServiceManager(const char *state)
{
#ifdef IBEMU_HAVE_SD_NOTIFY
	sd_notify(0, state);
#else
	(void)state;
#endif
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

} /* namespace */

void Daemon::ready()
{
	if (opts_.ipoib)
		startIpoib(); /* the hosts' ib0, ib1 (docs/cluster.md) */
	if (opts_.sm) {
		std::string err;
		sm_ = std::make_unique<tools::SmProcess>(io_, inst_.smDir());
		int rc;
		int sv[2];
		rlimit nofile{};
		getrlimit(RLIMIT_NOFILE, &nofile);
		int base = cuse_dev::seccomp::reservedBase(nofile.rlim_cur);
		if (seccomp_ && base > 0 && socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0) {
			door_->take(sv[0]);
			rc = sm_->start(opts_.smArgs, sv[1], base, err);
		} else {
			rc = sm_->start(opts_.smArgs, err);
		}
		if (rc != 0) {
			spdlog::error("{}", err);
			stop(1);
			return;
		}
	}
	if (!startScenario_.events.empty())
		runScenario(std::move(startScenario_));
	std::string tmp = inst_.readyFile() + ".tmp";
	std::ofstream(tmp) << jsonText(describe(), 2) << "\n";
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
	if (door_)
		door_->close();
	if (launchDoor_)
		launchDoor_->close();
	if (seccomp_)
		seccomp_->shutdown();
	if (cuse_)
		cuse_->shutdown();
	if (opts_.global)
		tools::unmountSysClass(inst_.scratchDir()); /* before the FUSE mount it binds goes */
	if (verbsDriver_)
		verbsDriver_->remove();
	if (fs_)
		fs_->shutdown();
	signals_.cancel();
	io_.stop();
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
	hostNs_.stop();
	sm_.reset();
	peers_.reset();
	scenarios_.clear();
	web_.reset();
	capture_.reset();
	controlSocket_.reset();
	control_.reset();
	launchDoor_.reset();
	door_.reset();
	seccomp_.reset();
	cuse_.reset();
	fs_.reset();
	ipoib_.clear(); /* before the Host */
	host_.reset();
	if (uringSwitch_.release()) /* mounts made meanwhile keep the ring */
		spdlog::info("fuse-uring: set /sys/module/fuse/parameters/enable_uring back to N");
	unlink(inst_.readyFile().c_str());
	spdlog::info("stopped");
	return exitCode_;
}

} /* namespace ibemu::tools */
