// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// A packet on the simulated wire: the routing headers the fabric looks at
// (LRH, optional GRH, BTH/DETH fields) and a 256-byte MAD payload.
#pragma once

#include "fabric/mad.h"

#include <array>
#include <cstdint>

namespace ibemu::fabric {

using Gid = std::array<uint8_t, 16>;

struct Packet {
	/* LRH */
	uint16_t slid = IB_LID_PERMISSIVE;
	uint16_t dlid = IB_LID_PERMISSIVE;
	uint8_t sl = 0;
	/* GRH */
	bool grh = false;
	Gid sgid{};
	Gid dgid{};
	uint8_t hopLimit = 0;
	uint8_t trafficClass = 0;
	uint32_t flowLabel = 0;
	/* BTH / DETH */
	uint32_t srcQp = 0;
	uint32_t dstQp = 0;
	uint16_t pkey = 0xffff;
	uint32_t qkey = 0;

	Mad mad{};

	/* QP0 traffic travels on VL15 and may cross links that are not yet Active. */
	bool isVl15() const { return dstQp == IB_QP0; }
	bool isMulticast() const { return dlid >= IB_MULTICAST_LID_BASE && dlid != IB_LID_PERMISSIVE; }

	/* Octets from the start of the LRH to the end of the ICRC, as counted by
	 * PortXmitData/PortRcvData (IBA 16.1.3.5): LRH 8, GRH 40, BTH 12, DETH 8,
	 * the MAD, ICRC 4. */
	uint32_t wireBytes() const { return 8 + (grh ? 40 : 0) + 12 + 8 + kMadSize + 4; }
};

/*
 * The host software behind a CA port: the kernel MAD layer of a local HCA
 * (emu/) or, for nodes nobody attached, the fabric's idle-host model.
 * The fabric calls receive() for every packet that arrives at the port and
 * is addressed to it; DR hop processing has already been done.
 */
class HostStack {
public:
	virtual void receive(struct Port &port, const Packet &pkt) = 0;

protected:
	~HostStack() = default;
};

} /* namespace ibemu::fabric */
