// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// The launch door's request (tools/instance/launch_wire.h): what the
// caller encodes the daemon decodes word for word, and the daemon refuses
// heads past the limits and strings that do not match their head.
#include "tools/instance/launch_wire.h"

#include <catch2/catch.hpp>

#include <cerrno>
#include <string>

using namespace ibemu::tools::launch;

TEST_CASE("launch_wire: a request comes back as it was sent", "[launch]")
{
	Request r{ "ibemu-host2", "/tmp", { "sh", "-c", "", "echo a b" }, { "A=1", "EMPTY=" } };
	RequestHead head;
	std::string bytes;
	REQUIRE(encode(r, head, bytes));
	CHECK(head.magic == kMagic);
	CHECK(head.argc == 4);
	CHECK(head.envc == 2);
	CHECK(head.bytes == bytes.size());
	Request back;
	REQUIRE(decode(head, bytes, back) == 0);
	CHECK(back.host == r.host);
	CHECK(back.cwd == r.cwd);
	CHECK(back.argv == r.argv); /* an empty word stays a word */
	CHECK(back.env == r.env);
}

TEST_CASE("launch_wire: malformed requests are refused", "[launch]")
{
	Request r{ "", "/", { "true" }, {} };
	RequestHead head;
	std::string bytes;
	REQUIRE(encode(r, head, bytes));
	Request out;
	SECTION("a word without its NUL")
	{
		bytes.pop_back();
		head.bytes--;
		CHECK(decode(head, bytes, out) == -EINVAL);
	}
	SECTION("more words than the head says")
	{
		bytes += std::string("x\0", 2);
		head.bytes += 2;
		CHECK(decode(head, bytes, out) == -EINVAL);
	}
	SECTION("fewer bytes than the head says")
	{
		head.bytes++;
		CHECK(decode(head, bytes, out) == -EINVAL);
	}
	SECTION("no command, a wrong magic, too many words or bytes")
	{
		RequestHead h = head;
		h.argc = 0;
		CHECK_FALSE(headOk(h));
		h = head;
		h.magic++;
		CHECK_FALSE(headOk(h));
		h = head;
		h.envc = kMaxWords;
		CHECK_FALSE(headOk(h));
		h = head;
		h.bytes = kMaxBytes + 1;
		CHECK_FALSE(headOk(h));
		CHECK(headOk(head));
	}
	SECTION("a request too large to send")
	{
		r.env.assign(kMaxWords, "A=1");
		CHECK_FALSE(encode(r, head, bytes));
	}
}
