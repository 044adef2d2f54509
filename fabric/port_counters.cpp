// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
#include "fabric/port_counters.h"

#include "fabric/node.h"

#include <algorithm>
#include <cerrno>
#include <strings.h>

namespace ibemu::fabric {

namespace {

/* One counter: its perfquery name, its width on the wire and where the
 * model keeps it (the 32-bit view and, for data and packets, the 64-bit
 * one) */
struct CounterField {
	std::string_view name;
	unsigned bits;
	void (*set)(PortCounters &c, uint64_t v);
};

template <typename T> T saturate(uint64_t v)
{
	constexpr uint64_t max = static_cast<T>(~T{ 0 });
	return static_cast<T>(std::min(v, max));
}

const CounterField kFields[] = {
	{ "SymbolErrorCounter", 16, [](PortCounters &c, uint64_t v) { c.symbolErrors = uint16_t(v); } },
	{ "LinkErrorRecoveryCounter", 8, [](PortCounters &c, uint64_t v) { c.linkErrorRecovery = uint8_t(v); } },
	{ "LinkDownedCounter", 8, [](PortCounters &c, uint64_t v) { c.linkDowned = uint8_t(v); } },
	{ "PortRcvErrors", 16, [](PortCounters &c, uint64_t v) { c.rcvErrors = uint16_t(v); } },
	{ "PortRcvRemotePhysicalErrors", 16, [](PortCounters &c, uint64_t v) { c.rcvRemotePhysErrors = uint16_t(v); } },
	{ "PortRcvSwitchRelayErrors", 16, [](PortCounters &c, uint64_t v) { c.rcvSwitchRelayErrors = uint16_t(v); } },
	{ "PortXmitDiscards", 16, [](PortCounters &c, uint64_t v) { c.xmitDiscards = uint16_t(v); } },
	{ "PortXmitConstraintErrors", 8, [](PortCounters &c, uint64_t v) { c.xmitConstraintErrors = uint8_t(v); } },
	{ "PortRcvConstraintErrors", 8, [](PortCounters &c, uint64_t v) { c.rcvConstraintErrors = uint8_t(v); } },
	{ "LocalLinkIntegrityErrors", 4, [](PortCounters &c, uint64_t v) { c.localLinkIntegrityErrors = uint8_t(v); } },
	{ "ExcessiveBufferOverrunErrors", 4,
	  [](PortCounters &c, uint64_t v) { c.excessiveBufferOverruns = uint8_t(v); } },
	{ "VL15Dropped", 16, [](PortCounters &c, uint64_t v) { c.vl15Dropped = uint16_t(v); } },
	{ "PortXmitData", 64,
	  [](PortCounters &c, uint64_t v) {
		  c.xmitData = saturate<uint32_t>(v);
		  c.extXmitData = v;
	  } },
	{ "PortRcvData", 64,
	  [](PortCounters &c, uint64_t v) {
		  c.rcvData = saturate<uint32_t>(v);
		  c.extRcvData = v;
	  } },
	{ "PortXmitPkts", 64,
	  [](PortCounters &c, uint64_t v) {
		  c.xmitPkts = saturate<uint32_t>(v);
		  c.extXmitPkts = v;
	  } },
	{ "PortRcvPkts", 64,
	  [](PortCounters &c, uint64_t v) {
		  c.rcvPkts = saturate<uint32_t>(v);
		  c.extRcvPkts = v;
	  } },
	{ "PortXmitWait", 32, [](PortCounters &c, uint64_t v) { c.xmitWait = uint32_t(v); } },
	{ "PortUnicastXmitPkts", 64, [](PortCounters &c, uint64_t v) { c.extUnicastXmitPkts = v; } },
	{ "PortUnicastRcvPkts", 64, [](PortCounters &c, uint64_t v) { c.extUnicastRcvPkts = v; } },
	{ "PortMulticastXmitPkts", 64, [](PortCounters &c, uint64_t v) { c.extMulticastXmitPkts = v; } },
	{ "PortMulticastRcvPkts", 64, [](PortCounters &c, uint64_t v) { c.extMulticastRcvPkts = v; } },
};

bool fits(uint64_t v, unsigned bits)
{
	return bits >= 64 || v >> bits == 0;
}

bool sameName(std::string_view a, std::string_view b)
{
	return a.size() == b.size() && strncasecmp(a.data(), b.data(), a.size()) == 0;
}

} /* namespace */

int setPortCounter(PortCounters &c, std::string_view name, uint64_t value)
{
	if (sameName(name, "all")) {
		for (const auto &f : kFields)
			if (!fits(value, f.bits))
				return -ERANGE;
		for (const auto &f : kFields)
			f.set(c, value);
		return 0;
	}
	for (const auto &f : kFields) {
		if (!sameName(name, f.name))
			continue;
		if (!fits(value, f.bits))
			return -ERANGE;
		f.set(c, value);
		return 0;
	}
	return -ENOENT;
}

std::vector<std::string_view> portCounterNames()
{
	std::vector<std::string_view> names;
	for (const auto &f : kFields)
		names.push_back(f.name);
	return names;
}

} /* namespace ibemu::fabric */
