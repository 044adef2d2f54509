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

TEST_CASE("a listing a killed ibemud left is replaced", "[host_verbs]")
{
	TempDir d;
	put(d.path + "/ibemu.driver", "# written by ibemud for the --global instance \"old\"\ndriver /gone/libibemu\n");
	{
		GlobalVerbsDriver drv(d.path);
		std::string why;
		REQUIRE(drv.install("/new/libibemu", "g", why));
		CHECK(slurp(drv.path()).find("\ndriver /new/libibemu\n") != std::string::npos);
	}
	CHECK_FALSE(std::filesystem::exists(d.path + "/ibemu.driver")); /* its own listing goes */
}

TEST_CASE("anybody else's listing stays, and serves only if it names an ibemu provider that is there", "[host_verbs]")
{
	TempDir d;
	std::filesystem::create_directory(d.path + "/lib");
	put(d.path + "/lib/libibemu-rdmav34.so", "");
	struct Case {
		std::string what, text;
		bool link, serves;
	};
	for (const Case &c : { Case{ "names the provider", "# by hand\ndriver " + d.path + "/lib/libibemu\n", false, true },
			       Case{ "names another driver", "driver ibemu\n", false, false },
			       Case{ "names a provider that is gone", "driver /gone/libibemu\n", false, false },
			       Case{ "is a link", "", true, false } }) {
		INFO(c.what);
		const std::string p = d.path + "/ibemu.driver";
		std::filesystem::remove(p);
		if (c.link)
			std::filesystem::create_symlink(d.path + "/lib/libibemu-rdmav34.so", p);
		else
			put(p, c.text);
		{
			GlobalVerbsDriver drv(d.path);
			std::string why;
			CHECK(drv.install("/new/libibemu", "g", why) == c.serves);
			CHECK(why.find(c.serves ? "was there already" : "names no ibemu provider") != std::string::npos);
		}
		CHECK(std::filesystem::is_symlink(p) == c.link); /* it stays, as it was */
		if (!c.link)
			CHECK(slurp(p) == c.text);
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

TEST_CASE("down of a killed --global instance removes its listing, and no other", "[host_verbs]")
{
	TempDir d;
	const std::string p = d.path + "/ibemu.driver";
	put(p, "# written by ibemud for the --global instance \"g1\" and removed when it stops:\ndriver /x/libibemu\n");
	CHECK_FALSE(forgetGlobalListing("g", d.path)); /* another instance's */
	CHECK_FALSE(forgetGlobalListing("g1\" x", d.path));
	CHECK(std::filesystem::exists(p));
	CHECK(forgetGlobalListing("g1", d.path));
	CHECK_FALSE(std::filesystem::exists(p));
	put(p, "driver /x/libibemu\n"); /* by hand */
	CHECK_FALSE(forgetGlobalListing("g1", d.path));
	CHECK(std::filesystem::exists(p));
}
