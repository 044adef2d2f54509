// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// What the data path's files share (private to emu/verbs_*.cpp): the
// fields of the wire a message carries, the timers, and the steps of
// completing that the requester, the responder and the completer all take.
//   verbs_req.cpp   the requester (rxe_req.c): progress, sending away,
//                   multicast sends, retry waits
//   verbs_resp.cpp  the responder (rxe_resp.c)
//   verbs_comp.cpp  the completer (rxe_comp.c): completions, flushes, the
//                   Error state, replies from other daemons
//   verbs_mr.cpp    the copies (rxe_mr.c)
#pragma once

#include "emu/verbs_device.h"
#include "emu/verbs_mr.h"
#include "emu/verbs_packets.h"
#include "fabric/node.h"

#include <algorithm>
#include <chrono>
#include <cstring>

namespace ibemu::emu {

/* A port's GID at index 0: its subnet prefix and its port GUID */
inline fabric::Gid portGid(const fabric::Port &p)
{
	fabric::Gid g{};
	for (size_t i = 0; i < 8; i++) {
		g[i] = static_cast<uint8_t>(p.gidPrefix >> (56 - 8 * i));
		g[8 + i] = static_cast<uint8_t>(p.guid >> (56 - 8 * i));
	}
	return g;
}

inline uint16_t pkeyAt(const fabric::Port &p, uint16_t index)
{
	return index < p.pkeys.size() ? p.pkeys[index] : 0;
}

/* IBA 10.9.3: same partition, and not both limited members. */
inline bool pkeysMatch(uint16_t a, uint16_t b)
{
	return (a & 0x7fff) && (a & 0x7fff) == (b & 0x7fff) && ((a | b) & 0x8000);
}

/* The Q_Key a UD send carries: the QP's own when the work request's has
 * its high bit set (IBA 10.2.5) */
inline uint32_t sendQkey(const Qp &qp, const SendWqe &w)
{
	return (w.wr.wr.ud.remote_qkey & 0x80000000u) ? qp.qkey : w.wr.wr.ud.remote_qkey;
}

/* The LRH, GRH and BTH fields of a message's packets, for a capture.
 * Route is the GRH part of an address vector: the AH's (UD) or the QP's
 * (connected), which name the same fields. */
template <typename Route>
inline fabric::PacketHeaders wireBase(const fabric::Port &src, uint16_t slid, uint16_t dlid, uint8_t sl, uint16_t pkey,
				      uint32_t destQp, uint8_t transport, bool global, const Route &grh)
{
	fabric::PacketHeaders h;
	h.sl = sl & 0xf;
	h.vl = src.sl2vl[h.sl] & 0xf;
	h.slid = slid;
	h.dlid = dlid;
	h.pkey = pkey;
	h.destQp = destQp;
	h.opcode = transport;
	h.grh = global;
	if (global) {
		h.sgid = portGid(src);
		memcpy(h.dgid.data(), grh.dgid, 16);
		h.hopLimit = grh.hop_limit;
		h.trafficClass = grh.traffic_class;
		h.flowLabel = grh.flow_label;
	}
	return h;
}

/* The same headers for the way back */
inline fabric::PacketHeaders reversed(fabric::PacketHeaders h, uint32_t destQp)
{
	std::swap(h.slid, h.dlid);
	std::swap(h.sgid, h.dgid);
	h.destQp = destQp;
	h.eth.clear();
	return h;
}

inline uint8_t nakSyndrome(WcStatus requesterStatus)
{
	return requesterStatus == IB_WC_REM_ACCESS_ERR     ? kAethNakRemoteAccess
		: requesterStatus == IB_WC_REM_INV_REQ_ERR ? kAethNakInvalidRequest
							   : kAethNakRemoteOperational;
}

inline unsigned mtuBytes(uint8_t mtu)
{
	return 128u << std::clamp<uint8_t>(mtu, 1, 5);
}

/* The local ACK timeout: 4.096 us * 2^timeout (0: none, wait for ever). */
inline std::chrono::nanoseconds ackTimeout(uint8_t timeout)
{
	return std::chrono::nanoseconds(uint64_t(4096) << std::min<uint8_t>(timeout, 31));
}

/* The RNR NAK timer field (IBA table 45), in microseconds. */
inline std::chrono::microseconds rnrDelay(uint8_t code)
{
	static const uint32_t us[32] = { 655360, 10,    20,    30,     40,     60,     80,     120,
					 160,    240,   320,   480,    640,    960,    1280,   1920,
					 2560,   3840,  5120,  7680,   10240,  15360,  20480,  30720,
					 40960,  61440, 81920, 122880, 163840, 245760, 327680, 491520 };
	return std::chrono::microseconds(us[code & 31]);
}

inline WcOpcode wcOpcode(uint32_t wrOpcode)
{
	switch (wrOpcode) {
	case IB_WR_RDMA_WRITE:
	case IB_WR_RDMA_WRITE_WITH_IMM:
		return IB_WC_RDMA_WRITE;
	case IB_WR_RDMA_READ:
		return IB_WC_RDMA_READ;
	case IB_WR_ATOMIC_CMP_AND_SWP:
		return IB_WC_COMP_SWAP;
	case IB_WR_ATOMIC_FETCH_AND_ADD:
		return IB_WC_FETCH_ADD;
	case IB_WR_BIND_MW:
		return IB_WC_BIND_MW;
	case IB_WR_LOCAL_INV:
		return IB_WC_LOCAL_INV;
	default:
		return IB_WC_SEND;
	}
}

/* Octets a message puts on the wire: per packet LRH 8, BTH 12, ICRC 4,
 * VCRC 2, plus the extension headers of its opcode. */
inline uint64_t wireBytes(uint64_t payload, uint32_t packets, unsigned extPerMsg, unsigned extPerPacket)
{
	return payload + uint64_t(packets) * (26 + extPerPacket) + extPerMsg;
}

inline uint32_t packetsFor(uint64_t len, unsigned mtu)
{
	return len ? static_cast<uint32_t>((len + mtu - 1) / mtu) : 1;
}

/* a - b in 24-bit PSN arithmetic, as a signed distance */
inline int32_t psnDiff(uint32_t a, uint32_t b)
{
	const auto d = static_cast<int32_t>((a - b) & 0xffffff);
	return d >= 0x800000 ? d - 0x1000000 : d;
}

inline uint32_t be32At(const uint8_t *p)
{
	return uint32_t(p[0]) << 24 | uint32_t(p[1]) << 16 | uint32_t(p[2]) << 8 | p[3];
}

inline uint64_t be64At(const uint8_t *p)
{
	return uint64_t(be32At(p)) << 32 | be32At(p + 4);
}

/* The requester's view of an AETH syndrome (IBA 9.7.5.1.1) */
inline WcStatus nakStatus(uint8_t syndrome)
{
	switch (syndrome) {
	case kAethNakInvalidRequest:
		return IB_WC_REM_INV_REQ_ERR;
	case kAethNakRemoteAccess:
		return IB_WC_REM_ACCESS_ERR;
	default:
		return IB_WC_REM_OP_ERR;
	}
}

/* Inbound::srcQp of a connected request: the responder QP's destination */
constexpr uint32_t kQpnOfPath = 0xffffffff;

/* RC, and XRC's two halves: acknowledged, retried, NAKed */
inline bool reliable(QpType t)
{
	return t == IB_QPT_RC || t == IB_QPT_XRC_INI || t == IB_QPT_XRC_TGT;
}

/* One request as the responder takes it (rxe's rxe_pkt_info), whoever
 * sent it: a requester of this daemon, of another, or a multicast send */
struct Inbound {
	QpType type = IB_QPT_RC;
	uint8_t op = 0; /* the first packet's opcode, transport bits off */
	bool hasImm = false;
	bool solicited = false;
	uint32_t imm = 0; /* ImmDt: network order */
	bool hasInv = false; /* SEND with Invalidate: the IETH's R_Key */
	uint32_t invRkey = 0;
	uint32_t psn = 0, lastPsn = 0;
	uint16_t pkey = 0, slid = 0, dlid = 0;
	uint8_t sl = 0;
	uint32_t qkey = 0, srcQp = kQpnOfPath; /* DETH */
	uint32_t xrcSrqn = 0; /* XRC (type XRC_TGT): the XRCETH's SRQ */
	const uint8_t *grh = nullptr; /* UD: the 40 bytes of its GRH, null: none */
	uint64_t va = 0, len = 0, swapAdd = 0, compare = 0; /* RETH or AtomicETH */
	uint32_t rkey = 0, dmaLen = 0;
	std::vector<Seg> data; /* what a SEND or WRITE carries */
	std::vector<Seg> readTo; /* a requester of this daemon: where a READ's data goes */
};

/* What the responder answers, for its caller to send its own way */
struct Answer {
	bool reply = false; /* RC: kind goes back (nothing: the request is lost) */
	WireReply kind = WireReply::Ack;
	uint8_t syndrome = 0;
	uint64_t atomicOrig = 0; /* an atomic ACK's original value */
	std::vector<uint8_t> readData; /* a READ's data for a requester elsewhere */
	bool requesterFault = false; /* the requester's own memory failed: LOC_PROT_ERR */
	bool raise = false; /* event, about the responder QP */
	AsyncEvent event{};
	bool toError = false; /* the responder QP to Error once the answer is out */
};

/* A ring QP's work requests left its queues (verbs_comp.cpp) */
void retired(Qp &qp);
/* qp to the Error state unless it is there (verbs_comp.cpp) */
void toError(VerbsDevice &dev, Qp &qp);
/* A receive left an SRQ (verbs_resp.cpp) */
void srqConsumed(VerbsDevice &dev, Srq &srq);

} /* namespace ibemu::emu */
