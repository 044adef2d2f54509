// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// The rdma cgroup limits ibemu honours (emu/rdma_cgroup.h): rdma.max's
// lines, the chain of a process's cgroup and its ancestors, charges at
// every level, and uverbs files refused EAGAIN past a limit. (This host's
// kernel may have no rdma controller; the files are made here.)
#include "emu/rdma_cgroup.h"
#include "tests/unit/verbs_helpers.h"

#include <catch2/catch.hpp>

#include <cerrno>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

using namespace ibemu;
using namespace ibemu::emu;

TEST_CASE("rdma cgroup: rdma.max's line for the device", "[rdma_cgroup]")
{
	const char *text = "mlx5_0 hca_handle=2 hca_object=2000\nibemu0 hca_handle=max hca_object=3\n";
	RdmaCgLimit l = rdmaMaxFor(text, "ibemu0");
	CHECK(l.handles == -1);
	CHECK(l.objects == 3);
	l = rdmaMaxFor(text, "mlx5_0");
	CHECK(l.handles == 2);
	CHECK(l.objects == 2000);
	l = rdmaMaxFor(text, "ibemu1");
	CHECK(l.handles == -1);
	CHECK(l.objects == -1);
	l = rdmaMaxFor("ibemu0 hca_handle=x hca_object=1\n", "ibemu0");
	CHECK(l.objects == -1); /* a line that does not parse sets nothing */
}

TEST_CASE("rdma cgroup: a process's chain, innermost first, levels with a limit only", "[rdma_cgroup]")
{
	std::string made = (std::filesystem::temp_directory_path() / "ibemu-cg-XXXXXX").string();
	std::vector<char> name(made.begin(), made.end());
	name.push_back(0);
	REQUIRE(mkdtemp(name.data()));
	std::filesystem::path root = name.data();
	std::filesystem::create_directories(root / "a/b/c");
	std::ofstream(root / "a/rdma.max") << "ibemu0 hca_handle=max hca_object=5\n";
	std::ofstream(root / "a/b/c/rdma.max") << "ibemu0 hca_handle=1 hca_object=max\nmlx5_0 hca_handle=9 hca_object=9\n";
	std::ofstream(root / "rdma.max") << "mlx5_0 hca_handle=1 hca_object=1\n"; /* another device's */
	RdmaCgChain c = readRdmaChain(root.string(), "1:name=systemd:/x\n0::/a/b/c\n", "ibemu0");
	REQUIRE(c.levels.size() == 2);
	CHECK(c.levels[0].first == "/a/b/c");
	CHECK(c.levels[0].second.handles == 1);
	CHECK(c.levels[1].first == "/a");
	CHECK(c.levels[1].second.objects == 5);
	CHECK(readRdmaChain(root.string(), "0::/\n", "ibemu0").empty());
	CHECK(readRdmaChain(root.string(), "1:cpu:/a\n", "ibemu0").empty()); /* no cgroup v2 line */
	CHECK(readRdmaChain(root.string(), "0::/a/../a/b/c\n", "ibemu0").empty());
	std::filesystem::remove_all(root);
}

TEST_CASE("rdma cgroup: a charge counts at every level; past a limit EAGAIN", "[rdma_cgroup]")
{
	RdmaCgroups cg;
	RdmaCgChain inner{ { { "/a/b", { 1, -1 } }, { "/a", { -1, 3 } } } };
	RdmaCgChain outer{ { { "/a", { -1, 3 } } } };
	CHECK(cg.tryCharge(inner, true) == 0);
	CHECK(cg.tryCharge(inner, true) == -EAGAIN); /* /a/b: one handle */
	CHECK(cg.tryCharge(outer, true) == 0); /* /a has no handle limit */
	CHECK(cg.tryCharge(inner, false) == 0);
	CHECK(cg.tryCharge(outer, false) == 0);
	CHECK(cg.tryCharge(inner, false) == 0);
	CHECK(cg.usage("/a") == std::pair<int64_t, int64_t>{ 2, 3 });
	CHECK(cg.tryCharge(outer, false) == -EAGAIN); /* /a holds 3 objects, its children's too */
	CHECK(cg.tryCharge(inner, false) == -EAGAIN);
	cg.uncharge(inner, false);
	CHECK(cg.tryCharge(outer, false) == 0);
	CHECK(cg.usage("/a/b") == std::pair<int64_t, int64_t>{ 1, 1 });
	/* each device is a pool of its own in the same cgroup */
	RdmaCgChain other{ { { "/a/b", { 1, -1 } } }, "ibemu1" };
	CHECK(cg.tryCharge(other, true) == 0);
	CHECK(cg.tryCharge(other, true) == -EAGAIN);
	CHECK(cg.usage("/a/b", "ibemu1") == std::pair<int64_t, int64_t>{ 1, 0 });
	CHECK(cg.usage("/a/b") == std::pair<int64_t, int64_t>{ 1, 1 });
}

TEST_CASE("rdma cgroup: uverbs files past hca_handle and hca_object get EAGAIN", "[rdma_cgroup][verbs]")
{
	test::VerbsFixture fx;
	RdmaCgroups cg;
	RdmaCgChain chain{ { { "/job", { 1, 3 } } } };
	test::Client a(fx, fx.dev1(), 100, false), b(fx, fx.dev1(), 200, false), outside(fx, fx.dev1(), 300);
	a.file->setRdmaCgroup(cg, chain);
	b.file->setRdmaCgroup(cg, chain);
	CHECK(a.getContext() == 0);
	CHECK(b.getContext() == -EAGAIN); /* one context in /job */
	uint32_t pd = 0, cq = 0, more = 0;
	CHECK(a.allocPd(pd) == 0);
	CHECK(a.createCq(8, cq) == 0);
	CHECK(a.allocPd(more) == 0);
	CHECK(a.allocPd(more) == -EAGAIN); /* three objects */
	CHECK(outside.allocPd(more) == 0); /* a file outside the cgroup */
	CHECK(a.destroy(CMD_DEALLOC_PD, pd) == 0);
	CHECK(a.allocPd(pd) == 0);
	a.file.reset(); /* its context and objects go back */
	CHECK(cg.usage("/job") == std::pair<int64_t, int64_t>{ 0, 0 });
	CHECK(b.getContext() == 0);
}
