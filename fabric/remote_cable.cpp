// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// Cables across daemons: foreign nodes, what their daemons report of
// them, and packets arriving from them (fabric/remote_cable.h).
#include "fabric/remote_cable.h"
#include "fabric/packet_format.h"
#include "fabric/subnet.h"

namespace ibemu::fabric {

CableEnd cableEndOf(const Port &p)
{
	CableEnd e;
	e.cabled = p.peer != nullptr;
	e.disabled = p.physState == PhysState::Disabled;
	e.widthEnabled = p.linkWidthEnabled;
	e.widthSupported = p.linkWidthSupported;
	e.speedEnabled = p.linkSpeedEnabled;
	e.speedExtEnabled = p.linkSpeedExtEnabled;
	e.speedSupported = p.speedSupported;
	e.degradedWidth = p.degradedWidth;
	e.degradedSpeed = p.degradedSpeed;
	e.retrains = p.retrains;
	return e;
}

void Subnet::setForeign(Node &n)
{
	n.foreign = true;
	split_ = true;
	n.silent = true; /* never asked: packets for it leave before delivery */
	for (Port &q : n.ports) {
		q.farEnd.reset();
		Port *p = q.peer;
		if (!p)
			continue;
		/* Built trained. A cable to a local port stays down until q's
		 * daemon reports (no edge to count or trap: nothing has seen
		 * the link up); one between two stand-ins looks as built,
		 * whichever of them was marked first. */
		const bool up = p->node->foreign;
		for (Port *x : { p, &q }) {
			x->physState = up ? PhysState::LinkUp : PhysState::Polling;
			x->state = up ? PortState::Init : PortState::Down;
		}
	}
}

void Subnet::tellFarEnd(Port &p)
{
	const Port *far = p.cableEnd();
	if (!remote_ || !far || !far->node->foreign || p.node->foreign)
		return;
	/* only what changed: training on a report changes nothing told, so
	 * the two daemons never answer each other's ENDs for ever */
	CableEnd now = cableEndOf(p);
	if (p.toldEnd && *p.toldEnd == now)
		return;
	p.toldEnd = std::make_unique<CableEnd>(now);
	remote_->endChanged(p, *far);
}

void Subnet::farEndReported(Port &far, const CableEnd &end)
{
	const bool retrained = far.farEnd && far.farEnd->retrains != end.retrains;
	/* the far daemon retrains for an SM's PortState=Down (a request) or
	 * for a damaged cable (a loss), which changes the cable's limits */
	const bool damaged = far.farEnd &&
			     (far.farEnd->degradedWidth != end.degradedWidth ||
			      far.farEnd->degradedSpeed != end.degradedSpeed);
	far.farEnd = std::make_unique<CableEnd>(end);
	far.linkWidthEnabled = end.widthEnabled;
	far.linkWidthSupported = end.widthSupported;
	far.linkSpeedEnabled = end.speedEnabled;
	far.linkSpeedExtEnabled = end.speedExtEnabled;
	far.speedSupported = end.speedSupported;
	far.degradedWidth = end.degradedWidth;
	far.degradedSpeed = end.degradedSpeed;
	far.retrains = end.retrains;
	if (end.disabled)
		far.physState = PhysState::Disabled;
	else if (far.physState == PhysState::Disabled)
		far.physState = PhysState::Polling;

	Port *local = far.peer;
	if (!local)
		return; /* pulled out at this end */
	if (!canTrain(far)) {
		if (local->linkUp())
			linkDown(*local, PhysState::Polling,
				 end.cabled && end.disabled ? DownCause::Requested : DownCause::Lost);
		return;
	}
	if (!local->linkUp())
		train(*local);
	else if (retrained)
		retrain(*local, damaged ? DownCause::Lost : DownCause::Requested);
	else
		negotiate(*local);
}

void Subnet::farEndLost(Port &far)
{
	far.farEnd.reset();
	Port *local = far.peer;
	if (local && local->linkUp())
		linkDown(*local, PhysState::Polling);
}

void Subnet::sendAway(const Away &away, DataPackets packets, OnWire onWire)
{
	if (remote_ && away.far)
		remote_->transmitData(*away.far, std::move(packets), away.hops, std::move(onWire));
}

void Subnet::arriveDataFromFar(Port &far, DataPackets packets, unsigned hops)
{
	PacketView v;
	if (packets.empty() || !parsePacket(packets.front(), v))
		return;
	uint64_t bytes = 0;
	for (const auto &p : packets)
		bytes += p.size() - kVcrcBytes; /* the counters count LRH to ICRC */
	if (v.dlid >= IB_MULTICAST_LID_BASE && v.dlid != IB_LID_PERMISSIVE) {
		/* multicast is UD, one packet a message: anything longer is no
		 * message of a real HCA's, and would be copied to every port */
		if (packets.size() != 1) {
			dropped_ += packets.size();
			return;
		}
		std::vector<Port *> reached;
		std::vector<Away> aways;
		carryMulticast(&far, v.dlid, static_cast<uint32_t>(packets.size()), bytes, reached, packets, true, hops,
			       &aways);
		for (Port *dst : reached)
			if (dataListener_)
				dataListener_(*dst, DataPackets(packets));
		for (const Away &a : aways)
			sendAway(a, DataPackets(packets));
		return;
	}
	Away away;
	Port *dst = carryData(&far, v.dlid, static_cast<uint32_t>(packets.size()), bytes, packets, true, hops, &away);
	if (dst && dataListener_)
		dataListener_(*dst, std::move(packets));
	else if (away.far)
		sendAway(away, std::move(packets));
}

void Subnet::arriveFromFar(Port &far, Packet pkt, unsigned hops)
{
	queue_.push_back({ &far, std::move(pkt), true, hops });
	drain();
}

} /* namespace ibemu::fabric */
