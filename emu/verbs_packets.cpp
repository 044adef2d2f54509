// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
#include "emu/verbs_packets.h"

#include "emu/verbs_enums.h"

#include <algorithm>

namespace ibemu::emu {

using namespace fabric;

namespace {

uint32_t packetCount(uint64_t len, unsigned mtu)
{
	return len ? static_cast<uint32_t>((len + mtu - 1) / mtu) : 1;
}

/* FIRST, MIDDLE, LAST or ONLY of a family whose opcodes follow that order
 * (SEND, RDMA WRITE, RDMA READ RESPONSE) */
uint8_t position(uint8_t first, uint8_t only, uint32_t i, uint32_t n)
{
	if (n == 1)
		return only;
	return i == 0 ? first : i + 1 == n ? first + 2 : first + 1;
}

} /* namespace */

uint32_t psnsFor(uint32_t wrOpcode, uint64_t len, unsigned mtu)
{
	if (wrOpcode == IB_WR_ATOMIC_CMP_AND_SWP || wrOpcode == IB_WR_ATOMIC_FETCH_AND_ADD)
		return 1;
	return packetCount(len, mtu);
}

WirePackets requestPackets(const PacketHeaders &base, const ib_uverbs_send_wr &wr, uint32_t qkey, uint32_t srcQp,
			   uint32_t firstPsn, unsigned mtu, uint64_t len, std::span<const uint8_t> payload,
			   uint32_t xrcSrqn)
{
	const uint8_t transport = base.opcode & 0xe0;
	const uint32_t op = wr.opcode;
	WirePackets out;
	PacketHeaders h = base;
	h.psn = firstPsn & 0xffffff;
	const bool reliable = transport == IB_OPCODE_RC || transport == IB_OPCODE_XRC;
	h.ackReq = reliable;
	auto xrceth = [&](std::vector<uint8_t> &eth) { /* first, right after the BTH */
						       if (transport ==
							   IB_OPCODE_XRC) /* 8 reserved bits, the 24-bit SRQ number */
							       for (int s = 24; s >= 0; s -= 8)
								       eth.push_back(static_cast<uint8_t>(
									       (xrcSrqn & 0xffffff) >> s));
	};
	xrceth(h.eth);

	if (op == IB_WR_RDMA_READ) {
		h.opcode = transport | IB_OPCODE_RDMA_READ_REQUEST;
		appendReth(h.eth, wr.wr.rdma.remote_addr, wr.wr.rdma.rkey, static_cast<uint32_t>(len));
		out.push_back(encodePacket(h, {}));
		return out;
	}
	if (op == IB_WR_ATOMIC_CMP_AND_SWP || op == IB_WR_ATOMIC_FETCH_AND_ADD) {
		h.opcode = transport | (op == IB_WR_ATOMIC_CMP_AND_SWP ? IB_OPCODE_COMPARE_SWAP : IB_OPCODE_FETCH_ADD);
		const bool cas = op == IB_WR_ATOMIC_CMP_AND_SWP;
		appendAtomicEth(h.eth, wr.wr.atomic.remote_addr, wr.wr.atomic.rkey,
				cas ? wr.wr.atomic.swap : wr.wr.atomic.compare_add, cas ? wr.wr.atomic.compare_add : 0);
		out.push_back(encodePacket(h, {}));
		return out;
	}

	const bool write = op == IB_WR_RDMA_WRITE || op == IB_WR_RDMA_WRITE_WITH_IMM;
	const bool imm = op == IB_WR_SEND_WITH_IMM || op == IB_WR_RDMA_WRITE_WITH_IMM;
	const bool inv = op == IB_WR_SEND_WITH_INV;
	const uint32_t n = transport == IB_OPCODE_UD ? 1 : packetCount(payload.size(), mtu);
	for (uint32_t i = 0; i < n; i++) {
		PacketHeaders p = base;
		p.psn = (firstPsn + i) & 0xffffff;
		const bool last = i + 1 == n;
		p.ackReq = reliable && last;
		p.solicited = last && (wr.send_flags & IB_SEND_SOLICITED);
		uint8_t code = write ? position(IB_OPCODE_RDMA_WRITE_FIRST, IB_OPCODE_RDMA_WRITE_ONLY, i, n)
				     : position(IB_OPCODE_SEND_FIRST, IB_OPCODE_SEND_ONLY, i, n);
		if (last && imm)
			code++; /* each LAST and ONLY has its WITH IMMEDIATE right after it */
		if (last && inv)
			code = n == 1 ? IB_OPCODE_SEND_ONLY_WITH_INVALIDATE : IB_OPCODE_SEND_LAST_WITH_INVALIDATE;
		p.opcode = transport | code;
		xrceth(p.eth);
		if (transport == IB_OPCODE_UD)
			appendDeth(p.eth, qkey, srcQp);
		if (write && i == 0)
			appendReth(p.eth, wr.wr.rdma.remote_addr, wr.wr.rdma.rkey, static_cast<uint32_t>(len));
		if (last && (imm || inv)) /* ImmDt, or the IETH's R_Key in network order */
			appendImm(p.eth, inv ? __builtin_bswap32(wr.ex) : wr.ex);
		const size_t off = size_t(i) * mtu;
		const size_t chunk = std::min<size_t>(mtu, payload.size() - std::min(off, payload.size()));
		out.push_back(encodePacket(p, payload.subspan(std::min(off, payload.size()), chunk)));
	}
	return out;
}

WirePackets replyPackets(const PacketHeaders &base, WireReply kind, uint8_t syndrome, uint32_t firstPsn,
			 uint32_t lastPsn, uint32_t msn, unsigned mtu, std::span<const uint8_t> payload)
{
	WirePackets out;
	PacketHeaders h = base;
	const uint8_t transport = base.opcode & 0xe0;
	switch (kind) {
	case WireReply::Ack:
	case WireReply::Nak:
	case WireReply::RnrNak:
		h.opcode = transport | IB_OPCODE_ACKNOWLEDGE;
		h.psn = (kind == WireReply::Ack ? lastPsn : firstPsn) & 0xffffff;
		appendAeth(h.eth, kind == WireReply::Ack ? uint8_t(kAethAck) : syndrome, msn);
		out.push_back(encodePacket(h, {}));
		break;
	case WireReply::AtomicAck: {
		h.opcode = transport | IB_OPCODE_ATOMIC_ACKNOWLEDGE;
		h.psn = firstPsn & 0xffffff;
		appendAeth(h.eth, kAethAck, msn);
		uint64_t orig = 0;
		for (size_t i = 0; i < payload.size() && i < 8; i++) /* the original value, host order */
			orig |= uint64_t(payload[i]) << (8 * i);
		appendAtomicAckEth(h.eth, orig);
		out.push_back(encodePacket(h, {}));
		break;
	}
	case WireReply::ReadResponse: {
		const uint32_t n = packetCount(payload.size(), mtu);
		for (uint32_t i = 0; i < n; i++) {
			PacketHeaders p = base;
			p.opcode = transport |
				position(IB_OPCODE_RDMA_READ_RESPONSE_FIRST, IB_OPCODE_RDMA_READ_RESPONSE_ONLY, i, n);
			p.psn = (firstPsn + i) & 0xffffff;
			const uint8_t pos = p.opcode & 0x1f;
			if (pos != IB_OPCODE_RDMA_READ_RESPONSE_MIDDLE)
				appendAeth(p.eth, kAethAck, msn);
			const size_t off = std::min<size_t>(size_t(i) * mtu, payload.size());
			out.push_back(
				encodePacket(p, payload.subspan(off, std::min<size_t>(mtu, payload.size() - off))));
		}
		break;
	}
	}
	return out;
}

} /* namespace ibemu::emu */
