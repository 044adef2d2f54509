// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// Names and wire encodings of the fabric enumerations.
#include "fabric/types.h"

#include <array>
#include <cctype>
#include <cstdio>
#include <cstring>
#include <strings.h>

namespace ibemu::fabric {

std::string_view descHost(std::string_view desc)
{
	return desc.substr(0, desc.find(' '));
}

bool isPathName(std::string_view name)
{
	return !name.empty() && name.size() <= 64 && isalnum(static_cast<unsigned char>(name[0])) &&
		name.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") ==
		std::string_view::npos;
}

const char *nodeTypeName(NodeType t)
{
	switch (t) {
	case NodeType::CA:
		return "CA";
	case NodeType::Switch:
		return "switch";
	case NodeType::Router:
		return "router";
	}
	return "<unknown>";
}

const char *portStateName(PortState s)
{
	switch (s) {
	case PortState::NoChange:
		return "NOP";
	case PortState::Down:
		return "DOWN";
	case PortState::Init:
		return "INIT";
	case PortState::Armed:
		return "ARMED";
	case PortState::Active:
		return "ACTIVE";
	}
	return "UNKNOWN";
}

const char *physStateName(PhysState s)
{
	switch (s) {
	case PhysState::Sleep:
		return "Sleep";
	case PhysState::Polling:
		return "Polling";
	case PhysState::Disabled:
		return "Disabled";
	case PhysState::Training:
		return "PortConfigurationTraining";
	case PhysState::LinkUp:
		return "LinkUp";
	case PhysState::LinkErrorRecovery:
		return "LinkErrorRecovery";
	case PhysState::PhyTest:
		return "Phy Test";
	case PhysState::NoChange:
		break;
	}
	return "<unknown>";
}

namespace {
struct SpeedRow {
	Speed speed;
	const char *name;
	unsigned deciGbps;
	uint8_t bits; /* PortInfo:LinkSpeedActive */
	uint8_t extBits; /* PortInfo:LinkSpeedExtActive */
	uint8_t upTo; /* PortInfo:LinkSpeedSupported */
	uint8_t extUpTo; /* PortInfo:LinkSpeedExtSupported */
};
constexpr std::array<SpeedRow, 8> kSpeeds = { {
	{ Speed::SDR, "SDR", 25, 0x1, 0x0, 0x1, 0x0 },
	{ Speed::DDR, "DDR", 50, 0x2, 0x0, 0x3, 0x0 },
	{ Speed::QDR, "QDR", 100, 0x4, 0x0, 0x7, 0x0 },
	{ Speed::FDR10, "FDR10", 100, 0x4, 0x0, 0x7, 0x0 },
	{ Speed::FDR, "FDR", 140, 0x4, 0x1, 0x7, 0x1 },
	{ Speed::EDR, "EDR", 250, 0x4, 0x2, 0x7, 0x3 },
	{ Speed::HDR, "HDR", 500, 0x4, 0x4, 0x7, 0x7 },
	{ Speed::NDR, "NDR", 1000, 0x4, 0x8, 0x7, 0xf },
} };

const SpeedRow &row(Speed s)
{
	return kSpeeds[static_cast<unsigned>(s)];
}

struct WidthRow {
	uint8_t bit;
	unsigned lanes;
	uint8_t upTo; /* PortInfo:LinkWidthSupported */
};
constexpr std::array<WidthRow, 5> kWidths = { {
	{ kWidth1x, 1, kWidth1x },
	{ kWidth2x, 2, kWidth1x | kWidth2x },
	{ kWidth4x, 4, kWidth1x | kWidth4x },
	{ kWidth8x, 8, kWidth1x | kWidth4x | kWidth8x },
	{ kWidth12x, 12, kWidth1x | kWidth4x | kWidth12x },
} };

const WidthRow *widthRow(uint8_t bit)
{
	for (const auto &r : kWidths)
		if (r.bit == bit)
			return &r;
	return nullptr;
}
} /* namespace */

const char *speedName(Speed s)
{
	return row(s).name;
}
unsigned speedDeciGbps(Speed s)
{
	return row(s).deciGbps;
}
uint8_t linkSpeedBits(Speed s)
{
	return row(s).bits;
}
uint8_t linkSpeedExtBits(Speed s)
{
	return row(s).extBits;
}
uint8_t linkSpeedMaskUpTo(Speed s)
{
	return row(s).upTo;
}
uint8_t linkSpeedExtMaskUpTo(Speed s)
{
	return row(s).extUpTo;
}

std::optional<Speed> parseSpeed(std::string_view name)
{
	for (const auto &r : kSpeeds)
		if (name.size() == strlen(r.name) && strncasecmp(name.data(), r.name, name.size()) == 0)
			return r.speed;
	return std::nullopt;
}

Speed speedFromBits(uint8_t linkSpeed, uint8_t linkSpeedExt)
{
	for (const auto &r : kSpeeds)
		if (r.extBits && r.extBits == linkSpeedExt)
			return r.speed;
	if (linkSpeed & 0x4)
		return Speed::QDR;
	if (linkSpeed & 0x2)
		return Speed::DDR;
	return Speed::SDR;
}

unsigned widthLanes(uint8_t widthBit)
{
	const WidthRow *r = widthRow(widthBit);
	return r ? r->lanes : 0;
}

std::optional<uint8_t> widthFromLanes(unsigned lanes)
{
	for (const auto &r : kWidths)
		if (r.lanes == lanes)
			return r.bit;
	return std::nullopt;
}

uint8_t linkWidthMaskUpTo(uint8_t widthBit)
{
	const WidthRow *r = widthRow(widthBit);
	return r ? r->upTo : uint8_t(kWidth1x | kWidth4x);
}

std::string rateString(uint8_t widthBit, Speed s)
{
	unsigned lanes = widthLanes(widthBit);
	unsigned deci = speedDeciGbps(s) * lanes;
	char buf[64];
	snprintf(buf, sizeof(buf), "%u%s Gb/sec (%uX %s)", deci / 10, (deci % 10) ? ".5" : "", lanes, speedName(s));
	return buf;
}

} /* namespace ibemu::fabric */
