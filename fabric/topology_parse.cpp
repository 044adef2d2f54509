// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// Parser for ibnetdiscover-format topology files, with ibsim's extensions.
//
// The parser is line based and forgiving about what a human would read the
// same way (tabs or spaces, missing port GUIDs, no blank line between
// records, links written on one side only), and strict about what is
// ambiguous: every error names the file, the line and the problem.
//
// This file reads a file line by line (and the files it includes), takes
// the keyword lines (ibsim's include, module=, host= and the sticky
// settings) and holds the entry points; node records (ibnetdiscover's
// header and port lines) are parsed in topology_parse_node.cpp.
#include "fabric/topology.h"
#include "fabric/topology_parse.h"
#include "fabric/topology_text.h"

#include <cctype>
#include <cerrno>
#include <cstring>

namespace ibemu::fabric {

using namespace topology_text;

std::string TopologyError::str() const
{
	if (line)
		return file + ":" + std::to_string(line) + ": " + message;
	if (!file.empty())
		return file + ": " + message;
	return message;
}

namespace topology_parse {

constexpr unsigned kMaxIncludeDepth = 8;

int Parser::parseText(std::string_view text)
{
	uint32_t savedLine = lineNo;
	lineNo = 0;
	size_t pos = 0;
	while (pos < text.size()) {
		size_t nl = text.find('\n', pos);
		if (nl == std::string_view::npos)
			nl = text.size();
		std::string_view line = text.substr(pos, nl - pos);
		pos = nl + 1;
		lineNo++;
		if (line.find('\0') != std::string_view::npos)
			return fail("binary data (NUL byte) in topology file");
		if (!validUtf8(line))
			return fail("text that is not UTF-8 (node ids and descriptions are UTF-8 strings)");
		if (int rc = parseLine(line))
			return rc;
	}
	lineNo = savedLine;
	return 0;
}

int Parser::parseLine(std::string_view raw)
{
	std::string_view line = trim(raw);
	if (line.empty()) {
		current = nullptr;
		return 0;
	}
	if (line.front() == '#')
		return 0; /* comments do not end a record */
	if (line.front() == '[')
		return parsePortLine(line);
	if (line.front() == '@') {
		if (line.size() > 1 && line[1] == '[')
			return parsePortLine(line);
		return fail("expected '@[port] \"alias\"'");
	}
	current = nullptr;

	if (startsWithNoCase(line, "switchguid") || startsWithNoCase(line, "caguid") ||
	    startsWithNoCase(line, "hcaguids") || startsWithNoCase(line, "rtguid") ||
	    startsWithNoCase(line, "vendid") || startsWithNoCase(line, "devid") ||
	    startsWithNoCase(line, "sysimgguid") || startsWithNoCase(line, "width") ||
	    startsWithNoCase(line, "speed") || startsWithNoCase(line, "extspeed") || startsWithNoCase(line, "module") ||
	    startsWithNoCase(line, "pdebug") || startsWithNoCase(line, "include") || startsWithNoCase(line, "do ") ||
	    startsWithNoCase(line, "host=") || startsWithNoCase(line, "host ") || startsWithNoCase(line, "do\t")) {
		bool handled = false;
		if (int rc = parseKeyword(line, handled))
			return rc;
		if (handled)
			return 0;
	}

	struct HeaderKw {
		const char *word;
		NodeType type;
	};
	static const HeaderKw kHeaders[] = {
		{ "Switch", NodeType::Switch }, { "Hca", NodeType::CA },    { "Ca", NodeType::CA },
		{ "Router", NodeType::Router }, { "Rt", NodeType::Router },
	};
	for (const auto &h : kHeaders) {
		size_t n = strlen(h.word);
		if (startsWithNoCase(line, h.word) && line.size() > n && isSpace(line[n]))
			return parseHeader(line, h.type, n);
	}

	/* Lines ibnetdiscover -g and older versions print between records. */
	if (startsWithNoCase(line, "Non-Chassis Nodes") || startsWithNoCase(line, "Chassis ") ||
	    startsWithNoCase(line, "Hostname:"))
		return 0;

	std::string shown(line.substr(0, 40));
	return fail("unrecognised line \"" + shown + (line.size() > 40 ? "..." : "") + "\"");
}

int Parser::parseKeyword(std::string_view line, bool &handled)
{
	handled = true;
	size_t eq = line.find_first_of("=+");
	std::string_view key = trim(line.substr(0, std::min(eq, line.find_first_of(" \t\""))));

	if (startsWithNoCase(line, "include"))
		return include(trim(line.substr(7)));
	if (startsWithNoCase(line, "do")) { /* ibsim console commands: the daemon runs them */
		topo.commands.push_back({ std::string(trim(line.substr(2))), fileIdx, lineNo });
		return 0;
	}
	if (eq == std::string_view::npos) {
		handled = false; /* e.g. a node header named "devices" - let the caller decide */
		return 0;
	}
	std::string_view val = trim(line.substr(eq + 1));
	std::string lkey;
	for (char c : key)
		lkey += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));

