// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// The Communication Management messages on the wire (IBA 12.6, the
// kernel's cm_msgs.h and ibta_vol1_c12.h): MADs of class 0x07, version 2,
// method Send, on QP1. Each message is a plain struct of its fields; its
// encode() writes the whole 256-byte MAD and decode() reads one. Field
// offsets are the spec's (bytes after the 24-byte MAD header), fields are
// MSB first within a byte.
#pragma once

#include "fabric/mad.h"
#include "fabric/packet.h"

#include <array>
#include <cstdint>
#include <vector>

namespace ibemu::emu::cm {

constexpr uint8_t kClassVersion = 2;

enum Attr : uint16_t {
	ATTR_REQ = 0x0010,
	ATTR_MRA = 0x0011,
	ATTR_REJ = 0x0012,
	ATTR_REP = 0x0013,
	ATTR_RTU = 0x0014,
	ATTR_DREQ = 0x0015,
	ATTR_DREP = 0x0016,
	ATTR_SIDR_REQ = 0x0017,
	ATTR_SIDR_REP = 0x0018,
};

/* private data room of each message */
constexpr size_t kReqPrivate = 92;
constexpr size_t kMraPrivate = 222;
constexpr size_t kRejPrivate = 148;
constexpr size_t kRepPrivate = 196;
constexpr size_t kRtuPrivate = 224;
constexpr size_t kDreqPrivate = 220;
constexpr size_t kDrepPrivate = 224;
constexpr size_t kSidrReqPrivate = 216;
constexpr size_t kSidrRepPrivate = 136;

/* SIDR_REP status (IBA table 120, enum ib_cm_sidr_status) */
enum SidrStatus : uint8_t {
	SIDR_SUCCESS = 0,
	SIDR_UNSUPPORTED = 1,
	SIDR_REJECT = 2,
	SIDR_NO_QP = 3,
};

/* REJ reasons (IBA table 112, the kernel's enum ib_cm_rej_reason) */
enum RejReason : uint16_t {
	REJ_TIMEOUT = 4,
	REJ_INVALID_COMM_ID = 6,
	REJ_INVALID_SERVICE_ID = 8,
	REJ_STALE_CONN = 10,
	REJ_CONSUMER_DEFINED = 28,
	REJ_VENDOR_OPTION_NOT_SUPPORTED = 35,
};

/* which message an MRA or REJ is about (MessageMRAed, MessageRejected) */
enum MsgRef : uint8_t { MSG_REQ = 0, MSG_REP = 1, MSG_OTHER = 2 };

/* the primary path of a REQ (IBA 12.6.5) */
struct ReqPath {
	uint16_t localLid = 0;
	uint16_t remoteLid = 0;
	fabric::Gid localGid{};
	fabric::Gid remoteGid{};
	uint32_t flowLabel = 0;
	uint8_t packetRate = 0;
	uint8_t trafficClass = 0;
	uint8_t hopLimit = 0;
	uint8_t sl = 0;
	bool subnetLocal = true;
	uint8_t localAckTimeout = 0;
};

struct Req {
	uint32_t localCommId = 0;
	uint64_t serviceId = 0;
	uint64_t localCaGuid = 0;
	uint32_t localQkey = 0;
	uint32_t localQpn = 0;
	uint8_t responderResources = 0;
	uint8_t initiatorDepth = 0;
	uint8_t remoteCmResponseTimeout = 0;
	uint8_t transportType = 0; /* 0 RC, 1 UC */
	bool endToEndFlowControl = false;
	uint32_t startingPsn = 0;
	uint8_t localCmResponseTimeout = 0;
	uint8_t retryCount = 0;
	uint16_t pkey = 0;
	uint8_t pathMtu = 0;
	uint8_t rnrRetryCount = 0;
	uint8_t maxCmRetries = 0;
	bool srq = false;
	ReqPath primary;
	std::array<uint8_t, kReqPrivate> privateData{};
};

struct Mra {
	uint32_t localCommId = 0;
	uint32_t remoteCommId = 0;
	uint8_t messageMraed = MSG_REQ;
	uint8_t serviceTimeout = 0;
};

struct Rej {
	uint32_t localCommId = 0;
	uint32_t remoteCommId = 0;
	uint8_t messageRejected = MSG_REQ;
	uint8_t infoLength = 0;
	uint16_t reason = 0;
	std::array<uint8_t, 72> info{};
	std::array<uint8_t, kRejPrivate> privateData{};
};

struct Rep {
	uint32_t localCommId = 0;
	uint32_t remoteCommId = 0;
	uint32_t localQkey = 0;
	uint32_t localQpn = 0;
	uint32_t startingPsn = 0;
	uint8_t responderResources = 0;
	uint8_t initiatorDepth = 0;
	uint8_t targetAckDelay = 0;
	uint8_t failoverAccepted = 0;
	bool endToEndFlowControl = false;
	uint8_t rnrRetryCount = 0;
	bool srq = false;
	uint64_t localCaGuid = 0;
	std::array<uint8_t, kRepPrivate> privateData{};
};

/* RTU, DREQ and DREP: the two IDs, DREQ's remote QPN, private data */
struct Short {
	uint32_t localCommId = 0;
	uint32_t remoteCommId = 0;
	uint32_t remoteQpn = 0; /* DREQ only */
	std::array<uint8_t, kRtuPrivate> privateData{};
};

/* Service ID Resolution, for UD (IBA 12.11) */
struct SidrReq {
	uint32_t requestId = 0;
	uint16_t pkey = 0;
	uint64_t serviceId = 0;
	std::array<uint8_t, kSidrReqPrivate> privateData{};
};

struct SidrRep {
	uint32_t requestId = 0;
	uint8_t status = SIDR_SUCCESS;
	uint8_t infoLength = 0;
	uint32_t qpn = 0;
	uint64_t serviceId = 0;
	uint32_t qkey = 0;
	std::array<uint8_t, 72> info{};
	std::array<uint8_t, kSidrRepPrivate> privateData{};
};

/* the common header of a CM MAD: Send, class 0x07 version 2 */
void header(ibemu::Mad &mad, uint16_t attr, uint64_t tid);

void encode(const Req &m, ibemu::Mad &mad);
void encode(const Mra &m, ibemu::Mad &mad);
void encode(const Rej &m, ibemu::Mad &mad);
void encode(const Rep &m, ibemu::Mad &mad);
/* attr: RTU, DREQ or DREP */
void encode(const Short &m, uint16_t attr, ibemu::Mad &mad);
void encode(const SidrReq &m, ibemu::Mad &mad);
void encode(const SidrRep &m, ibemu::Mad &mad);

/* The decoders read a whole 256-byte MAD (the caller checked its size). */
Req decodeReq(const uint8_t *mad);
Mra decodeMra(const uint8_t *mad);
Rej decodeRej(const uint8_t *mad);
Rep decodeRep(const uint8_t *mad);
Short decodeShort(const uint8_t *mad, uint16_t attr);
SidrReq decodeSidrReq(const uint8_t *mad);
SidrRep decodeSidrRep(const uint8_t *mad);

/* 4.096 us * 2^t in milliseconds, as the kernel's cm_convert_to_ms() */
uint32_t timeToMs(uint8_t ibaTime);

} /* namespace ibemu::emu::cm */
