// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// ARP over InfiniBand (RFC 4391 section 6; the kernel's net/ipv4/arp.c on
// an ARPHRD_INFINIBAND device) and the IPv4 neighbour table: a request is
// broadcast on the broadcast group, the owner of the address answers
// unicast, and both learn the other's 20-byte hardware address. Packets
// for a neighbour still unresolved wait (three at most, as the kernel's
// unres_qlen of old); a request is sent again every second, three times
// in all, then the neighbour and what waits for it are dropped. A
// neighbour not heard from for 30 seconds (base_reachable_time) is asked
// again on the next packet to it, which still goes to the address known:
// a neighbour whose port came back with another QPN is found again.
//
// The table is bounded as the kernel's with its default gc thresholds:
// past 128 neighbours (gc_thresh1) a new one first drops those resolved
// and unused for 60 seconds (gc_staletime); at 1024 (gc_thresh3) it
// pushes out one still unresolved, else the one least recently used. A
// sender is learnt only from an ARP for our address or one already known,
// and only a unicast address on the subnet; a probe (sender 0.0.0.0, as
// duplicate address detection sends it) for our address is answered.
#include "emu/ipoib.h"

#include "fabric/node.h"

#include <arpa/inet.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace ibemu::emu {

namespace {

constexpr size_t kArpLen = 8 + 2 * (kIpoibHwAddrLen + 4);
constexpr uint16_t kArpRequest = 1;
constexpr uint16_t kArpReply = 2;
constexpr unsigned kArpProbes = 3; /* mcast_solicit */
constexpr size_t kQueueMax = 3;
constexpr auto kReachable = std::chrono::seconds(30);
constexpr size_t kGcThresh1 = 128;
constexpr size_t kNeighMax = 1024; /* gc_thresh3 */
constexpr auto kGcStale = std::chrono::seconds(60);

uint32_t ipAt(const uint8_t *p)
{
	uint32_t a;
	memcpy(&a, p, 4);
	return a;
}

} /* namespace */

/* neigh_resolve_output(): the packet waits for its neighbour's address */
void Ipoib::resolve(uint32_t dst, std::span<const uint8_t> packet)
{
	auto it = neighs_.find(dst);
	const bool fresh = it == neighs_.end();
	Neigh &n = fresh ? *newNeigh(dst) : it->second;
	n.used = Clock::now();
	if (n.resolved) {
		if (Clock::now() - n.confirmed >= kReachable) { /* stale: ask again, meanwhile use it */
			n.confirmed = Clock::now();
			sendArp(kArpRequest, dst, nullptr);
		}
		return sendUnicast(n.hw, kEtherTypeIpv4, packet);
	}
	if (n.queue.size() >= kQueueMax)
		n.queue.pop_front(); /* the oldest goes, as __neigh_event_send() drops */
	n.queue.emplace_back(packet.begin(), packet.end());
	if (fresh) {
		n.probes = 1;
		sendArp(kArpRequest, dst, nullptr);
		armArpTimer();
	}
}

void Ipoib::sendArp(uint16_t op, uint32_t targetIp, const IpoibHwAddr *targetHw)
{
	std::array<uint8_t, kArpLen> a{};
	a[0] = 0;
	a[1] = kArpHrdInfiniband;
	a[2] = kEtherTypeIpv4 >> 8;
	a[3] = kEtherTypeIpv4 & 0xff;
	a[4] = kIpoibHwAddrLen;
	a[5] = 4;
	a[6] = 0;
	a[7] = static_cast<uint8_t>(op);
	uint8_t *p = a.data() + 8;
	const IpoibHwAddr mine = hwAddr();
	p = std::copy(mine.begin(), mine.end(), p);
	memcpy(p, &cfg_.addr, 4);
	p += 4;
	if (targetHw)
		std::copy(targetHw->begin(), targetHw->end(), p);
	p += kIpoibHwAddrLen;
	memcpy(p, &targetIp, 4);
	if (op == kArpRequest)
		sendBroadcast(kEtherTypeArp, a);
	else
		sendUnicast(*targetHw, kEtherTypeArp, a);
}

/* arp_process(): learn the sender if it asks us or is known already;
 * answer a request for our address */
