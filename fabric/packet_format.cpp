// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
#include "fabric/packet_format.h"

#include <zlib.h>

#include <algorithm>

namespace ibemu::fabric {

namespace {

/* IBA 7.7 */
struct ib_lrh {
	uint8_t vl_lver; /* VL:4 LVer:4 */
	uint8_t sl_lnh; /* SL:4 reserved:2 LNH:2 */
	be16 dlid;
	be16 pkt_len; /* reserved:5 PktLen:11, in 4-octet words, LRH to ICRC */
	be16 slid;
};
static_assert(sizeof(ib_lrh) == kLrhBytes);

/* IBA 8.3 */
struct ib_grh {
	be32 ver_tclass_flow; /* IPVer:4 TClass:8 FlowLabel:20 */
	be16 pay_len; /* octets after the GRH up to the ICRC, inclusive */
	uint8_t next_hdr; /* 0x1b: BTH follows */
	uint8_t hop_limit;
	uint8_t sgid[16];
	uint8_t dgid[16];
};
static_assert(sizeof(ib_grh) == kGrhBytes);

/* IBA 9.2 */
struct ib_bth {
	uint8_t opcode;
	uint8_t se_m_pad_tver; /* SE:1 M:1 PadCnt:2 TVer:4 */
	be16 pkey;
	uint8_t resv8a; /* variant: not covered by the ICRC */
	be24 dest_qp;
	uint8_t a_resv7; /* AckReq:1 reserved:7 */
	be24 psn;
};
static_assert(sizeof(ib_bth) == kBthBytes);

constexpr uint8_t kGrhNextHeaderBth = 0x1b;

uint32_t be32FromBytes(const uint8_t *p)
{
	return overlay<be32>(p)->get();
}

template <typename T> void appendStruct(std::vector<uint8_t> &out, const T &v)
{
	const auto *p = reinterpret_cast<const uint8_t *>(&v);
	out.insert(out.end(), p, p + sizeof v);
}

void appendBe(std::vector<uint8_t> &out, uint64_t v, unsigned bytes)
{
	for (unsigned i = bytes; i-- > 0;)
		out.push_back(static_cast<uint8_t>(v >> (8 * i)));
}

void appendLe(std::vector<uint8_t> &out, uint64_t v, unsigned bytes)
{
	for (unsigned i = 0; i < bytes; i++)
		out.push_back(static_cast<uint8_t>(v >> (8 * i)));
}

} /* namespace */

uint32_t invariantCrc(std::span<const uint8_t> pkt)
{
	/* IBA 7.8.1: the CRC-32 of Ethernet over the packet with the fields a
	 * switch or router may change set to ones: LRH:VL; GRH:TClass,
	 * FlowLabel and HopLmt; BTH:Resv8a. */
	if (pkt.size() < kLrhBytes)
		return 0;
	/* the headers masked in a copy, the rest as it is: zlib's crc32 is
	 * that CRC (reflected 0x04c11db7, ones in and out), and fast */
	uint8_t head[kLrhBytes + kGrhBytes + kBthBytes];
	size_t bth = kLrhBytes;
	if ((pkt[1] & 3) == IB_LNH_IBA_GLOBAL && pkt.size() >= kLrhBytes + kGrhBytes)
		bth += kGrhBytes;
	const size_t n = std::min(pkt.size(), bth + kBthBytes);
	std::copy_n(pkt.begin(), n, head);
	head[0] |= 0xf0;
	if (bth > kLrhBytes) {
		head[kLrhBytes] |= 0x0f;
		std::fill_n(head + kLrhBytes + 1, 3, 0xff);
		head[kLrhBytes + 7] = 0xff;
	}
	if (n == bth + kBthBytes)
		head[bth + 4] = 0xff;
	uLong crc = crc32(0, head, static_cast<uInt>(n));
	crc = crc32(crc, pkt.data() + n, static_cast<uInt>(pkt.size() - n));
	return static_cast<uint32_t>(crc);
}

namespace {

/* The VCRC's tables for eight bytes a step (slicing-by-8): t[0] is the
 * byte-at-a-time table of the reflected polynomial (0x100b reversed is
 * 0xd008), t[k][i] the effect of byte i followed by k zero bytes. It
 * runs over every byte of every packet that crosses daemons, twice
 * (built, then checked): a byte at a time, it led a profile of RDMA
 * traffic between daemons (docs/multihost.md). */
struct VcrcTables {
	uint16_t t[8][256];
	constexpr VcrcTables() : t{}
	{
		for (unsigned i = 0; i < 256; i++) {
			uint16_t c = static_cast<uint16_t>(i);
			for (int bit = 0; bit < 8; bit++)
				c = (c & 1) ? static_cast<uint16_t>((c >> 1) ^ 0xd008) : static_cast<uint16_t>(c >> 1);
			t[0][i] = c;
		}
		for (unsigned k = 1; k < 8; k++)
			for (unsigned i = 0; i < 256; i++)
				t[k][i] = static_cast<uint16_t>((t[k - 1][i] >> 8) ^ t[0][t[k - 1][i] & 0xff]);
	}
};
constexpr VcrcTables kVcrc;

} /* namespace */

uint16_t variantCrc(std::span<const uint8_t> pkt)
{
	/* IBA 7.8.2: x^16+x^12+x^3+x+1, seeded with ones, over LRH to ICRC,
	 * sent bit-reversed and complemented like the ICRC */
	const auto &t = kVcrc.t;
	uint16_t crc = 0xffff;
	const uint8_t *p = pkt.data();
	size_t n = pkt.size();
	for (; n >= 8; n -= 8, p += 8) {
		const unsigned x = crc ^ (p[0] | p[1] << 8);
		crc = static_cast<uint16_t>(t[7][x & 0xff] ^ t[6][x >> 8] ^ t[5][p[2]] ^ t[4][p[3]] ^ t[3][p[4]] ^
					    t[2][p[5]] ^ t[1][p[6]] ^ t[0][p[7]]);
	}
	for (; n; n--, p++)
		crc = static_cast<uint16_t>((crc >> 8) ^ t[0][(crc ^ *p) & 0xff]);
	return static_cast<uint16_t>(crc ^ 0xffff);
}

std::vector<uint8_t> encodePacket(const PacketHeaders &h, std::span<const uint8_t> payload)
{
	const unsigned pad = (4 - payload.size() % 4) % 4;
	const size_t transport = kBthBytes + h.eth.size() + payload.size() + pad + kIcrcBytes;
	const size_t upToIcrc = kLrhBytes + (h.grh ? kGrhBytes : 0) + transport;

	std::vector<uint8_t> out;
	out.reserve(upToIcrc + kVcrcBytes);

	ib_lrh lrh{};
	lrh.vl_lver = nibbles(h.vl, 0);
	lrh.sl_lnh = static_cast<uint8_t>((h.sl << 4) | (h.grh ? IB_LNH_IBA_GLOBAL : IB_LNH_IBA_LOCAL));
	lrh.dlid = h.dlid;
	lrh.pkt_len = static_cast<uint16_t>((upToIcrc / 4) & 0x7ff);
	lrh.slid = h.slid;
	appendStruct(out, lrh);

	if (h.grh) {
		ib_grh grh{};
		grh.ver_tclass_flow = (6u << 28) | (uint32_t(h.trafficClass) << 20) | (h.flowLabel & 0xfffff);
		grh.pay_len = static_cast<uint16_t>(transport);
		grh.next_hdr = kGrhNextHeaderBth;
		grh.hop_limit = h.hopLimit;
		std::copy(h.sgid.begin(), h.sgid.end(), grh.sgid);
		std::copy(h.dgid.begin(), h.dgid.end(), grh.dgid);
		appendStruct(out, grh);
	}

	ib_bth bth{};
	bth.opcode = h.opcode;
	bth.se_m_pad_tver = static_cast<uint8_t>((h.solicited ? 0x80 : 0) | (h.migReq ? 0x40 : 0) | (pad << 4));
	bth.pkey = h.pkey;
	bth.dest_qp = h.destQp & 0xffffff;
	bth.a_resv7 = h.ackReq ? 0x80 : 0;
	bth.psn = h.psn & 0xffffff;
	appendStruct(out, bth);

	out.insert(out.end(), h.eth.begin(), h.eth.end());
	out.insert(out.end(), payload.begin(), payload.end());
	out.insert(out.end(), pad, 0);
	/* both CRCs go out least significant byte first, as Ethernet's FCS */
	appendLe(out, invariantCrc(out), kIcrcBytes);
	appendLe(out, variantCrc(out), kVcrcBytes);
	return out;
}

std::vector<uint8_t> encodeMadPacket(const Packet &pkt)
{
	PacketHeaders h;
	h.vl = pkt.isVl15() ? 15 : 0;
	h.sl = pkt.sl;
	h.dlid = pkt.dlid;
	h.slid = pkt.slid;
	h.grh = pkt.grh;
	h.trafficClass = pkt.trafficClass;
	h.flowLabel = pkt.flowLabel;
	h.hopLimit = pkt.hopLimit;
	h.sgid = pkt.sgid;
	h.dgid = pkt.dgid;
	h.opcode = IB_OPCODE_UD | IB_OPCODE_SEND_ONLY;
	h.pkey = pkt.pkey;
	h.destQp = pkt.dstQp;
	appendDeth(h.eth, pkt.qkey, pkt.srcQp);
	return encodePacket(h, pkt.mad);
}

int ethBytesFor(uint8_t opcode)
{
	const uint8_t transport = opcode & 0xe0, op = opcode & 0x1f;
	if (transport == IB_OPCODE_UD) {
		if (op == IB_OPCODE_SEND_ONLY)
			return kDethBytes;
		if (op == IB_OPCODE_SEND_ONLY_WITH_IMMEDIATE)
			return kDethBytes + kImmBytes;
		return -1;
	}
	if (transport == IB_OPCODE_XRC) { /* RC's headers, a request's after its XRCETH */
		const int rc = ethBytesFor(IB_OPCODE_RC | op);
		const bool response = op == IB_OPCODE_ACKNOWLEDGE || op == IB_OPCODE_ATOMIC_ACKNOWLEDGE ||
			(op >= IB_OPCODE_RDMA_READ_RESPONSE_FIRST && op <= IB_OPCODE_RDMA_READ_RESPONSE_ONLY);
		return rc < 0 || response ? rc : rc + int(kXrcethBytes);
	}
	if (transport != IB_OPCODE_RC && transport != IB_OPCODE_UC)
		return -1;
	switch (op) {
	case IB_OPCODE_SEND_FIRST:
	case IB_OPCODE_SEND_MIDDLE:
	case IB_OPCODE_SEND_LAST:
	case IB_OPCODE_SEND_ONLY:
	case IB_OPCODE_RDMA_WRITE_MIDDLE:
	case IB_OPCODE_RDMA_WRITE_LAST:
	case IB_OPCODE_RDMA_READ_RESPONSE_MIDDLE:
		return 0;
	case IB_OPCODE_SEND_LAST_WITH_IMMEDIATE:
	case IB_OPCODE_SEND_ONLY_WITH_IMMEDIATE:
	case IB_OPCODE_RDMA_WRITE_LAST_WITH_IMMEDIATE:
	case IB_OPCODE_SEND_LAST_WITH_INVALIDATE:
	case IB_OPCODE_SEND_ONLY_WITH_INVALIDATE:
		return kImmBytes; /* ImmDt or IETH, both 4 octets */
	case IB_OPCODE_RDMA_WRITE_FIRST:
	case IB_OPCODE_RDMA_WRITE_ONLY:
	case IB_OPCODE_RDMA_READ_REQUEST:
		return kRethBytes;
	case IB_OPCODE_RDMA_WRITE_ONLY_WITH_IMMEDIATE:
		return kRethBytes + kImmBytes;
	case IB_OPCODE_RDMA_READ_RESPONSE_FIRST:
	case IB_OPCODE_RDMA_READ_RESPONSE_LAST:
	case IB_OPCODE_RDMA_READ_RESPONSE_ONLY:
	case IB_OPCODE_ACKNOWLEDGE:
		return kAethBytes;
	case IB_OPCODE_ATOMIC_ACKNOWLEDGE:
		return kAethBytes + kAtomicAckEthBytes;
	case IB_OPCODE_COMPARE_SWAP:
	case IB_OPCODE_FETCH_ADD:
		return kAtomicEthBytes;
	default:
		return -1;
	}
}

bool parsePacket(std::span<const uint8_t> b, PacketView &v)
{
	v = PacketView{};
	if (b.size() < kLrhBytes + kBthBytes + kIcrcBytes + kVcrcBytes)
		return false;
	const ib_lrh &lrh = *overlay<ib_lrh>(b.data());
	const uint8_t lnh = lrh.sl_lnh & 3;
	if (lnh != IB_LNH_IBA_LOCAL && lnh != IB_LNH_IBA_GLOBAL)
		return false;
	v.vl = hiNibble(lrh.vl_lver);
	v.sl = hiNibble(lrh.sl_lnh);
	v.dlid = lrh.dlid;
	v.slid = lrh.slid;
	v.grh = lnh == IB_LNH_IBA_GLOBAL;
	const size_t upToIcrc = size_t(lrh.pkt_len & 0x7ff) * 4;
	if (upToIcrc + kVcrcBytes != b.size())
		return false;
	const size_t bthAt = kLrhBytes + (v.grh ? kGrhBytes : 0);
	if (bthAt + kBthBytes + kIcrcBytes > upToIcrc)
		return false;
	const ib_bth &bth = *overlay<ib_bth>(b.data() + bthAt);
	v.opcode = bth.opcode;
	v.solicited = bth.se_m_pad_tver & 0x80;
	v.ackReq = bth.a_resv7 & 0x80;
	v.pkey = bth.pkey;
	v.destQp = bth.dest_qp;
	v.psn = bth.psn;
	const int eth = ethBytesFor(v.opcode);
	const unsigned pad = (bth.se_m_pad_tver >> 4) & 3;
	v.eth = bthAt + kBthBytes;
	if (eth < 0 || v.eth + size_t(eth) + pad + kIcrcBytes > upToIcrc)
		return false;
	v.payload = v.eth + size_t(eth);
	v.payloadLen = upToIcrc - kIcrcBytes - pad - v.payload;
	if ((v.opcode & 0xe0) == IB_OPCODE_UD) {
		v.qkey = be32FromBytes(b.data() + v.eth);
		v.srcQp = be32FromBytes(b.data() + v.eth + 4) & 0xffffff;
		v.isMad = (v.opcode & 0x1f) == IB_OPCODE_SEND_ONLY && v.destQp <= IB_QP1 && v.payloadLen == kMadSize;
	}
	return true;
}

bool packetIntact(std::span<const uint8_t> b)
{
	PacketView v;
	if (!parsePacket(b, v))
		return false;
	const size_t upToIcrc = b.size() - kVcrcBytes;
	auto le = [&](size_t at, unsigned n) {
		uint32_t x = 0;
		for (unsigned i = 0; i < n; i++)
			x |= uint32_t(b[at + i]) << (8 * i);
		return x;
	};
	return le(upToIcrc - kIcrcBytes, kIcrcBytes) == invariantCrc(b.first(upToIcrc - kIcrcBytes)) &&
		le(upToIcrc, kVcrcBytes) == variantCrc(b.first(upToIcrc));
}

bool decodeMadPacket(std::span<const uint8_t> b, Packet &out)
{
	PacketView v;
	if (!parsePacket(b, v) || !v.isMad || (v.vl == 15) != (v.destQp == IB_QP0) || !packetIntact(b))
		return false;
	out = Packet{};
	out.slid = v.slid;
	out.dlid = v.dlid;
	out.sl = v.sl;
	out.grh = v.grh;
	if (v.grh) {
		const ib_grh &grh = *overlay<ib_grh>(b.data() + kLrhBytes);
		const uint32_t w = grh.ver_tclass_flow;
		out.trafficClass = static_cast<uint8_t>(w >> 20);
		out.flowLabel = w & 0xfffff;
		out.hopLimit = grh.hop_limit;
		std::copy(std::begin(grh.sgid), std::end(grh.sgid), out.sgid.begin());
		std::copy(std::begin(grh.dgid), std::end(grh.dgid), out.dgid.begin());
	}
	out.srcQp = v.srcQp;
	out.dstQp = v.destQp;
	out.pkey = v.pkey;
	out.qkey = v.qkey;
	std::copy_n(b.data() + v.payload, kMadSize, out.mad.begin());
	return true;
}

void appendDeth(std::vector<uint8_t> &eth, uint32_t qkey, uint32_t srcQp)
{
	appendBe(eth, qkey, 4);
	eth.push_back(0);
	appendBe(eth, srcQp & 0xffffff, 3);
}

void appendReth(std::vector<uint8_t> &eth, uint64_t va, uint32_t rkey, uint32_t dmaLength)
{
	appendBe(eth, va, 8);
	appendBe(eth, rkey, 4);
	appendBe(eth, dmaLength, 4);
}

void appendAeth(std::vector<uint8_t> &eth, uint8_t syndrome, uint32_t msn)
{
	eth.push_back(syndrome);
	appendBe(eth, msn & 0xffffff, 3);
}

void appendImm(std::vector<uint8_t> &eth, uint32_t immBigEndian)
{
	/* ImmDt travels as the application wrote it, already in network order */
	const auto *p = reinterpret_cast<const uint8_t *>(&immBigEndian);
	eth.insert(eth.end(), p, p + kImmBytes);
}

void appendAtomicEth(std::vector<uint8_t> &eth, uint64_t va, uint32_t rkey, uint64_t swapAdd, uint64_t compare)
{
	appendBe(eth, va, 8);
	appendBe(eth, rkey, 4);
	appendBe(eth, swapAdd, 8);
	appendBe(eth, compare, 8);
}

void appendAtomicAckEth(std::vector<uint8_t> &eth, uint64_t original)
{
	appendBe(eth, original, 8);
}

} /* namespace ibemu::fabric */
