// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// Local HCAs of the emulated host.
#include "emu/host.h"

#include "fabric/subnet.h"

#include <algorithm>
#include <cerrno>
#include <unistd.h>

namespace ibemu::emu {

namespace {

/* Until a transport provides one: no process can be reached. */
class NoAccess final : public UserAccess {
public:
	int read(pid_t, uint64_t, void *, size_t) override { return -EFAULT; }
	int write(pid_t, uint64_t, const void *, size_t) override { return -EFAULT; }
	int pinnable(pid_t, pid_t, uint64_t, uint64_t, bool) override { return -EFAULT; }
	int credentials(pid_t, ProcessCreds &) override { return -ESRCH; }
	int descriptorOf(pid_t, const UverbsFile &) override { return -EBADF; }
	int takeDescriptor(pid_t, int, FdKind) override { return -EBADF; }
	void discardDescriptor(int fd) override { close(fd); }
	int openMemory(pid_t) override { return -ESRCH; }
	void closeMemory(int) override {}
	int readMemory(int, uint64_t, void *, size_t) override { return -EFAULT; }
	int writeMemory(int, uint64_t, const void *, size_t) override { return -EFAULT; }
};

NoAccess noAccess;

} /* namespace */

Host::Host(boost::asio::io_context &io, fabric::Subnet &subnet)
	: io_(io), subnet_(subnet), access_(&noAccess), ibCm_(io), sa_(io), saMcast_(io, sa_)
{
	cma_ = std::make_unique<Cma>(io, *this, ibCm_, sa_, saMcast_);
	subnet_.setPortListener([this](fabric::Port &p, bool rereg) {
		for (const auto &h : hcas_)
			if (h->node == p.node && h->verbs)
				for (AsyncEvent ev : h->verbs->portChanged(p, rereg))
					portEvent(*h, p.num, ev);
	});
	/* verbs messages from other daemons (docs/multihost.md) */
	subnet_.setDataListener([this](fabric::Port &p, fabric::DataPackets &&packets) {
		if (VerbsDevice *v = verbsAt(p))
			v->receiveRemote(p, std::move(packets));
	});
}

/* The transports close their files first: nothing may refer to a port now. */
Host::~Host()
{
	subnet_.setPortListener(nullptr);
	subnet_.setDataListener(nullptr);
	cma_.reset();
	while (!hcas_.empty())
		removeHca(hcas_.back().get());
	retired_.clear();
}

Hca *Host::addHca(fabric::Node &node, std::string name)
{
	if (node.isSwitch())
		return nullptr;
	for (const auto &h : hcas_)
		if (h->node == &node || h->name == name)
			return nullptr;
	auto hca = std::make_unique<Hca>();
	hca->name = std::move(name);
	hca->node = &node;
	for (unsigned num = 1; num <= node.numPorts; num++) {
		unsigned dev = 0;
		while (usedDevNums_.count(dev))
			dev++;
		usedDevNums_.insert(dev);
		auto mad = std::make_unique<MadPort>(io_, subnet_, node.port(num), clients_);
		hca->umadPorts.push_back(std::make_unique<UmadPort>(*mad, dev, hca->name));
		ibCm_.addPort(*mad);
		sa_.addPort(*mad);
		hca->madPorts.push_back(std::move(mad));
	}
	unsigned vn = 0;
	for (bool used = true; used; vn += used) {
		used = false;
		for (const auto &h : hcas_)
			used = used || h->verbsNum == vn;
	}
	hca->verbsNum = vn;
	hca->verbs = std::make_unique<VerbsDevice>(io_, *this, node);
	hcas_.push_back(std::move(hca));
	return hcas_.back().get();
}

/* ib_umad_remove_one(): the ports die at once (their open files get EIO,
 * EPIPE, POLLERR), but like the kernel's kref'd umad port they stay in
 * memory until the last file on them is closed. */
void Host::removeHca(Hca *hca)
{
	for (auto it = hcas_.begin(); it != hcas_.end(); ++it) {
		if (it->get() != hca)
			continue;
		forEachUlp([hca](KernelUlp &u) { u.hcaRemoved(*hca); });
		hca->verbs->kill();
		if (cma_) /* not while the host itself goes */
			cma_->deviceRemoved(*hca);
		bool busy = hca->verbs->openFiles() > 0;
		for (auto &u : hca->umadPorts) {
			u->kill();
			usedDevNums_.erase(u->devNum());
			busy = busy || u->openFiles() > 0;
		}
		for (auto &m : hca->madPorts) { /* no more receives */
			ibCm_.removePort(*m);
			saMcast_.removePort(*m);
			sa_.removePort(*m);
			if (m->port().host == m.get())
				m->port().host = nullptr;
		}
		if (busy)
			retired_.push_back(std::move(*it));
		hcas_.erase(it);
		break;
	}
	reapRetired();
}

/* over a copy, each ULP checked before its call: one may remove itself
 * or another (and destroy it) from its own */
void Host::forEachUlp(const std::function<void(KernelUlp &)> &fn)
{
	for (KernelUlp *u : std::vector(ulps_))
		if (std::find(ulps_.begin(), ulps_.end(), u) != ulps_.end())
			fn(*u);
}

void Host::reapRetired()
{
	std::erase_if(retired_, [](const std::unique_ptr<Hca> &h) {
		if (h->verbs->openFiles() > 0)
			return false;
		for (auto &u : h->umadPorts)
			if (u->openFiles() > 0)
				return false;
		return true;
	});
}

/* ib_dispatch_event(): to the verbs files (async events) and to the
 * multicast memberships (multicast.c's mcast_event_handler) */
void Host::portEvent(Hca &hca, unsigned portNum, AsyncEvent ev)
{
	hca.verbs->portEvent(portNum, ev);
	if (portNum < 1 || portNum > hca.madPorts.size())
		return;
	MadPort &mp = *hca.madPorts[portNum - 1];
	switch (ev) {
	case IB_EVENT_PORT_ERR:
	case IB_EVENT_LID_CHANGE:
	case IB_EVENT_CLIENT_REREGISTER:
		saMcast_.portEvent(mp, SaMulticast::PortEvent::Error);
		break;
	case IB_EVENT_PKEY_CHANGE:
		saMcast_.portEvent(mp, SaMulticast::PortEvent::PkeyChange);
		break;
	default:
		break;
	}
	forEachUlp([&](KernelUlp &u) { u.portEvent(hca, portNum, ev); });
}

VerbsDevice *Host::verbsAt(const fabric::Port &port) const
{
	for (const auto &h : hcas_)
		if (h->node == port.node)
			return h->verbs.get();
	return nullptr;
}

UmadPort *Host::umadPort(unsigned devNum) const
{
	for (const auto &h : hcas_)
		for (const auto &u : h->umadPorts)
			if (u->devNum() == devNum)
				return u.get();
	return nullptr;
}

} /* namespace ibemu::emu */
