// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// Topology files in the ibnetdiscover format (the format ibsim reads too):
// parsing, building a Subnet from them, and writing a Subnet back out.
//
// A file is a list of node records. Each record is an optional block of
// `vendid=`, `devid=`, `sysimgguid=`, `switchguid=`/`caguid=`/`rtguid=` lines,
// a header (`Switch 36 "S-..." # "desc" enhanced port 0 lid 1 lmc 0`,
// `Ca 2 "H-..." # "desc"`, `Rt ...`) and one line per cabled port
// (`[1](portguid) "S-..."[7] # lid 4 lmc 0 "desc" lid 1 4xEDR`). ibsim's
// extensions are understood: `include "file"`, `module="name"`, `width=`,
// `speed=`, `extspeed=`, `w=`/`s=`/`e=` options and `@[p] "alias"` lines.
// `docs/topology.md` has the full grammar.
#pragma once

#include "fabric/types.h"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ibemu::fabric {

class Subnet;

struct TopoPort {
	uint8_t num = 0;
	std::string peer; /* peer node id (or GUID-style id); empty for alias-only lines */
	uint8_t peerPort = 0;
	std::string alias; /* `@[p] "alias"` name, module-qualified */
	uint64_t guid = 0; /* from `(guid)`, 0 if not given */
	uint16_t lid = 0; /* CA/router port lines: `# lid N lmc M` */
	uint8_t lmc = 0;
	uint8_t widthEnabled = 0; /* PortInfo:LinkWidthEnabled, 0 = node default */
	uint8_t speedEnabled = 0; /* PortInfo:LinkSpeedEnabled, 0 = node default */
	uint8_t extSpeedEnabled = 0xff; /* PortInfo:LinkSpeedExtEnabled, 0xff = node default */
	std::optional<Speed> speed; /* from the `4xEDR` token */
	uint32_t line = 0;
	uint32_t file = 0; /* index into Topology::files */
};

struct TopoNode {
	NodeType type = NodeType::CA;
	unsigned numPorts = 0;
	std::string id;
	std::string desc;
	uint64_t guid = 0; /* 0 until assigned */
	uint64_t sysImageGuid = 0;
	uint32_t vendorId = 0;
	uint16_t deviceId = 0;
	uint16_t lid = 0; /* switch port 0 */
	uint8_t lmc = 0;
	bool enhancedPort0 = false;
	uint8_t widthEnabled = 0;
	uint8_t speedEnabled = 0;
	uint8_t extSpeedEnabled = 0;
	std::vector<TopoPort> ports;
	int host = -1; /* index into Topology::hosts; -1 in a file without hosts */
	uint32_t line = 0;
	uint32_t file = 0;
};

/* A host of a subnet split across daemons (docs/multihost.md): a
 * `host="NAME" addr="ADDR:PORT"` line; the nodes after it are its. */
struct TopoHost {
	std::string name;
	std::string addr; /* where its daemon listens: an IPv4/IPv6 address or a DNS name, and a port */
	uint32_t line = 0;
	uint32_t file = 0;
};

/* An ibsim `do COMMAND` line: not the fabric's business; ibemud runs it
 * once the fabric is built (tools/control/ibsim_script.h) */
struct TopoCommand {
	std::string text; /* COMMAND */
	uint32_t file = 0;
	uint32_t line = 0;
};

struct Topology {
	std::vector<TopoNode> nodes;
	std::vector<TopoCommand> commands;
	std::vector<TopoHost> hosts; /* empty: one daemon simulates it all */
	std::vector<std::string> files; /* file names, for messages */
	std::vector<std::string> warnings;
};

struct TopologyError {
	std::string file;
	uint32_t line = 0; /* 0 when the problem is not tied to a line */
	std::string message;

	/* "file:line: message" */
	std::string str() const;
};

/* Parses text. Returns 0, or -EINVAL with `err` filled in. `fileName` is used
 * in messages and to resolve `include` relative to its directory. Without
 * allowIncludes an include line is an error, and no file is read (text
 * that a client sent to the daemon). */
int parseTopology(std::string_view text, const std::string &fileName, Topology &out, TopologyError &err,
		  bool allowIncludes = true);
/* Reads and parses a file; -ENOENT etc. when it cannot be read. */
int loadTopologyFile(const std::string &path, Topology &out, TopologyError &err);

/* Creates the nodes and cables. Checks peers exist, ports are in range and
 * the two ends of every link agree. Returns 0 or -EINVAL with `err`. */
int buildSubnet(const Topology &topo, Subnet &subnet, TopologyError &err);

/* Adds a topology fragment to a running subnet (hot-plug): its nodes are
 * created, and its port lines may name nodes of the running subnet (by
 * id or GUID), whose ports must be free: those cables are plugged in.
 * Node ids and GUIDs must be new. Everything is checked before anything
 * changes: on -EINVAL (with `err`) the subnet is as it was. */
int graftTopology(const Topology &fragment, Subnet &running, TopologyError &err);

/* Writes a subnet in ibnetdiscover format (switches, then CAs, then routers,
 * each in creation order), as `ibnetdiscover` would print it. */
std::string writeTopology(const Subnet &subnet, std::string_view headerComment = {});

/* The built-in default fabric, as topology text. */
std::string_view defaultTopology();

} /* namespace ibemu::fabric */
