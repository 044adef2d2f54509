// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// Parser for ibnetdiscover-format topology files, with ibsim's extensions.
//
// The parser is line based and forgiving about what a human would read the
// same way (tabs or spaces, missing port GUIDs, no blank line between
// records, links written on one side only), and strict about what is
// ambiguous: every error names the file, the line and the problem.
#include "fabric/topology.h"
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

namespace {

constexpr unsigned kMaxIncludeDepth = 8;

struct Parser {
	Topology &topo;
	TopologyError &err;

	/* sticky settings */
	uint32_t vendorId = 0;
	uint16_t deviceId = 0;
	uint64_t sysImageGuid = 0; /* next node only */
	uint64_t nextGuid[3] = { 0, 0, 0 }; /* CA, switch, router: explicit next GUID */
	std::string module;
	int host = -1; /* the host= in force: index into topo.hosts */
	uint8_t defWidth = kWidth4x;
	uint8_t defSpeed = 0x1;
	uint8_t defExtSpeed = 0;
	unsigned depth = 0;
	bool includes = true; /* false: an include line is an error */

	TopoNode *current = nullptr; /* record whose port lines we are reading */
	uint32_t fileIdx = 0;
	uint32_t lineNo = 0;

	int fail(std::string msg)
	{
		err.file = topo.files[fileIdx];
		err.line = lineNo;
		err.message = std::move(msg);
		return -EINVAL;
	}

	std::string qualify(std::string_view id) const
	{
		if (module.empty() || id.find('#') != std::string_view::npos || id.find('@') != std::string_view::npos)
			return std::string(id);
		return module + "#" + std::string(id);
	}

	std::string qualifyAlias(std::string_view alias) const
	{
		if (!alias.empty() && alias.front() == '@')
			return module + std::string(alias);
		return std::string(alias);
	}

