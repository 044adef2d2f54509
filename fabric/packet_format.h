// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// The bytes of a packet on the wire (IBA vol. 1 ch. 7 and 9): LRH, GRH when
// present, BTH, the extended transport headers, the payload, ICRC and VCRC.
//
// The fabric moves Packet structs and counts data messages; nothing in it
// needs these bytes. They are built only for a capture (tools/observe/packet_capture),
// which writes what a port would have sent or received.
#pragma once

#include "fabric/packet.h"

#include <cstdint>
#include <span>
#include <vector>

namespace ibemu::fabric {

/* BTH opcodes (IBA 9.2, table 38): the transport in the top 3 bits. */
enum : uint8_t {
	IB_OPCODE_RC = 0x00,
	IB_OPCODE_UC = 0x20,
	IB_OPCODE_RD = 0x40,
	IB_OPCODE_UD = 0x60,
	IB_OPCODE_XRC = 0xa0, /* requests carry an XRCETH (the SRQ) after the BTH */

	IB_OPCODE_SEND_FIRST = 0x00,
	IB_OPCODE_SEND_MIDDLE = 0x01,
	IB_OPCODE_SEND_LAST = 0x02,
	IB_OPCODE_SEND_LAST_WITH_IMMEDIATE = 0x03,
	IB_OPCODE_SEND_ONLY = 0x04,
	IB_OPCODE_SEND_ONLY_WITH_IMMEDIATE = 0x05,
	IB_OPCODE_RDMA_WRITE_FIRST = 0x06,
	IB_OPCODE_RDMA_WRITE_MIDDLE = 0x07,
	IB_OPCODE_RDMA_WRITE_LAST = 0x08,
	IB_OPCODE_RDMA_WRITE_LAST_WITH_IMMEDIATE = 0x09,
	IB_OPCODE_RDMA_WRITE_ONLY = 0x0a,
	IB_OPCODE_RDMA_WRITE_ONLY_WITH_IMMEDIATE = 0x0b,
	IB_OPCODE_RDMA_READ_REQUEST = 0x0c,
	IB_OPCODE_RDMA_READ_RESPONSE_FIRST = 0x0d,
	IB_OPCODE_RDMA_READ_RESPONSE_MIDDLE = 0x0e,
	IB_OPCODE_RDMA_READ_RESPONSE_LAST = 0x0f,
	IB_OPCODE_RDMA_READ_RESPONSE_ONLY = 0x10,
	IB_OPCODE_ACKNOWLEDGE = 0x11,
	IB_OPCODE_ATOMIC_ACKNOWLEDGE = 0x12,
	IB_OPCODE_COMPARE_SWAP = 0x13,
	IB_OPCODE_FETCH_ADD = 0x14,
	IB_OPCODE_SEND_LAST_WITH_INVALIDATE = 0x16,
	IB_OPCODE_SEND_ONLY_WITH_INVALIDATE = 0x17,
};

/* LRH:LNH (IBA 7.7.3) */
enum : uint8_t {
	IB_LNH_RAW = 0,
	IB_LNH_IP = 1,
	IB_LNH_IBA_LOCAL = 2, /* BTH follows */
	IB_LNH_IBA_GLOBAL = 3, /* GRH follows */
};

constexpr size_t kLrhBytes = 8, kGrhBytes = 40, kBthBytes = 12, kDethBytes = 8, kRethBytes = 16, kAethBytes = 4,
		 kAtomicEthBytes = 28, kAtomicAckEthBytes = 8, kImmBytes = 4, kXrcethBytes = 4, kIcrcBytes = 4,
		 kVcrcBytes = 2;

/* The fields of one packet's headers. The extended transport headers
 * (DETH, RETH, AETH, ImmDt, ...) come pre-built in `eth`, in the order
 * IBA 9.2 gives for the opcode. */
struct PacketHeaders {
	/* LRH */
	uint8_t vl = 0;
	uint8_t sl = 0;
	uint16_t dlid = 0;
	uint16_t slid = 0;
	/* GRH */
	bool grh = false;
	uint8_t trafficClass = 0;
	uint32_t flowLabel = 0;
	uint8_t hopLimit = 0;
	Gid sgid{};
	Gid dgid{};
	/* BTH */
	uint8_t opcode = 0;
	bool solicited = false;
	bool migReq = true; /* APM not in use: MigReq stays 1 (IBA 9.2.2.1) */
	uint16_t pkey = 0xffff;
	uint32_t destQp = 0;
	bool ackReq = false;
	uint32_t psn = 0;

