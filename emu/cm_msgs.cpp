// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// CM message layouts (IBA 12.6, tables 106-113). Offsets below are from
// the start of the MAD: the message's own offset plus the 24-byte header.
#include "emu/cm_msgs.h"

#include <algorithm>
#include <cstring>

namespace ibemu::emu::cm {

namespace {

constexpr size_t H = 24; /* the MAD header */

void put8(ibemu::Mad &m, size_t off, uint8_t v)
{
	m[H + off] = v;
}
void put16(ibemu::Mad &m, size_t off, uint16_t v)
{
	m[H + off] = uint8_t(v >> 8);
	m[H + off + 1] = uint8_t(v);
}
void put24(ibemu::Mad &m, size_t off, uint32_t v)
{
	m[H + off] = uint8_t(v >> 16);
	m[H + off + 1] = uint8_t(v >> 8);
	m[H + off + 2] = uint8_t(v);
}
void put32(ibemu::Mad &m, size_t off, uint32_t v)
{
	put16(m, off, uint16_t(v >> 16));
	put16(m, off + 2, uint16_t(v));
}
void put64(ibemu::Mad &m, size_t off, uint64_t v)
{
	put32(m, off, uint32_t(v >> 32));
	put32(m, off + 4, uint32_t(v));
}
void putBytes(ibemu::Mad &m, size_t off, const uint8_t *p, size_t n)
{
	memcpy(m.data() + H + off, p, n);
}

uint8_t get8(const uint8_t *m, size_t off)
{
	return m[H + off];
}
uint16_t get16(const uint8_t *m, size_t off)
{
	return uint16_t(m[H + off] << 8 | m[H + off + 1]);
}
uint32_t get24(const uint8_t *m, size_t off)
{
	return uint32_t(m[H + off]) << 16 | uint32_t(m[H + off + 1]) << 8 | m[H + off + 2];
}
uint32_t get32(const uint8_t *m, size_t off)
{
	return uint32_t(get16(m, off)) << 16 | get16(m, off + 2);
}
uint64_t get64(const uint8_t *m, size_t off)
{
	return uint64_t(get32(m, off)) << 32 | get32(m, off + 4);
}
template <size_t N> void getBytes(const uint8_t *m, size_t off, std::array<uint8_t, N> &out)
{
	memcpy(out.data(), m + H + off, N);
}

} /* namespace */

uint32_t timeToMs(uint8_t t)
{
	/* 4.096 us * 2^t, rounded the kernel's way: 2^(t-8) ms */
	return t < 8 ? 1 : 1u << std::min<unsigned>(t - 8, 31);
}

void header(ibemu::Mad &mad, uint16_t attr, uint64_t tid)
{
	mad.fill(0);
	mad[0] = 1; /* base version */
	mad[1] = IB_MGMT_CLASS_CM;
	mad[2] = kClassVersion;
	mad[3] = IB_MGMT_METHOD_SEND;
	for (int i = 0; i < 8; i++)
		mad[8 + i] = uint8_t(tid >> (56 - 8 * i));
	mad[16] = uint8_t(attr >> 8);
	mad[17] = uint8_t(attr);
}

/* Table 106 REQ */
void encode(const Req &m, ibemu::Mad &mad)
{
	put32(mad, 0, m.localCommId);
	put64(mad, 8, m.serviceId);
	put64(mad, 16, m.localCaGuid);
	put32(mad, 28, m.localQkey);
	put24(mad, 32, m.localQpn);
	put8(mad, 35, m.responderResources);
	put8(mad, 39, m.initiatorDepth);
	put8(mad, 43, uint8_t(m.remoteCmResponseTimeout << 3 | (m.transportType & 3) << 1 | m.endToEndFlowControl));
	put24(mad, 44, m.startingPsn);
	put8(mad, 47, uint8_t(m.localCmResponseTimeout << 3 | (m.retryCount & 7)));
	put16(mad, 48, m.pkey);
	put8(mad, 50, uint8_t(m.pathMtu << 4 | (m.rnrRetryCount & 7)));
	put8(mad, 51, uint8_t(m.maxCmRetries << 4 | uint8_t(m.srq) << 3));
	const ReqPath &p = m.primary;
	put16(mad, 52, p.localLid);
	put16(mad, 54, p.remoteLid);
	putBytes(mad, 56, p.localGid.data(), 16);
	putBytes(mad, 72, p.remoteGid.data(), 16);
	put32(mad, 88, (p.flowLabel & 0xfffff) << 12);
	put8(mad, 91, p.packetRate & 0x3f);
	put8(mad, 92, p.trafficClass);
	put8(mad, 93, p.hopLimit);
	put8(mad, 94, uint8_t(p.sl << 4 | uint8_t(p.subnetLocal) << 3));
	put8(mad, 95, uint8_t(p.localAckTimeout << 3));
	putBytes(mad, 140, m.privateData.data(), kReqPrivate);
}

Req decodeReq(const uint8_t *mad)
{
	Req m;
	m.localCommId = get32(mad, 0);
	m.serviceId = get64(mad, 8);
	m.localCaGuid = get64(mad, 16);
	m.localQkey = get32(mad, 28);
	m.localQpn = get24(mad, 32);
	m.responderResources = get8(mad, 35);
	m.initiatorDepth = get8(mad, 39);
	uint8_t b = get8(mad, 43);
	m.remoteCmResponseTimeout = b >> 3;
	m.transportType = (b >> 1) & 3;
	m.endToEndFlowControl = b & 1;
	m.startingPsn = get24(mad, 44);
	b = get8(mad, 47);
	m.localCmResponseTimeout = b >> 3;
	m.retryCount = b & 7;
	m.pkey = get16(mad, 48);
	b = get8(mad, 50);
	m.pathMtu = b >> 4;
	m.rnrRetryCount = b & 7;
	b = get8(mad, 51);
	m.maxCmRetries = b >> 4;
	m.srq = (b >> 3) & 1;
	ReqPath &p = m.primary;
	p.localLid = get16(mad, 52);
	p.remoteLid = get16(mad, 54);
	getBytes(mad, 56, p.localGid);
	getBytes(mad, 72, p.remoteGid);
	p.flowLabel = get32(mad, 88) >> 12;
	p.packetRate = get8(mad, 91) & 0x3f;
	p.trafficClass = get8(mad, 92);
	p.hopLimit = get8(mad, 93);
	b = get8(mad, 94);
	p.sl = b >> 4;
	p.subnetLocal = (b >> 3) & 1;
	p.localAckTimeout = get8(mad, 95) >> 3;
	getBytes(mad, 140, m.privateData);
	return m;
}

/* Table 107 MRA */
void encode(const Mra &m, ibemu::Mad &mad)
{
	put32(mad, 0, m.localCommId);
	put32(mad, 4, m.remoteCommId);
	put8(mad, 8, uint8_t(m.messageMraed << 6));
	put8(mad, 9, uint8_t(m.serviceTimeout << 3));
}

Mra decodeMra(const uint8_t *mad)
{
	Mra m;
	m.localCommId = get32(mad, 0);
	m.remoteCommId = get32(mad, 4);
	m.messageMraed = get8(mad, 8) >> 6;
	m.serviceTimeout = get8(mad, 9) >> 3;
	return m;
}

/* Table 108 REJ */
void encode(const Rej &m, ibemu::Mad &mad)
{
	put32(mad, 0, m.localCommId);
	put32(mad, 4, m.remoteCommId);
	put8(mad, 8, uint8_t(m.messageRejected << 6));
	put8(mad, 9, uint8_t(m.infoLength << 1));
	put16(mad, 10, m.reason);
	putBytes(mad, 12, m.info.data(), m.info.size());
	putBytes(mad, 84, m.privateData.data(), kRejPrivate);
}

Rej decodeRej(const uint8_t *mad)
{
	Rej m;
	m.localCommId = get32(mad, 0);
	m.remoteCommId = get32(mad, 4);
	m.messageRejected = get8(mad, 8) >> 6;
	m.infoLength = get8(mad, 9) >> 1;
	m.reason = get16(mad, 10);
	getBytes(mad, 12, m.info);
	getBytes(mad, 84, m.privateData);
	return m;
}

/* Table 110 REP */
void encode(const Rep &m, ibemu::Mad &mad)
{
	put32(mad, 0, m.localCommId);
	put32(mad, 4, m.remoteCommId);
	put32(mad, 8, m.localQkey);
	put24(mad, 12, m.localQpn);
	put24(mad, 20, m.startingPsn);
	put8(mad, 24, m.responderResources);
	put8(mad, 25, m.initiatorDepth);
	put8(mad, 26, uint8_t(m.targetAckDelay << 3 | (m.failoverAccepted & 3) << 1 | m.endToEndFlowControl));
	put8(mad, 27, uint8_t((m.rnrRetryCount & 7) << 5 | uint8_t(m.srq) << 4));
	put64(mad, 28, m.localCaGuid);
	putBytes(mad, 36, m.privateData.data(), kRepPrivate);
}

Rep decodeRep(const uint8_t *mad)
{
	Rep m;
	m.localCommId = get32(mad, 0);
	m.remoteCommId = get32(mad, 4);
	m.localQkey = get32(mad, 8);
	m.localQpn = get24(mad, 12);
	m.startingPsn = get24(mad, 20);
	m.responderResources = get8(mad, 24);
	m.initiatorDepth = get8(mad, 25);
	uint8_t b = get8(mad, 26);
	m.targetAckDelay = b >> 3;
	m.failoverAccepted = (b >> 1) & 3;
	m.endToEndFlowControl = b & 1;
	b = get8(mad, 27);
	m.rnrRetryCount = b >> 5;
	m.srq = (b >> 4) & 1;
	m.localCaGuid = get64(mad, 28);
	getBytes(mad, 36, m.privateData);
	return m;
}

/* Tables 111-113: RTU, DREQ, DREP */
void encode(const Short &m, uint16_t attr, ibemu::Mad &mad)
{
	put32(mad, 0, m.localCommId);
	put32(mad, 4, m.remoteCommId);
	if (attr == ATTR_DREQ) {
		put24(mad, 8, m.remoteQpn);
		putBytes(mad, 12, m.privateData.data(), kDreqPrivate);
	} else {
		putBytes(mad, 8, m.privateData.data(), kRtuPrivate);
	}
}

Short decodeShort(const uint8_t *mad, uint16_t attr)
{
	Short m;
	m.localCommId = get32(mad, 0);
	m.remoteCommId = get32(mad, 4);
	if (attr == ATTR_DREQ) {
		m.remoteQpn = get24(mad, 8);
		memcpy(m.privateData.data(), mad + H + 12, kDreqPrivate);
	} else {
		getBytes(mad, 8, m.privateData);
	}
	return m;
}

/* Table 119 SIDR_REQ */
void encode(const SidrReq &m, ibemu::Mad &mad)
{
	put32(mad, 0, m.requestId);
	put16(mad, 4, m.pkey);
	put64(mad, 8, m.serviceId);
	putBytes(mad, 16, m.privateData.data(), kSidrReqPrivate);
}

SidrReq decodeSidrReq(const uint8_t *mad)
{
	SidrReq m;
	m.requestId = get32(mad, 0);
	m.pkey = get16(mad, 4);
	m.serviceId = get64(mad, 8);
	getBytes(mad, 16, m.privateData);
	return m;
}

/* Table 120 SIDR_REP */
void encode(const SidrRep &m, ibemu::Mad &mad)
{
	put32(mad, 0, m.requestId);
	put8(mad, 4, m.status);
	put8(mad, 5, m.infoLength);
	put24(mad, 8, m.qpn);
	put64(mad, 12, m.serviceId);
	put32(mad, 20, m.qkey);
	putBytes(mad, 24, m.info.data(), m.info.size());
	putBytes(mad, 96, m.privateData.data(), kSidrRepPrivate);
}

SidrRep decodeSidrRep(const uint8_t *mad)
{
	SidrRep m;
	m.requestId = get32(mad, 0);
	m.status = get8(mad, 4);
	m.infoLength = get8(mad, 5);
	m.qpn = get24(mad, 8);
	m.serviceId = get64(mad, 12);
	m.qkey = get32(mad, 20);
	getBytes(mad, 24, m.info);
	getBytes(mad, 96, m.privateData);
	return m;
}

} /* namespace ibemu::emu::cm */
