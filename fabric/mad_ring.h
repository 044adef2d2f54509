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
// A burst is a run of MADs with no gap of kSweepGap in it; a sweep that
// changed the fabric is a burst with a PortInfo Set of a PortState in it.
// When such a burst ends (the next MAD comes kSweepGap after the last),
// its MADs (the last kSize of them) are copied aside, so that the light
// sweeps an SM makes every few seconds do not push the bring-up out.
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
		int64_t ns = 0; /* when, since the epoch */
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
	uint64_t count() const { return count_; }
	const Entry *find(uint64_t seq) const;

	/* The MADs of the last sweep that changed a port's state, in order:
	 * the burst still going on when it is one, else the last one copied
	 * aside. sweepEnd() changes when they do (0: none yet). */
	void lastSweep(const std::function<void(const Entry &)> &fn) const;
	uint64_t sweepEnd() const { return burstChanges_ ? count_ : sweepEnd_; }

	/* Whether pkt is an SMP Set of PortInfo that asks for a PortState */
	static bool setsPortState(const Packet &pkt);

private:
	void keepBurst();

	std::vector<Entry> ring_; /* MAD number seq at seq % kSize */
	uint64_t count_ = 0;
	int64_t lastNs_ = 0;
	uint64_t burstStart_ = 0; /* the first MAD of the burst going on */
	bool burstChanges_ = false; /* it set a PortState */
	std::vector<Entry> sweep_; /* the last such burst that ended */
	size_t sweepLen_ = 0;
	uint64_t sweepEnd_ = 0; /* count() when it ended */
};

} /* namespace ibemu::fabric */
