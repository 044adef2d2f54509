// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// The /etc/libibverbs.d entry a --global instance keeps while it runs
// (tools/instance/host_verbs.h), in a directory of the test's own: written
// when there is none, a stale one of ibemud's replaced, anybody else's
// left alone, and removed at the end only if it is still the one written.
#include "tools/instance/host_verbs.h"

#include <catch2/catch.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

using namespace ibemu::tools;

namespace {

struct TempDir {
	std::string path;
	TempDir()
	{
		char tmpl[] = "/tmp/ibemu-host-verbs.XXXXXX";
		path = mkdtemp(tmpl);
	}
	~TempDir() { std::filesystem::remove_all(path); }
};

std::string slurp(const std::string &p)
{
	std::ifstream f(p);
	std::stringstream s;
	s << f.rdbuf();
	return s.str();
}

void put(const std::string &p, const std::string &text)
{
	std::ofstream(p) << text;
}

} /* namespace */

TEST_CASE("a --global instance lists ibemu's provider while it runs", "[host_verbs]")
{
	TempDir d;
	std::string why;
	{
		GlobalVerbsDriver drv(d.path);
		REQUIRE(drv.install("/opt/ibemu/libibemu", "g", why));
		CHECK(why.empty());
		std::string text = slurp(drv.path());
		CHECK(text.rfind("# written by ibemud", 0) == 0);
		CHECK(text.find("\ndriver /opt/ibemu/libibemu\n") != std::string::npos);
		CHECK((std::filesystem::status(drv.path()).permissions() & std::filesystem::perms::others_read) !=
		      std::filesystem::perms::none);
	}
	CHECK_FALSE(std::filesystem::exists(d.path + "/ibemu.driver")); /* gone with the instance */
}

TEST_CASE("a listing a killed ibemud left is replaced, anybody else's stays", "[host_verbs]")
{
	const std::string stale = "# written by ibemud for the --global instance \"old\"\ndriver /gone/libibemu\n";
	for (const std::string &before : { stale, std::string("driver ibemu\n") }) {
		TempDir d;
		put(d.path + "/ibemu.driver", before);
		{
			GlobalVerbsDriver drv(d.path);
			std::string why;
			REQUIRE(drv.install("/new/libibemu", "g", why));
			std::string now = slurp(drv.path());
			if (before == stale) {
				CHECK(now.find("\ndriver /new/libibemu\n") != std::string::npos);
			} else {
				CHECK(why.find("was there already") != std::string::npos);
				CHECK(now == before);
			}
		}
		/* the instance ends: its own listing goes, the other one stays */
		CHECK(std::filesystem::exists(d.path + "/ibemu.driver") == (before != stale));
	}
}

TEST_CASE("a listing replaced meanwhile is not removed", "[host_verbs]")
{
	TempDir d;
	GlobalVerbsDriver drv(d.path);
	std::string why;
	REQUIRE(drv.install("/opt/ibemu/libibemu", "g", why));
	std::filesystem::remove(drv.path());
	put(drv.path(), "driver ibemu\n"); /* a package installed one */
	drv.remove();
	CHECK(slurp(drv.path()) == "driver ibemu\n");
}

TEST_CASE("no listing without the directory or with a path a driver line cannot hold", "[host_verbs]")
{
	TempDir d;
	std::string why;
	GlobalVerbsDriver none(d.path + "/missing");
	CHECK_FALSE(none.install("/opt/ibemu/libibemu", "g", why));
	CHECK(why.find("there is no") != std::string::npos);
	GlobalVerbsDriver blank(d.path);
	CHECK_FALSE(blank.install("/home/a user/libibemu", "g", why));
	CHECK(why.find("blank") != std::string::npos);
	CHECK_FALSE(std::filesystem::exists(blank.path()));
}
