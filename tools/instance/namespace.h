// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// The instance's private mount namespace: where its sysfs view and device
// files appear at the paths stock tools use (/sys/class/infiniband*,
// /dev/infiniband), without changing what the rest of the machine sees.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace ibemu::tools {

/* unshare(CLONE_NEWNS) and make every mount private, so nothing mounted
 * afterwards leaks to (or from) the host. */
int enterPrivateMountNamespace(std::string &err);

/* /sys/class becomes a tmpfs holding the host's classes (bind-mounted
 * back) plus <fsRoot>/class/{names}, which replace the host's. A class in
 * `merged` keeps the host's entries (links to /sys/devices, as sysfs has
 * them) next to <fsRoot>/class/<class>/<entry> (misc: rdma_cm). scratch is
 * a private directory. */
int mountSysClass(const std::string &fsRoot, const std::vector<std::string> &names,
		  const std::vector<std::string> &merged, const std::string &scratch, std::string &err);

/* /dev/infiniband becomes a tmpfs with links: each pair is a name and the
 * path it points to. The host's /dev/infiniband stays reachable at
 * <scratch>/dev-infiniband (CUSE nodes live there). */
int mountDevInfiniband(const std::vector<std::pair<std::string, std::string>> &links, const std::string &scratch,
		       std::string &err);

/* /etc/libibverbs.d becomes a read-only tmpfs holding only the host's
 * ipathverbs.driver, the stock provider that ibemu's HCAs match (ibemu's
 * own comes in RDMAV_DRIVERS from `ibemu exec`), for the namespace's life.
 * libibverbs loads every provider listed there at a program's first device
 * list (60 to 70 ms of each start in the VM suite's TCG guest), and in the
 * namespace no other can match a device. A host without the directory
 * keeps none. A failure leaves the host's list, as it was, and says why. */
int mountVerbsDrivers(std::string &err);
/* Undoes mountSysClass (for --global, where it was done host-wide). */
void unmountSysClass(const std::string &scratch);

/* Joins the mount namespace of process pid (for `ibemu exec`). */
int joinMountNamespace(int pid, std::string &err);
/* Joins the network, mount and UTS namespaces of a cluster host's holder
 * (tools/daemon/host_namespaces.h) through a pidfd, if it is a child of
 * daemonPid and still alive once joined (for `ibemu exec --host`): 0,
 * -ESRCH when it is no such child (gone, or a pid reused), or another
 * negative errno, with err set. */
int joinHostNamespaces(int daemonPid, int holder, std::string &err);

} /* namespace ibemu::tools */
