// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// What an up connection to another host's daemon carries
// (tools/peer/peer_conn.h): each side's cable ends (END), the MAD packets
// crossing (PACKET) and the data packets, a message each (DATA). A sealed
// message whose content makes no sense (a port we do not share, bytes that
// are not a packet) is counted and dropped.
#include "tools/peer/peer_conn.h"

#include "fabric/packet_format.h"

#include <boost/asio/post.hpp>

namespace ibemu::tools {

using fabric::Port;

namespace {

PeerPortId idOf(const Port &p)
{
	return { p.node->nodeGuid, p.num };
}

} /* namespace */

void PeerLinks::received(Conn &c, PeerMsg type, std::span<const uint8_t> body)
{
	Peer &peer = *c.peer;
	switch (type) {
	case PeerMsg::End: {
		PeerEnd e;
		if (!decodeEnd(body, e))
			break;
		gotEnd(peer, e);
		return;
	}
	case PeerMsg::Packet: {
		PeerPacket p;
		if (!decodePacket(body, p))
			break;
		gotPacket(peer, p);
		return;
	}
	case PeerMsg::Data: {
		PeerData d;
		if (!decodeData(body, d))
			break;
		gotData(c, d);
		return;
	}
	case PeerMsg::Auth:
		break;
	}
	peer.bad++;
}

void PeerLinks::gotData(Conn &c, const PeerData &d)
{
	Peer &peer = *c.peer;
	const PeerData &h = c.assemblingHead;
	const bool next = d.index == 0 ||
		(d.index == c.assembling.size() && d.from == h.from && d.to == h.to && d.hops == h.hops &&
		 d.count == h.count);
	if (!next || !fabric::packetIntact(d.bytes) || c.assemblingBytes + d.bytes.size() > kMaxQueued) {
		peer.bad++;
		c.assembling.clear();
		c.assemblingBytes = 0;
		return;
	}
	if (d.index == 0) {
		c.assembling.clear();
		c.assemblingBytes = 0;
		c.assemblingHead = d;
	}
	c.assembling.emplace_back(d.bytes.begin(), d.bytes.end());
	c.assemblingBytes += d.bytes.size();
	if (c.assembling.size() < d.count)
		return;
	fabric::DataPackets packets = std::move(c.assembling);
	c.assembling.clear();
	c.assemblingBytes = 0;
	Port *far = crossing(peer, d.to, d.from);
	if (!far) {
		peer.bad++;
		return;
	}
	peer.packetsIn += packets.size();
	subnet_.arriveDataFromFar(*far, std::move(packets), d.hops);
}

Port *PeerLinks::crossing(Peer &peer, const PeerPortId &to, const PeerPortId &from)
{
	fabric::Node *n = subnet_.findNodeByGuid(to.node);
	if (!n || n->foreign || !n->hasPort(to.port))
		return nullptr;
	Port *far = cableEnd(n->port(to.port));
	if (!far || !far->node->foreign || ownerOf(*far->node) != &peer || idOf(*far) != from)
		return nullptr;
	return far;
}

void PeerLinks::gotEnd(Peer &peer, const PeerEnd &e)
{
	Port *far = crossing(peer, e.to, e.from);
	if (!far) {
		peer.bad++;
		return;
	}
	subnet_.farEndReported(*far, e.end);
}

void PeerLinks::gotPacket(Peer &peer, const PeerPacket &p)
{
	Port *far = crossing(peer, p.to, p.from);
	fabric::Packet pkt;
	if (!far || !fabric::decodeMadPacket(p.bytes, pkt)) {
		peer.bad++;
		return;
	}
	peer.packetsIn++;
	subnet_.arriveFromFar(*far, std::move(pkt), p.hops);
}

void PeerLinks::sendEnd(Peer &peer, const Port &local, const Port &far)
{
	if (!peer.conn)
		return; /* it gets all of them when it comes up */
	fabric::CableEnd end = fabric::cableEndOf(local);
	peer.conn->sendSealed(PeerMsg::End, encodeEnd({ idOf(local), idOf(far), end }));
}

void PeerLinks::endChanged(const Port &local, const Port &far)
{
	if (Peer *peer = ownerOf(*far.node))
		sendEnd(*peer, local, far);
}

void PeerLinks::transmitData(const Port &far, fabric::DataPackets packets, unsigned hops, fabric::OnWire onWire)
{
	Peer *peer = ownerOf(*far.node);
	if (!peer || !peer->conn || !far.peer || packets.size() > kPeerMaxDataPackets) {
		if (peer)
			peer->dropped += packets.size();
		if (onWire)
			boost::asio::post(io_, [fn = std::move(onWire)] { fn(false); });
		return;
	}
	Conn &c = *peer->conn;
	const auto count = static_cast<uint32_t>(packets.size());
	for (uint32_t i = 0; i < count; i++)
		c.sendSealed(
			PeerMsg::Data,
			encodeData({ idOf(*far.peer), idOf(far), static_cast<uint8_t>(hops), i, count, packets[i] }));
	if (onWire)
		c.pendingOnWire.push_back(std::move(onWire));
	peer->packetsOut += count;
}

void PeerLinks::transmit(const Port &far, const fabric::Packet &pkt, unsigned hops)
{
	Peer *peer = ownerOf(*far.node);
	if (!peer)
		return;
	if (!peer->conn || !far.peer) {
		peer->dropped++; /* the connection went under it: the cable is going down */
		return;
	}
	std::vector<uint8_t> bytes = fabric::encodeMadPacket(pkt);
	peer->conn->sendSealed(PeerMsg::Packet,
			       encodePacket({ idOf(*far.peer), idOf(far), static_cast<uint8_t>(hops), bytes }));
	peer->packetsOut++;
}

} /* namespace ibemu::tools */
