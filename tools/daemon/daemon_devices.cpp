// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// The daemon's devices (tools/daemon/daemon.h): the private mount
// namespace, the transport (CUSE character devices or FUSE files, over
// io_uring or /dev/fuse), and the mounts of the sysfs view and
// /dev/infiniband, done on a thread of their own.
#include "tools/daemon/daemon.h"

#include "tools/instance/host_verbs.h"
#include "tools/instance/namespace.h"
#include "emu/umad_abi.h"

#include <boost/asio/post.hpp>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <sys/stat.h>
#include <unistd.h>

namespace ibemu::tools {

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
		listGlobalProvider();
	} else if (tools::enterPrivateMountNamespace(err) != 0) {
		spdlog::error("{}", err);
		return false;
	}
	return true;
}

/* --global: programs load the providers the host's /etc/libibverbs.d
 * lists, not the one `ibemu exec` names, so ibemu's is listed there while
 * the instance runs, and the devices carry no PCI identity for ipathverbs
 * to claim them by (libibverbs gives a device to the first provider that
 * matches it, in an order no file name decides). Without ibemu's provider,
 * or with --verbs-provider stock, they keep ipathverbs. */
void Daemon::listGlobalProvider()
{
	if (opts_.verbsProvider != "ibemu")
		return;
	std::string provider = tools::providerPath(), why;
	if (provider.empty()) {
		why = "ibemu's libibverbs provider (libibemu-rdmav34.so) is not installed";
	} else {
		verbsDriver_ = std::make_unique<tools::GlobalVerbsDriver>();
		if (verbsDriver_->install(provider, inst_.name, why)) {
			if (why.empty())
				why = "ibemu's provider " + provider + " listed in " + verbsDriver_->path();
			spdlog::info("--global: {}", why);
			return;
		}
		verbsDriver_.reset();
	}
	verbsProvider_ = "stock";
	providerWhy_ = why;
	spdlog::warn("--global: {}; programs get the stock provider (ipathverbs)", why);
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
	/* programs under exec reach the devices through a seccomp filter,
	 * unless CUSE or FUSE is asked for by name (a --global instance has no
	 * exec to speak of) */
	if (!opts_.global && (opts_.transport == "auto" || opts_.transport == "seccomp"))
		seccomp_ = std::make_unique<cuse_dev::SeccompDevices>(
			io_, *host_, [this](cuse_dev::NodeKind kind, unsigned num) { return numbers(kind, num); },
			opts_.spinUs);
	if (seccomp_ && !cuse_) /* the data path reaches programs through it */
		host_->setAccess(&seccomp_->access());
	/* a cluster host's programs: its HCAs only (the seccomp transport's
	 * know their host from their listener) */
	if (cuse_)
		cuse_->setHostOf([this](pid_t tid) { return hostNs_.hostOf(tid); });
	cuse_dev::FuseFs::Options fsOpts;
	fsOpts.deviceFiles = !useCuse_;
	fsOpts.pciIdentity = !verbsDriver_;
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
	} else if (seccomp_) { /* the kernel's own numbers: no node has others */
		fsOpts.uverbsNumbers = [](unsigned n) { return cuse_dev::kernelNumbers(cuse_dev::NodeKind::Uverbs, n); };
		fsOpts.rdmaCmNumbers = [] { return cuse_dev::kernelNumbers(cuse_dev::NodeKind::RdmaCm, 0); };
	}
	mkdir(inst_.fsDir().c_str(), 0755);
	fs_ = std::make_unique<cuse_dev::FuseFs>(io_, *host_, fsOpts);
	if (fs_->mount(inst_.fsDir(), err) != 0) {
		spdlog::error("{}", err);
		return false;
	}
	spdlog::info("transport: {}{}", useCuse_ ? "CUSE character devices" : "FUSE files",
		     seccomp_ ? "; programs under `ibemu exec` through a seccomp filter" : "");
	return startSeccomp();
}

/* The door exec hands its listeners in at. */
bool Daemon::startSeccomp()
{
	if (!seccomp_)
		return true;
	door_ = std::make_unique<tools::SeccompDoor>(io_, *seccomp_);
	std::string err;
	if (door_->listen(seccompSocket(), err) != 0) {
		spdlog::error("{}", err);
		return false;
	}
	/* a program under the filter cannot install another (launchers'
	 * remote shells: docs/cluster.md, "Jobs across hosts"); the daemon
	 * runs the ibemu installed with it */
	std::string cli;
	for (const auto &p : { tools::programDir() + "/ibemu", tools::programDir() + "/../bin/ibemu",
			       std::string(IBEMU_BINDIR) + "/ibemu" })
		if (access(p.c_str(), X_OK) == 0) {
			cli = p;
			break;
		}
	if (cli.empty()) {
		spdlog::warn("launch: no ibemu next to ibemud: `ibemu exec` under `ibemu exec` cannot run");
		return true;
	}
	launchDoor_ = std::make_unique<tools::LaunchDoor>(io_, cli, inst_.name, [this](pid_t pid) {
		std::string host = hostNs_.hostOf(pid);
		return host.empty() ? pid_t(0) : hostNs_.holder(host);
	});
	if (launchDoor_->listen(launchSocket(), err) != 0) {
		spdlog::error("{}", err);
		return false;
	}
	return true;
}

