// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// Fuzz target: SMP and GMP handling in the fabric. Each input gets a fresh
// default subnet (tests/fuzz/fuzz_common.h: brought up as MiniSm leaves it,
// or left as built), then up to 8 packets enter it, and every MAD is also
// offered to the SMA/PMA of every node directly (fabric::processMad).
//
// Input:
//   [setup]                   bit 0: bring the subnet up (LIDs, LFTs, Active)
//   then per packet, up to 8:
//   [entry]                   the port it enters at, an index into every
//                             port of the subnet in node order (switch
//                             port 0 included); also the arrival port used
//                             for the direct processMad calls
//   [how]                     bits 0-1: 0 as a host's MAD layer sends it
//                             (test::roundTrip: local SMA for hop count 0,
//                             SMI send step for directed routes), 1 straight
//                             onto the wire (Subnet::send, or sendFromNode
//                             from a switch's port 0), 2 both, 3 only the
//                             direct processMad calls; bit 2: GRH; bit 3:
//                             the PMA counts as claimed by a host agent in
//                             the direct calls
//   [dlid le16] [slid le16]   LRH
//   [qps]                     bits 0-1 destination QP, 2-3 source QP,
//                             bit 4: Q_Key 0x80010000
//   [sl] [pkey le16]
//   [mad: 256 bytes]          zero-padded when the input ends
#include "tests/fuzz/fuzz_common.h"

#include "fabric/process_mad.h"
#include "fabric/smi.h"

using namespace ibemu;
using namespace ibemu::fabric;

namespace {

constexpr unsigned kMaxPackets = 8;

std::vector<Port *> allPorts(Subnet &s)
{
	std::vector<Port *> v;
	for (const auto &n : s.nodes())
		for (unsigned p = n->firstPort(); p <= n->numPorts; p++)
			v.push_back(&n->port(p));
	return v;
}

/* roundTrip REQUIREs that the SMI send step accepts the route; a bad
 * route is the write()'s EINVAL in the kernel, so check it first. */
bool hostWouldSend(const Packet &pkt, const Port &from)
{
	if (pkt.mad[1] != IB_MGMT_CLASS_SUBN_DIRECTED_ROUTE)
		return true;
	ib_smp copy = *smp(pkt.mad);
	if (copy.hop_cnt == 0 || copy.dr_slid.get() != IB_LID_PERMISSIVE)
		return true;
	return smi::prepareSend(copy, false, from.num);
}

} /* namespace */

extern "C" int LLVMFuzzerInitialize(int *, char ***)
{
	fuzz::initOnce();
	return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fuzz::Input in(data, size);
	Subnet subnet;
	fuzz::buildDefault(subnet);
	if (in.u8() & 1)
		fuzz::bringUp(subnet);
	std::vector<Port *> ports = allPorts(subnet);

	for (unsigned n = 0; n < kMaxPackets && !in.empty(); n++) {
		Port &entry = *ports[in.u8() % ports.size()];
		uint8_t how = in.u8();
		Packet pkt;
		pkt.dlid = in.u16();
		pkt.slid = in.u16();
		uint8_t qps = in.u8();
		static const uint32_t kQps[4] = { IB_QP0, IB_QP1, 2, 0xffffff };
		pkt.dstQp = kQps[qps & 3];
		pkt.srcQp = kQps[(qps >> 2) & 3];
		pkt.qkey = (qps & 0x10) ? IB_QP1_QKEY : 0;
		pkt.sl = in.u8() & 0xf;
		pkt.pkey = in.u16();
		if (how & 4) {
			pkt.grh = true;
			pkt.sgid[0] = 0xfe;
			pkt.sgid[1] = 0x80;
			pkt.dgid = pkt.sgid;
			pkt.hopLimit = 0xff;
			for (int i = 0; i < 8; i++)
				pkt.sgid[8 + i] = static_cast<uint8_t>(entry.guid >> (56 - 8 * i));
		}
		in.fill(pkt.mad.data(), kMadSize);

		unsigned mode = how & 3;
		bool caPort = !entry.node->isSwitch();
		if (mode == 0 || mode == 2) {
			if (caPort && hostWouldSend(pkt, entry)) {
				auto r = test::roundTrip(subnet, entry, pkt);
				FUZZ_TRACE("%u: %s port %u: class 0x%02x method 0x%02x attr 0x%04x: %s 0x%04x\n", n,
					   entry.node->name.c_str(), entry.num, pkt.mad[1], pkt.mad[3],
					   madHdr(pkt.mad)->attr_id.get(), r ? "status" : "no answer",
					   r ? madHdr(*r)->status.get() : 0);
			}
		}
		if (mode == 1 || mode == 2) {
			uint64_t dropped = subnet.droppedPackets();
			if (entry.node->isSwitch() && entry.num == 0)
				subnet.sendFromNode(entry, pkt);
			else
				subnet.send(entry, pkt);
			FUZZ_TRACE("%u: %s port %u: onto the wire, %llu dropped\n", n, entry.node->name.c_str(),
				   entry.num, (unsigned long long)(subnet.droppedPackets() - dropped));
		}

		/* the node agents of every switch and CA, as the driver's process_mad */
		for (const auto &node : subnet.nodes()) {
			unsigned arrival = node->firstPort() + entry.num % (node->numPorts + 1 - node->firstPort());
			Port &at = node->port(arrival);
			Mad reply{};
			MadResult r = processMad(subnet, at, pkt, reply, how & 8);
			if (r == MadResult::PassUp && unmatchedResponse(pkt.mad, reply))
				(void)reply;
		}
	}
	return 0;
}
