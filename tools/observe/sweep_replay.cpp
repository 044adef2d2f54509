// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
#include "tools/observe/sweep_replay.h"

#include "fabric/mad_ring.h"
#include "fabric/packet_format.h"
#include "fabric/subnet.h"
#include "tools/observe/fabric_picture.h"
#include "tools/observe/packet_capture.h"
#include "tools/observe/packet_text.h"
#include "tools/observe/web_state.h"

#include <fmt/format.h>

#include <map>
#include <string_view>

namespace ibemu::tools {

using fabric::MadRing;
using fabric::Port;
using Json = nlohmann::ordered_json;

namespace {

constexpr uint8_t kActive = static_cast<uint8_t>(fabric::PortState::Active);

/* A PortInfo MAD's port: the modifier's on a switch (0 its management
 * port), on a CA the modifier's or, for 0, the port the MAD reached */
const Port *portInfoPort(const Port *at, uint32_t mod)
{
	if (!at)
		return nullptr;
	const fabric::Node &n = *at->node;
	const unsigned num = mod & 0xff;
	if (num > n.numPorts || (num == 0 && !n.isSwitch()))
		return num == 0 ? at : nullptr;
	return &n.port(num);
}

} /* namespace */

Json sweepReplay(const fabric::Subnet &subnet, const MadRing &ring, const PacketCapture &capture)
{
	/* each MAD of the sweep, as bytes, with the port its PortInfo is of */
	struct Mad {
		const MadRing::Entry *e;
		std::vector<uint8_t> bytes;
		const Port *to = nullptr; /* the responder's port the MAD reached or left */
		const Port *portInfo = nullptr;
		bool response = false;
	};
	std::vector<Mad> mads;
	ring.lastSweep([&](const MadRing::Entry &e) { mads.push_back({ &e, fabric::encodeMadPacket(e.pkt) }); });
	std::map<const Port *, uint8_t> state; /* ports as the sweep found them, then as it set them */
	for (Mad &m : mads) {
		const auto &h = *overlay<ib_mad_hdr>(m.e->pkt.mad.data());
		if (!isSmpClass(h.mgmt_class))
			continue;
		m.response = h.method & IB_MGMT_METHOD_RESP;
		const Port *src = nullptr, *dst = nullptr;
		capture.ends(*m.e->port, m.e->out, m.bytes, src, dst);
		m.to = m.response ? src : dst;
		if (uint16_t(h.attr_id) != IB_SMP_ATTR_PORT_INFO)
			continue;
		m.portInfo = portInfoPort(m.to, h.attr_mod);
		const uint8_t s = m.e->pkt.mad[64 + 32] & 0x0f; /* PortInfo:PortState */
		if (m.response && m.portInfo && s)
			state.emplace(m.portInfo, s); /* the first answer only */
	}
	auto stateOf = [&](const Port &p) {
		auto it = state.find(&p);
		return it != state.end() ? it->second : static_cast<uint8_t>(p.state);
	};
	/* the cables replayed: up or active now, as the sweep found them */
	std::map<std::string, const Port *> ends; /* a cable's id → its owner end */
	std::map<std::string, std::string> shown;
	auto cableNow = [&](const Port &p) {
		const Port &q = *p.cableEnd();
		return std::string(stateOf(p) == kActive && stateOf(q) == kActive ? "active" : "up");
	};
	Json start = Json::object();
	for (const auto &n : subnet.nodes())
		for (unsigned i = 1; i <= n->numPorts; i++) {
			const Port &p = n->port(i);
			const std::string id = cableId(p);
			const std::string_view now = cableState(p);
			if (id.empty() || ends.count(id) || (now != "active" && now != "up"))
				continue;
			ends[id] = &p;
			start[id] = shown[id] = cableNow(p);
		}

	Json steps = Json::array();
	PacketText text; /* fed every MAD, so that a Set is told against the answers before it */
	const int64_t t0 = mads.empty() ? 0 : mads.front().e->ns;
	for (const Mad &m : mads) {
		const PacketPlace at = capture.place(*m.e->port, m.e->out, m.bytes);
		std::string line = text.describe(m.bytes, at);
		if (!isSmpClass(m.e->pkt.mad[1]) || m.response || !m.e->out)
			continue;
		Json step = { { "t", double((m.e->ns - t0) / 1000) / 1e6 } };
		if (m.to)
			step["to"] = fmt::format("n{}", m.to->node->index);
		step["text"] = std::move(line);
		const uint8_t s = m.e->pkt.mad[64 + 32] & 0x0f;
		if (m.portInfo && MadRing::setsPortState(m.e->pkt)) {
			state[m.portInfo] = s;
			const std::string id = cableId(*m.portInfo);
			auto it = ends.find(id);
			if (it != ends.end() && shown[id] != cableNow(*it->second))
				step["cables"][id] = shown[id] = cableNow(*it->second);
		}
		steps.push_back(std::move(step));
	}
	return { { "mads", mads.size() }, { "start", start }, { "steps", steps } };
}

} /* namespace ibemu::tools */