std::pair<unsigned, unsigned> Daemon::numbers(cuse_dev::NodeKind kind, unsigned num) const
{
	if (cuse_)
		return cuse_->numbers(kind, num);
	if (kind == cuse_dev::NodeKind::Umad || kind == cuse_dev::NodeKind::Issm)
		return { IB_UMAD_MAJOR, kind == cuse_dev::NodeKind::Issm ? IB_ISSM_MINOR_BASE + num : num };
	return cuse_dev::kernelNumbers(kind, num);
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
		std::string uverbs = "uverbs" + std::to_string(h->verbsNum);
		if (useCuse_) /* verbs exist only as character devices */
			t.verbsNodes.push_back(cuseNode(cuse_dev::NodeKind::Uverbs, h->verbsNum, uverbs));
		else if (seccomp_) /* a node for stat(); opened through the filter only */
			t.links.emplace_back(uverbs, inst_.fsDir() + "/dev/" + uverbs);
	}
	if (useCuse_) /* ucma's misc device: 0666 too */
		t.verbsNodes.push_back(cuseNode(cuse_dev::NodeKind::RdmaCm, 0, "rdma_cm"));
	else if (seccomp_)
		t.links.emplace_back("rdma_cm", inst_.fsDir() + "/dev/rdma_cm");
	return t;
}

/* A host's mount namespace: the instance's, with its own classes in the
 * sysfs view (the FUSE filesystem's hosts/NAME/class) and in
 * /dev/infiniband its HCAs' device files and rdma_cm (the links'
 * targets, bind-mounted), and the instance's directories of every HCA's
 * covered. */
std::vector<tools::HostView> Daemon::hostViews(const Links &t) const
{
	std::vector<tools::HostView> views;
	if (opts_.global)
		return views; /* no namespace of its own to start from */
	for (const auto &h : host_->hcas()) {
		auto it = std::find_if(views.begin(), views.end(),
				       [&h](const tools::HostView &v) { return v.name == h->hostName; });
		if (it == views.end()) {
			views.push_back({ h->hostName, {}, {}, {} });
			it = views.end() - 1;
			for (const char *dir : { "/dev", "/class", "/hosts" })
				it->covers.push_back(inst_.fsDir() + dir);
			if (useCuse_)
				it->covers.push_back(inst_.scratchDir() + "/dev-infiniband");
			for (const char *cls : { "infiniband", "infiniband_mad", "infiniband_verbs" })
				if (std::string cl = cls; cl != "infiniband_verbs" || useCuse_ || seccomp_)
					it->binds.emplace_back(inst_.fsDir() + "/hosts/" + h->hostName + "/class/" + cl,
							       "/sys/class/" + cl);
			for (const auto &l : t.links)
				if (l.first == "rdma_cm")
					it->devices.push_back(l);
		}
		std::vector<std::string> mine = { "uverbs" + std::to_string(h->verbsNum) };
		for (const auto &u : h->umadPorts)
			for (const char *stem : { "umad", "issm" })
				mine.push_back(stem + std::to_string(u->devNum()));
		for (const auto &l : t.links)
			if (std::find(mine.begin(), mine.end(), l.first) != mine.end())
				it->devices.push_back(l);
	}
	return views;
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
	if (useCuse_ || seccomp_) {
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
	Links links = linkTable();
	mounter_ = std::thread([this, links, views = hostViews(links)] {
		std::string e, hostErr;
		int rc = mountAll(links, e);
		/* made from the instance's namespace, as mounted; where they
		 * cannot be (a container that may not bring a loopback up), the
		 * hosts have none, as a --global instance's, and the rest serves */
		if (rc == 0 && hostNs_.start(views, hostErr) != 0)
			hostErr += "; `ibemu exec --host` has no namespaces to join";
		else
			hostErr.clear();
		boost::asio::post(io_, [this, rc, e, hostErr] {
			if (rc) {
				spdlog::error("{}", e);
				stop(1);
				return;
			}
			if (!hostErr.empty())
				spdlog::warn("cluster hosts: {}", hostErr);
			ready();
		});
	});
}

} /* namespace ibemu::tools */
