// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// The daemon's side of `ibemu capture`: watches the wire for the clients
// that asked (the control socket's "capture" stream) and sends each one
// the packets it wants, one JSON line per packet.
//
// A request: {"op": "capture", "ports": ["NODE:PORT" | "NODE", ...],
// "all": bool, "kinds": ["smp", "sa", ...], "count": N}. Without ports,
// the capture is at every CA port (what ibdump would see on every HCA);
// "all" adds every switch port. The first line answers the request
// ({"ok": true, "ports": N} or an error), then come the packets:
//   {"t": ns since the epoch, "port": "NODE:PORT", "dir": "out"|"in",
//    "peer": "NODE:PORT", "src": NODE, "dst": NODE, "hex": "LRH..VCRC",
//    "lost": lines this client lost so far}
// src and dst name the MAD's two ends when the capture can tell them
// (LID-routed: the LIDs' owners; directed route: walked along the path).
// The tap is set on the Subnet only while someone captures.
#pragma once

#include "fabric/packet_tap.h"
#include "tools/control/control_socket.h"
#include "tools/observe/packet_text.h"

#include <memory>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

namespace ibemu::fabric {
class Subnet;
struct Node;
}

namespace ibemu::tools {

/* What a capture can ask for, by name: smp, sa, pma, cm, gmp (every MAD
 * on QP1), mad (all MADs), data (everything else). */
enum CaptureKind : unsigned {
	kCaptureSmp = 1,
	kCaptureSa = 2,
	kCapturePma = 4,
	kCaptureCm = 8,
	kCaptureOtherGmp = 16,
	kCaptureData = 32,
	kCaptureGmp = kCaptureSa | kCapturePma | kCaptureCm | kCaptureOtherGmp,
	kCaptureAll = kCaptureSmp | kCaptureGmp | kCaptureData,
};
/* The kind bit of a name, 0 for an unknown one. */
unsigned captureKind(const std::string &name);
/* The kind of a packet's bytes. */
unsigned packetKind(std::span<const uint8_t> packet);

class PacketCapture final : public fabric::PacketTap {
public:
	static constexpr size_t kMaxCaptures = 8;

	explicit PacketCapture(fabric::Subnet &subnet);
	~PacketCapture();
	PacketCapture(const PacketCapture &) = delete;
	PacketCapture &operator=(const PacketCapture &) = delete;

	/* Takes a "capture" request and its stream: answers it on the
	 * stream, and sends packets there until the client leaves or its
	 * count is reached. */
	void start(const ControlSocket::Json &req, std::shared_ptr<ControlSocket::Stream> stream);
	/* Ends every capture (the daemon stops). */
	void stopAll();
	size_t active() const { return watchers_.size(); }

	/* Where a packet seen at p was, as a record says: the port, the
	 * direction, the cable's other end and the MAD's two ends (ends()) */
	PacketPlace place(const fabric::Port &p, bool out, std::span<const uint8_t> packet) const;
	/* The MAD's sender and receiver as the ports it leaves and reaches
	 * (a switch's LID: its port 0), when the capture can tell: LID-routed,
	 * the LIDs' owners; directed route, walked along the path. */
	void ends(const fabric::Port &p, bool out, std::span<const uint8_t> packet, const fabric::Port *&src,
		  const fabric::Port *&dst) const;

	bool watches(const fabric::Port &p) const override;
	bool wantsData() const override;
	void onWire(const fabric::Port &p, bool out, std::span<const uint8_t> packet) override;

private:
	struct Watcher {
		std::set<const fabric::Port *> ports;
		bool caPorts = false; /* every CA port */
		bool allPorts = false; /* every port */
		unsigned kinds = kCaptureAll;
		uint64_t left = 0; /* packets still wanted; 0: no limit */
		uint64_t lost = 0;
		std::shared_ptr<ControlSocket::Stream> stream;
		bool wants(const fabric::Port &p) const;
	};

	void remove(Watcher *w);

	fabric::Subnet &subnet_;
	std::vector<std::unique_ptr<Watcher>> watchers_;
	/* LIDs the capture has named; the Subnet finds a LID's port by a
	 * walk of every node, too slow for each packet of a big fabric */
	mutable std::unordered_map<uint16_t, const fabric::Port *> lidOwners_;
};

/* A record's packet and where it was seen (the reading side of the
 * stream); false when it holds no packet. */
bool readRecord(const ControlSocket::Json &rec, std::vector<uint8_t> &packet, PacketPlace &at);

/* How a capture names a node and a port: the NodeDescription (the node id
 * when empty), and "NODE:PORT". */
std::string captureNodeName(const fabric::Node &n);
std::string capturePortName(const fabric::Port &p);

} /* namespace ibemu::tools */
