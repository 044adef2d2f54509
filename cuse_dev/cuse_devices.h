// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// The CUSE transport: real character devices for umadN, issmN and uverbsN,
// one CUSE session each, created through /dev/cuse and driven by the
// io_context. umad and issm requests go to UmadFiles, like the FUSE
// transport's; uverbs requests to VerbsFiles (verbs need a character
// device: libibverbs checks st_rdev, so there is no FUSE-file variant).
//
// The nodes appear (devtmpfs) at /dev/<prefix>umadN with a dynamic major;
// the instance's namespace links /dev/infiniband/umadN to them, and the
// sysfs `dev` files carry their real numbers.
#pragma once

#include <boost/asio/io_context.hpp>

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <sys/types.h>
#include <utility>

namespace ibemu::emu {
class Host;
}

namespace ibemu::cuse_dev {

enum class NodeKind { Umad, Issm, Uverbs, RdmaCm }; /* RdmaCm: one node, its number ignored */

class CuseDevices {
public:
	/* prefix: the device name prefix under /dev, e.g. "infiniband/ibemu-NAME/" */
	CuseDevices(boost::asio::io_context &io, emu::Host &host, std::string prefix, unsigned spinUs);
	~CuseDevices();
	CuseDevices(const CuseDevices &) = delete;
	CuseDevices &operator=(const CuseDevices &) = delete;

	/* Creates every device. Returns 0 or a negative errno with err set. */
	int start(std::string &err);
	void shutdown();
	/* The processes that opened its devices, and how many each. */
	void openers(std::map<pid_t, unsigned> &out) const;

	/* /dev path of a device, e.g. /dev/infiniband/ibemu-NAME/umad0 */
	std::string path(NodeKind kind, unsigned num) const;
	/* its major:minor, once the node exists (0:0 before) */
	std::pair<unsigned, unsigned> numbers(NodeKind kind, unsigned num) const;
	/* where the rdma_cm node is reachable in the daemon's own namespace
	 * (its /dev/infiniband may be covered), for MIGRATE_ID's check */
	void setRdmaCmNode(std::string path);
	/* which cluster host a caller (by thread id) belongs to, "" for the
	 * whole instance: the rdma_cm files it opens keep to that host's HCAs */
	void setHostOf(std::function<std::string(pid_t tid)> hostOf);

	struct Impl;

private:
	std::unique_ptr<Impl> impl_;
};

/* Is CUSE usable here (/dev/cuse present and writable)? */
bool cuseAvailable();

} /* namespace ibemu::cuse_dev */
