// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
#include "tools/control/ibsim_script.h"

#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <strings.h>

namespace ibemu::tools {

namespace {

using Json = nlohmann::ordered_json;

std::string_view trim(std::string_view s)
{
	while (!s.empty() && isspace(uint8_t(s.front())))
		s.remove_prefix(1);
	while (!s.empty() && isspace(uint8_t(s.back())))
		s.remove_suffix(1);
	return s;
}

bool sameWord(std::string_view a, const char *b)
{
	return a.size() == strlen(b) && strncasecmp(a.data(), b, a.size()) == 0;
}

/* A number as strtoul(..., 0) reads it: decimal or 0x hex */
bool number(std::string_view s, uint64_t &v)
{
	std::string t(trim(s));
	if (t.empty() || !isdigit(uint8_t(t[0])))
		return false;
	char *end = nullptr;
	errno = 0;
	v = strtoull(t.c_str(), &end, 0);
	return errno == 0 && end && !*end;
}

/* "node"[port] or "node": the node, and the port when given (-1 if not).
 * Consumes it from s. */
bool nodeRef(std::string_view &s, std::string &node, long &port, std::string &err)
{
	s = trim(s);
	if (s.empty() || s.front() != '"') {
		err = "expected a quoted node id, like \"Switch1\"[3]";
		return false;
	}
	size_t close = s.find('"', 1);
	if (close == std::string_view::npos) {
		err = "a node id without its closing quote";
		return false;
	}
	node = std::string(s.substr(1, close - 1));
	s.remove_prefix(close + 1);
	port = -1;
	if (!s.empty() && s.front() == '[') {
		size_t end = s.find(']');
		uint64_t v;
		if (end == std::string_view::npos || !number(s.substr(1, end - 1), v) || v > 254) {
			err = "a bad port number in \"" + node + "\"[...]";
			return false;
		}
		port = long(v);
		s.remove_prefix(end + 1);
	}
	return true;
}

Json request(const char *op, const std::string &node, long port = -1)
{
	Json r = { { "op", op }, { "node", node } };
	if (port >= 0)
		r["port"] = port;
	return r;
}

} /* namespace */

bool translateIbsimLine(std::string_view raw, IbsimLine &out, std::string &err)
{
	out = {};
	std::string_view line = trim(raw);
	if (line.empty() || line.front() == '#')
		return true;
	if (line.front() == '!') {
		out.include = std::string(trim(line.substr(1)));
		if (out.include.empty()) {
			err = "!: no file name";
			return false;
		}
		return true;
	}
	size_t sp = line.find_first_of(" \t");
	std::string_view cmd = line.substr(0, sp);
	std::string_view rest = sp == std::string_view::npos ? std::string_view() : line.substr(sp);
	std::string node;
	long port = -1;

	if (sameWord(cmd, "Link")) {
		std::string peer;
		long peerPort = -1;
		if (!nodeRef(rest, node, port, err) || !nodeRef(rest, peer, peerPort, err))
			return false;
		if (port < 1 || peerPort < 1) {
			err = "Link needs both ports: Link \"A\"[p] \"B\"[q]";
			return false;
		}
		Json r = request("link.connect", node, port);
		r["peer"] = peer;
		r["peer_port"] = peerPort;
		out.requests.push_back(r);
	} else if (sameWord(cmd, "Unlink") || sameWord(cmd, "ReLink")) {
		if (!nodeRef(rest, node, port, err))
			return false;
		bool un = sameWord(cmd, "Unlink");
		out.requests.push_back(port >= 0 ? request(un ? "link.down" : "link.up", node, port)
						 : request(un ? "node.remove" : "node.add", node));
	} else if (sameWord(cmd, "Error")) {
		if (!nodeRef(rest, node, port, err))
			return false;
		std::string_view args = trim(rest);
		std::string_view rate = args.substr(0, args.find_first_of(" \t"));
		uint64_t pct;
		if (rate.empty() || !number(rate, pct) || pct > 100) {
			err = "Error needs a rate in [0, 100] (percent)";
			return false;
		}
		if (!trim(args.substr(rate.size())).empty()) {
			err = "Error's attribute filter is not modelled: the rate applies to every packet";
			return false;
		}
		Json r = request("errors", node, port);
		r["corrupt"] = double(pct) / 100;
		out.requests.push_back(r);
	} else if (sameWord(cmd, "PerformanceSet")) {
		if (!nodeRef(rest, node, port, err))
			return false;
		if (port < 0) {
			err = "PerformanceSet needs a port: PerformanceSet \"A\"[p] PortCounters.FIELD=VALUE";
			return false;
		}
		std::string_view a = trim(rest);
		size_t dot = a.find('.'), eq = a.find('=');
		uint64_t value;
		if (dot == std::string_view::npos || eq == std::string_view::npos || eq < dot ||
		    !number(a.substr(eq + 1), value)) {
			err = "PerformanceSet \"A\"[p] ATTRIBUTE.FIELD=VALUE";
			return false;
		}
		std::string_view attr = trim(a.substr(0, dot)), field = trim(a.substr(dot + 1, eq - dot - 1));
		if (!sameWord(attr, "PortCounters") && !sameWord(attr, "PortCountersExtended")) {
			err = "PerformanceSet: only PortCounters and PortCountersExtended are modelled, not " +
				std::string(attr);
			return false;
		}
		Json r = request("counters.set", node, port);
		r["counter"] = std::string(field);
		r["value"] = value;
		out.requests.push_back(r);
	} else if (sameWord(cmd, "Wait")) {
		uint64_t sec;
		if (!number(rest, sec) || sec == 0 || sec > 3600) {
			err = "Wait needs seconds (1 to 3600)";
			return false;
		}
		out.waitMs = unsigned(sec * 1000);
	} else if (sameWord(cmd, "Dump") || sameWord(cmd, "Route") || sameWord(cmd, "Attached") ||
		   sameWord(cmd, "Verbose") || sameWord(cmd, "Help") || sameWord(cmd, "?") || sameWord(cmd, "Start")) {
		out.note = std::string(cmd) +
			" shows ibsim's own state and changes nothing: skipped (ibemu status, ibnetdiscover and "
			"ibroute show ibemu's)";
	} else if (sameWord(cmd, "Clear") || sameWord(cmd, "Baselid") || sameWord(cmd, "Guid") || sameWord(cmd, "X") ||
		   sameWord(cmd, "Quit")) {
		err = std::string(cmd) + " is not supported by ibemu (docs/faults.md lists what is)";
		return false;
	} else {
		err = "unknown ibsim command \"" + std::string(cmd) + "\"";
		return false;
	}
	return true;
}

} /* namespace ibemu::tools */
