// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// Test helpers for the verbs model: a fake of the processes the daemon
// reaches through UserAccess (their memory is this test's memory), and a
// client that builds uverbs write() commands byte by byte as libibverbs does.
#pragma once

#include "tests/unit/emu_helpers.h"

#include "emu/ibemu_user_verbs.h"
#include "emu/uverbs_abi.h"
#include "emu/uverbs_file.h"

#include <cerrno>
#include <map>
#include <set>
#include <vector>

namespace ibemu::test {

using namespace ibemu::emu;

/* A process as the fake sees it: credentials and what is (not) mapped. */
struct FakeProcess {
	pid_t pid = 0;
	uint64_t memlock = ~uint64_t(0);
	bool capIpcLock = false;
	std::vector<std::pair<uint64_t, uint64_t>> unmapped; /* [start, end) */
	std::vector<std::pair<uint64_t, uint64_t>> readOnly;
	bool gone = false; /* exited, its files not yet released: its memory handles say ESRCH */
};

class FakeAccess final : public UserAccess {
public:
	std::map<pid_t, FakeProcess> procs; /* by tid; every tid is its own process unless pid says otherwise */
	std::map<const UverbsFile *, int> fds;
	int nextFd = 3;

	FakeProcess &proc(pid_t tid);
	int read(pid_t tid, uint64_t addr, void *buf, size_t len) override;
	int write(pid_t tid, uint64_t addr, const void *buf, size_t len) override;
	int pinnable(pid_t tid, pid_t pid, uint64_t addr, uint64_t len, bool write) override;
	int credentials(pid_t tid, ProcessCreds &out) override;
	int descriptorOf(pid_t tid, const UverbsFile &file) override;
	/* the "program" is this test process: a dup() of its own descriptor */
	int takeDescriptor(pid_t tid, int fd, FdKind kind) override;
	void discardDescriptor(int fd) override
	{
		discarded++;
		close(fd);
	}
	int discarded = 0;
	/* the handle of a process's memory is its tid; openMems counts them */
	int openMemory(pid_t tid) override;
	void closeMemory(int mem) override;
	int readMemory(int mem, uint64_t addr, void *buf, size_t len) override
	{
		return proc(mem).gone ? -ESRCH : read(mem, addr, buf, len);
	}
	int writeMemory(int mem, uint64_t addr, const void *buf, size_t len) override
	{
		return proc(mem).gone ? -ESRCH : write(mem, addr, buf, len);
	}
	int openMems = 0;

private:
	static bool overlaps(const std::vector<std::pair<uint64_t, uint64_t>> &r, uint64_t a, uint64_t len);
};

/* The fabric of EmuFixture plus the fake processes. */
struct VerbsFixture : EmuFixture {
	FakeAccess ua;
	VerbsFixture() { host->setAccess(&ua); }
	VerbsDevice &dev1() { return *hca1->verbs; }
	VerbsDevice &dev2() { return *hca2->verbs; }
};

/* One process's open uverbs file, used the way libibverbs uses it. */
struct Client {
	std::unique_ptr<UverbsFile> file;
	pid_t tid;

	Client(VerbsFixture &fx, VerbsDevice &dev, pid_t tid, bool withContext = true);
	/* a process of `host` (a host of its own, as each daemon of a split subnet has) */
	Client(FakeAccess &ua, emu::Host &host, VerbsDevice &dev, pid_t tid, bool withContext = true);

	/* a legacy command: body with its response pointer aimed at resp */
	int cmd(uint32_t command, void *body, size_t bodyLen, void *resp = nullptr, size_t respLen = 0);
	template <typename Req> int cmd(uint32_t command, Req req) { return cmd(command, &req, sizeof req); }
	template <typename Req, typename Resp> int cmd(uint32_t command, Req req, Resp &resp)
	{
		return cmd(command, &req, sizeof req, &resp, sizeof resp);
	}

