// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// Enumerations shared by the fabric model: node types, port states, link
// widths, speeds and MTUs, with the IBA encodings used on the wire.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace ibemu::fabric {

enum class NodeType : uint8_t { CA = 1, Switch = 2, Router = 3 };

/* PortInfo:PortState, IBA 14.2.5.6 */
enum class PortState : uint8_t { NoChange = 0, Down = 1, Init = 2, Armed = 3, Active = 4 };

/* PortInfo:PortPhysicalState */
enum class PhysState : uint8_t {
	NoChange = 0,
	Sleep = 1,
	Polling = 2,
	Disabled = 3,
	Training = 4,
	LinkUp = 5,
	LinkErrorRecovery = 6,
	PhyTest = 7,
};

/* PortInfo:LinkWidth* bit values */
enum : uint8_t {
	kWidth1x = 0x01,
	kWidth4x = 0x02,
	kWidth8x = 0x04,
	kWidth12x = 0x08,
	kWidth2x = 0x10,
};

/*
 * Link speeds. On the wire SDR..QDR live in PortInfo:LinkSpeed*, FDR..NDR in
 * PortInfo:LinkSpeedExt* and FDR10 in Mellanox ExtPortInfo; this enum is the
 * one value the model keeps, and linkSpeedBits()/linkSpeedExtBits() derive
 * the wire encodings.
 */
enum class Speed : uint8_t { SDR, DDR, QDR, FDR10, FDR, EDR, HDR, NDR };

/* MTU encoding, IBA 14.2.5.6 (1 = 256 ... 5 = 4096) */
enum : uint8_t { kMtu256 = 1, kMtu512 = 2, kMtu1024 = 3, kMtu2048 = 4, kMtu4096 = 5 };

/* The host a NodeDescription names by convention ("hostname HCA-1"): its
 * first word (all of it, without a space). */
std::string_view descHost(std::string_view desc);
/* A name ibemu makes files and directories of (an instance's, a cluster
 * host's): letters, digits, '.', '_' and '-', starting with a letter or a
 * digit, at most 64 characters. */
bool isPathName(std::string_view name);
const char *nodeTypeName(NodeType t); /* "CA", "switch", "router" (sysfs names) */
const char *portStateName(PortState s); /* "DOWN", "INIT", "ARMED", "ACTIVE" */
const char *physStateName(PhysState s); /* "Polling", "LinkUp", ... */
const char *speedName(Speed s); /* "SDR" ... "NDR" */
std::optional<Speed> parseSpeed(std::string_view name);
unsigned widthLanes(uint8_t widthBit); /* 1, 2, 4, 8, 12; 0 if not one bit */
std::optional<uint8_t> widthFromLanes(unsigned lanes);
/* PortInfo:LinkWidthSupported of a port whose widest width is widthBit:
 * that width, 1x, and 4x below 8x and 12x (2x: 1x|2x, 12x: 1x|4x|12x);
 * 1x|4x when widthBit is not one width. */
uint8_t linkWidthMaskUpTo(uint8_t widthBit);

/* Per-lane rate in deci-Gb/s (the kernel's ib_rate table): SDR 25 ... NDR 1000. */
unsigned speedDeciGbps(Speed s);

/* PortInfo:LinkSpeed (SDR 1, DDR 2, QDR 4; 4 also for the extended speeds). */
uint8_t linkSpeedBits(Speed s);
/* PortInfo:LinkSpeedExt (FDR 1, EDR 2, HDR 4, NDR 8; 0 for the others). */
uint8_t linkSpeedExtBits(Speed s);
/* PortInfo:LinkSpeedSupported and LinkSpeedExtSupported of a port whose
 * fastest speed is s: every slower speed too (SDR 1, DDR 3, QDR and up 7;
 * FDR 1, EDR 3, HDR 7, NDR 0xf, 0 below FDR). */
uint8_t linkSpeedMaskUpTo(Speed s);
uint8_t linkSpeedExtMaskUpTo(Speed s);
/* Decode the active speed from the two PortInfo fields. */
Speed speedFromBits(uint8_t linkSpeed, uint8_t linkSpeedExt);

/* The kernel's sysfs rate string, e.g. "100 Gb/sec (4X EDR)". */
std::string rateString(uint8_t widthBit, Speed s);

} /* namespace ibemu::fabric */
