// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// Fuzz target: emu::UverbsFile::write, the uverbs write() ABI (header
// checks, every command handler) and the data path behind POST_SEND and
// POLL_CQ, between two clients: file A on host1's device, file B on
// host2's, on a fresh fuzz::Fixture per input.
//
// The processes behind them are a sandbox (SandboxAccess below): each has
// its own 1 MiB of memory at user addresses [0, 1 MiB) (the last 64 KiB
// read-only), everything else is EFAULT, and its own RLIMIT_MEMLOCK:
//   A: tid 100 and 101 (one process, 256 KiB), 150 (limit 0, EPERM),
//      170 (limit 0 but CAP_IPC_LOCK)
//   B: tid 200 and 201 (one process, unlimited), 250 (16 KiB), 270 (gone:
//      ESRCH)
// tests/unit's FakeAccess cannot be used: it dereferences the addresses.
//
// Input: up to 64 records [c][f][n][body: 4n bytes].
//   c < 0x40: legacy command c; 0x40..0x7f: extended command c - 0x40.
//     The harness writes a header that fits the body (in_words, out_words
//     from the command's response size) and, for commands with a response,
//     aims the response pointer (the body's first 8 bytes; the extended
//     header's response) at the process's response area, 0x80000.
//   f: bit 0: client A or B; bits 1-2: which of its tids writes;
//      bit 3: keep the body's own response pointer (extended commands:
//      none, out_words 0); bit 4: aim it at the read-only memory instead;
//      bits 5-6: out_words 0 as the response needs, 1 one word short,
//      2 sixteen words more, 3 room for min(ne, 64) work completions
//      (POLL_CQ) and 0 for the rest; bit 7: do not run the io_context
//      after the command
//   c >= 0x80: c & 0xf is
//     0 let body[0..3] le32 & 0x3fffff ms of MAD time pass, and run
//     1 run the io_context until idle
//     2 read(body[0] bytes) of async events from the client's file
//     3 close the client's file and open a new one
//     4 the writing tid's process execs (its memory handles go stale)
//     5 poll() the client's file
//     6 write(body) to the client's file: the header is the body's
//     7 the client's device goes away (VerbsDevice::kill)
//     8 the link of the client's port goes down and trains again
//     9 the client's port and the switch port at the other end of its
//       cable go Armed, then Active
//
// After the last record both files close; then every memory handle must be
// closed and no page may stay pinned (docs/verbs.md: teardown uncharges),
// or the target traps.
#include "tests/fuzz/fuzz_common.h"

#include "emu/uverbs_abi.h"
#include "emu/uverbs_file.h"
#include "emu/verbs_device.h"

#include <array>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <map>
#include <string>
#include <unistd.h>

using namespace ibemu;
using namespace ibemu::emu;

namespace {

constexpr unsigned kMaxRecords = 64;
constexpr uint64_t kArena = 1 << 20;
constexpr uint64_t kReadOnly = kArena - (64 << 10);
constexpr uint64_t kRespArea = 0x80000;

struct Proc {
	pid_t pid;
	uint64_t memlock;
	bool capIpcLock;
	std::vector<uint8_t> mem = std::vector<uint8_t>(kArena, 0);
	uint64_t dirtyLo = kArena, dirtyHi = 0; /* what to zero for the next input */
	uint8_t gen = 0; /* bumped by an exec */
};

class SandboxAccess final : public UserAccess {
public:
	SandboxAccess()
	{
		addProc(100, 256 << 10, false);
		addProc(150, 0, false);
		addProc(170, 0, true);
		addProc(200, ~uint64_t(0), false);
		addProc(250, 16 << 10, false);
	}

	/* between inputs: everything as new */
	void reset()
	{
		for (auto &[pid, p] : procs_) {
			if (p.dirtyLo < p.dirtyHi)
				memset(p.mem.data() + p.dirtyLo, 0, p.dirtyHi - p.dirtyLo);
			p.dirtyLo = kArena;
			p.dirtyHi = 0;
			p.gen = 0;
		}
		fds_.clear();
		openMems = 0;
	}

	void exec(pid_t tid)
	{
		if (Proc *p = procOf(tid))
			p->gen++;
	}

