// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// /proc/PID/maps kept open between registrations (cuse_dev/proc_maps.h),
// and ProcessAccess::pinnable() reading it: each process gets its own
// file's answer, and a kept file never answers for an address space that
// has gone.
#include "cuse_dev/proc_maps.h"
#include "cuse_dev/process_access.h"

#include <catch2/catch.hpp>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

using namespace ibemu::cuse_dev;

namespace {

constexpr size_t kPage = 4096;

/* A child that maps what the test asks, reports the addresses on a pipe
 * and then waits to be told to exec or to end. */
struct Child {
	pid_t pid = -1;
	int toChild = -1, fromChild = -1;

	explicit Child(const std::function<void(int out)> &setup)
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
	int pin(ProcessAccess &pa, uint64_t addr, uint64_t len, bool write) const
	{
		return pa.pinnable(pid, pid, addr, len, write);
	}
};

void report(int out, const void *v, size_t len)
{
	if (write(out, v, len) != ssize_t(len))
		_exit(1);
}

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
	report(out, &r, sizeof r);
}

/* the start of the line of /proc/PID/maps whose name is `name`, read
 * directly; 0 when there is none */
uint64_t mappingNamed(pid_t pid, const char *name)
{
	char path[64], line[512];
	snprintf(path, sizeof path, "/proc/%d/maps", static_cast<int>(pid));
	FILE *f = fopen(path, "re");
	REQUIRE(f);
	uint64_t found = 0;
	while (!found && fgets(line, sizeof line, f)) {
		unsigned long long s;
		if (strstr(line, name) && sscanf(line, "%llx-", &s) == 1)
			found = s;
	}
	fclose(f);
	return found;
}

} /* namespace */

/* the reader of the text for the scope of one, as on kernels before 6.11 */
struct TextOnly {
	explicit TextOnly(bool on) { setMapsQuery(!on); }
	~TextOnly() { setMapsQuery(true); }
};

TEST_CASE("proc maps: pinnable() as get_user_pages() judges a range", "[proc_maps]")
{
	bool text = GENERATE(false, true);
	INFO((text ? "the text" : "PROCMAP_QUERY"));
	TextOnly mode(text);
	Child child(mapRegions);
	auto r = child.get<Regions>();
	ProcessAccess pa;
	CHECK(child.pin(pa, r.rw, kPage, true) == 0);
	CHECK(child.pin(pa, r.rw + 100, 10, true) == 0);
	CHECK(child.pin(pa, r.ro, kPage, false) == 0);
	CHECK(child.pin(pa, r.ro, kPage, true) == -EFAULT); /* not writable */
	CHECK(child.pin(pa, r.rw, 2 * kPage, false) == 0); /* rw then ro */
	CHECK(child.pin(pa, r.rw, 2 * kPage, true) == -EFAULT);
	CHECK(child.pin(pa, r.hole, kPage, false) == -EFAULT);
	CHECK(child.pin(pa, r.ro, 2 * kPage, false) == -EFAULT); /* runs into the hole */
	/* 300 lines of the file, across many of the small reads */
	uint64_t last = r.many + 299 * kPage;
	CHECK(child.pin(pa, r.many, 300 * kPage, false) == 0);
	CHECK(child.pin(pa, r.many, 300 * kPage, true) == -EFAULT);
	CHECK(child.pin(pa, last - kPage, kPage, true) == 0);
	CHECK(child.pin(pa, last, kPage, true) == -EFAULT);
	CHECK(child.pin(pa, last + 1, 10, false) == 0);
}

TEST_CASE("proc maps: PROCMAP_QUERY answers what the text says, mapping by mapping", "[proc_maps]")
{
	Child child(mapRegions);
	auto r = child.get<Regions>();
	Vma v;
	int rc = queryMaps(child.pid, child.pid, r.rw, v);
	if (rc == -ENOTTY) {
		WARN("this kernel has no PROCMAP_QUERY (before 6.11): only the text is tested");
		return;
	}
	REQUIRE(rc == 0);
	CHECK(v.start == r.rw);
	CHECK(v.end == r.ro);
	CHECK(v.read);
	CHECK(v.write);
	REQUIRE(queryMaps(child.pid, child.pid, r.ro + 5, v) == 0);
	CHECK(v.start == r.ro);
	CHECK(v.end == r.hole);
	CHECK(v.read);
	CHECK(!v.write);
	CHECK(queryMaps(child.pid, child.pid, r.hole, v) == -ENOENT);
	/* every one of the 300 small mappings, as the text has it */
	for (size_t i = 0; i < 300; i++) {
		INFO("page " << i);
		REQUIRE(queryMaps(child.pid, child.pid, r.many + i * kPage, v) == 0);
		CHECK(v.start == r.many + i * kPage);
		CHECK(v.end == v.start + kPage);
		CHECK(v.write == (i % 2 == 0));
	}
}