	int getContext();
	int allocPd(uint32_t &pd);
	int regMr(uint32_t pd, const void *addr, size_t len, uint32_t access, ib_uverbs_reg_mr_resp &out);
	int createCq(uint32_t cqe, uint32_t &cq);
	int createSrq(uint32_t pd, uint32_t maxWr, uint32_t &srq, uint32_t limit = 0);
	int createQp(uint32_t pd, uint32_t scq, uint32_t rcq, uint8_t type, ib_uverbs_create_qp_resp &out, int srq = -1,
		     uint32_t maxSendWr = 15, uint32_t maxRecvWr = 15, uint32_t maxInline = 0);
	int createAh(uint32_t pd, uint16_t dlid, uint32_t &ah, bool global = false);
	int modify(uint32_t qp, uint32_t mask, const ib_uverbs_modify_qp &attrs);
	/* RESET -> INIT -> RTR -> RTS for a connected (RC/UC/XRC) or UD QP */
	void connect(uint32_t qp, uint8_t type, uint16_t dlid, uint32_t dqpn, uint8_t retry = 7, uint8_t rnrRetry = 7,
		     uint8_t timeout = 14);
	int postSend(uint32_t qp, ib_uverbs_send_wr wr, std::vector<ib_uverbs_sge> sges, uint32_t *badWr = nullptr);
	int postRecv(uint32_t qp, uint64_t wrId, std::vector<ib_uverbs_sge> sges, bool srq = false);
	std::vector<ib_uverbs_wc> poll(uint32_t cq, uint32_t ne = 16);
	int destroy(uint32_t command, uint32_t handle);
};

/* GET_CONTEXT with ibemu's provider's driver data: its spares (socket
 * pairs: emu/ibemu_user_verbs.h); out: the device's answer */
int providerContext(Client &c, std::vector<ibemu_spare> spares, ibemu_get_context_resp *out = nullptr, int areaFd = -1);

/* A memfd as ibemu's provider makes one for the device: len bytes, sealed
 * against shrinking and growing unless seal is false, and mapped here. */
struct ProviderMemfd {
	int fd = -1;
	uint8_t *map = nullptr;
	size_t len = 0;
	explicit ProviderMemfd(size_t bytes, bool seal = true);
	~ProviderMemfd();
	ProviderMemfd(const ProviderMemfd &) = delete;
	ProviderMemfd &operator=(const ProviderMemfd &) = delete;
	template <typename T> T &at(size_t off) { return *reinterpret_cast<T *>(map + off); }
};

/* CREATE_CQ with ibemu's provider's driver data: a ring in the memfd
 * ringFd, in the context's area at areaOffset (IBEMU_RING_IN_AREA), or
 * none (-1); out: the device's answer */
int createRingCq(Client &c, uint32_t cqe, int ringFd, uint32_t &cq, ibemu_create_cq_resp *out = nullptr,
		 uint32_t areaOffset = 0);

/* A multicast group of the tests: its MLID and MGID */
constexpr uint16_t kMlid = 0xc001;
inline constexpr uint8_t kMgid[16] = { 0xff, 0x12, 0x40, 0x01, 0xff, 0xff, 0, 0, 0, 0, 0, 0, 0x0f, 1, 2, 3 };

/* ATTACH_MCAST (DETACH_MCAST with detach) of a QP to gid and mlid */
int attach(Client &c, uint32_t qp, const uint8_t *gid, uint16_t mlid, bool detach = false);
/* Every switch forwards the MLID out of all its ports (`mask` at
 * position 0): every CA port is reached, and the parallel cables between
 * switches make loops that the data path must end. */
void programMfts(fabric::Subnet &subnet, uint16_t mlid, uint16_t mask = 0xfffe);
/* An AH on port 1 to the group kMgid, kMlid */
int createMcastAh(Client &c, uint32_t pd, uint32_t &ah);

inline ib_uverbs_sge sge(const void *addr, uint32_t len, uint32_t lkey)
{
	return { reinterpret_cast<uint64_t>(addr), len, lkey };
}

constexpr uint32_t kAll = IB_ACCESS_LOCAL_WRITE | IB_ACCESS_REMOTE_WRITE | IB_ACCESS_REMOTE_READ |
	IB_ACCESS_REMOTE_ATOMIC;

/* Process A (tid 100) on host1 and process B (tid 200) on host2, across
 * both switches, each with a PD, a CQ, an 8 KiB buffer and one QP. */
struct Pair : VerbsFixture {
	Client a{ *this, dev1(), 100 };
	Client b{ *this, dev2(), 200 };
	alignas(4096) uint8_t bufA[8192]{};
	alignas(4096) uint8_t bufB[8192]{};
	uint32_t pdA = 0, pdB = 0, cqA = 0, cqB = 0;
	ib_uverbs_reg_mr_resp mrA{}, mrB{};
	ib_uverbs_create_qp_resp qpA{}, qpB{};

	explicit Pair(uint8_t type = IB_QPT_RC, uint32_t accessB = kAll, int srqB = -2);

	ib_uverbs_send_wr wr(uint32_t opcode, uint64_t id = 1, uint32_t flags = IB_SEND_SIGNALED)
	{
		ib_uverbs_send_wr w{};
		w.wr_id = id;
		w.opcode = opcode;
		w.send_flags = flags;
		return w;
	}
};

} /* namespace ibemu::test */
