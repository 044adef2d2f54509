// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// /proc/PID/maps kept open between registrations (cuse_dev/proc_maps.h),
// and ProcessAccess::pinnable() reading it: a kept file never answers for
// an address space that has gone.
#include "cuse_dev/proc_maps.h"
#include "cuse_dev/process_access.h"

#include <catch2/catch.hpp>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

using namespace ibemu::cuse_dev;

namespace {

constexpr size_t kPage = 4096;

/* A child that maps what the test asks, reports the addresses on a pipe
 * and then waits to be told to exec or to end. */
struct Child {
	pid_t pid = -1;
	int toChild = -1, fromChild = -1;

	explicit Child(void (*setup)(int out))
	{
		int down[2], up[2];
		REQUIRE(pipe(down) == 0);
		REQUIRE(pipe(up) == 0);
		pid = fork();
		REQUIRE(pid >= 0);
		if (pid == 0) {
			close(down[1]);
			close(up[0]);
			setup(up[1]);
			char c;
			if (read(down[0], &c, 1) == 1 && c == 'x')
				execl("/bin/sleep", "sleep", "30", static_cast<char *>(nullptr));
			_exit(0);
		}
		close(down[0]);
		close(up[1]);
		toChild = down[1];
		fromChild = up[0];
	}
	~Child()
	{
		kill(pid, SIGKILL);
		waitpid(pid, nullptr, 0);
		close(toChild);
		close(fromChild);
	}
	template <typename T> T get()
	{
		T v{};
		REQUIRE(read(fromChild, &v, sizeof v) == sizeof v);
		return v;
	}
};

struct Regions {
	uint64_t rw, ro, hole;
	uint64_t many; /* 300 pages, each a mapping of its own: rw, ro, rw, ... */
};

void mapRegions(int out)
{
	Regions r{};
	auto *m = static_cast<char *>(
		mmap(nullptr, 300 * kPage, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
	for (size_t i = 1; i < 300; i += 2)
		mprotect(m + i * kPage, kPage, PROT_READ);
	r.many = reinterpret_cast<uint64_t>(m);
	/* then rw, ro, hole, rw: no later mapping fills the hole */
	auto *p = static_cast<char *>(
		mmap(nullptr, 4 * kPage, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
	mprotect(p + kPage, kPage, PROT_READ);
	munmap(p + 2 * kPage, kPage);
	r.rw = reinterpret_cast<uint64_t>(p);
	r.ro = r.rw + kPage;
	r.hole = r.rw + 2 * kPage;
	if (write(out, &r, sizeof r) != sizeof r)
		_exit(1);
}

/* the first mapping /proc/PID/maps lists that a pinnable() for writing
 * takes, read directly */
uint64_t firstWritable(pid_t pid)
{
	char path[64], line[512];
	snprintf(path, sizeof path, "/proc/%d/maps", static_cast<int>(pid));
	FILE *f = fopen(path, "re");
	REQUIRE(f);
	uint64_t s = 0, e;
	char perms[8];
	while (fgets(line, sizeof line, f))
		if (sscanf(line, "%lx-%lx %7s", &s, &e, perms) == 3 && perms[0] == 'r' && perms[1] == 'w')
			break;
	fclose(f);
	return s;
}

} /* namespace */

TEST_CASE("proc maps: pinnable() as get_user_pages() judges a range", "[proc_maps]")
{
	Child child(mapRegions);
	auto r = child.get<Regions>();
	ProcessAccess pa;
	CHECK(pa.pinnable(child.pid, r.rw, kPage, true) == 0);
	CHECK(pa.pinnable(child.pid, r.rw + 100, 10, true) == 0);
	CHECK(pa.pinnable(child.pid, r.ro, kPage, false) == 0);
	CHECK(pa.pinnable(child.pid, r.ro, kPage, true) == -EFAULT); /* not writable */
	CHECK(pa.pinnable(child.pid, r.rw, 2 * kPage, false) == 0); /* rw then ro */
	CHECK(pa.pinnable(child.pid, r.rw, 2 * kPage, true) == -EFAULT);
	CHECK(pa.pinnable(child.pid, r.hole, kPage, false) == -EFAULT);
	CHECK(pa.pinnable(child.pid, r.ro, 2 * kPage, false) == -EFAULT); /* runs into the hole */
	/* 300 lines of the file, across many of the small reads */
	uint64_t last = r.many + 299 * kPage;
	CHECK(pa.pinnable(child.pid, r.many, 300 * kPage, false) == 0);
	CHECK(pa.pinnable(child.pid, r.many, 300 * kPage, true) == -EFAULT);
	CHECK(pa.pinnable(child.pid, last - kPage, kPage, true) == 0);
	CHECK(pa.pinnable(child.pid, last, kPage, true) == -EFAULT);
	CHECK(pa.pinnable(child.pid, last + 1, 10, false) == 0);
}

TEST_CASE("proc maps: a kept maps file follows the process through exec", "[proc_maps]")
{
	Child child(mapRegions);
	auto r = child.get<Regions>();
	ProcessAccess pa;
	REQUIRE(pa.pinnable(child.pid, r.rw, kPage, true) == 0); /* now kept */
	REQUIRE(write(child.toChild, "x", 1) == 1);
	/* the same process ID, a new address space: the old one's range is
	 * judged by the new image's mappings, which do not have it */
	uint64_t now = 0;
	for (int i = 0; i < 5000; i++) {
		char exe[64], target[256] = {};
		snprintf(exe, sizeof exe, "/proc/%d/exe", static_cast<int>(child.pid));
		if (readlink(exe, target, sizeof target - 1) > 0 && strstr(target, "sleep"))
			break;
		usleep(1000);
	}
	now = firstWritable(child.pid);
	REQUIRE(now != 0);
	CHECK(pa.pinnable(child.pid, now, kPage, true) == 0);
	if (now != r.rw)
		CHECK(pa.pinnable(child.pid, r.rw, kPage, true) == -EFAULT);
}

TEST_CASE("proc maps: a gone process is ESRCH, never a kept answer", "[proc_maps]")
{
	uint64_t rw;
	pid_t pid;
	{
		Child child(mapRegions);
		rw = child.get<Regions>().rw;
		pid = child.pid;
		ProcessAccess pa;
		REQUIRE(pa.pinnable(pid, rw, kPage, true) == 0); /* now kept */
	}
	ProcessAccess pa;
	CHECK(pa.pinnable(pid, rw, kPage, true) == -ESRCH);
	char text[64];
	CHECK(readMaps(pid, text, sizeof text, 0) < 0);
}
