// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// The cables between this daemon and the daemons of the other hosts of a
// subnet split across hosts (docs/multihost.md).
//
// One TCP connection per pair of hosts that share cables, dialled by the
// host whose name sorts first and redialled while it is down. A
// connection starts with a hello each way (host name, topology digest,
// nonce); every later message is sealed with a key derived from the
// subnet key (tools/peer/peer_wire.h). While it is up, the cables to that host
// can train (fabric/remote_cable.h): each side tells the other its ends
// (END) and sends it the packets crossing (PACKET). When it goes, the
// cables go down as if pulled out, and the SM sees the traps.
//
// Runs on the daemon's io_context; RemoteCables calls may come from any
// thread holding the state lock (fabric/state_lock.h): they only queue
// bytes and post the write.
#pragma once

#include "fabric/remote_cable.h"
#include "fabric/subnet.h"
#include "tools/instance/fabric_source.h"
#include "tools/peer/peer_wire.h"

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <nlohmann/json.hpp>

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

namespace ibemu::tools {

class PeerLinks final : public fabric::RemoteCables {
public:
	/* `me`: this daemon's index in split.hosts. Marks every node of the
	 * other hosts foreign and sets itself as the subnet's remote. */
	PeerLinks(boost::asio::io_context &io, fabric::Subnet &subnet, const SubnetSplit &split, int me,
		  std::vector<uint8_t> subnetKey);
	~PeerLinks();
	PeerLinks(const PeerLinks &) = delete;
	PeerLinks &operator=(const PeerLinks &) = delete;

	/* Listens on `listen` (ADDR:PORT; empty: this host's addr= in the
	 * file, the first address of a name, which may not be a loopback
	 * one) and dials the hosts it should. false with `err` when it
	 * cannot listen. */
	bool start(const std::string &listen, std::string &err);
	/* Closes every connection (their cables go down) and stops listening. */
	void stop();

	/* The digest both ends of a connection must agree on: the whole
	 * subnet as built, and who owns what */
	const PeerDigest &digest() const { return digest_; }
	/* {"host", "listen", "refused_handshakes", "peers": [{"host", "addr", "state",
	 * "cables", "cables_up", "packets_out", "packets_in", "bad_messages",
	 * "packets_dropped", "connections", "last_error"}...]} */
	nlohmann::ordered_json status() const;

	void transmit(const fabric::Port &far, const fabric::Packet &pkt, unsigned hops) override;
	void transmitData(const fabric::Port &far, fabric::DataPackets packets, unsigned hops,
			  fabric::OnWire onWire) override;
	void endChanged(const fabric::Port &local, const fabric::Port &far) override;

private:
	struct Conn;
	struct Peer;

	Peer *ownerOf(const fabric::Node &n);
	void listen();
	void admit(boost::asio::ip::tcp::socket s, std::string source);
	void refused(const std::string &what);
	void forEachCable(Peer &peer, const std::function<void(fabric::Port &local, fabric::Port &far)> &fn);
	void dial(Peer &peer);
	void redial(Peer &peer);
	void attach(const std::shared_ptr<Conn> &c);
	void detach(Conn &c);
	void received(Conn &c, PeerMsg type, std::span<const uint8_t> body);
	void gotEnd(Peer &peer, const PeerEnd &e);
	void gotPacket(Peer &peer, const PeerPacket &p);
	void gotData(Conn &c, const PeerData &d);
	fabric::Port *crossing(Peer &peer, const PeerPortId &to, const PeerPortId &from);
	void sendEnd(Peer &peer, const fabric::Port &local, const fabric::Port &far);

	boost::asio::io_context &io_;
	fabric::Subnet &subnet_;
	SubnetSplit split_;
	int me_;
	std::vector<uint8_t> key_;
	PeerDigest digest_{};
	boost::asio::ip::tcp::acceptor acceptor_;
	boost::asio::steady_timer acceptRetry_;
	std::vector<std::unique_ptr<Peer>> peers_; /* by host index; null for me and hosts with no cable to me */
	std::string listening_; /* ADDR:PORT */
	std::vector<std::shared_ptr<Conn>> handshakes_; /* connections not yet attached to a peer, oldest first */
	uint64_t refusedHandshakes_ = 0;
	uint64_t unloggedRefusals_ = 0;
	std::chrono::steady_clock::time_point lastRefusedLog_{};
	bool stopped_ = false;
};

/* Reads a subnet key file: its bytes (a trailing newline dropped), at
 * least 16. false with `err` when it cannot be read, is too short, is
 * owned by another user than this process's effective one or root, or
 * others than its owner may read it. */
bool readSubnetKey(const std::string &path, std::vector<uint8_t> &key, std::string &err);

} /* namespace ibemu::tools */