void Ipoib::arpReceived(std::span<const uint8_t> a)
{
	if (a.size() < kArpLen)
		return;
	const uint16_t hrd = static_cast<uint16_t>(a[0] << 8 | a[1]);
	const uint16_t pro = static_cast<uint16_t>(a[2] << 8 | a[3]);
	const uint16_t op = static_cast<uint16_t>(a[6] << 8 | a[7]);
	if (hrd != kArpHrdInfiniband || pro != kEtherTypeIpv4 || a[4] != kIpoibHwAddrLen || a[5] != 4)
		return;
	IpoibHwAddr sha;
	std::copy_n(a.begin() + 8, kIpoibHwAddrLen, sha.begin());
	const uint32_t spa = ipAt(a.data() + 8 + kIpoibHwAddrLen);
	const uint32_t tpa = ipAt(a.data() + 8 + 2 * kIpoibHwAddrLen + 4);
	const bool forUs = tpa == cfg_.addr;
	if (spa == 0) { /* a probe: answered to its sender, who is not learnt */
		if (forUs && op == kArpRequest)
			sendArp(kArpReply, 0, &sha);
		return;
	}
	if (spa == cfg_.addr || !onSubnetUnicast(spa))
		return;
	if (forUs || neighs_.count(spa))
		learn(spa, sha);
	if (forUs && op == kArpRequest)
		sendArp(kArpReply, spa, &sha);
}

/* a host's address of our subnet: not its network or broadcast address */
bool Ipoib::onSubnetUnicast(uint32_t ip) const
{
	const uint32_t mask = cfg_.prefixLen ? htonl(~uint32_t(0) << (32 - cfg_.prefixLen)) : 0;
	if ((ip & mask) != (cfg_.addr & mask))
		return false;
	if (cfg_.prefixLen >= 31)
		return true;
	return (ip & ~mask) != 0 && (ip & ~mask) != ~mask;
}

/* neigh_alloc() with the kernel's forced garbage collection */
Ipoib::Neigh *Ipoib::newNeigh(uint32_t ip)
{
	const Clock::time_point now = Clock::now();
	if (neighs_.size() >= kGcThresh1)
		std::erase_if(neighs_, [&](const auto &e) { return e.second.resolved && now - e.second.used >= kGcStale; });
	if (neighs_.size() >= kNeighMax) {
		auto victim = std::find_if(neighs_.begin(), neighs_.end(), [](const auto &e) { return !e.second.resolved; });
		if (victim == neighs_.end())
			victim = std::min_element(neighs_.begin(), neighs_.end(), [](const auto &a, const auto &b) {
				return a.second.used < b.second.used;
			});
		neighs_.erase(victim);
	}
	Neigh &n = neighs_[ip];
	n.used = now;
	return &n;
}

/* neigh_update(): the address is known; what waited for it goes */
void Ipoib::learn(uint32_t ip, const IpoibHwAddr &hw)
{
	auto it = neighs_.find(ip);
	Neigh &n = it != neighs_.end() ? it->second : *newNeigh(ip);
	n.resolved = true;
	n.hw = hw;
	n.confirmed = Clock::now();
	std::deque<std::vector<uint8_t>> waiting = std::move(n.queue);
	n.queue.clear();
	for (const auto &pkt : waiting)
		sendUnicast(hw, kEtherTypeIpv4, pkt);
}

void Ipoib::armArpTimer()
{
	if (arpArmed_)
		return;
	arpArmed_ = true;
	arpTimer_.expires_after(std::chrono::seconds(1)); /* retrans_time */
	arpTimer_.async_wait([this, alive = std::weak_ptr<bool>(alive_)](const boost::system::error_code &ec) {
		if (ec || alive.expired())
			return;
		arpArmed_ = false;
		arpTick();
	});
}

/* neigh_timer_handler(): ask again, or give up */
void Ipoib::arpTick()
{
	bool pending = false;
	for (auto it = neighs_.begin(); it != neighs_.end();) {
		Neigh &n = it->second;
		if (n.resolved) {
			++it;
			continue;
		}
		if (n.probes >= kArpProbes) { /* unreachable: its packets are dropped */
			it = neighs_.erase(it);
			continue;
		}
		n.probes++;
		if (joined_)
			sendArp(kArpRequest, it->first, nullptr);
		pending = true;
		++it;
	}
	if (pending)
		armArpTimer();
}

std::optional<IpoibHwAddr> Ipoib::neighbour(uint32_t addr) const
{
	auto it = neighs_.find(addr);
	if (it == neighs_.end() || !it->second.resolved)
		return std::nullopt;
	return it->second.hw;
}

} /* namespace ibemu::emu */