	int read(pid_t tid, uint64_t addr, void *buf, size_t len) override
	{
		Proc *p = procOf(tid);
		if (!p)
			return -ESRCH;
		if (!inArena(addr, len))
			return -EFAULT;
		memcpy(buf, p->mem.data() + addr, len);
		return 0;
	}
	int write(pid_t tid, uint64_t addr, const void *buf, size_t len) override
	{
		Proc *p = procOf(tid);
		if (!p)
			return -ESRCH;
		return store(*p, addr, buf, len);
	}
	int pinnable(pid_t tid, pid_t, uint64_t addr, uint64_t len, bool write) override
	{
		if (!procOf(tid))
			return -ESRCH;
		if (!inArena(addr, len) || (write && addr + len > kReadOnly))
			return -EFAULT;
		return 0;
	}
	int credentials(pid_t tid, ProcessCreds &out) override
	{
		Proc *p = procOf(tid);
		if (!p)
			return -ESRCH;
		out.pid = p->pid;
		out.memlockSoft = p->memlock;
		out.capIpcLock = p->capIpcLock;
		return 0;
	}
	int takeDescriptor(pid_t, int, FdKind) override { return -EBADF; } /* no channels here */
	void discardDescriptor(int fd) override { close(fd); }
	int descriptorOf(pid_t tid, const UverbsFile &file) override
	{
		if (!procOf(tid))
			return -ESRCH;
		auto it = fds_.find(&file);
		if (it == fds_.end())
			it = fds_.emplace(&file, 3 + int(fds_.size())).first;
		return it->second;
	}
	/* a handle names the process and its generation: after an exec the
	 * old handles fail, as /proc/PID/mem of a replaced mm does */
	int openMemory(pid_t tid) override
	{
		Proc *p = procOf(tid);
		if (!p)
			return -ESRCH;
		openMems++;
		return p->pid << 8 | p->gen;
	}
	void closeMemory(int) override { openMems--; }
	int readMemory(int mem, uint64_t addr, void *buf, size_t len) override
	{
		Proc *p = procOfMem(mem);
		if (!p || !inArena(addr, len))
			return -EFAULT;
		memcpy(buf, p->mem.data() + addr, len);
		return 0;
	}
	int writeMemory(int mem, uint64_t addr, const void *buf, size_t len) override
	{
		Proc *p = procOfMem(mem);
		if (!p)
			return -EFAULT;
		return store(*p, addr, buf, len);
	}

	int openMems = 0;

private:
	static bool inArena(uint64_t addr, uint64_t len) { return addr <= kArena && len <= kArena - addr; }

	void addProc(pid_t pid, uint64_t memlock, bool cap) { procs_.emplace(pid, Proc{ pid, memlock, cap }); }

	Proc *procOf(pid_t tid)
	{
		pid_t pid = tid == 101 ? 100 : tid == 201 ? 200 : tid;
		auto it = procs_.find(pid);
		return it == procs_.end() ? nullptr : &it->second;
	}
	Proc *procOfMem(int mem)
	{
		auto it = procs_.find(mem >> 8);
		if (it == procs_.end() || it->second.gen != (mem & 0xff))
			return nullptr;
		return &it->second;
	}
	int store(Proc &p, uint64_t addr, const void *buf, size_t len)
	{
		if (!inArena(addr, len) || addr + len > kReadOnly)
			return -EFAULT;
		if (!len)
			return 0;
		memcpy(p.mem.data() + addr, buf, len);
		p.dirtyLo = std::min(p.dirtyLo, addr);
		p.dirtyHi = std::max(p.dirtyHi, addr + len);
		return 0;
	}

	std::map<pid_t, Proc> procs_;
	std::map<const UverbsFile *, int> fds_;
};

SandboxAccess *sandbox;

/* Response sizes of the legacy commands, as emu/uverbs_file.cpp's table. */
size_t respSize(uint32_t cmd)
{
	switch (cmd) {
	case CMD_GET_CONTEXT:
		return sizeof(ib_uverbs_get_context_resp);
	case CMD_QUERY_DEVICE:
		return sizeof(ib_uverbs_query_device_resp);
	case CMD_QUERY_PORT:
		return sizeof(ib_uverbs_query_port_resp);
	case CMD_ALLOC_PD:
		return sizeof(ib_uverbs_alloc_pd_resp);
	case CMD_CREATE_AH:
		return sizeof(ib_uverbs_create_ah_resp);
	case CMD_REG_MR:
		return sizeof(ib_uverbs_reg_mr_resp);
	case CMD_CREATE_COMP_CHANNEL:
		return sizeof(ib_uverbs_create_comp_channel_resp);
	case CMD_CREATE_CQ:
		return sizeof(ib_uverbs_create_cq_resp);
	case CMD_RESIZE_CQ:
		return sizeof(ib_uverbs_resize_cq_resp);
	case CMD_DESTROY_CQ:
		return sizeof(ib_uverbs_destroy_cq_resp);
	case CMD_POLL_CQ:
		return sizeof(ib_uverbs_poll_cq_resp);
	case CMD_CREATE_QP:
		return sizeof(ib_uverbs_create_qp_resp);
	case CMD_QUERY_QP:
		return sizeof(ib_uverbs_query_qp_resp);
	case CMD_DESTROY_QP:
		return sizeof(ib_uverbs_destroy_qp_resp);
	case CMD_POST_SEND:
		return sizeof(ib_uverbs_post_send_resp);
	case CMD_POST_RECV:
		return sizeof(ib_uverbs_post_recv_resp);
	case CMD_CREATE_SRQ:
		return sizeof(ib_uverbs_create_srq_resp);
	case CMD_QUERY_SRQ:
		return sizeof(ib_uverbs_query_srq_resp);
	case CMD_DESTROY_SRQ:
		return sizeof(ib_uverbs_destroy_srq_resp);
	case CMD_POST_SRQ_RECV:
		return sizeof(ib_uverbs_post_recv_resp);
	default:
		return 0;
	}
}

struct Client {
	VerbsDevice *dev;
	std::array<pid_t, 4> tids;
	std::unique_ptr<UverbsFile> file;
};

struct Harness {
	fuzz::Fixture fx;
	Client clients[2];

