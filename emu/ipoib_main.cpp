// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// The IPoIB device of one port (ipoib_main.c): its addresses, transmit by
// destination (the broadcast group, or a neighbour through its path), the
// path table of PathRecords by destination GID, and what port events and
// the HCA's removal do to it.
#include "emu/ipoib.h"

#include "emu/mad_port.h"
#include "fabric/node.h"

#include <boost/asio/post.hpp>

#include <arpa/inet.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <string>

namespace ibemu::emu {

namespace {

constexpr uint32_t kPathTimeoutMs = 1000; /* path_rec_start() */
constexpr size_t kPathQueueMax = 3; /* IPOIB_MAX_PATH_REC_QUEUE */
/* paths at most: as many as neighbours (each neighbour has one path, and
 * ARP may name a new GID for a neighbour at any time) */
constexpr size_t kPathMax = 1024;

unsigned checkedPort(const Hca &hca, unsigned portNum)
{
	if (portNum < 1 || portNum > hca.madPorts.size())
		throw std::invalid_argument("ipoib: no port " + std::to_string(portNum));
	return portNum;
}

} /* namespace */

Ipoib::Ipoib(Host &host, Hca &hca, unsigned portNum, const IpoibConfig &cfg, Deliver deliver)
	: host_(host), hca_(&hca), portNum_(checkedPort(hca, portNum)), cfg_(cfg), deliver_(std::move(deliver)), joinTimer_(host.io()),
	  arpTimer_(host.io())
{
	host_.addUlp(this);
	createQp();
	startJoin();
}

Ipoib::~Ipoib()
{
	host_.removeUlp(this);
	carrierChanged_ = nullptr; /* its owner is going */
	teardown();
}

fabric::Port &Ipoib::port() const
{
	return hca_->node->port(portNum_);
}

MadPort &Ipoib::madPort() const
{
	return *hca_->madPorts[portNum_ - 1];
}

fabric::Gid Ipoib::portGid() const
{
	fabric::Gid g{};
	const fabric::Port &p = port();
	for (int i = 0; i < 8; i++) {
		g[size_t(i)] = static_cast<uint8_t>(p.gidPrefix >> (56 - 8 * i));
		g[size_t(8 + i)] = static_cast<uint8_t>(p.guid >> (56 - 8 * i));
	}
	return g;
}

/* RFC 4391 section 9.1.1: reserved flags, the QPN, the port GID */
IpoibHwAddr Ipoib::hwAddr() const
{
	IpoibHwAddr a{};
	const uint32_t q = qpn();
	a[1] = static_cast<uint8_t>(q >> 16);
	a[2] = static_cast<uint8_t>(q >> 8);
	a[3] = static_cast<uint8_t>(q);
	if (hca_) {
		const fabric::Gid g = portGid();
		std::copy(g.begin(), g.end(), a.begin() + 4);
	}
	return a;
}

IpoibHwAddr Ipoib::broadcastAddr() const
{
	IpoibHwAddr a{ 0x00, 0xff, 0xff, 0xff };
	const fabric::Gid g = ipoibBroadcastMgid(cfg_.pkey);
	std::copy(g.begin(), g.end(), a.begin() + 4);
	return a;
}

/* the group's MTU less the encapsulation header, at most 2044 */
uint32_t Ipoib::mtu() const
{
	if (!joined_)
		return kIpoibMaxMtu;
	const uint32_t groupMtu = 128u << std::clamp<uint8_t>(bcast_.mtu, 1, 5);
	return std::min<uint32_t>(kIpoibMaxMtu, groupMtu - kIpoibEncapLen);
}

int Ipoib::transmit(std::span<const uint8_t> pkt)
{
	if (!hca_)
		return -ENODEV;
	if (!joined_)
		return -ENETDOWN;
	if (pkt.size() < 20 || (pkt[0] >> 4) != 4)
		return -EINVAL;
	if (pkt.size() > mtu())
		return -EMSGSIZE;
	uint32_t dst;
	memcpy(&dst, pkt.data() + 16, 4);
	const uint32_t mask = cfg_.prefixLen ? htonl(~uint32_t(0) << (32 - cfg_.prefixLen)) : 0;
	if (dst == INADDR_BROADCAST || dst == (cfg_.addr | ~mask) || (ntohl(dst) >> 28) == 0xe) {
		sendBroadcast(kEtherTypeIpv4, pkt);
		return 0;
	}
	if ((dst & mask) != (cfg_.addr & mask))
		return -ENETUNREACH;
	if (dst == cfg_.addr)
		return -EINVAL; /* the stack loops its own address back itself */
	resolve(dst, pkt);
	return 0;
}

/* ipoib_mcast_send() to the broadcast group: its MLID, a GRH to its MGID */
void Ipoib::sendBroadcast(uint16_t type, std::span<const uint8_t> payload)
{
	ib_uverbs_ah_attr ah{};
	ah.dlid = bcast_.mlid;
	ah.sl = bcast_.sl;
	ah.is_global = 1;
	ah.port_num = static_cast<uint8_t>(portNum_);
	std::copy(bcast_.mgid.begin(), bcast_.mgid.end(), ah.grh.dgid);
	ah.grh.hop_limit = bcast_.hopLimit;
	ah.grh.traffic_class = bcast_.trafficClass;
	ah.grh.flow_label = bcast_.flowLabel;
	postSend(ah, kMulticastQpn, encap(type, payload));
}

/* neigh_add_path() / ipoib_send() by the path to the hardware address's
 * GID; a path still unknown is asked of the SA, and the frame waits */
void Ipoib::sendUnicast(const IpoibHwAddr &to, uint16_t type, std::span<const uint8_t> payload)
{
	const uint32_t dqpn = uint32_t(to[1]) << 16 | uint32_t(to[2]) << 8 | to[3];
	fabric::Gid dgid;
	std::copy(to.begin() + 4, to.end(), dgid.begin());
	auto it = paths_.find(dgid);
	if (it == paths_.end()) {
		if (paths_.size() >= kPathMax) { /* a path no query is out for goes, or the frame */
			auto idle = std::find_if(paths_.begin(), paths_.end(), [](const auto &e) { return !e.second.query; });
			if (idle == paths_.end())
				return;
			paths_.erase(idle);
		}
		it = paths_.try_emplace(dgid).first;
	}
	Path &p = it->second;
	if (p.valid) {
		ib_uverbs_ah_attr ah{};
		ah.dlid = p.dlid;
		ah.sl = p.sl;
		ah.port_num = static_cast<uint8_t>(portNum_);
		return postSend(ah, dqpn, encap(type, payload));
	}
	if (p.queue.size() < kPathQueueMax) /* else the new frame is dropped */
		p.queue.push_back({ dqpn, encap(type, payload) });
	if (!p.query)
		startPathQuery(dgid, p);
}

/* path_rec_start(): DGID, SGID, NumbPath, TClass and P_Key */
void Ipoib::startPathQuery(const fabric::Gid &dgid, Path &p)
{
	PathRecord rec;
	rec.dgid = dgid;
	rec.sgid = portGid();
	rec.numbPath = 1;
	rec.pkey = cfg_.pkey | 0x8000;
	rec.trafficClass = bcast_.trafficClass;
	/* the answer names its query: one for a path flushed and asked
	 * again since is not the new path's */
	auto query = std::make_shared<int64_t>(0);
	const int64_t id = host_.sa().pathRecGet(
		madPort(), rec, PR_DGID | PR_SGID | PR_NUMB_PATH | PR_TCLASS | PR_PKEY, kPathTimeoutMs,
		[this, dgid, query, alive = std::weak_ptr<bool>(alive_)](int status, const PathRecord &r) {
			if (alive.expired())
				return;
			boost::asio::post(host_.io(), [this, dgid, id = *query, alive, status, r] {
				if (!alive.expired())
					pathDone(dgid, id, status, r);
			});
		});
	if (id < 0) {
		paths_.erase(dgid);
		return;
	}
	*query = id;
	p.query = id;
}

/* path_rec_completion(): what waited goes, or is dropped with the path */
void Ipoib::pathDone(const fabric::Gid &dgid, int64_t query, int status, const PathRecord &rec)
{
	auto it = paths_.find(dgid);
	if (it == paths_.end() || it->second.query != query)
		return;
	Path &p = it->second;
	p.query = 0;
	if (status != 0) {
		paths_.erase(it);
		return;
	}
	p.valid = true;
	p.dlid = rec.dlid;
	p.sl = rec.sl;
	std::deque<Pending> waiting = std::move(p.queue);
	p.queue.clear();
	ib_uverbs_ah_attr ah{};
	ah.dlid = p.dlid;
	ah.sl = p.sl;
	ah.port_num = static_cast<uint8_t>(portNum_);
	for (Pending &f : waiting)
		postSend(ah, f.qpn, std::move(f.frame));
}

/* ipoib_flush_paths(): every path is asked for again when next used */
void Ipoib::flushPaths()
{
	for (auto &[gid, p] : paths_)
		if (p.query)
			host_.sa().cancel(p.query);
	paths_.clear();
}

/* ipoib_event(): what may have moved the paths (a new LID, an SM, the
 * link) flushes them; the membership's loss comes from the SA's side
 * (joinDone with -ENETRESET); a port that comes up joins at once */
void Ipoib::portEvent(Hca &hca, unsigned portNum, AsyncEvent ev)
{
	if (&hca != hca_ || portNum != portNum_)
		return;
	switch (ev) {
	case IB_EVENT_PORT_ACTIVE:
		flushPaths();
		if (!joined_ && !joining_) {
			backoff_ = 1;
			joinTimer_.cancel();
			startJoin();
		}
		break;
	case IB_EVENT_PORT_ERR:
	case IB_EVENT_LID_CHANGE:
	case IB_EVENT_SM_CHANGE:
	case IB_EVENT_CLIENT_REREGISTER:
	case IB_EVENT_PKEY_CHANGE:
		flushPaths();
		break;
	default:
		break;
	}
}

void Ipoib::hcaRemoved(Hca &hca)
{
	if (&hca == hca_)
		teardown();
}

void Ipoib::teardown()
{
	if (!hca_)
		return;
	alive_ = std::make_shared<bool>(true); /* what was queued for the HCA finds nothing */
	joinTimer_.cancel();
	arpTimer_.cancel();
	arpArmed_ = false;
	leaveBroadcast();
	neighs_.clear();
	destroyQp();
	hca_ = nullptr;
}

} /* namespace ibemu::emu */