	if (lkey == "host")
		return parseHost(val);
	if (lkey == "module") {
		if (val.size() < 2 || val.front() != '"' || val.back() != '"')
			return fail("module= needs a quoted name");
		module = std::string(val.substr(1, val.size() - 2));
		return 0;
	}

	uint64_t v = 0;
	std::string_view num = val;
	if (!parseUnsigned(num, v))
		return fail("'" + std::string(key) + "' needs a number, got \"" + std::string(val) + "\"");
	/* anything after the number must be a "(portguid)" or a comment */
	num = trim(num);
	if (!num.empty() && num.front() != '(' && num.front() != '#')
		return fail("unexpected text after " + std::string(key) + " value");
	return setNumber(key, lkey, line[eq] == '+', v, handled);
}

/* `host="NAME" addr="ADDR:PORT"` (val: what follows "host="): the nodes
 * after it belong to NAME. The first line naming a host gives its
 * address; later ones may leave it out, or must repeat it. */
int Parser::parseHost(std::string_view val)
{
	auto quoted = [](std::string_view &s, std::string &out) {
		if (s.size() < 2 || s.front() != '"')
			return false;
		size_t end = s.find('"', 1);
		if (end == std::string_view::npos)
			return false;
		out = std::string(s.substr(1, end - 1));
		s = trim(s.substr(end + 1));
		return true;
	};
	std::string name, addr;
	if (!quoted(val, name) || name.empty())
		return fail("host= needs a quoted, non-empty host name");
	if (name.size() > 255)
		return fail("a host name has at most 255 bytes");
	if (startsWithNoCase(val, "addr=")) {
		val = trim(val.substr(5));
		if (!quoted(val, addr) || addr.empty())
			return fail("addr= needs a quoted ADDR:PORT");
		size_t colon = addr.rfind(':');
		uint64_t port = 0;
		std::string_view num = std::string_view(addr).substr(colon == std::string::npos ? addr.size()
												: colon + 1);
		if (colon == std::string::npos || colon == 0 || !parseUnsigned(num, port) || !num.empty() ||
		    port == 0 || port > 65535)
			return fail("addr=\"" + addr + "\" is not ADDR:PORT (a port 1-65535)");
	}
	if (!val.empty() && val.front() != '#')
		return fail("unexpected text after host=: \"" + std::string(val) + "\"");
	for (size_t i = 0; i < topo.hosts.size(); i++) {
		TopoHost &h = topo.hosts[i];
		if (h.name != name)
			continue;
		if (!addr.empty() && addr != h.addr)
			return fail("host \"" + name + "\" was given addr=\"" + h.addr + "\" at " + topo.files[h.file] +
				    ":" + std::to_string(h.line));
		host = static_cast<int>(i);
		return 0;
	}
	if (addr.empty())
		return fail("the first host=\"" + name + "\" line needs addr=\"ADDR:PORT\" (where its daemon listens)");
	for (const TopoHost &h : topo.hosts)
		if (h.addr == addr)
			return fail("hosts \"" + h.name + "\" and \"" + name + "\" have the same addr=\"" + addr +
				    "\"");
	topo.hosts.push_back({ name, addr, lineNo, fileIdx });
	host = static_cast<int>(topo.hosts.size() - 1);
	return 0;
}

/* A "key=value" setting with a number: key as written, lkey lowercased,
 * offset when a '+' came before the value instead of '='. handled is false
 * for unknown keys. */