	Harness()
	{
		fx.host->setAccess(sandbox);
		clients[0] = { fx.hca1->verbs.get(), { 100, 101, 150, 170 }, nullptr };
		clients[1] = { fx.hca2->verbs.get(), { 200, 201, 250, 270 }, nullptr };
		for (Client &c : clients)
			open(c);
	}
	~Harness()
	{
		for (Client &c : clients)
			c.file.reset();
	}

	void open(Client &c) { c.file = std::make_unique<UverbsFile>(*c.dev, *sandbox, fx.host->pinned()); }

	fabric::Port &portOf(const Client &c) { return &c == &clients[0] ? *fx.p1 : *fx.p2; }

	void command(uint8_t cmd, uint8_t flags, std::vector<uint8_t> body)
	{
		Client &c = clients[flags & 1];
		pid_t tid = c.tids[(flags >> 1) & 3];
		bool extended = cmd & 0x40;
		uint32_t idx = cmd & 0x3f;
		size_t resp = extended
			? (idx == EX_CMD_QUERY_DEVICE ? offsetof(ib_uverbs_ex_query_device_resp, odp_general_caps) : 0)
			: respSize(idx);
		uint64_t respAt = (flags & 0x10) ? kReadOnly + 0x100 : kRespArea;
		size_t unit = extended ? 8 : 4;
		size_t outWords = (resp + unit - 1) / unit;
		switch ((flags >> 5) & 3) {
		case 1:
			outWords = outWords ? outWords - 1 : 0;
			break;
		case 2:
			outWords += 16;
			break;
		case 3: {
			uint32_t ne = 0;
			if (!extended && idx == CMD_POLL_CQ && body.size() >= 16)
				memcpy(&ne, body.data() + 12, 4);
			outWords = (!extended && idx == CMD_POLL_CQ)
				? (sizeof(ib_uverbs_poll_cq_resp) + std::min<uint32_t>(ne, 64) * sizeof(ib_uverbs_wc)) /
					4
				: 0;
			break;
		}
		}
		outWords = std::min<size_t>(outWords, 0xffff);

		std::vector<uint8_t> buf;
		ib_uverbs_cmd_hdr hdr{};
		hdr.out_words = static_cast<uint16_t>(outWords);
		if (!extended) {
			hdr.command = idx;
			if (resp && !(flags & 8)) {
				if (body.size() < 8)
					body.resize(8, 0);
				memcpy(body.data(), &respAt, 8);
			}
			body.resize((body.size() + 3) & ~size_t(3), 0);
			buf.resize(sizeof hdr + body.size());
			hdr.in_words = static_cast<uint16_t>(buf.size() / 4);
			memcpy(buf.data(), &hdr, sizeof hdr);
		} else {
			hdr.command = IB_USER_VERBS_CMD_FLAG_EXTENDED | idx;
			body.resize((body.size() + 7) & ~size_t(7), 0);
			ib_uverbs_ex_cmd_hdr ex{};
			ex.response = (flags & 8) ? 0 : respAt;
			if (!ex.response)
				hdr.out_words = 0;
			hdr.in_words = static_cast<uint16_t>(body.size() / 8);
			buf.resize(sizeof hdr + sizeof ex + body.size());
			memcpy(buf.data(), &hdr, sizeof hdr);
			memcpy(buf.data() + sizeof hdr, &ex, sizeof ex);
		}
		if (!body.empty())
			memcpy(buf.data() + buf.size() - body.size(), body.data(), body.size());
		ssize_t r = c.file ? c.file->write(tid, buf.data(), buf.size()) : -EBADF;
		FUZZ_TRACE("%c tid %d: %scommand %u (%zu bytes) = %zd%s\n", 'A' + (flags & 1), tid,
			   extended ? "extended " : "", idx, buf.size(), r,
			   respTrace(tid, resp, flags, !extended && idx == CMD_POLL_CQ).c_str());
		(void)r;
		if (!(flags & 0x80))
			fx.poll();
	}

