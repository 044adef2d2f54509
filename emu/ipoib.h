// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// IP over InfiniBand in datagram mode (RFC 4391, 4392; the kernel's
// drivers/infiniband/ulp/ipoib) on one port of a local HCA: what the
// kernel's ib0 does below the network stack, with IPv4 packets in and out
// as byte buffers (a TUN device carries them to a network namespace:
// tools/netdev/).
//
// The port has a UD QP of its own, numbered from its HCA's QPN space like
// any user QP, and a 20-byte hardware address: that QPN and the port GID.
// It joins the partition's broadcast group ff12:401b:<P_Key>::ffff:ffff
// through the SA (an MCMemberRecord Set, emu/sa_multicast.h) as a full
// member, with the kernel's component mask (MGID, PortGID, P_Key,
// JoinState): the SM must have the group (OpenSM makes it for every
// partition with IPoIB), and its record gives the Q_Key, MLID, MTU and SL
// the port uses from then on. Until it has joined the port has no carrier;
// a join that fails is tried again after 1, 2, 4, 8, then every 16
// seconds, and a port event that cost the port its membership (a client
// reregister, a new LID, the link down and up) makes it join again.
//
// Every packet is an IBA UD SEND through the fabric (the switches'
// forwarding tables, PMA counters, captures), with IPoIB's 4-byte
// encapsulation header: broadcast and multicast IPv4 to the broadcast
// group (its MLID, a GRH to the MGID, QPN 0xffffff), unicast to the
// destination's QPN by a PathRecord to its GID (emu/sa_query.h), whose
// address ARP over InfiniBand resolved (hardware type 32, 20-byte
// addresses), as the kernel's neighbour and path tables do. The port
// answers ARP requests for its own address.
//
// Where it is (the kernel's ipoib, by concern):
//   ipoib_main.cpp       the device, transmit by destination, the path table (ipoib_main.c)
//   ipoib_ib.cpp         its UD QP: sends and receives (ipoib_ib.c, ipoib_verbs.c)
//   ipoib_multicast.cpp  the broadcast group: join, attach, rejoin (ipoib_multicast.c)
//   ipoib_arp.cpp        ARP over InfiniBand and the neighbour table (net/ipv4/arp.c)
//
// Lifetime rules: an Ipoib is a KernelUlp of its Host from construction to
// destruction, and must go before the Host. When its HCA is removed it
// lets go of the HCA at once (its QP, membership and queries) and stays,
// dead: transmit() says -ENODEV. The deliver callback runs from handlers
// of the io_context, never inside transmit().
#pragma once

#include "emu/host.h"
#include "emu/sa_query.h"
#include "emu/verbs_objects.h"

#include <array>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <vector>

namespace ibemu::emu {

constexpr size_t kIpoibHwAddrLen = 20; /* INFINIBAND_ALEN */
using IpoibHwAddr = std::array<uint8_t, kIpoibHwAddrLen>;
constexpr size_t kIpoibEncapLen = 4; /* IPOIB_ENCAP_LEN: type, reserved */
constexpr uint32_t kIpoibMaxMtu = 2044; /* IPOIB_UD_MTU(2048) */
constexpr uint16_t kEtherTypeIpv4 = 0x0800;
constexpr uint16_t kEtherTypeArp = 0x0806;
constexpr uint16_t kArpHrdInfiniband = 32; /* ARPHRD_INFINIBAND, RFC 4391 */

/* The broadcast group's MGID for a P_Key (RFC 4391 section 4) */
fabric::Gid ipoibBroadcastMgid(uint16_t pkey);

struct IpoibConfig {
	uint32_t addr = 0; /* IPv4, network byte order */
	unsigned prefixLen = 16;
	uint16_t pkey = 0xffff;
};

class Ipoib final : public KernelUlp {
public:
	/* one IPv4 packet received */
	using Deliver = std::function<void(std::span<const uint8_t> packet)>;

	Ipoib(Host &host, Hca &hca, unsigned portNum, const IpoibConfig &cfg, Deliver deliver);
	~Ipoib();
	Ipoib(const Ipoib &) = delete;
	Ipoib &operator=(const Ipoib &) = delete;

	/* ipoib_start_xmit(): one IPv4 packet. 0 when it is sent or queued
	 * for its neighbour or path; -ENODEV without an HCA, -ENETDOWN
	 * before the join, -EINVAL for what is no IPv4 packet (or is for
	 * the port's own address), -EMSGSIZE past mtu(), -ENETUNREACH off
	 * the subnet. Three packets at most wait for a neighbour (a fourth
	 * pushes out the oldest, as __neigh_event_send()) and three for a
	 * path (a fourth is dropped, as neigh_add_path()). */
	int transmit(std::span<const uint8_t> packet);

