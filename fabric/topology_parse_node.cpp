// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// The node records of an ibnetdiscover-format topology file: a header line
// ("Switch", "Ca" or "Rt" with the port count, the quoted node id, the
// description and the switch's LID) and the port lines under it ("[N]"
// with the port GUID, the quoted peer and its port, the peer's
// description, LID, and the width and speed ibnetdiscover prints, or
// ibsim's options). IBA 14.2.5 names what the fields are; the file reading
// and the keyword lines are in topology_parse.cpp.
#include "fabric/topology_parse.h"
#include "fabric/topology_text.h"

#include <cctype>
#include <cerrno>
#include <cstring>

namespace ibemu::fabric {

using namespace topology_text;

namespace topology_parse {

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

} /* namespace topology_parse */

} /* namespace ibemu::fabric */