	std::vector<uint8_t> eth;
};

/* The packet's bytes, LRH to VCRC: PktLen, LNH, PadCnt and both CRCs are
 * derived here. */
std::vector<uint8_t> encodePacket(const PacketHeaders &h, std::span<const uint8_t> payload);

/* A MAD packet as the fabric carries it: UD SEND Only with a DETH, on VL15
 * for QP0. */
std::vector<uint8_t> encodeMadPacket(const Packet &pkt);

/* The CRCs of IBA 7.8 over bytes laid out as encodePacket lays them out
 * (the ICRC over everything before it, with the variant fields as ones;
 * the VCRC over everything before it). */
uint32_t invariantCrc(std::span<const uint8_t> packetUpToIcrc);
uint16_t variantCrc(std::span<const uint8_t> packetUpToVcrc);

/* What a reader of captured bytes needs, found by parsePacket(). */
struct PacketView {
	uint8_t vl = 0, sl = 0;
	uint16_t dlid = 0, slid = 0;
	bool grh = false;
	uint8_t opcode = 0;
	bool solicited = false, ackReq = false;
	uint16_t pkey = 0;
	uint32_t destQp = 0, psn = 0;
	size_t eth = 0; /* offset of the extended transport headers */
	size_t payload = 0; /* offset and length of the payload (no pad) */
	size_t payloadLen = 0;
	/* a UD packet's DETH */
	uint32_t qkey = 0, srcQp = 0;
	/* a MAD (UD SEND Only on QP0 or QP1 with a 256-byte payload) */
	bool isMad = false;
};

/* Octets of extended transport headers an opcode carries (IBA 9.2,
 * table 38), or -1 for an opcode ibemu does not know. */
int ethBytesFor(uint8_t opcode);

/* Reads the headers of a packet laid out as encodePacket() lays them out.
 * false when the bytes are too short, the LNH is not an IBA transport, or
 * the lengths do not add up. */
bool parsePacket(std::span<const uint8_t> bytes, PacketView &v);

/* Bytes that parse as a packet (parsePacket) and whose ICRC and VCRC
 * are right: what a receiver would accept off the wire. */
bool packetIntact(std::span<const uint8_t> bytes);

/* The Packet a MAD packet's bytes carry (the inverse of encodeMadPacket):
 * false unless they parse, are a MAD (UD SEND Only to QP0 or QP1, 256
 * octets), both CRCs are right and QP0 travels on VL15. */
bool decodeMadPacket(std::span<const uint8_t> bytes, Packet &out);

/* Extended transport header builders, appended to `eth`. */
void appendDeth(std::vector<uint8_t> &eth, uint32_t qkey, uint32_t srcQp);
void appendReth(std::vector<uint8_t> &eth, uint64_t va, uint32_t rkey, uint32_t dmaLength);
void appendAeth(std::vector<uint8_t> &eth, uint8_t syndrome, uint32_t msn);
void appendImm(std::vector<uint8_t> &eth, uint32_t immBigEndian);
void appendAtomicEth(std::vector<uint8_t> &eth, uint64_t va, uint32_t rkey, uint64_t swapAdd, uint64_t compare);
void appendAtomicAckEth(std::vector<uint8_t> &eth, uint64_t original);

} /* namespace ibemu::fabric */
