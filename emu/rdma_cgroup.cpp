// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
#include "emu/rdma_cgroup.h"

#include <cerrno>
#include <cstdlib>
#include <fstream>
#include <sstream>

namespace ibemu::emu {

namespace {

/* "max" or a count; false for anything else */
bool value(std::string_view v, int64_t &out)
{
	if (v == "max") {
		out = -1;
		return true;
	}
	if (v.empty() || v.size() > 18)
		return false;
	int64_t n = 0;
	for (char c : v) {
		if (c < '0' || c > '9')
			return false;
		n = n * 10 + (c - '0');
	}
	out = n;
	return true;
}

} /* namespace */

RdmaCgLimit rdmaMaxFor(std::string_view text, std::string_view dev)
{
	std::istringstream in{ std::string(text) };
	std::string line;
	while (std::getline(in, line)) {
		std::istringstream words(line);
		std::string name, word;
		if (!(words >> name) || name != dev)
			continue;
		RdmaCgLimit l;
		bool ok = true;
		while (ok && words >> word) {
			size_t eq = word.find('=');
			std::string_view key = std::string_view(word).substr(0, eq);
			std::string_view v = eq == std::string::npos ? "" : std::string_view(word).substr(eq + 1);
			if (key == "hca_handle")
				ok = value(v, l.handles);
			else if (key == "hca_object")
				ok = value(v, l.objects);
		}
		if (ok)
			return l;
	}
	return {};
}

RdmaCgChain readRdmaChain(const std::string &root, std::string_view procCgroup, std::string_view dev)
{
	RdmaCgChain chain;
	chain.dev = std::string(dev);
	std::istringstream in{ std::string(procCgroup) };
	std::string line, path;
	while (std::getline(in, line))
		if (line.rfind("0::", 0) == 0)
			path = line.substr(3);
	if (path.empty() || path[0] != '/' || path.find("/..") != std::string::npos)
		return chain;
	for (;;) {
		std::ifstream f(root + path + (path == "/" ? "" : "/") + "rdma.max");
		if (f) {
			std::stringstream text;
			text << f.rdbuf();
			RdmaCgLimit l = rdmaMaxFor(text.str(), dev);
			if (l.handles >= 0 || l.objects >= 0)
				chain.levels.emplace_back(path, l);
		}
		if (path == "/")
			break;
		size_t slash = path.rfind('/');
		path = slash == 0 ? "/" : path.substr(0, slash);
	}
	return chain;
}

bool RdmaCgroups::fits(const RdmaCgChain &chain, bool handle) const
{
	for (const auto &[path, limit] : chain.levels) {
		int64_t max = handle ? limit.handles : limit.objects;
		auto it = usage_.find({ chain.dev, path });
		int64_t now = it == usage_.end() ? 0 : handle ? it->second.first : it->second.second;
		if (max >= 0 && now + 1 > max)
			return false;
	}
	return true;
}

void RdmaCgroups::charge(const RdmaCgChain &chain, bool handle)
{
	for (const auto &level : chain.levels) {
		auto &u = usage_[{ chain.dev, level.first }];
		(handle ? u.first : u.second)++;
	}
}

int RdmaCgroups::tryCharge(const RdmaCgChain &chain, bool handle)
{
	if (!fits(chain, handle))
		return -EAGAIN;
	charge(chain, handle);
	return 0;
}

void RdmaCgroups::uncharge(const RdmaCgChain &chain, bool handle)
{
	for (const auto &level : chain.levels) {
		auto it = usage_.find({ chain.dev, level.first });
		if (it == usage_.end())
			continue;
		(handle ? it->second.first : it->second.second)--;
		if (it->second.first <= 0 && it->second.second <= 0)
			usage_.erase(it);
	}
}

std::pair<int64_t, int64_t> RdmaCgroups::usage(const std::string &path, const std::string &dev) const
{
	auto it = usage_.find({ dev, path });
	return it == usage_.end() ? std::pair<int64_t, int64_t>{ 0, 0 } : it->second;
}

} /* namespace ibemu::emu */
