// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// The cluster hosts of an instance (docs/cluster.md): the hosts its local
// HCAs sit in (emu::Hca::hostName), each with a network namespace and a
// mount namespace of its own, as a node of a real cluster has. The mount
// namespace is the instance's with /dev/infiniband and
// /sys/class/infiniband{,_mad,_verbs} showing only the host's HCAs (and
// the instance's own copies of every HCA's covered); the network
// namespace has its loopback up and nothing else yet. A view of a node,
// not a wall between users: see docs/cluster.md.
//
// Each host's namespaces are held by a small child of the daemon (its
// holder, named "ibemu-host"), made at start and kept for the instance's
// life, with a UTS namespace whose host name is the host's: `ibemu exec
// --host NAME` joins /proc/HOLDER/ns/{mnt,net,uts}, so two
// programs of one host share its namespaces. A holder does nothing but wait
// on a pidfd of the daemon: it ends when the daemon does, however the
// daemon ends, and the namespaces go with the last process in them.
//
// One object per daemon. start() runs on the daemon's mounter thread (the
// holders' bind mounts look things up in the FUSE filesystem the io thread
// serves); the lookups (netns(), hostOf(), holder()) on any thread, and
// answer nothing until start() has returned; stop() on the daemon's main
// thread once its io loop has returned and the mounter thread has ended
// (Daemon::run), or inside start() on a failure.
#pragma once

#include <atomic>
#include <string>
#include <sys/types.h>
#include <utility>
#include <vector>

namespace ibemu::tools {

/* What a host's mount namespace shows, made from the instance's. */
struct HostView {
	std::string name;
	/* bind mounts: what, and where (/sys/class/infiniband, ...) */
	std::vector<std::pair<std::string, std::string>> binds;
	/* /dev/infiniband becomes a tmpfs with these device files: name, and
	 * the file (a node or the FUSE file) bind-mounted there */
	std::vector<std::pair<std::string, std::string>> devices;
	/* directories that then get an empty tmpfs over them: where the
	 * instance keeps every HCA's device files and sysfs views
	 * (RUNDIR/fs/{dev,class,hosts}, scratch/dev-infiniband) */
	std::vector<std::string> covers;
};

class HostNamespaces {
public:
	HostNamespaces() = default;
	~HostNamespaces();
	HostNamespaces(const HostNamespaces &) = delete;
	HostNamespaces &operator=(const HostNamespaces &) = delete;

	/* A holder with fresh namespaces for each view. 0, or a negative
	 * errno with err set (the holders made so far are stopped). */
	int start(const std::vector<HostView> &views, std::string &err);
	/* SIGKILL to the holders, and reaped. */
	void stop();

	/* THE API for other parts of the daemon (IPoIB's ib0 goes here):
	 * the network namespace of cluster host `name`, as a descriptor the
	 * object keeps open until stop() (an open of /proc/HOLDER/ns/net,
	 * O_CLOEXEC); -1 for no such host (or before start()). Borrowed:
	 * dup() it to keep it longer. Use it with setns(fd, CLONE_NEWNET) on a
	 * thread or child of your own (never the io thread), or where netlink
	 * takes a namespace descriptor (IFLA_NET_NS_FD moves a link there). */
	int netns(const std::string &name) const;
	/* The host whose network namespace thread tid is in: its name, or ""
	 * (the instance's own, or any other). */
	std::string hostOf(pid_t tid) const;
	/* The pid of host `name`'s holder, 0 if none. */
	pid_t holder(const std::string &name) const;

private:
	struct Entry {
		std::string name;
		pid_t pid = 0;
		int netFd = -1;
		dev_t netDev = 0;
		ino_t netIno = 0;
	};
	std::vector<Entry> hosts_;
	std::atomic<bool> ready_{ false }; /* hosts_ complete: start() has returned */
};

} /* namespace ibemu::tools */
