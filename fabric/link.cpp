// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// Cables and link state: training, negotiation and the Down/Init edges.
//
// A cabled port whose both ends are enabled trains to PhysState LinkUp and
// PortState Init (IBA 7.2). Only an SM moves it on to Armed and Active.
// Disabling either end, pulling the cable or an SM's PortState=Down takes
// both ends Down; switches note every Down/Init edge in
// SwitchInfo:PortStateChange and report it with Trap 128.
//
// A cable to a foreign node (fabric/remote_cable.h) trains only while that
// node's daemon reports its end plugged in and enabled; every change to a
// local end's inputs is told to it (tellFarEnd).
#include "fabric/remote_cable.h"
#include "fabric/sma.h"
#include "fabric/subnet.h"

#include <algorithm>
#include <cerrno>

namespace ibemu::fabric {

namespace {

bool speedEnabled(const Port &p, Speed s)
{
	if (s > p.speedSupported)
		return false;
	switch (s) {
	case Speed::SDR:
		return p.linkSpeedEnabled & 0x1;
	case Speed::DDR:
		return p.linkSpeedEnabled & 0x2;
	case Speed::QDR:
	case Speed::FDR10:
		return p.linkSpeedEnabled & 0x4;
	default:
		return p.linkSpeedExtEnabled & linkSpeedExtBits(s);
	}
}

Speed fastestEnabled(const Port &p)
{
	for (int s = static_cast<int>(Speed::NDR); s > static_cast<int>(Speed::SDR); s--)
		if (speedEnabled(p, static_cast<Speed>(s)))
			return static_cast<Speed>(s);
	return Speed::SDR;
}

/* The widths a damaged cable end still trains to: those no wider than
 * its limit (all when it has none) */
unsigned lanesAllowed(const Port &p)
{
	return p.degradedWidth ? widthLanes(p.degradedWidth) : 12;
}

uint8_t widestCommon(const Port &a, const Port &b)
{
	uint8_t common = a.linkWidthEnabled & a.linkWidthSupported & b.linkWidthEnabled & b.linkWidthSupported;
	unsigned lanes = std::min(lanesAllowed(a), lanesAllowed(b));
	for (uint8_t w : { kWidth12x, kWidth8x, kWidth4x, kWidth2x, kWidth1x })
		if ((common & w) && widthLanes(w) <= lanes)
			return w;
	return kWidth1x;
}

/* The fastest speed a damaged cable end still trains to */
Speed speedAllowed(const Port &p)
{
	return p.degradedSpeed.value_or(Speed::NDR);
}

} /* namespace */

void Subnet::negotiate(Port &p)
{
	if (!p.peer)
		return;
	Port &q = *p.peer;
	uint8_t width = widestCommon(p, q);
	Speed speed = std::min({ fastestEnabled(p), fastestEnabled(q), speedAllowed(p), speedAllowed(q) });
	p.linkWidthActive = q.linkWidthActive = width;
	p.speedActive = q.speedActive = speed;
	tellFarEnd(p);
}

void Subnet::enabledChanged(Port &p)
{
	if (p.linkUp())
		negotiate(p);
	else
		tellFarEnd(p);
}

int Subnet::connect(Port &a, Port &b)
{
	if (&a == &b)
		return -EINVAL;
	if ((a.node->isSwitch() && a.num == 0) || (b.node->isSwitch() && b.num == 0))
		return -EINVAL;
	if (a.peer || b.peer)
		return -EBUSY;
	a.peer = &b;
	b.peer = &a;
	numLinks_++;
	train(a);
	return 0;
}

void Subnet::disconnect(Port &p)
{
	if (!p.peer)
		return;
	Port &q = *p.peer;
	linkDown(p, p.physState == PhysState::Disabled ? PhysState::Disabled : PhysState::Polling);
	p.peer = nullptr;
	q.peer = nullptr;
	numLinks_--;
}

/* A port whose end of the cable may train: enabled, and for a foreign
 * port, reported plugged in and enabled by its daemon */
bool Subnet::canTrain(const Port &p)
{
	if (p.node->foreign)
		return p.farEnd && p.farEnd->cabled && !p.farEnd->disabled;
	return p.physState != PhysState::Disabled;
}

void Subnet::train(Port &a)
{
	Port *b = a.peer;
	if (!b || !canTrain(a) || !canTrain(*b))
		return;
	negotiate(a);
	for (Port *p : { &a, b }) {
		p->physState = PhysState::LinkUp;
		if (p->state == PortState::Down) {
			p->state = PortState::Init;
			portStateChanged(*p);
		}
	}
}

void Subnet::linkDown(Port &p, PhysState localPhys, DownCause cause)
{
	Port *q = p.peer;
	bool wasUp = p.linkUp();

	p.physState = localPhys;
	if (q && q->physState != PhysState::Disabled)
		q->physState = PhysState::Polling;
	for (Port *x : { &p, q }) {
		if (!x)
			continue;
		if (wasUp && cause == DownCause::Lost && x->counters.linkDowned != 0xff)
			x->counters.linkDowned++;
		if (x->state != PortState::Down) {
			x->state = PortState::Down;
			portStateChanged(*x);
		}
	}
}

void Subnet::setDisabled(Port &p, bool disabled)
{
	if (p.node->isSwitch() && p.num == 0)
		return;
	if (disabled) {
		if (p.physState != PhysState::Disabled)
			linkDown(p, PhysState::Disabled, DownCause::Requested);
		tellFarEnd(p);
		return;
	}
	if (p.physState != PhysState::Disabled)
		return;
	p.physState = PhysState::Polling;
	train(p);
	tellFarEnd(p);
}

void Subnet::bounceLink(Port &p)
{
	if (p.node->isSwitch() && p.num == 0) {
		p.state = PortState::Init;
		return;
	}
	if (!p.linkUp())
		return;
	p.retrains++;
	retrain(p, DownCause::Requested);
	tellFarEnd(p);
}

void Subnet::retrain(Port &p, DownCause cause)
{
	linkDown(p, PhysState::Polling, cause);
	train(p);
}

void Subnet::setLogicalState(Port &p, PortState s)
{
	p.state = s;
	portChanged(p);
}

void Subnet::portStateChanged(Port &p)
{
	Node &n = *p.node;
	if (n.foreign)
		return; /* its own daemon reports its changes */
	portChanged(p);
	if (!n.isSwitch() || p.num == 0)
		return;
	n.sw->portStateChange = true;
	sendTrap128(*this, n);
}

void Subnet::setCapMask(Port &p, uint32_t capMask)
{
	if (p.capMask == capMask)
		return;
	uint32_t old = p.capMask;
	p.capMask = capMask;
	if (!p.node->isSwitch())
		sendTrap144(*this, p, old);
}

} /* namespace ibemu::fabric */
