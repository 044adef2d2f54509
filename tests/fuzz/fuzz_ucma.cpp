// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// Fuzz target: emu::UcmaFile::write, the rdma_cm write() ABI (header
// checks, every command handler) with emu::Cma, the IB CM, the SA client
// and the multicast memberships behind it, between two files: A on a
// process (tid 100) of host1, B on a process (tid 200) of host2, on a fresh
// fuzz::Fixture per input. An SA on host1's port (the unit tests'
// test::TestSa) answers PathRecord Gets and MCMemberRecord Sets and
// Deletes, so that connections and joins can get all the way.
//
// Each process has 64 KiB of memory at user addresses [0, 64 KiB);
// everything else is EFAULT.
//
// Input: up to 64 records [c][f][n][body: 4n bytes].
//   c < 0x40: command c (anything up to 0x3f, so unknown ones too) with
//     the body as its input and a header that says 4n bytes in.
//   f: bit 0: file A or B; bit 1: O_NONBLOCK (a blocking GET_EVENT with
//      nothing queued is what the transport would park: nothing happens);
//      bits 2-3: the body's first 8 bytes (the response pointer of the
//      commands that have one): 0 kept, 1 the response area (0x8000), 2 the
//      last 8 bytes of memory (any longer response is EFAULT), 3 unmapped;
//      bits 4-5: the header's out size: 0 4096, 1 0, 2 8, 3 the size of an
//      event; bit 6: do not run the io_context after the command
//   c >= 0x80: c & 7 is
//     0 let body[0..3] le32 & 0x3ffff ms of MAD time pass, and run
//     1 run the io_context until idle
//     2 close the file (f bit 0) and open it again
//     3 poll() both files
//     4 write(body) to the file as it is: the header is the body's
//     5 host2's port's link goes down and trains again (Subnet::bounceLink)
//     6 close the file and open it again as opened by the other file's
//       process (MIGRATE_ID takes IDs between files of one process)
//
// MIGRATE_ID's descriptor names a file: 3 is A, 4 is B, anything else none.
// After the last record both files close; then no ID and no multicast
// join may be left, or the target traps.
#include "tests/fuzz/fuzz_common.h"

#include "tests/unit/sa_helpers.h"

#include "emu/rdma_cm_abi.h"
#include "emu/ucma_file.h"
#include "fabric/subnet.h"

#include <array>
#include <cerrno>
#include <cstring>
#include <memory>

using namespace ibemu;
using namespace ibemu::emu;

namespace {

constexpr unsigned kMaxRecords = 64;
constexpr uint64_t kArena = 64 << 10;
constexpr uint64_t kRespArea = 0x8000;

class SandboxAccess final : public UserAccess {
public:
	std::array<std::vector<uint8_t>, 2> mem{ std::vector<uint8_t>(kArena), std::vector<uint8_t>(kArena) };

	std::vector<uint8_t> *of(pid_t tid) { return tid == 100 ? &mem[0] : tid == 200 ? &mem[1] : nullptr; }
	static bool inArena(uint64_t addr, size_t len) { return addr <= kArena && len <= kArena - addr; }

	int read(pid_t tid, uint64_t addr, void *buf, size_t len) override
	{
		auto *m = of(tid);
		if (!m)
			return -ESRCH;
		if (!inArena(addr, len))
			return -EFAULT;
		memcpy(buf, m->data() + addr, len);
		return 0;
	}
	int write(pid_t tid, uint64_t addr, const void *buf, size_t len) override
	{
		auto *m = of(tid);
		if (!m)
			return -ESRCH;
		if (!inArena(addr, len))
			return -EFAULT;
		memcpy(m->data() + addr, buf, len);
		return 0;
	}
	/* rdma_cm files use nothing else */
	int pinnable(pid_t, pid_t, uint64_t, uint64_t, bool) override { return -EFAULT; }
	int credentials(pid_t, ProcessCreds &) override { return -ESRCH; }
	int descriptorOf(pid_t, const UverbsFile &) override { return -EBADF; }
	int takeDescriptor(pid_t, int, FdKind) override { return -EBADF; }
	void discardDescriptor(int) override {}
	int openMemory(pid_t) override { return -ESRCH; }
	void closeMemory(int) override {}
	int readMemory(int, uint64_t, void *, size_t) override { return -EFAULT; }
	int writeMemory(int, uint64_t, const void *, size_t) override { return -EFAULT; }
};

struct Harness {
	fuzz::Fixture fx;
	SandboxAccess ua;
	test::TestSa sa{ fx };
	std::array<std::unique_ptr<UcmaFile>, 2> files;

