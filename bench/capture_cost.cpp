// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// What watching the wire costs the fabric (docs/observe.md): directed-route
// NodeInfo Gets from host1 to sw2 and back (two cables each way) carried
// by the Subnet in-process, timed with
//   none     no tap (what every instance runs with while no one captures),
//   ring     no tap, the live view's ring of recent MADs (fabric/mad_ring.h:
//            every instance with --web, from its start),
//   idle     a capture watching one port no packet crosses,
//   capture  a capture at every CA port, its records dropped on arrival.
// Each is timed RUNS times, alternating; the medians are printed with their
// ratio to "none" from the same run.
//
// usage: capture_cost [SMPS] [RUNS]
#include "fabric/mad.h"
#include "fabric/smi.h"
#include "fabric/subnet.h"
#include "fabric/topology.h"
#include "tools/observe/packet_capture.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <vector>

using namespace ibemu;

namespace {

/* host1's host stack: counts the answers */
struct Counter final : fabric::HostStack {
	size_t got = 0;
	void receive(fabric::Port &, const fabric::Packet &) override { got++; }
};

/* a capture client that takes and forgets every record */
struct Drain final : tools::ControlSocket::Stream {
	bool write(std::string) override { return true; }
	void close() override {}
	bool open() const override { return true; }
	void onClosed(std::function<void()>) override {}
};

fabric::Packet nodeInfoGet(uint64_t tid)
{
	fabric::Packet pkt;
	auto &smp = *overlay<ib_smp>(pkt.mad.data());
	smp.base_version = 1;
	smp.mgmt_class = IB_MGMT_CLASS_SUBN_DIRECTED_ROUTE;
	smp.class_version = 1;
	smp.method = IB_MGMT_METHOD_GET;
	smp.tid = tid;
	smp.attr_id = IB_SMP_ATTR_NODE_INFO;
	smp.hop_cnt = 2;
	smp.initial_path[1] = 1;
	smp.initial_path[2] = 7;
	smp.dr_slid = IB_LID_PERMISSIVE;
	smp.dr_dlid = IB_LID_PERMISSIVE;
	fabric::smi::prepareSend(smp, false, 1); /* as the sender's SMI does */
	return pkt;
}

double seconds(fabric::Subnet &s, fabric::Port &host1, Counter &c, size_t n)
{
	size_t before = c.got;
	auto t0 = std::chrono::steady_clock::now();
	for (size_t i = 0; i < n; i++)
		s.send(host1, nodeInfoGet(i));
	auto t1 = std::chrono::steady_clock::now();
	if (c.got - before != n) {
		fprintf(stderr, "capture_cost: %zu of %zu answers came back\n", c.got - before, n);
		exit(1);
	}
	return std::chrono::duration<double>(t1 - t0).count();
}

double median(std::vector<double> v)
{
	std::sort(v.begin(), v.end());
	return v[v.size() / 2];
}

} /* namespace */

int main(int argc, char **argv)
{
	const size_t smps = argc > 1 ? strtoul(argv[1], nullptr, 10) : 200000;
	const int runs = argc > 2 ? atoi(argv[2]) : 5;
	fabric::Subnet s;
	fabric::Topology topo;
	fabric::TopologyError err;
	if (fabric::parseTopology(fabric::defaultTopology(), "default", topo, err) != 0 ||
	    fabric::buildSubnet(topo, s, err) != 0) {
		fprintf(stderr, "capture_cost: the default fabric does not build\n");
		return 1;
	}
	fabric::Port &host1 = s.findNodeByGuid(0x2c90300000100)->port(1);
	Counter counter;
	host1.host = &counter;

	tools::PacketCapture idle(s), full(s);
	idle.start({ { "op", "capture" }, { "ports", { "ibemu-sw1:5" } } }, std::make_shared<Drain>());
	s.setTap(nullptr);
	full.start({ { "op", "capture" } }, std::make_shared<Drain>());
	s.setTap(nullptr);

	fabric::MadRing ring;
	std::vector<double> none, ringed, quiet, captured;
	seconds(s, host1, counter, smps / 10); /* warm up */
	for (int r = 0; r < runs; r++) {
		s.setTap(nullptr);
		none.push_back(seconds(s, host1, counter, smps));
		s.setMadRing(&ring);
		ringed.push_back(seconds(s, host1, counter, smps));
		s.setMadRing(nullptr);
		s.setTap(&idle);
		quiet.push_back(seconds(s, host1, counter, smps));
		s.setTap(&full);
		captured.push_back(seconds(s, host1, counter, smps));
	}
	s.setTap(nullptr);
	const double base = median(none);
	printf("%zu DR NodeInfo round trips (2 cables each way), median of %d runs\n", smps, runs);
	printf("  none     %7.3f s  %6.2f us/SMP  1.00x\n", base, base / smps * 1e6);
	printf("  ring     %7.3f s  %6.2f us/SMP  %.2fx\n", median(ringed), median(ringed) / smps * 1e6,
	       median(ringed) / base);
	printf("  idle     %7.3f s  %6.2f us/SMP  %.2fx\n", median(quiet), median(quiet) / smps * 1e6,
	       median(quiet) / base);
	printf("  capture  %7.3f s  %6.2f us/SMP  %.2fx\n", median(captured), median(captured) / smps * 1e6,
	       median(captured) / base);
	return 0;
}