	int parseText(std::string_view text);
	int parseLine(std::string_view line);
	int parseKeyword(std::string_view line, bool &handled);
	int setNumber(std::string_view key, const std::string &lkey, bool offset, uint64_t v, bool &handled);
	int parseHeader(std::string_view line, NodeType type, size_t keywordLen);
	int parseCountAndId(std::string_view &s, unsigned &nports, std::string_view &id);
	uint64_t takeNodeGuid(NodeType type, std::string_view id);
	int parseHeaderComment(std::string_view tail, TopoNode &node);
	int parsePortLine(std::string_view line);
	int parsePortNumber(std::string_view &s, uint8_t &out);
	int parsePeerId(std::string_view &s, bool isAlias, TopoPort &port, std::string_view &peer);
	int parsePeerPort(std::string_view &s, std::string_view peer, TopoPort &port);
	int parsePortComment(std::string_view comment, TopoPort &port);
	int parseLidLmc(std::string_view s, const char *what, uint16_t &lid, uint8_t &lmc);
	int parseOptions(std::string_view tail, TopoPort &port);
	int include(std::string_view arg);
	int parseHost(std::string_view val);
};

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

/* The port count and the quoted node id after a header's type keyword;
 * consumes them from s. */
int Parser::parseCountAndId(std::string_view &s, unsigned &nports, std::string_view &id)
{
	skipSpace(s);
	uint64_t n = 0;
	if (!parseUnsigned(s, n))
		return fail("node header needs a port count after the type");
	if (n < 1 || n > 254)
		return fail("port count " + std::to_string(n) + " is out of range (1-254)");
	nports = static_cast<unsigned>(n);
	skipSpace(s);
	if (s.empty() || s.front() != '"')
		return fail("node header needs a quoted node id after the port count");
	size_t close = s.find('"', 1);
	if (close == std::string_view::npos)
		return fail("unterminated node id (missing closing quote)");
	id = s.substr(1, close - 1);
	if (id.empty())
		return fail("empty node id");
	s.remove_prefix(close + 1);
	return 0;
}

/* The GUID of a new node: from a switchguid=/caguid=/rtguid= line before
 * it, else the one ibnetdiscover's ids carry as 16 hex digits
 * ("S-0002c90300001234"), else 0. */
uint64_t Parser::takeNodeGuid(NodeType type, std::string_view id)
{
	int typeIdx = type == NodeType::CA ? 0 : type == NodeType::Switch ? 1 : 2;
	if (uint64_t g = nextGuid[typeIdx]) {
		nextGuid[typeIdx] = 0;
		return g;
	}
	uint64_t g = 0;
	if (id.size() == 18 && id[1] == '-' && std::strchr("SHR", id[0]) && parseHex(id.substr(2), g))
		return g;
	return 0;
}

/* What follows "#" in a header: the description, quoted or not, then (on
 * switches) "enhanced port 0", "lid N", "lmc M". */
int Parser::parseHeaderComment(std::string_view tail, TopoNode &node)
{
	skipSpace(tail);
	std::string_view after = tail;
	if (!tail.empty() && tail.front() == '"') {
		/* the description runs to the last quote: descriptions may contain
		 * quotes and words such as " lid ", and what ibnetdiscover writes
		 * after them ("base port 0 lid N lmc M") never has a quote */
		size_t last = tail.rfind('"');
		if (last == 0)
			return fail("unterminated node description (missing closing quote)");
		node.desc = std::string(tail.substr(1, last - 1));
		after = tail.substr(last + 1);
	} else {
		size_t kw = tail.size();
		for (std::string_view k : { " enhanced port", " base port", " lid ", " lmc " }) {
			size_t p = tail.find(k);
			if (p != std::string_view::npos && p < kw)
				kw = p;
		}
		node.desc = std::string(trim(tail.substr(0, kw)));
		after = tail.substr(kw);
	}
	if (node.type == NodeType::Switch) {
		if (after.find("enhanced port 0") != std::string_view::npos)
			node.enhancedPort0 = true;
		if (int rc = parseLidLmc(after, "switch", node.lid, node.lmc))
			return rc;
	}
	return 0;
}

int Parser::parseHeader(std::string_view line, NodeType type, size_t keywordLen)
{
	std::string_view s = line.substr(keywordLen);
	TopoNode node;
	std::string_view id;
	if (int rc = parseCountAndId(s, node.numPorts, id))
		return rc;
	node.type = type;
	node.id = qualify(id);
	node.line = lineNo;
	node.file = fileIdx;
	node.vendorId = vendorId;
	node.deviceId = deviceId;
	node.sysImageGuid = sysImageGuid;
	sysImageGuid = 0;
	node.widthEnabled = defWidth;
	node.speedEnabled = defSpeed;
	node.extSpeedEnabled = defExtSpeed;
	node.guid = takeNodeGuid(type, id);
	node.host = host;

	std::string_view tail = trim(s);
	if (!tail.empty()) {
		if (tail.front() != '#')
			return fail("unexpected text after the node id: \"" + std::string(tail) + "\"");
		if (int rc = parseHeaderComment(tail.substr(1), node))
			return rc;
	}
	if (node.desc.empty())
		node.desc = std::string(id);
	/* NodeDescription holds 64 bytes: cut between characters, never
	 * inside one (the file is UTF-8, and what is written must read back) */
	node.desc.resize(utf8Prefix(node.desc, 64));

	topo.nodes.push_back(std::move(node));
	current = &topo.nodes.back();
	return 0;
}

int Parser::parseOptions(std::string_view tail, TopoPort &port)
{
	/* ibsim options: w=<LinkWidthEnabled> s=<LinkSpeedEnabled> e=<LinkSpeedExtEnabled>,
	 * as whitespace-separated tokens outside the quoted peer description.
	 * That description runs from the first quote to the last one (it may
	 * contain quotes itself); a quote left open runs to the end. */
	size_t openQ = tail.find('"');
	size_t closeQ = tail.rfind('"');
	if (openQ == closeQ)
		closeQ = tail.size();
	size_t i = 0;
	while (i < tail.size()) {
		if (i == openQ) {
			i = closeQ + 1;
			continue;
		}
		if (isSpace(tail[i])) {
			i++;
			continue;
		}
		size_t start = i;
		while (i < tail.size() && !isSpace(tail[i]) && tail[i] != '"')
			i++;
		std::string_view tok = tail.substr(start, i - start);
		if (tok.size() < 3 || tok[1] != '=')
			continue;
		char key = static_cast<char>(std::tolower(static_cast<unsigned char>(tok[0])));
		if (key != 'w' && key != 's' && key != 'e' && key != 'v')
			continue;
		std::string_view num = tok.substr(2);
		uint64_t v = 0;
		if (!parseUnsigned(num, v) || !num.empty())
			return fail("option '" + std::string(tok) + "' needs a number");
		if (key == 'w') {
			if (v < 1 || v > 31)
				return fail("w= takes a LinkWidth bit mask from 1 to 31");
			port.widthEnabled = static_cast<uint8_t>(v);
		} else if (key == 's') {
			if (v > 7)
				return fail("s= takes a LinkSpeed bit mask from 1 to 7");
			port.speedEnabled = static_cast<uint8_t>(v ? v : 0x7);
		} else if (key == 'e') {
			if (v > 15)
				return fail("e= takes a LinkSpeedExt bit mask from 0 to 15");
			port.extSpeedEnabled = static_cast<uint8_t>(v);
		}
	}
	return 0;
}

/* "lid N" and "lmc M" anywhere in s; `what` has the LID ("switch", "port") */
int Parser::parseLidLmc(std::string_view s, const char *what, uint16_t &lid, uint8_t &lmc)
{
	uint64_t v;
	if (findKeywordNumber(s, "lid", v)) {
		if (v >= 0xc000)
			return fail(std::string(what) + " LID " + std::to_string(v) + " is not a unicast LID");
		lid = static_cast<uint16_t>(v);
	}
	if (findKeywordNumber(s, "lmc", v)) {
		if (v > 7)
			return fail("LMC must be 0-7");
		lmc = static_cast<uint8_t>(v);
	}
	return 0;
}

/* "[N]" or "@[N]" at the start of a port line: a port of the current
 * record that has no line yet. Consumes it from s. */
int Parser::parsePortNumber(std::string_view &s, uint8_t &out)
{
	uint64_t num = 0;
	if (!parseUnsigned(s, num))
		return fail("port line needs a port number inside [ ]");
	if (s.empty() || s.front() != ']')
		return fail("port number must be closed with ']'");
	s.remove_prefix(1);
	if (num < 1 || num > current->numPorts)
		return fail("port " + std::to_string(num) + " is out of range for \"" + current->id + "\" (1-" +
			    std::to_string(current->numPorts) + ")");
	for (const auto &p : current->ports)
		if (p.num == num)
			return fail("port " + std::to_string(num) + " of \"" + current->id +
				    "\" is listed twice (first on line " + std::to_string(p.line) + ")");
	out = static_cast<uint8_t>(num);
	return 0;
}

/* The optional "(portguid)" and "[ext N]" before the peer, then the quoted
 * peer id (or alias name). Consumes them from s. */
int Parser::parsePeerId(std::string_view &s, bool isAlias, TopoPort &port, std::string_view &peer)
{
	skipSpace(s);
	while (!s.empty() && (s.front() == '(' || s.front() == '[')) {
		char open = s.front();
		size_t close = s.find(open == '(' ? ')' : ']');
		if (close == std::string_view::npos)
			return fail(std::string("unterminated '") + open + "'");
		std::string_view inner = s.substr(1, close - 1);
		if (open == '(') {
			if (!parseHex(inner, port.guid))
				return fail("bad port GUID \"(" + std::string(inner) + ")\"");
		}
		s.remove_prefix(close + 1);
		skipSpace(s);
	}
	if (s.empty() || s.front() != '"')
		return fail(isAlias ? "alias line needs a quoted alias name"
				    : "port line needs the peer's quoted node id");
	size_t close = s.find('"', 1);
	if (close == std::string_view::npos)
		return fail("unterminated peer id (missing closing quote)");
	peer = s.substr(1, close - 1);
	if (peer.empty())
		return fail("empty peer id");
	s.remove_prefix(close + 1);
	return 0;
}

/* After the peer id: "[rp]" (tolerating space before it), then optional
 * "[ext N]" / "(peer guid)". Consumes them from s. */
int Parser::parsePeerPort(std::string_view &s, std::string_view peer, TopoPort &port)
{
	skipSpace(s);
	port.peerPort = 1;
	bool gotPort = false;
	while (!s.empty() && (s.front() == '[' || s.front() == '(')) {
		char open = s.front();
		size_t c = s.find(open == '(' ? ')' : ']');
		if (c == std::string_view::npos)
			return fail(std::string("unterminated '") + open + "'");
		std::string_view inner = trim(s.substr(1, c - 1));
		if (open == '[' && !gotPort) {
			uint64_t rp = 0;
			std::string_view t = inner;
			if (!parseUnsigned(t, rp) || !t.empty())
				return fail("bad peer port \"[" + std::string(inner) + "]\"");
			if (rp < 1 || rp > 254)
				return fail("peer port " + std::to_string(rp) + " is out of range (1-254)");
			port.peerPort = static_cast<uint8_t>(rp);
			gotPort = true;
		} else if (open == '(') {
			uint64_t g;
			if (!parseHex(inner, g))
				return fail("bad peer port GUID \"(" + std::string(inner) + ")\"");
		}
		s.remove_prefix(c + 1);
		skipSpace(s);
	}
	if (!gotPort && peer.find('@') == std::string_view::npos)
		topo.warnings.push_back(topo.files[fileIdx] + ":" + std::to_string(lineNo) + ": no [port] after \"" +
					std::string(peer) + "\", assuming port 1");
	return 0;
}

/* The "# ..." comment at the end of a port line. CA and router lines:
 * "# lid N lmc M "peer desc" lid N 4xQDR" - the local LID and LMC come
 * before the first quote; any line: the link's width and speed last. */
int Parser::parsePortComment(std::string_view comment, TopoPort &port)
{
	size_t q = comment.find('"');
	std::string_view local = q == std::string_view::npos ? comment : comment.substr(0, q);
	if (current->type != NodeType::Switch)
		if (int rc = parseLidLmc(local, "port", port.lid, port.lmc))
			return rc;
	size_t lastQ = comment.rfind('"');
	std::string_view linkPart = lastQ == std::string_view::npos ? comment : comment.substr(lastQ + 1);
	uint8_t width;
	Speed speed;
	if (findLinkToken(linkPart, width, speed)) {
		port.widthEnabled = linkWidthMaskUpTo(width);
		port.speedEnabled = linkSpeedMaskUpTo(speed);
		port.extSpeedEnabled = linkSpeedExtMaskUpTo(speed);
		port.speed = speed;
	}
	return 0;
}

int Parser::parsePortLine(std::string_view line)
{
	bool isAlias = line.front() == '@';
	if (!current)
		return fail("port line outside a node record (no Switch/Ca/Rt header before it)");
	std::string_view s = line.substr(isAlias ? 2 : 1);
	TopoPort port;
	if (int rc = parsePortNumber(s, port.num))
		return rc;
	port.line = lineNo;
	port.file = fileIdx;
	port.widthEnabled = current->widthEnabled;
	port.speedEnabled = current->speedEnabled;
	port.extSpeedEnabled = current->extSpeedEnabled;

	std::string_view peer;
	if (int rc = parsePeerId(s, isAlias, port, peer))
		return rc;
	if (isAlias) {
		port.alias = module + "@" + std::string(peer);
	} else {
		port.peer = peer.find('@') != std::string_view::npos ? qualifyAlias(peer) : qualify(peer);
		if (int rc = parsePeerPort(s, peer, port))
			return rc;
	}

	std::string_view tail = trim(s);
	if (!tail.empty() && tail.front() != '#' && tail.find('=') == std::string_view::npos)
		return fail("unexpected text after the peer: \"" + std::string(tail) + "\"");
	if (int rc = parseOptions(tail, port))
		return rc;
	if (!tail.empty() && tail.front() == '#')
		if (int rc = parsePortComment(tail.substr(1), port))
			return rc;

	current->ports.push_back(std::move(port));
	return 0;
}

} /* namespace */

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
