// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// The kernel's rdma cgroup controller (Documentation/admin-guide/
// cgroup-v2.rst, "RDMA"), as ibemu honours it: a uverbs context is one
// hca_handle and every verbs object one hca_object, charged to the cgroup
// of the process that opened the file and to each of its ancestors; past
// any of their `rdma.max` limits for the device the create fails EAGAIN,
// as rdmacg_try_charge() makes it. The chain of cgroups and their limits is
// read once per file, when it is opened (readRdmaChain()); the usage is
// kept here, host-wide, by device and cgroup path.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ibemu::emu {

struct RdmaCgLimit {
	int64_t handles = -1; /* -1: max */
	int64_t objects = -1;
};

/* The limits rdma.max's text sets for device `dev`: lines of
 * "NAME hca_handle=N hca_object=N", either value "max"; none for another
 * device or a line that does not parse. */
RdmaCgLimit rdmaMaxFor(std::string_view text, std::string_view dev);

/* A file's cgroup and its ancestors with a limit for its device, innermost
 * first; the device, since each (cgroup, device) is a pool of its own */
struct RdmaCgChain {
	std::vector<std::pair<std::string, RdmaCgLimit>> levels;
	std::string dev;
	bool empty() const { return levels.empty(); }
};

/* The chain of process `pid` for device `dev`: its cgroup v2 path from
 * procCgroup (the text of /proc/PID/cgroup, the line "0::PATH"), the
 * rdma.max files under root (the cgroup2 mount) along it. Levels without
 * the file, or without a limit for dev, are left out. */
RdmaCgChain readRdmaChain(const std::string &root, std::string_view procCgroup, std::string_view dev);

class RdmaCgroups {
public:
	/* would one more (a handle, else an object) stay within every
	 * level's limit? */
	bool fits(const RdmaCgChain &chain, bool handle) const;
	void charge(const RdmaCgChain &chain, bool handle);
	/* fits() and charge(): 0, or -EAGAIN with nothing charged */
	int tryCharge(const RdmaCgChain &chain, bool handle);
	void uncharge(const RdmaCgChain &chain, bool handle);
	/* what path holds of device dev now: {handles, objects} */
	std::pair<int64_t, int64_t> usage(const std::string &path, const std::string &dev = "") const;

private:
	/* by (device, cgroup path), as the kernel keeps a pool per both */
	std::map<std::pair<std::string, std::string>, std::pair<int64_t, int64_t>> usage_;
};

} /* namespace ibemu::emu */
