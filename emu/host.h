// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// The emulated host: the local HCAs it has, the kernel-wide MAD client table
// and umad device numbering.
//
// Lifetime rules: a Host owns its Hcas (unique_ptr); an Hca owns one MadPort
// and one UmadPort per port, and its VerbsDevice. The host's kernel clients
// of the MAD layer (the IB CM and the SA client, each with an agent on
// every local port) and the RDMA CM on top of them live as long as the Host. Removing an HCA kills its umad ports first, so
// transports holding open files see them die cleanly before the HCA goes.
#pragma once

#include "emu/cma.h"
#include "emu/ib_cm.h"
#include "emu/mad_port.h"
#include "emu/pinned_vm.h"
#include "emu/rdma_cgroup.h"
#include "emu/sa_multicast.h"
#include "emu/sa_query.h"
#include "emu/umad_port.h"
#include "emu/user_access.h"
#include "emu/verbs_device.h"

#include <boost/asio/io_context.hpp>

#include <functional>
#include <memory>
#include <set>
#include <string>
#include <vector>

namespace ibemu::fabric {
class Subnet;
struct Node;
}

namespace ibemu::emu {

struct Hca;

/* A kernel upper-layer protocol on the host's HCAs (an ib_client with its
 * ib_event_handler, as IPoIB is): it hears every port event after the
 * host's own clients have, and an HCA's removal before the HCA goes. */
class KernelUlp {
public:
	virtual void portEvent(Hca &hca, unsigned portNum, AsyncEvent ev) = 0;
	virtual void hcaRemoved(Hca &hca) = 0;

protected:
	~KernelUlp() = default;
};

struct Hca {
	std::string name; /* the ib device name, e.g. "mlx5_0" */
	fabric::Node *node = nullptr;
	std::vector<std::unique_ptr<MadPort>> madPorts; /* index = port number - 1 */
	std::vector<std::unique_ptr<UmadPort>> umadPorts; /* index = port number - 1 */
	std::unique_ptr<VerbsDevice> verbs;
	unsigned verbsNum = 0; /* N of uverbsN */
	/* the cluster host it sits in (docs/cluster.md): its programs see
	 * only their host's HCAs and bind only their addresses */
	std::string hostName;
};

class Host {
public:
	Host(boost::asio::io_context &io, fabric::Subnet &subnet);
	~Host();
	Host(const Host &) = delete;
	Host &operator=(const Host &) = delete;

	/* Makes a CA of the subnet a local HCA: a MAD layer on every port and
	 * umadN/issmN numbers taken lowest-free, ports in order, as the
	 * kernel's ib_umad does. Returns null (and errno-like -EINVAL) for
	 * switches and nodes already local. */
	Hca *addHca(fabric::Node &node, std::string name);
	/* Unplugs a local HCA: its ports die and their numbers are free again;
	 * ports with open files are kept until those files are closed (the
	 * next removeHca or reapRetired() frees them). */
	void removeHca(Hca *hca);
	void reapRetired();

	const std::vector<std::unique_ptr<Hca>> &hcas() const { return hcas_; }
	UmadPort *umadPort(unsigned devNum) const;
	MadClients &clients() { return clients_; }
	/* The verbs device behind a CA port, if that CA is local. */
	VerbsDevice *verbsAt(const fabric::Port &port) const;
	/* How the verbs layer reaches user processes (the transport's). */
	void setAccess(UserAccess *ua) { access_ = ua; }
	UserAccess &access() const { return *access_; }
	PinnedVm &pinned() { return pinned_; }
	RdmaCgroups &rdmaCgroups() { return rdmaCgroups_; }
	/* the RDMA CM (rdma_cm files use it) */
	Cma &cma() { return *cma_; }
	/* the SA client and the multicast memberships, for kernel ULPs */
	SaClient &sa() { return sa_; }
	SaMulticast &saMulticast() { return saMcast_; }
	/* ib_register_client(): until removeUlp() */
	void addUlp(KernelUlp *ulp) { ulps_.push_back(ulp); }
	void removeUlp(KernelUlp *ulp) { std::erase(ulps_, ulp); }
	boost::asio::io_context &io() const { return io_; }
	fabric::Subnet &subnet() const { return subnet_; }

private:
	void forEachUlp(const std::function<void(KernelUlp &)> &fn);
	void portEvent(Hca &hca, unsigned portNum, AsyncEvent ev);

	boost::asio::io_context &io_;
	fabric::Subnet &subnet_;
	MadClients clients_;
	PinnedVm pinned_;
	RdmaCgroups rdmaCgroups_;
	UserAccess *access_;
	std::vector<std::unique_ptr<Hca>> hcas_;
	IbCm ibCm_;
	SaClient sa_;
	SaMulticast saMcast_;
	std::unique_ptr<Cma> cma_;
	std::vector<std::unique_ptr<Hca>> retired_; /* removed, files still open */
	std::set<unsigned> usedDevNums_;
	std::vector<KernelUlp *> ulps_;
};

} /* namespace ibemu::emu */
