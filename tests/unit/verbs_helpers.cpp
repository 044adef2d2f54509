// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
#include "tests/unit/verbs_helpers.h"

#include "emu/ibemu_user_verbs.h"
#include "fabric/node.h"
#include "fabric/subnet.h"

#include <catch2/catch.hpp>

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

namespace ibemu::test {

FakeProcess &FakeAccess::proc(pid_t tid)
{
	FakeProcess &p = procs[tid];
	if (!p.pid)
		p.pid = tid;
	return p;
}

bool FakeAccess::overlaps(const std::vector<std::pair<uint64_t, uint64_t>> &r, uint64_t a, uint64_t len)
{
	for (auto [s, e] : r)
		if (a < e && a + len > s)
			return true;
	return false;
}

int FakeAccess::read(pid_t tid, uint64_t addr, void *buf, size_t len)
{
	if (overlaps(proc(tid).unmapped, addr, len))
		return -EFAULT;
	memcpy(buf, reinterpret_cast<const void *>(addr), len);
	return 0;
}

int FakeAccess::write(pid_t tid, uint64_t addr, const void *buf, size_t len)
{
	FakeProcess &p = proc(tid);
	if (overlaps(p.unmapped, addr, len) || overlaps(p.readOnly, addr, len))
		return -EFAULT;
	memcpy(reinterpret_cast<void *>(addr), buf, len);
	return 0;
}

int FakeAccess::pinnable(pid_t tid, pid_t, uint64_t addr, uint64_t len, bool write)
{
	FakeProcess &p = proc(tid);
	if (overlaps(p.unmapped, addr, len) || (write && overlaps(p.readOnly, addr, len)))
		return -EFAULT;
	return 0;
}

int FakeAccess::credentials(pid_t tid, ProcessCreds &out)
{
	FakeProcess &p = proc(tid);
	out.pid = p.pid;
	out.memlockSoft = p.memlock;
	out.capIpcLock = p.capIpcLock;
	return 0;
}

int FakeAccess::descriptorOf(pid_t, const UverbsFile &file)
{
	auto it = fds.find(&file);
	if (it == fds.end())
		it = fds.emplace(&file, nextFd++).first;
	return it->second;
}

int FakeAccess::takeDescriptor(pid_t, int fd, FdKind kind)
{
	int copy = fcntl(fd, F_DUPFD_CLOEXEC, 0);
	if (copy < 0)
		return -EBADF;
	if (!descriptorIs(copy, kind)) {
		close(copy);
		return -EINVAL;
	}
	return copy;
}

int FakeAccess::openMemory(pid_t tid)
{
	openMems++;
	return tid;
}

void FakeAccess::closeMemory(int)
{
	openMems--;
}

Client::Client(VerbsFixture &fx, VerbsDevice &dev, pid_t t, bool withContext)
	: Client(fx.ua, *fx.host, dev, t, withContext)
{}

Client::Client(FakeAccess &ua, emu::Host &host, VerbsDevice &dev, pid_t t, bool withContext)
	: file(std::make_unique<UverbsFile>(dev, ua, host.pinned())), tid(t)
{
	if (withContext)
		REQUIRE(getContext() == 0);
}

int Client::cmd(uint32_t command, void *body, size_t bodyLen, void *resp, size_t respLen)
{
	std::vector<uint8_t> buf(sizeof(ib_uverbs_cmd_hdr) + bodyLen);
	ib_uverbs_cmd_hdr hdr{ command, static_cast<uint16_t>(buf.size() / 4), static_cast<uint16_t>(respLen / 4) };
	memcpy(buf.data(), &hdr, sizeof hdr);
	memcpy(buf.data() + sizeof hdr, body, bodyLen);
	if (resp) {
		uint64_t p = reinterpret_cast<uint64_t>(resp);
		memcpy(buf.data() + sizeof hdr, &p, sizeof p);
	}
	ssize_t r = file->write(tid, buf.data(), buf.size());
	if (r < 0)
		return static_cast<int>(r);
	REQUIRE(size_t(r) == buf.size());
	return 0;
}

int Client::getContext()
{
	ib_uverbs_get_context req{};
	ib_uverbs_get_context_resp resp{};
	return cmd(CMD_GET_CONTEXT, req, resp);
}

int Client::allocPd(uint32_t &pd)
{
	ib_uverbs_alloc_pd req{};
	ib_uverbs_alloc_pd_resp resp{};
	int r = cmd(CMD_ALLOC_PD, req, resp);
	pd = resp.pd_handle;
	return r;
}

int Client::regMr(uint32_t pd, const void *addr, size_t len, uint32_t access, ib_uverbs_reg_mr_resp &out)
{
	ib_uverbs_reg_mr req{};
	req.start = req.hca_va = reinterpret_cast<uint64_t>(addr);
	req.length = len;
	req.pd_handle = pd;
	req.access_flags = access;
	return cmd(CMD_REG_MR, req, out);
}

int Client::createCq(uint32_t cqe, uint32_t &cq)
{
	ib_uverbs_create_cq req{};
	req.cqe = cqe;
	req.comp_channel = -1;
	ib_uverbs_create_cq_resp resp{};
	int r = cmd(CMD_CREATE_CQ, req, resp);
	cq = resp.cq_handle;
	return r;
}

int Client::createSrq(uint32_t pd, uint32_t maxWr, uint32_t &srq, uint32_t limit)
{
	ib_uverbs_create_srq req{};
	req.pd_handle = pd;
	req.max_wr = maxWr;
	req.max_sge = 1;
	req.srq_limit = limit;
	ib_uverbs_create_srq_resp resp{};
	int r = cmd(CMD_CREATE_SRQ, req, resp);
	srq = resp.srq_handle;
	return r;
}

int Client::createQp(uint32_t pd, uint32_t scq, uint32_t rcq, uint8_t type, ib_uverbs_create_qp_resp &out, int srq,
		     uint32_t maxSendWr, uint32_t maxRecvWr, uint32_t maxInline)
{
	ib_uverbs_create_qp req{};
	req.pd_handle = pd;
	req.send_cq_handle = scq;
	req.recv_cq_handle = rcq;
	req.max_send_wr = maxSendWr;
	req.max_recv_wr = srq >= 0 ? 0 : maxRecvWr;
	req.max_send_sge = 2;
	req.max_recv_sge = srq >= 0 ? 0 : 2;
	req.max_inline_data = maxInline;
	req.qp_type = type;
	if (srq >= 0) {
		req.is_srq = 1;
		req.srq_handle = static_cast<uint32_t>(srq);
	}
	return cmd(CMD_CREATE_QP, req, out);
}

int Client::createAh(uint32_t pd, uint16_t dlid, uint32_t &ah, bool global)
{
	ib_uverbs_create_ah req{};
	req.pd_handle = pd;
	req.attr.dlid = dlid;
	req.attr.port_num = 1;
	req.attr.is_global = global;
	req.attr.grh.hop_limit = 1;
	ib_uverbs_create_ah_resp resp{};
	int r = cmd(CMD_CREATE_AH, req, resp);
	ah = resp.ah_handle;
	return r;
}

int Client::modify(uint32_t qp, uint32_t mask, const ib_uverbs_modify_qp &attrs)
{
	ib_uverbs_modify_qp req = attrs;
	req.qp_handle = qp;
	req.attr_mask = mask;
	return cmd(CMD_MODIFY_QP, req);
}

void Client::connect(uint32_t qp, uint8_t type, uint16_t dlid, uint32_t dqpn, uint8_t retry, uint8_t rnrRetry,
		     uint8_t timeout)
{
	ib_uverbs_modify_qp a{};
	a.qp_state = IB_QPS_INIT;
	a.port_num = 1;
	a.qp_access_flags = IB_ACCESS_REMOTE_WRITE | IB_ACCESS_REMOTE_READ | IB_ACCESS_REMOTE_ATOMIC;
	a.qkey = 0x11111111;
	if (type == IB_QPT_UD) {
		REQUIRE(modify(qp, IB_QP_STATE | IB_QP_PKEY_INDEX | IB_QP_PORT | IB_QP_QKEY, a) == 0);
		a.qp_state = IB_QPS_RTR;
		REQUIRE(modify(qp, IB_QP_STATE, a) == 0);
		a.qp_state = IB_QPS_RTS;
		REQUIRE(modify(qp, IB_QP_STATE | IB_QP_SQ_PSN, a) == 0);
		return;
	}
	REQUIRE(modify(qp, IB_QP_STATE | IB_QP_PKEY_INDEX | IB_QP_PORT | IB_QP_ACCESS_FLAGS, a) == 0);
	a.qp_state = IB_QPS_RTR;
	a.dest.dlid = dlid;
	a.dest.port_num = 1;
	a.path_mtu = kMtu1024;
	a.dest_qp_num = dqpn;
	a.max_dest_rd_atomic = 1;
	a.min_rnr_timer = 12;
	uint32_t rtr = IB_QP_STATE | IB_QP_AV | IB_QP_PATH_MTU | IB_QP_DEST_QPN | IB_QP_RQ_PSN;
	if (type == IB_QPT_RC || type == IB_QPT_XRC_TGT) /* a responder's */
		rtr |= IB_QP_MAX_DEST_RD_ATOMIC | IB_QP_MIN_RNR_TIMER;
	REQUIRE(modify(qp, rtr, a) == 0);
	a.qp_state = IB_QPS_RTS;
	a.timeout = timeout;
	a.retry_cnt = retry;
	a.rnr_retry = rnrRetry;
	a.max_rd_atomic = 1;
	uint32_t rts = IB_QP_STATE | IB_QP_SQ_PSN;
	if (type == IB_QPT_RC || type == IB_QPT_XRC_INI) /* a requester's */
		rts |= IB_QP_TIMEOUT | IB_QP_RETRY_CNT | IB_QP_RNR_RETRY | IB_QP_MAX_QP_RD_ATOMIC;
	REQUIRE(modify(qp, rts, a) == 0);
}

namespace {

/* POST_SEND / POST_RECV / POST_SRQ_RECV body: header, one WR, its SGEs */
template <typename Wr>
std::vector<uint8_t> postBody(uint32_t handle, const Wr &wr, const std::vector<ib_uverbs_sge> &sges)
{
	ib_uverbs_post_send req{}; /* the same layout as ib_uverbs_post_recv */
	req.qp_handle = handle;
	req.wr_count = 1;
	req.sge_count = static_cast<uint32_t>(sges.size());
	req.wqe_size = sizeof wr;
	std::vector<uint8_t> body(sizeof req + sizeof wr + sges.size() * sizeof(ib_uverbs_sge));
	memcpy(body.data(), &req, sizeof req);
	memcpy(body.data() + sizeof req, &wr, sizeof wr);
	if (!sges.empty())
		memcpy(body.data() + sizeof req + sizeof wr, sges.data(), sges.size() * sizeof(ib_uverbs_sge));
	return body;
}

} /* namespace */

int Client::postSend(uint32_t qp, ib_uverbs_send_wr wr, std::vector<ib_uverbs_sge> sges, uint32_t *badWr)
{
	wr.num_sge = static_cast<uint32_t>(sges.size());
	auto body = postBody(qp, wr, sges);
	ib_uverbs_post_send_resp resp{};
	int r = cmd(CMD_POST_SEND, body.data(), body.size(), &resp, sizeof resp);
	if (badWr)
		*badWr = resp.bad_wr;
	return r;
}

int Client::postRecv(uint32_t qp, uint64_t wrId, std::vector<ib_uverbs_sge> sges, bool srq)
{
	ib_uverbs_recv_wr wr{ wrId, static_cast<uint32_t>(sges.size()), 0 };
	auto body = postBody(qp, wr, sges);
	ib_uverbs_post_recv_resp resp{};
	return cmd(srq ? CMD_POST_SRQ_RECV : CMD_POST_RECV, body.data(), body.size(), &resp, sizeof resp);
}

std::vector<ib_uverbs_wc> Client::poll(uint32_t cq, uint32_t ne)
{
	std::vector<uint8_t> out(sizeof(ib_uverbs_poll_cq_resp) + ne * sizeof(ib_uverbs_wc));
	ib_uverbs_poll_cq req{};
	req.cq_handle = cq;
	req.ne = ne;
	REQUIRE(cmd(CMD_POLL_CQ, &req, sizeof req, out.data(), out.size()) == 0);
	ib_uverbs_poll_cq_resp hdr;
	memcpy(&hdr, out.data(), sizeof hdr);
	std::vector<ib_uverbs_wc> wcs(hdr.count);
	if (hdr.count)
		memcpy(wcs.data(), out.data() + sizeof hdr, hdr.count * sizeof(ib_uverbs_wc));
	return wcs;
}

int Client::destroy(uint32_t command, uint32_t handle)
{
	switch (command) {
	case CMD_DEALLOC_PD:
	case CMD_DEREG_MR:
	case CMD_DESTROY_AH: {
		uint32_t h = handle;
		return cmd(command, &h, sizeof h);
	}
	case CMD_DESTROY_CQ: {
		ib_uverbs_destroy_cq req{};
		req.cq_handle = handle;
		ib_uverbs_destroy_cq_resp resp{};
		return cmd(command, req, resp);
	}
	case CMD_DESTROY_QP: {
		ib_uverbs_destroy_qp req{};
		req.qp_handle = handle;
		ib_uverbs_destroy_qp_resp resp{};
		return cmd(command, req, resp);
	}
	case CMD_DESTROY_SRQ: {
		ib_uverbs_destroy_srq req{};
		req.srq_handle = handle;
		ib_uverbs_destroy_srq_resp resp{};
		return cmd(command, req, resp);
	}
	}
	return -EINVAL;
}

Pair::Pair(uint8_t type, uint32_t accessB, int srqB)
{
	REQUIRE(a.allocPd(pdA) == 0);
	REQUIRE(b.allocPd(pdB) == 0);
	REQUIRE(a.createCq(64, cqA) == 0);
	REQUIRE(b.createCq(64, cqB) == 0);
	REQUIRE(a.regMr(pdA, bufA, sizeof bufA, kAll, mrA) == 0);
	REQUIRE(b.regMr(pdB, bufB, sizeof bufB, accessB, mrB) == 0);
	REQUIRE(a.createQp(pdA, cqA, cqA, type, qpA) == 0);
	if (srqB != -2)
		return;
	REQUIRE(b.createQp(pdB, cqB, cqB, type, qpB) == 0);
	a.connect(qpA.qp_handle, type, lid2(), qpB.qpn);
	b.connect(qpB.qp_handle, type, lid1(), qpA.qpn);
}

/* GET_CONTEXT as ibemu's provider sends it */
int providerContext(Client &c, std::vector<ibemu_spare> spares, ibemu_get_context_resp *out, int areaFd)
{
	struct {
		ib_uverbs_get_context core;
		ibemu_get_context_req drv;
	} req{};
	req.drv.magic = IBEMU_UVERBS_MAGIC;
	req.drv.version = IBEMU_UVERBS_VERSION;
	req.drv.nspares = static_cast<uint32_t>(spares.size());
	req.drv.area_fd = areaFd;
	std::copy(spares.begin(), spares.end(), req.drv.spares);
	struct {
		ib_uverbs_get_context_resp core;
		ibemu_get_context_resp drv;
	} resp{};
	int r = c.cmd(CMD_GET_CONTEXT, req, resp);
	if (out)
		*out = resp.drv;
	return r;
}

ProviderMemfd::ProviderMemfd(size_t bytes, bool seal) : len(bytes)
{
	fd = memfd_create("ring", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	REQUIRE(fd >= 0);
	REQUIRE(ftruncate(fd, off_t(len)) == 0);
	if (seal)
		REQUIRE(fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW) == 0);
	map = static_cast<uint8_t *>(mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0));
	REQUIRE(map != MAP_FAILED);
}