int Parser::setNumber(std::string_view key, const std::string &lkey, bool offset, uint64_t v, bool &handled)
{
	int typeIdx = -1;
	if (lkey == "caguid" || lkey == "hcaguids")
		typeIdx = 0;
	else if (lkey == "switchguid")
		typeIdx = 1;
	else if (lkey == "rtguid")
		typeIdx = 2;
	if (typeIdx >= 0) {
		if (offset)
			return fail("'" + std::string(key) + "+' offsets are not supported; give the GUID");
		if (v == 0) /* ibsim gives routers GUID 0; so ibnetdiscover prints it */
			topo.warnings.push_back(topo.files[fileIdx] + ":" + std::to_string(lineNo) +
						": GUID 0 is not valid, assigning one");
		nextGuid[typeIdx] = v;
		return 0;
	}
	if (lkey == "vendid") {
		if (v > 0xffffff)
			return fail("vendid must fit in 24 bits");
		vendorId = static_cast<uint32_t>(v);
	} else if (lkey == "devid") {
		if (v > 0xffff)
			return fail("devid must fit in 16 bits");
		deviceId = static_cast<uint16_t>(v);
	} else if (lkey == "sysimgguid") {
		sysImageGuid = v;
	} else if (lkey == "width") {
		if (v < 1 || v > 31)
			return fail("width= takes a LinkWidth bit mask from 1 to 31");
		defWidth = static_cast<uint8_t>(v);
	} else if (lkey == "speed") {
		if (v < 1 || v > 7)
			return fail("speed= takes a LinkSpeed bit mask from 1 to 7");
		defSpeed = static_cast<uint8_t>(v);
	} else if (lkey == "extspeed") {
		if (v > 15)
			return fail("extspeed= takes a LinkSpeedExt bit mask from 0 to 15");
		defExtSpeed = static_cast<uint8_t>(v);
	} else if (lkey == "pdebug") {
		/* ibsim parser debug level: nothing to do */
	} else {
		handled = false;
	}
	return 0;
}

int Parser::include(std::string_view arg)
{
	if (!includes)
		return fail("include is not allowed here: give the text whole");
	if (arg.size() < 2 || arg.front() != '"' || arg.back() != '"')
		return fail("include needs a quoted file name");
	if (depth >= kMaxIncludeDepth)
		return fail("includes nested more than " + std::to_string(kMaxIncludeDepth) + " deep");
	std::string name(arg.substr(1, arg.size() - 2));
	std::string path = name;
	const std::string &cur = topo.files[fileIdx];
	if (!name.empty() && name.front() != '/') {
		size_t slash = cur.rfind('/');
		if (slash != std::string::npos)
			path = cur.substr(0, slash + 1) + name;
	}
	std::string text, why;
	int rc = readText(path, text, why);
	if (rc == -ENOENT && path != name) {
		path = name; /* ibsim resolves relative to the cwd */
		rc = readText(path, text, why);
	}
	if (rc == -EFBIG || rc == -EIO || rc == -EISDIR)
		return fail("included file \"" + name + "\": " + why);
	if (rc)
		return fail("cannot open included file \"" + name + "\": " + strerror(-rc));

	uint32_t savedFile = fileIdx;
	uint32_t savedLine = lineNo;
	topo.files.push_back(path);
	fileIdx = static_cast<uint32_t>(topo.files.size() - 1);
	depth++;
	current = nullptr;
	rc = parseText(text);
	depth--;
	if (rc)
		return rc;
	fileIdx = savedFile;
	lineNo = savedLine;
	current = nullptr;
	return 0;
}

} /* namespace topology_parse */

using topology_parse::Parser;

int parseTopology(std::string_view text, const std::string &fileName, Topology &out, TopologyError &err,
		  bool allowIncludes)
{
	out.files.push_back(fileName);
	Parser p{ out, err };
	p.includes = allowIncludes;
	p.fileIdx = static_cast<uint32_t>(out.files.size() - 1);
	if (int rc = p.parseText(text))
		return rc;
	if (out.nodes.empty()) {
		err = { fileName, 0, "no nodes found (expected Switch, Ca or Rt records)" };
		return -EINVAL;
	}
	if (!out.hosts.empty()) {
		/* split across daemons: every node has one */
		for (const TopoNode &n : out.nodes)
			if (n.host < 0) {
				err = { out.files[n.file], n.line,
					"\"" + n.id +
						"\" comes before any host= line (in a file with hosts, every node "
						"belongs to one)" };
				return -EINVAL;
			}
	}
	return 0;
}

int loadTopologyFile(const std::string &path, Topology &out, TopologyError &err)
{
	std::string text, why;
	if (int rc = readText(path, text, why)) {
		err = { path, 0, why };
		return rc;
	}
	return parseTopology(text, path, out, err);
}

} /* namespace ibemu::fabric */

