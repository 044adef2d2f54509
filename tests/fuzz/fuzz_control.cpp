// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// Fuzz target: what comes in to change a running fabric (docs/faults.md):
// control requests (tools/control/fabric_control), scenario files (tools/control/scenario)
// and ibsim lines (tools/control/ibsim_script), on the built-in fabric.
//
// The input is text. Its first byte picks what the rest is:
//   'j'  JSON requests, one per line, each carried out (FabricControl::run)
//   's'  a scenario file: parsed and, when it parses, played for what is
//        due at once (events at 0 s; timers later than that never fire)
//   'i'  ibsim lines: translated, and their requests carried out
//   'p'  a captured packet (tools/observe/packet_capture, tools/observe/packet_text): a
//        byte choosing the node, one the port (its top bit: received),
//        then the packet's bytes as a capture at every port gets them
//   else the same as 'j'; a "capture" request starts a capture
// A topology.add fragment never reads a file (the daemon refuses
// include lines in one), so no input makes the target read anything.
//
// After every input the cables must still make sense: a port's peer has
// it as its peer, a pulled cable is remembered at both ends or at
// neither, no port is both cabled and pulled; the target traps otherwise.
#include "fabric/subnet.h"
#include "fabric/topology.h"
#include "tools/control/fabric_control.h"
#include "tools/control/ibsim_script.h"
#include "tools/observe/packet_capture.h"
#include "tools/observe/packet_text.h"
#include "tools/control/scenario.h"

#include <boost/asio/io_context.hpp>

#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>

using namespace ibemu;
using Json = nlohmann::ordered_json;

namespace {

/* The invariants of cables, pulled or not */
void checkCables(const fabric::Subnet &s)
{
	size_t cabled = 0;
	for (const auto &n : s.nodes())
		for (const auto &p : n->ports) {
			if (p.peer && p.peer->peer != &p)
				__builtin_trap();
			if (p.pulledPeer && p.pulledPeer->pulledPeer != &p)
				__builtin_trap();
			if (p.peer && p.pulledPeer)
				__builtin_trap();
			cabled += p.peer != nullptr;
		}
	if (cabled != 2 * s.numLinks())
		__builtin_trap();
}

/* A capture client that keeps what it is sent; every line must be JSON,
 * and every packet record must read back and decode */
struct Sink final : tools::ControlSocket::Stream {
	bool isOpen = true;
	size_t lines = 0;
	tools::PacketText text;
	bool write(std::string line) override
	{
		Json rec = Json::parse(line, nullptr, false);
		if (rec.is_discarded())
			__builtin_trap();
		std::vector<uint8_t> packet;
		tools::PacketPlace at;
		if (lines++ > 0 && !tools::readRecord(rec, packet, at))
			__builtin_trap();
		if (!packet.empty())
			(void)text.describe(packet, at);
		return isOpen;
	}
	void close() override { isOpen = false; }
	bool open() const override { return isOpen; }
	void onClosed(std::function<void()>) override {}
};

std::vector<std::string_view> lines(std::string_view text)
{
	std::vector<std::string_view> out;
	size_t pos = 0;
	while (pos < text.size()) {
		size_t nl = text.find('\n', pos);
		if (nl == std::string_view::npos)
			nl = text.size();
		out.push_back(text.substr(pos, nl - pos));
		pos = nl + 1;
	}
	return out;
}

} /* namespace */

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size == 0)
		return 0;
	std::string_view text(reinterpret_cast<const char *>(data) + 1, size - 1);
	char mode = static_cast<char>(data[0]);

	fabric::Subnet subnet;
	fabric::Topology topo;
	fabric::TopologyError err;
	if (fabric::parseTopology(fabric::defaultTopology(), "default", topo, err) != 0 ||
	    fabric::buildSubnet(topo, subnet, err) != 0)
		__builtin_trap();
	boost::asio::io_context io;
	tools::FabricControl ctl(io, subnet, "/dev/null");
	const Json origin = { { "source", "fuzz" } };
	auto ignore = [](Json) {};

	if (mode == 's') {
		tools::Scenario sc;
		std::string e;
		if (tools::parseScenario(text, "fuzz.toml", ctl, sc, e)) {
			tools::ScenarioRun run(io, ctl, subnet, sc);
			run.start([] {});
			io.poll();
			run.stop();
		} else if (e.empty()) {
			__builtin_trap(); /* refused without saying why */
		}
	} else if (mode == 'i') {
		for (std::string_view l : lines(text)) {
			tools::IbsimLine out;
			std::string e;
			if (!tools::translateIbsimLine(l, out, e)) {
				if (e.empty())
					__builtin_trap();
				continue;
			}
			for (const auto &req : out.requests)
				ctl.run(req, origin, ignore);
		}
	} else if (mode == 'p') {
		if (text.size() < 2)
			return 0;
		tools::PacketCapture cap(subnet);
		auto sink = std::make_shared<Sink>();
		cap.start({ { "op", "capture" }, { "all", true } }, sink);
		const auto &n = *subnet.nodes()[uint8_t(text[0]) % subnet.nodes().size()];
		const unsigned num = n.firstPort() + uint8_t(text[1] & 0x7f) % (n.numPorts + 1u - n.firstPort());
		std::span<const uint8_t> packet(reinterpret_cast<const uint8_t *>(text.data()) + 2, text.size() - 2);
		cap.onWire(n.port(num), !(text[1] & 0x80), packet);
		if (sink->lines != 2) /* the reply, and the packet */
			__builtin_trap();
		tools::PacketText t;
		(void)t.describe(packet, {});
	} else {
		tools::PacketCapture cap(subnet);
		for (std::string_view l : lines(text)) {
			Json req = Json::parse(l, nullptr, false);
			if (req.is_discarded())
				continue;
			if (req.is_object() && req.contains("op") && req["op"] == "capture")
				cap.start(req, std::make_shared<Sink>());
			else
				ctl.run(req, origin, ignore);
		}
	}
	io.poll(); /* flaps: their first edge came at once, the rest is later */
	ctl.stop();
	checkCables(subnet);
	(void)ctl.state().dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
	return 0;
}
