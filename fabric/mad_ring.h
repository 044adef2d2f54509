// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// The last MADs that crossed a CA port's cable, kept as they were, and the
// last sweep that changed a port's state: what the live view
// (tools/observe/web_view.h) shows and replays, whenever a page is opened.
//
// The Subnet hands record() every MAD leaving or arriving at a CA port
// (where a capture without --port looks). A record is a copy of the Packet
// (a few hundred bytes), its port, its direction and the time into a ring
// of kSize slots allocated once: no allocation, no encoding, no text.
// Decoding is the reader's work, done when a page asks. The memory is
// fixed whatever the traffic.
//
// A sweep is a burst of SMPs (subnet management MADs) with no pause of
// kSweepGap between two of them, whatever other MADs (SA, PMA, CM) come
// meanwhile; one that changed the fabric has a PortInfo Set of a PortState
// in it. A burst's SMPs go into a second ring as well; when a burst that
// changed the fabric ends (the next SMP comes kSweepGap after the last),
// that ring is kept aside (swapped, not copied) until another such burst
// ends, so the light sweeps an SM makes every few seconds, and any other
// traffic, do not push the bring-up out. A stream of SMPs that never
// pauses for kSweepGap keeps one burst going, of which the last kSize
// SMPs are kept.
#pragma once

#include "fabric/packet.h"

#include <cstdint>
#include <functional>
#include <vector>

namespace ibemu::fabric {

struct Port;

class MadRing {
public:
	static constexpr size_t kSize = 1024;
	static constexpr int64_t kSweepGapNs = 1'000'000'000;

	struct Entry {
		int64_t ns = 0; /* when, on the steady clock (a wall clock step would split or merge a sweep) */
		const Port *port = nullptr; /* where it was seen (ports are never freed) */
		bool out = false; /* leaving the port (else arriving) */
		Packet pkt;
	};

	MadRing();

	/* A MAD crossing p's cable, now (the Subnet's hook) */
	void record(const Port &p, bool out, const Packet &pkt);
	/* The same at a given time (for tests) */
	void recordAt(int64_t ns, const Port &p, bool out, const Packet &pkt);

	/* MADs recorded so far; MAD number seq while it is still in the ring */
	uint64_t count() const { return all_.count; }
	const Entry *find(uint64_t seq) const;

	/* The SMPs of the last sweep that changed a port's state, in order:
	 * the burst going on when it is one, else the last one kept aside.
	 * sweepEnd() changes when they do: count() after its last SMP (0:
	 * none yet). */
	void lastSweep(const std::function<void(const Entry &)> &fn) const;
	uint64_t sweepEnd() const { return burstChanges_ ? burstEnd_ : keptEnd_; }

	/* Whether pkt is an SMP Set of PortInfo that asks for a PortState */
	static bool setsPortState(const Packet &pkt);

private:
	/* kSize entries, the last ones put in */
	struct Slots {
		std::vector<Entry> entry = std::vector<Entry>(kSize);
		uint64_t count = 0;
		Entry &next() { return entry[count++ % kSize]; }
		void each(const std::function<void(const Entry &)> &fn) const;
	};

	Slots all_; /* every MAD: number seq at seq % kSize */
	Slots burst_; /* the SMPs of the burst going on */
	Slots kept_; /* those of the last burst that changed the fabric and ended */
	int64_t lastSmpNs_ = 0;
	bool burstChanges_ = false; /* the burst going on set a PortState */
	uint64_t burstEnd_ = 0; /* count() after its last SMP */
	uint64_t keptEnd_ = 0; /* the same for kept_ */
};

} /* namespace ibemu::fabric */