	/* what the response area holds now, as 32-bit words */
	std::string respTrace(pid_t tid, size_t resp, uint8_t flags, bool pollCq) const
	{
		if (!fuzz::tracing() || !resp || (flags & 0x18))
			return "";
		std::string s = ":";
		if (pollCq) {
			uint32_t count = 0;
			sandbox->read(tid, kRespArea, &count, 4);
			s += " " + std::to_string(count) + " completions";
			for (uint32_t i = 0; i < count && i < 64; i++) {
				ib_uverbs_wc wc{};
				if (sandbox->read(tid, kRespArea + 8 + i * sizeof wc, &wc, sizeof wc) != 0)
					break;
				s += ", wr " + std::to_string(wc.wr_id) + " status " + std::to_string(wc.status) +
					" opcode " + std::to_string(wc.opcode);
			}
			return s;
		}
		uint32_t w[8] = {};
		size_t n = std::min<size_t>(resp, sizeof w);
		if (sandbox->read(tid, kRespArea, w, n) != 0)
			return "";
		for (size_t i = 0; i < (n + 3) / 4; i++) {
			char b[16];
			snprintf(b, sizeof b, " %x", w[i]);
			s += b;
		}
		return s;
	}

	void special(uint8_t op, uint8_t flags, const std::vector<uint8_t> &body)
	{
		FUZZ_TRACE("%c: special %u (%u)\n", 'A' + (flags & 1), op & 0xf,
			   body.size() >= 4 ? body[0] | body[1] << 8 | body[2] << 16 | uint32_t(body[3]) << 24 : 0);
		Client &c = clients[flags & 1];
		pid_t tid = c.tids[(flags >> 1) & 3];
		uint32_t arg = 0;
		if (!body.empty())
			memcpy(&arg, body.data(), std::min<size_t>(4, body.size()));
		switch (op & 0xf) {
		case 0:
			fx.advance(arg & 0x3fffff);
			fx.drain();
			break;
		case 1:
			fx.drain();
			break;
		case 2:
			if (c.file) {
				uint8_t ev[256];
				ssize_t r = c.file->read(ev, arg & 0xff);
				FUZZ_TRACE("  async event read = %zd: type %u\n", r, r >= 16 ? ev[8] : 0);
			}
			break;
		case 3:
			c.file.reset();
			if (!c.dev->dead())
				open(c);
			break;
		case 4:
			sandbox->exec(tid);
			break;
		case 5:
			if (c.file)
				(void)c.file->poll();
			break;
		case 6: {
			ssize_t r = c.file ? c.file->write(tid, body.data(), body.size()) : -EBADF;
			FUZZ_TRACE("  write(%zu) = %zd\n", body.size(), r);
			(void)r;
			fx.poll();
			break;
		}
		case 7:
			c.dev->kill();
			break;
		case 8:
			fx.subnet.bounceLink(portOf(c));
			fx.poll();
			break;
		case 9: {
			fabric::Port &p = portOf(c);
			for (fabric::Port *end : { &p, p.peer })
				if (end && end->linkUp()) {
					fx.subnet.setLogicalState(*end, fabric::PortState::Armed);
					fx.subnet.setLogicalState(*end, fabric::PortState::Active);
				}
			fx.poll();
			break;
		}
		}
	}
};

[[noreturn]] void leak(const char *what, long n)
{
	fprintf(stderr, "uverbs teardown: %s (%ld)\n", what, n);
	__builtin_trap();
}

} /* namespace */

extern "C" int LLVMFuzzerInitialize(int *, char ***)
{
	fuzz::initOnce();
	sandbox = new SandboxAccess; /* for the life of the process */
	return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fuzz::Input in(data, size);
	sandbox->reset();
	{
		Harness h;
		for (unsigned n = 0; n < kMaxRecords && !in.empty(); n++) {
			uint8_t cmd = in.u8();
			uint8_t flags = in.u8();
			size_t len = size_t(in.u8()) * 4;
			std::vector<uint8_t> body = in.bytes(len);
			if (cmd & 0x80)
				h.special(cmd, flags, body);
			else
				h.command(cmd, flags, std::move(body));
		}
		h.fx.drain();
		for (Client &c : h.clients)
			c.file.reset();
		h.fx.drain();
		if (sandbox->openMems != 0)
			leak("memory handles left open after every file closed", sandbox->openMems);
		for (const auto &[pid, pages] : h.fx.host->pinned().all())
			leak("pages still pinned after every file closed", long(pages));
	}
	return 0;
}