	/* called with the carrier and mtu() whenever the carrier changes
	 * (netif_carrier_on/off(), and dev_set_mtu() on the join) */
	using CarrierChanged = std::function<void(bool up, uint32_t mtu)>;
	void onCarrier(CarrierChanged cb) { carrierChanged_ = std::move(cb); }

	bool up() const { return joined_; } /* the carrier */
	uint32_t mtu() const;
	uint32_t qpn() const { return qp_ ? qp_->qpn : 0; }
	IpoibHwAddr hwAddr() const;
	IpoibHwAddr broadcastAddr() const;
	const McMemberRecord &broadcastGroup() const { return bcast_; }
	/* the resolved neighbour of an address, if any (`ip neigh`) */
	std::optional<IpoibHwAddr> neighbour(uint32_t addr) const;
	size_t neighbourCount() const { return neighs_.size(); }
	size_t pathCount() const { return paths_.size(); }

	void portEvent(Hca &hca, unsigned portNum, AsyncEvent ev) override;
	void hcaRemoved(Hca &hca) override;

private:
	struct Pending {
		uint32_t qpn;
		std::vector<uint8_t> frame; /* encapsulation header and packet */
	};
	/* a destination GID's PathRecord (ipoib_path) */
	struct Path {
		bool valid = false;
		int64_t query = 0;
		uint16_t dlid = 0;
		uint8_t sl = 0;
		std::deque<Pending> queue;
	};
	/* an IPv4 neighbour on the link */
	struct Neigh {
		bool resolved = false;
		IpoibHwAddr hw{};
		Clock::time_point confirmed{}; /* by an ARP from it, or asked again */
		Clock::time_point used{}; /* by a packet to it */
		unsigned probes = 0;
		std::deque<std::vector<uint8_t>> queue; /* IPv4 packets */
	};

	fabric::Port &port() const;
	MadPort &madPort() const;
	fabric::Gid portGid() const;
	void teardown();

	/* ipoib_ib.cpp */
	void createQp();
	void destroyQp();
	void postSend(const ib_uverbs_ah_attr &ah, uint32_t dqpn, std::vector<uint8_t> frame);
	void received(uint16_t slid, uint32_t srcQp, std::vector<uint8_t> payload);
	static std::vector<uint8_t> encap(uint16_t type, std::span<const uint8_t> payload);

	/* ipoib_main.cpp */
	void sendBroadcast(uint16_t type, std::span<const uint8_t> payload);
	void sendUnicast(const IpoibHwAddr &to, uint16_t type, std::span<const uint8_t> payload);
	void startPathQuery(const fabric::Gid &dgid, Path &p);
	void pathDone(const fabric::Gid &dgid, int64_t query, int status, const PathRecord &rec);
	void flushPaths();

	/* ipoib_multicast.cpp */
	void startJoin();
	void joinDone(int status, const McMemberRecord &rec);
	void joined(const McMemberRecord &rec);
	void leaveBroadcast();
	void scheduleJoin();
	void setCarrier(bool up);

	/* ipoib_arp.cpp */
	void resolve(uint32_t dst, std::span<const uint8_t> packet);
	void sendArp(uint16_t op, uint32_t targetIp, const IpoibHwAddr *targetHw);
	void arpReceived(std::span<const uint8_t> arp);
	void learn(uint32_t ip, const IpoibHwAddr &hw);
	bool onSubnetUnicast(uint32_t ip) const;
	Neigh *newNeigh(uint32_t ip);
	void armArpTimer();
	void arpTick();

	Host &host_;
	Hca *hca_;
	const unsigned portNum_;
	const IpoibConfig cfg_;
	Deliver deliver_;
	CarrierChanged carrierChanged_;
	std::unique_ptr<Cq> cq_;
	std::unique_ptr<Qp> qp_;
	McMemberRecord bcast_{};
	int64_t member_ = 0;
	bool joining_ = false;
	bool joined_ = false;
	unsigned backoff_ = 1; /* seconds */
	Timer joinTimer_;
	Timer arpTimer_;
	bool arpArmed_ = false;
	std::map<fabric::Gid, Path> paths_;
	std::map<uint32_t, Neigh> neighs_;
	std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
};

} /* namespace ibemu::emu */