ProviderMemfd::~ProviderMemfd()
{
	munmap(map, len);
	close(fd);
}

int createRingCq(Client &c, uint32_t cqe, int ringFd, uint32_t &cq, ibemu_create_cq_resp *out, uint32_t areaOffset)
{
	struct {
		ib_uverbs_create_cq core;
		ibemu_create_cq_req drv;
	} req{};
	req.core.cqe = cqe;
	req.core.comp_channel = -1;
	req.drv = { ringFd, areaOffset };
	struct {
		ib_uverbs_create_cq_resp core;
		ibemu_create_cq_resp drv;
	} resp{};
	int r = c.cmd(CMD_CREATE_CQ, req, resp);
	cq = resp.core.cq_handle;
	if (out)
		*out = resp.drv;
	return r;
}

int attach(Client &c, uint32_t qp, const uint8_t *gid, uint16_t mlid, bool detach)
{
	ib_uverbs_attach_mcast req{};
	memcpy(req.gid, gid, 16);
	req.qp_handle = qp;
	req.mlid = mlid;
	return c.cmd(detach ? CMD_DETACH_MCAST : CMD_ATTACH_MCAST, req);
}

void programMfts(fabric::Subnet &subnet, uint16_t mlid, uint16_t mask)
{
	for (const auto &n : subnet.nodes()) {
		if (!n->isSwitch())
			continue;
		unsigned positions = (n->numPorts + 16) / 16;
		size_t base = size_t(mlid - 0xc000) * positions;
		if (n->sw->mft.size() < base + positions)
			n->sw->mft.resize(base + positions, 0);
		for (unsigned pos = 0; pos < positions; pos++)
			n->sw->mft[base + pos] = pos == 0 ? mask : 0xffff;
	}
}

int createMcastAh(Client &c, uint32_t pd, uint32_t &ah)
{
	ib_uverbs_create_ah req{};
	req.pd_handle = pd;
	req.attr.dlid = kMlid;
	req.attr.port_num = 1;
	req.attr.is_global = 1;
	req.attr.grh.hop_limit = 1;
	memcpy(req.attr.grh.dgid, kMgid, 16);
	ib_uverbs_create_ah_resp resp{};
	int r = c.cmd(CMD_CREATE_AH, req, resp);
	ah = resp.ah_handle;
	return r;
}

} /* namespace ibemu::test */
