// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// The text level of topology files, under the parser (topology_parse.cpp,
// topology_parse_node.cpp): reading a file whole (with a size cap and a
// UTF-8 check), and the words, numbers and link tokens its lines are made
// of.
#pragma once

#include "fabric/types.h"

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace ibemu::fabric::topology_text {

/* A 100k-CA fabric is about 30 MiB of text; anything far bigger (or a
 * device that never ends, like /dev/zero) is not a topology file. */
constexpr size_t kMaxFileBytes = size_t(256) << 20;

/* Well-formed UTF-8 (RFC 3629: no overlongs, no surrogates, at most
 * U+10FFFF): NodeDescription is a UTF-8 string (IBA 14.2.5.2). */
bool validUtf8(std::string_view s);
/* The length of the longest prefix of the UTF-8 text s that has at most max
 * bytes and ends between two characters. */
size_t utf8Prefix(std::string_view s, size_t max);
/* The whole file: 0, or a negative errno with the reason in err. */
int readText(const std::string &path, std::string &text, std::string &err);
bool isSpace(char c);
std::string_view trim(std::string_view s);
void skipSpace(std::string_view &s);
bool startsWithNoCase(std::string_view s, std::string_view prefix);
/* Unsigned number with C prefixes (0x.., decimal); consumes it from s. */
bool parseUnsigned(std::string_view &s, uint64_t &v);
bool parseHex(std::string_view s, uint64_t &v);
/* "lid 12" style: finds `word` followed by a number anywhere in s. */
bool findKeywordNumber(std::string_view s, std::string_view word, uint64_t &v);
/*
 * The width/speed token ibnetdiscover prints at the end of a port line,
 * e.g. "4xEDR", "12xQDR", "1xSDR". Finds the last such token.
 */
bool findLinkToken(std::string_view s, uint8_t &width, Speed &speed);

} /* namespace ibemu::fabric::topology_text */
