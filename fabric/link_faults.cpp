// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// Faults from outside the subnet, as a person or a broken part causes them:
// a cable pulled and plugged back in, a cable that trains narrower or
// slower, a cable that loses packets, a node whose agents hang.
//
// Losses are counted where a receiver counts them (IBA 16.1.3.5): symbol
// errors that keep a packet from being framed move SymbolErrorCounter and
// PortRcvErrors, a packet with a bad CRC moves PortRcvErrors. Either way
// the receiver discards it; nothing corrupted reaches software, as on
// real hardware.
#include "fabric/subnet.h"

#include <cerrno>

namespace ibemu::fabric {

namespace {

template <typename T> void addSaturating(T &counter, uint64_t n)
{
	constexpr uint64_t max = static_cast<T>(~T{ 0 });
	uint64_t v = counter + n;
	counter = static_cast<T>(v > max ? max : v);
}

/* How many of n packets meet a fault of probability p */
uint64_t draw(std::mt19937_64 &rng, uint64_t n, double p)
{
	if (p <= 0 || n == 0)
		return 0;
	if (p >= 1)
		return n;
	if (n == 1)
		return std::bernoulli_distribution(p)(rng) ? 1 : 0;
	return std::binomial_distribution<uint64_t>(n, p)(rng);
}

} /* namespace */

int Subnet::pullCable(Port &p)
{
	Port *q = p.peer;
	if (!q)
		return -ENOTCONN;
	disconnect(p);
	p.pulledPeer = q;
	q->pulledPeer = &p;
	tellFarEnd(p);
	return 0;
}

int Subnet::plugCable(Port &p)
{
	Port *q = p.pulledPeer;
	if (!q || q->pulledPeer != &p)
		return -ENOTCONN;
	if (p.peer || q->peer)
		return -EBUSY;
	p.pulledPeer = nullptr;
	q->pulledPeer = nullptr;
	int rc = connect(p, *q);
	tellFarEnd(p);
	return rc;
}

void Subnet::degradeLink(Port &p, uint8_t width, std::optional<Speed> speed)
{
	for (Port *end : { &p, p.peer }) {
		if (!end)
			continue;
		end->degradedWidth = width;
		end->degradedSpeed = speed;
	}
	if (p.linkUp()) {
		p.retrains++;
		retrain(p); /* retraining takes the link down first */
	}
	tellFarEnd(p);
}

void Subnet::setLinkErrors(Port &p, double dropRate, double corruptRate, uint64_t seed)
{
	if (dropRate <= 0 && corruptRate <= 0) {
		p.errors.reset();
		return;
	}
	p.errors = std::make_unique<LinkErrors>();
	p.errors->dropRate = dropRate;
	p.errors->corruptRate = corruptRate;
	p.errors->seed = seed;
	p.errors->rng.seed(seed);
}

uint64_t Subnet::lostOnCable(Port &out, Port &in, uint64_t packets)
{
	LinkErrors *e = in.errors ? in.errors.get() : out.errors.get();
	if (!e)
		return 0;
	uint64_t dropped = draw(e->rng, packets, e->dropRate);
	uint64_t corrupted = draw(e->rng, packets - dropped, e->corruptRate);
	if (dropped + corrupted == 0)
		return 0;
	e->dropped += dropped;
	e->corrupted += corrupted;
	addSaturating(in.counters.symbolErrors, dropped);
	addSaturating(in.counters.rcvErrors, dropped + corrupted);
	dropped_ += dropped + corrupted;
	return dropped + corrupted;
}

} /* namespace ibemu::fabric */