	Harness()
	{
		fx.host->setAccess(&ua);
		open(0);
		open(1);
	}
	~Harness()
	{
		for (auto &f : files)
			f.reset();
		fx.drain();
	}
	void open(int i, bool otherOpener = false)
	{
		files[size_t(i)] = std::make_unique<UcmaFile>(fx.host->cma(), ua, (i != otherOpener) ? 200 : 100);
		files[size_t(i)]->setWakeup([] {});
		files[size_t(i)]->setCmFileOf([this](pid_t, int fd, const UcmaFile *&file) {
			file = fd == 3 ? files[0].get() : fd == 4 ? files[1].get() : nullptr;
			return file ? 0 : -ENOENT;
		});
	}
};

void command(Harness &h, uint8_t c, uint8_t f, std::vector<uint8_t> body)
{
	int i = f & 1;
	pid_t tid = i ? 200 : 100;
	static const uint64_t kPtr[4] = { 0, kRespArea, kArena - 8, 0xdead0000 };
	if ((f >> 2) & 3) {
		uint64_t p = kPtr[(f >> 2) & 3];
		if (body.size() < 8)
			body.resize(8, 0);
		memcpy(body.data(), &p, 8);
	}
	static const uint16_t kOut[4] = { 4096, 0, 8, sizeof(rdma_ucm_event_resp) };
	rdma_ucm_cmd_hdr hdr{ c, uint16_t(body.size()), kOut[(f >> 4) & 3] };
	std::vector<uint8_t> buf(sizeof hdr + body.size());
	memcpy(buf.data(), &hdr, sizeof hdr);
	if (!body.empty())
		memcpy(buf.data() + sizeof hdr, body.data(), body.size());
	ssize_t r = h.files[size_t(i)]->write(tid, buf.data(), buf.size(), f & 2);
	FUZZ_TRACE("%c cmd %u in %zu: %zd\n", 'A' + i, c, body.size(), r);
	if (r >= 0 && r != ssize_t(buf.size()))
		__builtin_trap(); /* a command that succeeds takes the whole write */
	if (!(f & 0x40))
		h.fx.drain();
}

} /* namespace */

extern "C" int LLVMFuzzerInitialize(int *, char ***)
{
	fuzz::initOnce();
	return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fuzz::Input in(data, size);
	const UcmaFile *seen[2];
	{
		Harness h;
		for (unsigned rec = 0; rec < kMaxRecords && !in.empty(); rec++) {
			uint8_t c = in.u8();
			uint8_t f = in.u8();
			std::vector<uint8_t> body = in.bytes(4 * size_t(in.u8()));
			int i = f & 1;
			if (c < 0x40) {
				command(h, c, f, std::move(body));
				continue;
			}
			if (c < 0x80)
				continue;
			switch (c & 7) {
			case 0:
				h.fx.advance(fuzz::le32(body, 0) & 0x3ffff);
				h.fx.drain();
				break;
			case 1:
				h.fx.drain();
				break;
			case 2:
			case 6:
				h.files[size_t(i)].reset();
				h.fx.drain();
				h.open(i, (c & 7) == 6);
				break;
			case 3:
				h.files[0]->poll();
				h.files[1]->poll();
				break;
			case 4: {
				ssize_t r = h.files[size_t(i)]->write(i ? 200 : 100, body.data(), body.size(), true);
				FUZZ_TRACE("%c raw write %zu: %zd\n", 'A' + i, body.size(), r);
				h.fx.drain();
				break;
			}
			case 5:
				h.fx.subnet.bounceLink(*h.fx.p2);
				h.fx.drain();
				break;
			default:
				break;
			}
		}
		seen[0] = h.files[0].get();
		seen[1] = h.files[1].get();
		h.files[0].reset();
		h.files[1].reset();
		h.fx.drain();
		/* close destroys every ID of the file and leaves every join */
		Cma &cma = h.fx.host->cma();
		for (const UcmaFile *f : seen)
			if (cma.countOf(f) || cma.mcCountOf(f))
				__builtin_trap();
	}
	return 0;
}
