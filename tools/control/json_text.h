// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// The text of every JSON the daemon and the CLI write: control replies,
// captures, the status, the live view, the event log.
//
// Their strings come from the fabric and from clients: a NodeDescription
// root wrote through sysfs may hold any bytes, as on the kernel. nlohmann's
// plain dump() throws on bytes that are not UTF-8, and in the daemon that
// ends it; jsonText() writes U+FFFD for them instead. Call it, never dump().
#pragma once

#include <nlohmann/json.hpp>

#include <string>

namespace ibemu::tools {

/* j as JSON text, on one line (indent -1) or indented by `indent` */
template <class Json> std::string jsonText(const Json &j, int indent = -1)
{
	return j.dump(indent, ' ', false, Json::error_handler_t::replace);
}

} /* namespace ibemu::tools */