TEST_CASE("proc maps: a line longer than the reader's buffer is judged by its start", "[proc_maps]")
{
	/* a file deep enough that its name alone is longer than 8 KiB */
	/* under $TMPDIR, a name of its own: parallel runs never meet */
	std::string made = (std::filesystem::temp_directory_path() / "ibemu-maps-XXXXXX").string();
	std::vector<char> tmpl(made.begin(), made.end());
	tmpl.push_back(0);
	REQUIRE(mkdtemp(tmpl.data()));
	const char *base = tmpl.data();
	const std::string part(200, 'd');
	std::vector<int> dirs{ open(base, O_RDONLY | O_DIRECTORY | O_CLOEXEC) };
	for (int i = 0; i < 45 && dirs.back() >= 0; i++) {
		REQUIRE(mkdirat(dirs.back(), part.c_str(), 0700) == 0);
		dirs.push_back(openat(dirs.back(), part.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
	}
	REQUIRE(dirs.back() >= 0);
	int file = openat(dirs.back(), "f", O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	REQUIRE(file >= 0);
	REQUIRE(ftruncate(file, kPage) == 0);

	struct Placed {
		uint64_t above, mapped;
	};
	{
		Child child([file](int out) {
			/* mappings go down from the top: `above` is listed after
			 * the file's long line */
			Placed p{};
			p.above = reinterpret_cast<uint64_t>(
				mmap(nullptr, kPage, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
			p.mapped = reinterpret_cast<uint64_t>(mmap(nullptr, kPage, PROT_READ, MAP_SHARED, file, 0));
			report(out, &p, sizeof p);
		});
		auto p = child.get<Placed>();
		REQUIRE(p.mapped < p.above);
		ProcessAccess pa;
		CHECK(child.pin(pa, p.mapped, kPage, false) == 0);
		CHECK(child.pin(pa, p.mapped, kPage, true) == -EFAULT); /* r--s */
		CHECK(child.pin(pa, p.above, kPage, true) == 0); /* the line after it */
	}
	close(file);
	REQUIRE(unlinkat(dirs.back(), "f", 0) == 0);
	for (size_t i = dirs.size() - 1; i > 0; i--) {
		close(dirs[i]);
		CHECK(unlinkat(dirs[i - 1], part.c_str(), AT_REMOVEDIR) == 0);
	}
	close(dirs[0]);
	CHECK(rmdir(base) == 0);
}

TEST_CASE("proc maps: more processes than files kept, each with its own answer", "[proc_maps]")
{
	/* the same address in each, writable in every other one */
	constexpr uint64_t kAt = 0x7e5500000000;
	std::vector<std::unique_ptr<Child>> children;
	for (size_t i = 0; i < kKeptMaps + 8; i++) {
		int prot = i % 2 ? PROT_READ : PROT_READ | PROT_WRITE;
		children.push_back(std::make_unique<Child>([prot](int out) {
			void *p = mmap(reinterpret_cast<void *>(kAt), kPage, prot,
				       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
			uint64_t got = reinterpret_cast<uint64_t>(p);
			report(out, &got, sizeof got);
		}));
		REQUIRE(children.back()->get<uint64_t>() == kAt);
	}
	ProcessAccess pa;
	for (int round = 0; round < 2; round++)
		for (size_t i = 0; i < children.size(); i++) {
			INFO("round " << round << ", child " << i);
			CHECK(children[i]->pin(pa, kAt, kPage, true) == (i % 2 ? -EFAULT : 0));
			CHECK(children[i]->pin(pa, kAt, kPage, false) == 0);
		}
}

TEST_CASE("proc maps: a kept file follows the process through exec", "[proc_maps]")
{
	bool text = GENERATE(false, true);
	INFO((text ? "the text" : "PROCMAP_QUERY"));
	TextOnly mode(text);
	Child child(mapRegions);
	auto r = child.get<Regions>();
	ProcessAccess pa;
	REQUIRE(child.pin(pa, r.rw, kPage, true) == 0); /* now kept */
	REQUIRE(write(child.toChild, "x", 1) == 1);
	bool execd = false;
	for (int i = 0; i < 5000 && !execd; i++) {
		char exe[64], target[256] = {};
		snprintf(exe, sizeof exe, "/proc/%d/exe", static_cast<int>(child.pid));
		execd = readlink(exe, target, sizeof target - 1) > 0 && strstr(target, "sleep");
		if (!execd)
			usleep(1000);
	}
	REQUIRE(execd);
	/* the same process ID, a new address space: the new image's stack is
	 * there, the old image's mapping is not */
	uint64_t stack = mappingNamed(child.pid, "[stack]");
	REQUIRE(stack != 0);
	CHECK(child.pin(pa, stack, kPage, true) == 0);
	CHECK(child.pin(pa, r.rw, kPage, true) == -EFAULT);
}

TEST_CASE("proc maps: a gone process is ESRCH, never a kept answer", "[proc_maps]")
{
	bool text = GENERATE(false, true);
	INFO((text ? "the text" : "PROCMAP_QUERY"));
	TextOnly mode(text);
	uint64_t rw;
	pid_t pid;
	{
		Child child(mapRegions);
		rw = child.get<Regions>().rw;
		pid = child.pid;
		ProcessAccess pa;
		REQUIRE(child.pin(pa, rw, kPage, true) == 0); /* now kept */
	}
	ProcessAccess pa;
	CHECK(pa.pinnable(pid, pid, rw, kPage, true) == -ESRCH);
	char lines[64];
	CHECK(readMaps(pid, pid, lines, sizeof lines, 0) < 0);
}
