// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// The packets of a verbs message as they would cross the wire (IBA 9.2-9.7):
// the request cut at the path MTU into FIRST/MIDDLE/LAST or ONLY with
// the extended headers its opcode carries, and what comes back (ACK, NAK,
// RDMA READ response, atomic ACK).
//
// The data path (verbs_req.cpp, verbs_resp.cpp) moves a message whole and builds these
// only while a capture wants them (fabric::Subnet::tappingData()), so a capture sees
// real packets and costs nothing otherwise.
#pragma once

#include "emu/uverbs_abi.h"
#include "fabric/packet_format.h"
#include "fabric/remote_cable.h"

#include <cstdint>
#include <span>
#include <vector>

namespace ibemu::emu {

using WirePackets = fabric::DataPackets; /* each LRH to VCRC */

/* PSNs a request uses: one per packet, and for an RDMA READ one per
 * response packet (IBA 9.7.1.1). */
uint32_t psnsFor(uint32_t wrOpcode, uint64_t len, unsigned mtu);

/* A request of `len` bytes. `base` holds the LRH, GRH and BTH fields
 * every packet of the message shares (transport bits in base.opcode);
 * `qkey` and `srcQp` go into a UD message's DETH; `payload` is what a
 * SEND or WRITE carries (a READ or an atomic carries none); an XRC
 * request (IB_OPCODE_XRC) carries `xrcSrqn` in its XRCETH. */
WirePackets requestPackets(const fabric::PacketHeaders &base, const ib_uverbs_send_wr &wr, uint32_t qkey,
			   uint32_t srcQp, uint32_t firstPsn, unsigned mtu, uint64_t len,
			   std::span<const uint8_t> payload, uint32_t xrcSrqn = 0);

enum class WireReply { Ack, Nak, RnrNak, ReadResponse, AtomicAck };

/* AETH syndromes (IBA 9.7.5.1.1) */
enum : uint8_t {
	kAethAck = 0x1f, /* ACK, credit count "invalid" (no end-to-end credits) */
	kAethRnrNak = 0x20, /* ORed with the RNR timer */
	kAethNakInvalidRequest = 0x61,
	kAethNakRemoteAccess = 0x62,
	kAethNakRemoteOperational = 0x63,
};

/* A reply from the responder to the request whose PSNs run from
 * firstPsn to lastPsn: an ACK carries the last, a NAK or RNR NAK the
 * first (the packet found in error: IBA 9.7.5.2), READ response packets
 * the request's PSNs in turn; `msn` is the responder's message count. */
WirePackets replyPackets(const fabric::PacketHeaders &base, WireReply kind, uint8_t syndrome, uint32_t firstPsn,
			 uint32_t lastPsn, uint32_t msn, unsigned mtu, std::span<const uint8_t> payload);

} /* namespace ibemu::emu */
