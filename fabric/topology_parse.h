// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// The topology file parser's state, shared by the two halves of the parser:
// topology_parse.cpp reads files and lines and handles the keyword lines
// (include, module=, host=, the sticky settings), topology_parse_node.cpp
// the node records ibnetdiscover writes (a header line, then one line per
// port). Private to the parser; the interface is fabric/topology.h.
#pragma once

#include "fabric/topology.h"

#include <cerrno>
#include <cstdint>
#include <string>
#include <string_view>

namespace ibemu::fabric::topology_parse {

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

} /* namespace ibemu::fabric::topology_parse */
