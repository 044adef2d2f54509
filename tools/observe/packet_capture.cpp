// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
#include "tools/observe/packet_capture.h"
#include "tools/control/json_text.h"

#include "fabric/packet_format.h"
#include "fabric/subnet.h"

#include <algorithm>
#include <charconv>
#include <chrono>

#include <fmt/format.h>

namespace ibemu::tools {

using fabric::Node;
using fabric::Port;
using Json = ControlSocket::Json;

unsigned captureKind(const std::string &name)
{
	static const std::pair<const char *, unsigned> names[] = {
		{ "smp", kCaptureSmp },
		{ "sa", kCaptureSa },
		{ "pma", kCapturePma },
		{ "cm", kCaptureCm },
		{ "gmp", kCaptureGmp },
		{ "data", kCaptureData },
		{ "mad", kCaptureSmp | kCaptureGmp },
		{ "all", kCaptureAll },
	};
	for (const auto &[n, k] : names)
		if (name == n)
			return k;
	return 0;
}

unsigned packetKind(std::span<const uint8_t> packet)
{
	fabric::PacketView v;
	if (!fabric::parsePacket(packet, v) || !v.isMad)
		return kCaptureData;
	if (v.destQp == IB_QP0)
		return kCaptureSmp;
	switch (packet[v.payload + 1]) {
	case IB_MGMT_CLASS_SUBN_ADM:
		return kCaptureSa;
	case IB_MGMT_CLASS_PERF_MGMT:
		return kCapturePma;
	case IB_MGMT_CLASS_CM:
		return kCaptureCm;
	default:
		return kCaptureOtherGmp;
	}
}

std::string captureNodeName(const Node &n)
{
	return n.desc.empty() ? n.name : n.desc;
}

std::string capturePortName(const Port &p)
{
	return captureNodeName(*p.node) + ":" + std::to_string(p.num);
}

bool readRecord(const Json &rec, std::vector<uint8_t> &packet, PacketPlace &at)
{
	if (!rec.is_object() || !rec.contains("hex") || !rec["hex"].is_string())
		return false;
	const std::string &hex = rec["hex"].get_ref<const std::string &>();
	if (hex.size() % 2)
		return false;
	packet.resize(hex.size() / 2);
	for (size_t i = 0; i < packet.size(); i++) {
		auto [ptr, ec] = std::from_chars(hex.data() + 2 * i, hex.data() + 2 * i + 2, packet[i], 16);
		if (ec != std::errc() || ptr != hex.data() + 2 * i + 2)
			return false;
	}
	auto text = [&rec](const char *key) {
		return rec.contains(key) && rec[key].is_string() ? rec[key].get<std::string>() : std::string();
	};
	at = { text("port"), text("dir") == "out", text("peer"), text("src"), text("dst") };
	return true;
}

PacketCapture::PacketCapture(fabric::Subnet &subnet) : subnet_(subnet)
{}

PacketCapture::~PacketCapture()
{
	stopAll();
}

bool PacketCapture::Watcher::wants(const Port &p) const
{
	return allPorts || (caPorts && !p.node->isSwitch()) || ports.count(&p);
}

namespace {

/* "NODE:PORT" or "NODE" into ports; false with err set */
bool addPorts(const fabric::Subnet &subnet, const std::string &spec, std::set<const Port *> &ports, std::string &err)
{
	std::string nodePart = spec;
	int num = -1;
	if (size_t colon = spec.rfind(':'); colon != std::string::npos) {
		int n = 0;
		const char *first = spec.data() + colon + 1, *last = spec.data() + spec.size();
		auto [ptr, ec] = std::from_chars(first, last, n);
		if (ec == std::errc() && ptr == last && first != last) {
			nodePart = spec.substr(0, colon);
			num = n;
		}
	}
	bool ambiguous = false;
	const Node *node = subnet.resolveNode(nodePart, &ambiguous);
	if (!node) {
		err = ambiguous ? "\"" + nodePart + "\" names more than one node; give its GUID"
				: subnet.noSuchNode(nodePart);
		return false;
	}
	if (num < 0) {
		for (unsigned i = 1; i <= node->numPorts; i++)
			ports.insert(&node->port(i));
		return true;
	}
	if (num < 1 || num > node->numPorts) {
		err = "\"" + spec + "\": " + captureNodeName(*node) + " has ports 1-" + std::to_string(node->numPorts);
		return false;
	}
	ports.insert(&node->port(unsigned(num)));
	return true;
}

/* The port path[first..last] (the ports to leave by, stepping by `step`)
 * leads to from port `at`: the last one arrived at, `at` itself for no
 * step, null when a port has no cable */
const Port *walk(const Port *at, const uint8_t *path, int first, int last, int step)
{
	for (int i = first; at && (step > 0 ? i <= last : i >= last); i += step) {
		const Node *from = at->node;
		if (path[i] < 1 || path[i] > from->numPorts)
			return nullptr;
		at = from->port(path[i]).peer;
	}
	return at;
}

} /* namespace */

void PacketCapture::start(const Json &req, std::shared_ptr<ControlSocket::Stream> stream)
{
	/* the answer, with the request's "id" as every control reply has */
	auto answer = [&req](Json a) {
		if (req.is_object() && req.contains("id"))
			a["id"] = req["id"];
		return jsonText(a);
	};
	auto refuse = [&](const std::string &err) {
		stream->write(answer({ { "ok", false }, { "error", "capture: " + err } }));
		stream->close();
	};
	if (!req.is_object())
		return refuse("the request must be a JSON object");
	auto w = std::make_unique<Watcher>();
	for (const auto &[key, val] : req.items()) {
		if (key == "op" || key == "id")
			continue;
		if (key == "ports") {
			if (!val.is_array())
				return refuse("\"ports\" must be a list of NODE:PORT");
			for (const auto &spec : val) {
				std::string err;
				if (!spec.is_string())
					return refuse("\"ports\" must be a list of NODE:PORT");
				if (!addPorts(subnet_, spec.get<std::string>(), w->ports, err))
					return refuse(err);
			}
		} else if (key == "all") {
			if (!val.is_boolean())
				return refuse("\"all\" must be true or false");
			w->allPorts = val.get<bool>();
		} else if (key == "kinds") {
			if (!val.is_array() || val.empty())
				return refuse("\"kinds\" must be a list of smp, sa, pma, cm, gmp, mad, data");
			w->kinds = 0;
			for (const auto &k : val) {
				unsigned bit = k.is_string() ? captureKind(k.get<std::string>()) : 0;
				if (!bit)
					return refuse("unknown kind " + jsonText(k) +
						      " (smp, sa, pma, cm, gmp, mad, data)");
				w->kinds |= bit;
			}
		} else if (key == "count") {
			if (!val.is_number_integer() || val.get<int64_t>() < 1)
				return refuse("\"count\" must be a number of packets, 1 or more");
			w->left = val.get<uint64_t>();
		} else {
			return refuse("unknown argument \"" + key + "\"");
		}
	}
	if (watchers_.size() >= kMaxCaptures)
		return refuse("already " + std::to_string(kMaxCaptures) + " captures running");
	w->caPorts = w->ports.empty() && !w->allPorts;
	size_t watched = 0;
	for (const auto &n : subnet_.nodes())
		for (unsigned i = 1; i <= n->numPorts; i++)
			watched += w->wants(n->port(i));
	w->stream = std::move(stream);
	w->stream->write(answer({ { "ok", true }, { "ports", watched } }));
	Watcher *raw = w.get();
	w->stream->onClosed([this, raw] { remove(raw); });
	watchers_.push_back(std::move(w));
	subnet_.setTap(this);
}

void PacketCapture::remove(Watcher *w)
{
	auto it = std::find_if(watchers_.begin(), watchers_.end(), [w](const auto &p) { return p.get() == w; });
	if (it == watchers_.end())
		return;
	(*it)->stream->close();
	watchers_.erase(it);
	if (watchers_.empty())
		subnet_.setTap(nullptr);
}

void PacketCapture::stopAll()
{
	for (auto &w : watchers_)
		w->stream->close();
	watchers_.clear();
	subnet_.setTap(nullptr);
}

bool PacketCapture::wantsData() const
{
	for (const auto &w : watchers_)
		if (w->kinds & kCaptureData)
			return true;
	return false;
}

bool PacketCapture::watches(const Port &p) const
{
	for (const auto &w : watchers_)
		if (w->wants(p))
			return true;
	return false;
}

void PacketCapture::ends(const Port &p, bool out, std::span<const uint8_t> packet, const Port *&src,
			 const Port *&dst) const
{
	src = dst = nullptr;
	fabric::PacketView v;
	if (!fabric::parsePacket(packet, v))
		return;
	const bool dr = v.isMad && packet[v.payload + 1] == IB_MGMT_CLASS_SUBN_DIRECTED_ROUTE;
	if (!dr) {
		/* the LID's owner: remembered, and looked for again only when
		 * the port remembered no longer has the LID */
		auto owner = [&](uint16_t lid) -> const Port * {
			if (!lid || lid >= IB_MULTICAST_LID_BASE)
				return nullptr;
			auto it = lidOwners_.find(lid);
			if (it != lidOwners_.end() && fabric::ownsLid(*it->second, lid))
				return it->second;
			const Port *q = subnet_.findPortByLid(lid);
			if (q)
				lidOwners_[lid] = q;
			return q;
		};
		src = owner(v.slid);
		dst = owner(v.dlid);
		return;
	}
	const auto &smp = *overlay<ib_smp>(packet.data() + v.payload);
	if (smp.dr_slid != IB_LID_PERMISSIVE || smp.dr_dlid != IB_LID_PERMISSIVE)
		return; /* a LID-routed segment: not walked */
	const int hp = smp.hop_ptr, hc = smp.hop_cnt;
	if (hc >= IB_SMP_MAX_PATH_HOPS || hp < 1 || hp > hc)
		return;
	/* The requester is at depth 0 and the responder at depth hop_cnt.
	 * A request between depths d-1 and d carries hop_ptr d (it left by
	 * initial_path[d]); a response carries hop_ptr d too (it left depth
	 * d by return_path[d]). Nodes fill return_path[d] with the port a
	 * request arrived by, after the tap has seen it arrive. */
	const bool response = smp.status & 0x8000;
	const Port *here = &p, *there = p.peer;
	const Port *requester, *responder;
	if (!response && out) { /* here is depth hp-1 */
		requester = walk(here, smp.return_path, hp - 1, 1, -1);
		responder = walk(here, smp.initial_path, hp, hc, 1);
	} else if (!response) { /* here is depth hp, there hp-1 */
		requester = walk(there, smp.return_path, hp - 1, 1, -1);
		responder = walk(here, smp.initial_path, hp + 1, hc, 1);
	} else if (out) { /* here is depth hp */
		requester = walk(here, smp.return_path, hp, 1, -1);
		responder = walk(here, smp.initial_path, hp + 1, hc, 1);
	} else { /* here is depth hp-1 */
		requester = walk(here, smp.return_path, hp - 1, 1, -1);
		responder = walk(here, smp.initial_path, hp, hc, 1);
	}
	src = response ? responder : requester;
	dst = response ? requester : responder;
}

PacketPlace PacketCapture::place(const Port &p, bool out, std::span<const uint8_t> packet) const
{
	const Port *src = nullptr, *dst = nullptr;
	ends(p, out, packet, src, dst);
	return { capturePortName(p), out, p.peer ? capturePortName(*p.peer) : std::string(),
		 src ? captureNodeName(*src->node) : std::string(), dst ? captureNodeName(*dst->node) : std::string() };
}

void PacketCapture::onWire(const Port &p, bool out, std::span<const uint8_t> packet)
{
	const unsigned kind = packetKind(packet);
	/* the record but its time and loss count, made once for every watcher:
	 * "port", "dir", "peer", "src", "dst", "hex" */
	std::string body;
	int64_t ns = 0;
	std::vector<Watcher *> done;
	for (const auto &w : watchers_) {
		if (!w->wants(p) || !(w->kinds & kind) || !w->stream->open())
			continue;
		if (body.empty()) {
			const PacketPlace at = place(p, out, packet);
			/* names are JSON strings: quoted and escaped by the library */
			auto str = [](const std::string &v) { return jsonText(Json(v)); };
			body = ",\"port\":" + str(at.port) + ",\"dir\":\"" + (out ? "out" : "in") + "\"";
			if (!at.peer.empty())
				body += ",\"peer\":" + str(at.peer);
			if (!at.src.empty())
				body += ",\"src\":" + str(at.src);
			if (!at.dst.empty())
				body += ",\"dst\":" + str(at.dst);
			body += ",\"hex\":\"";
			static const char digits[] = "0123456789abcdef";
			for (uint8_t b : packet) {
				body += digits[b >> 4];
				body += digits[b & 15];
			}
			body += '"';
			ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
				     std::chrono::system_clock::now().time_since_epoch())
				     .count();
		}
		if (!w->stream->write(fmt::format("{{\"t\":{}{},\"lost\":{}}}", ns, body, w->lost))) {
			w->lost++;
			continue;
		}
		if (w->left && --w->left == 0)
			done.push_back(w.get());
	}
	for (Watcher *w : done)
		remove(w);
}

} /* namespace ibemu::tools */
