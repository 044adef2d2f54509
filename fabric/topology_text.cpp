// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
#include "fabric/topology_text.h"

#include <cerrno>
#include <charconv>
#include <cstring>
#include <fstream>
#include <sstream>
#include <sys/stat.h>

namespace ibemu::fabric::topology_text {

bool validUtf8(std::string_view s)
{
	static constexpr uint32_t kMin[] = { 0, 0x80, 0x800, 0x10000 };
	for (size_t i = 0; i < s.size();) {
		auto c = static_cast<unsigned char>(s[i]);
		size_t n = c < 0x80 ? 0 : (c & 0xe0) == 0xc0 ? 1 : (c & 0xf0) == 0xe0 ? 2 : (c & 0xf8) == 0xf0 ? 3 : 4;
		if (n == 4 || s.size() - i <= n)
			return false;
		uint32_t cp = n == 0 ? c : c & (0x3fu >> n);
		for (size_t k = 1; k <= n; k++) {
			auto b = static_cast<unsigned char>(s[i + k]);
			if ((b & 0xc0) != 0x80)
				return false;
			cp = cp << 6 | (b & 0x3f);
		}
		if (cp < kMin[n] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
			return false;
		i += n + 1;
	}
	return true;
}

size_t utf8Prefix(std::string_view s, size_t max)
{
	if (s.size() <= max)
		return s.size();
	size_t n = max;
	while (n > 0 && (static_cast<unsigned char>(s[n]) & 0xc0) == 0x80) /* s[n] continues a character */
		n--;
	return n;
}

int readText(const std::string &path, std::string &text, std::string &err)
{
	struct stat st;
	if (stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {
		err = "is a directory, not a topology file";
		return -EISDIR;
	}
	std::ifstream in(path, std::ios::binary);
	if (!in) {
		int e = errno ? errno : ENOENT;
		err = std::string("cannot open: ") + strerror(e);
		return -e;
	}
	text.clear();
	char buf[65536];
	while (in.read(buf, sizeof buf) || in.gcount() > 0) {
		text.append(buf, static_cast<size_t>(in.gcount()));
		if (text.size() > kMaxFileBytes) {
			err = "larger than " + std::to_string(kMaxFileBytes >> 20) + " MiB: not a topology file";
			return -EFBIG;
		}
	}
	if (in.bad()) {
		err = "read error";
		return -EIO;
	}
	return 0;
}

bool isSpace(char c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v';
}

std::string_view trim(std::string_view s)
{
	while (!s.empty() && isSpace(s.front()))
		s.remove_prefix(1);
	while (!s.empty() && isSpace(s.back()))
		s.remove_suffix(1);
	return s;
}

void skipSpace(std::string_view &s)
{
	while (!s.empty() && isSpace(s.front()))
		s.remove_prefix(1);
}

bool startsWithNoCase(std::string_view s, std::string_view prefix)
{
	if (s.size() < prefix.size())
		return false;
	for (size_t i = 0; i < prefix.size(); i++)
		if (std::tolower(static_cast<unsigned char>(s[i])) !=
		    std::tolower(static_cast<unsigned char>(prefix[i])))
			return false;
	return true;
}

bool parseUnsigned(std::string_view &s, uint64_t &v)
{
	int base = 10;
	std::string_view digits = s;
	if (digits.size() > 2 && digits[0] == '0' && (digits[1] == 'x' || digits[1] == 'X')) {
		base = 16;
		digits.remove_prefix(2);
	}
	auto [p, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), v, base);
	if (ec != std::errc() || p == digits.data())
		return false;
	s.remove_prefix(static_cast<size_t>(p - s.data()));
	return true;
}

bool parseHex(std::string_view s, uint64_t &v)
{
	if (s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
		s.remove_prefix(2);
	if (s.empty() || s.size() > 16)
		return false;
	auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v, 16);
	return ec == std::errc() && p == s.data() + s.size();
}

bool findKeywordNumber(std::string_view s, std::string_view word, uint64_t &v)
{
	size_t pos = 0;
	while ((pos = s.find(word, pos)) != std::string_view::npos) {
		bool startOk = pos == 0 || isSpace(s[pos - 1]);
		std::string_view rest = s.substr(pos + word.size());
		if (startOk && !rest.empty() && isSpace(rest.front())) {
			skipSpace(rest);
			if (parseUnsigned(rest, v))
				return true;
		}
		pos += word.size();
	}
	return false;
}

bool findLinkToken(std::string_view s, uint8_t &width, Speed &speed)
{
	bool found = false;
	size_t i = 0;
	while (i < s.size()) {
		while (i < s.size() && isSpace(s[i]))
			i++;
		size_t start = i;
		while (i < s.size() && !isSpace(s[i]))
			i++;
		std::string_view tok = s.substr(start, i - start);
		size_t x = tok.find_first_of("xX");
		if (x == std::string_view::npos || x == 0)
			continue;
		unsigned lanes = 0;
		auto [p, ec] = std::from_chars(tok.data(), tok.data() + x, lanes);
		if (ec != std::errc() || p != tok.data() + x)
			continue;
		auto w = widthFromLanes(lanes);
		auto sp = parseSpeed(tok.substr(x + 1));
		if (!w || !sp)
			continue;
		width = *w;
		speed = *sp;
		found = true;
	}
	return found;
}

} /* namespace ibemu::fabric::topology_text */
