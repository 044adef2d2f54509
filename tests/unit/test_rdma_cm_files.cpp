// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// What MIGRATE_ID over CUSE checks (cuse_dev/rdma_cm_files.h): that the
// caller's descriptor is the node (a copy's device and inode, whatever the
// caller has mounted), and the identity of an opener that a later process
// with the same ID does not have (cuse_dev/caller.h).
#include "cuse_dev/caller.h"
#include "cuse_dev/rdma_cm_files.h"
#include "tests/unit/emu_helpers.h"

#include <catch2/catch.hpp>

#include <cerrno>
#include <cstdlib>
#include <fcntl.h>
#include <filesystem>
#include <string>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

using namespace ibemu;
using namespace ibemu::cuse_dev;

TEST_CASE("rdma_cm files: MIGRATE_ID's descriptor is the node, by device and inode", "[rdma_cm_files]")
{
	test::EmuFixture fx;
	std::string made = (std::filesystem::temp_directory_path() / "ibemu-cm-XXXXXX").string();
	std::vector<char> name(made.begin(), made.end());
	name.push_back(0);
	int node = mkstemp(name.data());
	REQUIRE(node >= 0);
	int other = open("/dev/null", O_RDONLY | O_CLOEXEC);
	REQUIRE(other >= 0);
	RdmaCmFiles files(fx.io, *fx.host);
	pid_t self = getpid();
	CHECK(files.cmFile(self, node) == -EINVAL); /* no node named yet */
	files.setNode(name.data());
	CHECK(files.cmFile(self, node) == 0);
	int again = open(name.data(), O_RDONLY | O_CLOEXEC); /* another open of it */
	CHECK(files.cmFile(self, again) == 0);
	CHECK(files.cmFile(self, other) == -EINVAL);
	close(again);
	/* a number no open takes meanwhile (the check's own pidfd would
	 * take the lowest free one) */
	int closed = 900;
	REQUIRE(fcntl(closed, F_GETFD) == -1);
	CHECK(files.cmFile(self, closed) == -ENOENT);
	CHECK(files.cmFile(self, -1) == -ENOENT);
	close(other);
	close(node);
	unlink(name.data());
}

TEST_CASE("rdma_cm files: an opener's identity is its own, not its ID's", "[rdma_cm_files]")
{
	uint64_t mine = processIdentity(getpid());
	CHECK(mine != 0);
	CHECK(processIdentity(getpid()) == mine);
	int go[2];
	REQUIRE(pipe(go) == 0);
	pid_t child = fork();
	REQUIRE(child >= 0);
	if (child == 0) {
		close(go[1]);
		char c;
		(void)!read(go[0], &c, 1);
		_exit(0);
	}
	uint64_t theirs = processIdentity(child);
	CHECK(theirs != 0);
	CHECK(theirs != mine);
	CHECK(processIdentity(child) == theirs);
	close(go[1]);
	close(go[0]);
	waitpid(child, nullptr, 0);
	CHECK(processIdentity(child) == 0); /* gone: nothing to name */
}
