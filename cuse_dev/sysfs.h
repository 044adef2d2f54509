// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// The sysfs view of the local HCAs: the /sys/class/infiniband,
// infiniband_mad and infiniband_verbs trees rdma-core reads, with
// the kernel's file names and value formats (drivers/infiniband/core/sysfs.c,
// user_mad.c). Values are rendered when a file is opened, from what emu/
// reports of the device and its ports (emu/hca_attrs.h), so they follow
// whatever an SM set.
//
// The tree is plain data; cuse_dev/fuse_fs.cpp serves it.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace ibemu::emu {
class Host;
}

namespace ibemu::cuse_dev {

/* What reading a file gives: its text, or an errno (e.g. gid_attrs/ndevs on IB). */
struct SysfsValue {
	int err = 0;
	std::string text;
};

struct SysfsNode {
	std::string name;
	bool dir = false;
	uint32_t mode = 0444; /* with S_IFCHR: a device node, of number rdev */
	uint64_t rdev = 0;
	uint64_t ino = 0;
	SysfsNode *parent = nullptr;
	std::vector<std::unique_ptr<SysfsNode>> children;
	std::function<SysfsValue()> render; /* files */
	std::function<int(const std::string &)> store; /* writable files */

	SysfsNode *child(const std::string &n) const;
	SysfsNode *addDir(const std::string &n);
	SysfsNode *addFile(const std::string &n, std::function<SysfsValue()> r, uint32_t mode = 0444);
};

/* Numbers the device files and the sysfs `dev` attributes carry. */
struct DevNumbers {
	/* umadN/issmN major:minor; the kernel's fixed 231:N and 231:64+N unless
	 * a transport (CUSE) got others */
	std::function<std::pair<unsigned, unsigned>(unsigned devNum, bool issm)> umad;
	/* uverbsN major:minor; unset: no uverbs devices (FUSE transport), so no
	 * class/infiniband_verbs */
	std::function<std::pair<unsigned, unsigned>(unsigned verbsNum)> uverbs;
	/* rdma_cm's major:minor; unset: no rdma_cm device, so no
	 * class/misc/rdma_cm */
	std::function<std::pair<unsigned, unsigned>()> rdmaCm;
};

/* Builds class/infiniband, class/infiniband_mad and (with uverbs numbers)
 * class/infiniband_verbs for every local HCA under `root`, and with an
 * rdma_cm number class/misc/rdma_cm (ucma.c's abi_version). pciIdentity:
 * each verbs device's device/modalias names a QLE7340, which the stock
 * ipathverbs provider claims; without it only ibemu's provider, which
 * matches by name, can (docs/verbs.md). */
void buildSysfs(SysfsNode &root, emu::Host &host, const DevNumbers &numbers, bool pciIdentity = true);

/* The same classes (not misc) under root/hosts/NAME/class for each
 * cluster host (emu::Hca::hostName), with that host's HCAs only, under
 * the instance's names and numbers: what a host's mount namespace shows
 * (docs/cluster.md). */
void buildHostSysfs(SysfsNode &root, emu::Host &host, const DevNumbers &numbers, bool pciIdentity = true);

/* Kernel formats, shared with tests */
std::string formatGuid(uint64_t guid); /* 0002:c903:0000:1001 */
std::string formatGid(const uint8_t *gid); /* fe80:0000:...:1001 */

} /* namespace ibemu::cuse_dev */
