// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// The uverbs commands, one handler each as uverbs_cmd.c has them, with the
// driver's checks where a software driver (rdmavt) makes them. write()
// (uverbs_file.cpp) has checked the header and the sizes. This file holds
// what every handler uses (handle lookup, commit, the response copy), the
// device and context commands (GET_CONTEXT with ibemu's spares and rings
// area, QUERY_DEVICE, QUERY_PORT) and the PD, AH, MR and MW commands; the CQ
// commands are in uverbs_cmd_cq.cpp, the QP and multicast ones in
// uverbs_cmd_qp.cpp, the SRQ ones in uverbs_cmd_srq.cpp (the kernel's
// uverbs_std_types_cq.c, _qp.c, _srq.c).
#include "emu/uverbs_file.h"

#include "emu/uverbs_cmd.h"
#include "emu/verbs_device.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <unistd.h>
#include <vector>

namespace ibemu::emu {

/* rdma_lookup_get_uobject(): a handle not in this file's table is ENOENT,
 * one of another type EINVAL; 6.1 returns both as they are (measured
 * against rdma_rxe, tests/e2e/verbs_tools.sh) */
int UverbsFile::lookup(uint32_t handle, UType type, UObject *&out) const
{
	UObject *o = idr_.get(handle);
	if (!o)
		return -ENOENT;
	if (o->type != type)
		return -EINVAL;
	out = o;
	return 0;
}

int UverbsFile::room(UType t) const
{
	if (int rc = dev_.room(t, owner_))
		return rc;
	return cg_ && !cg_->fits(cgChain_, false) ? -EAGAIN : 0;
}

/* uobj_alloc_commit(): the object takes its reserved handle */
void UverbsFile::commit(Reservation &res, std::unique_ptr<UObject> obj)
{
	obj->handle = res.handle();
	obj->created = nextSeq_++;
	dev_.counted(obj->type, +1, owner_);
	if (cg_)
		cg_->charge(cgChain_, false);
	idr_.commit(res, std::move(obj));
}

/* uverbs_response(): copy what fits, zero the rest of the user's buffer */
int UverbsFile::respond(Request &r, const void *resp, size_t len)
{
	if (!r.response)
		return r.outLen ? -EFAULT : 0;
	size_t n = std::min(len, r.outLen);
	std::vector<uint8_t> out(r.outLen, 0);
	memcpy(out.data(), resp, n);
	return ua_.write(r.tid, r.response, out.data(), out.size());
}

/* --- device and context --- */

int UverbsFile::getContext(Request &r)
{
	if (hasContext_)
		return -EINVAL;
	/* ib_uverbs_get_context(): the rdma cgroup's hca_handle, charged
	 * before anything is made, and given back on every failure below */
	if (cg_ && cg_->tryCharge(cgChain_, true))
		return -EAGAIN;
	auto fail = [this](int ret) {
		channels_.clear();
		if (cg_)
			cg_->uncharge(cgChain_, true);
		return ret;
	};
	/* ibemu's provider sends its spares for completion channels after the
	 * core request (emu/ibemu_user_verbs.h); other providers send nothing */
	ibemu_get_context_req drv{};
	size_t core = sizeof(ib_uverbs_get_context);
	if (r.inLen >= core + sizeof drv)
		memcpy(&drv, r.in + core, sizeof drv);
	bool ours = drv.magic == IBEMU_UVERBS_MAGIC;
	std::shared_ptr<SharedMapping> area;
	if (ours) {
		if ((drv.version != 1 && drv.version != IBEMU_UVERBS_VERSION) || drv.nspares > IBEMU_MAX_SPARES ||
		    r.outLen < sizeof(ib_uverbs_get_context_resp) + sizeof(ibemu_get_context_resp))
			return fail(-EINVAL);
		/* version 2's rings area (or -1); version 1 has a zero there */
		if (drv.version >= 2 && drv.area_fd < -1)
			return fail(-EINVAL);
		if (drv.version >= 2 && drv.area_fd >= 0) {
			int afd = ua_.takeDescriptor(r.tid, drv.area_fd, FdKind::Memfd);
			if (afd < 0)
				return fail(afd);
			area = std::make_shared<SharedMapping>();
			int ret = area->mapAll(afd, IBEMU_AREA_MAX_BYTES);
			close(afd);
			if (ret)
				return fail(ret);
		}
		if (int ret = takeSpares(r.tid, drv.spares, drv.nspares))
			return fail(ret);
	}
	/* The async event file: a new descriptor where the transport can make
	 * one in the caller; on CUSE the uverbs descriptor itself. */
	int fd = ua_.descriptorOf(r.tid, *this);
	if (fd < 0)
		return fail(fd);
	ib_uverbs_get_context_resp resp{ static_cast<uint32_t>(fd), kNumCompVectors };
	uint8_t out[sizeof resp + sizeof(ibemu_get_context_resp)];
	memcpy(out, &resp, sizeof resp);
	ibemu_get_context_resp dresp{ IBEMU_UVERBS_MAGIC, IBEMU_UVERBS_VERSION, drv.nspares,
				      area ? static_cast<uint32_t>(area->size()) : 0 };
	memcpy(out + sizeof resp, &dresp, sizeof dresp);
	if (int ret = respond(r, out, ours ? sizeof out : sizeof resp))
		return fail(ret);
	ibemuProvider_ = ours;
	area_ = std::move(area);
	hasContext_ = true;
	return 0;
}

int UverbsFile::ringMemory(pid_t tid, int32_t ringFd, uint32_t areaOffset, RingMemory &mem)
{
	if (ringFd == IBEMU_RING_IN_AREA) {
		if (!area_)
			return -EINVAL;
		mem.area = area_;
		mem.offset = areaOffset;
		return 0;
	}
	if (areaOffset)
		return -EINVAL;
	int fd = ua_.takeDescriptor(tid, ringFd, FdKind::Memfd);
	if (fd < 0)
		return fd;
	mem.fd = fd;
	return 0;
}

/* At most this many spares and channels per file: each holds a descriptor
 * in the daemon. Those the program has closed and no CQ uses are let go
 * first. */
bool UverbsFile::roomForChannels(size_t more)
{
	std::erase_if(channels_, [](const auto &ch) { return ch->cqs == 0 && ch->peerGone(); });
	return channels_.size() + more <= kMaxChannels;
}

int UverbsFile::takeSpares(pid_t tid, const ibemu_spare *spares, uint32_t n)
{
	if (!roomForChannels(n))
		return -EMFILE;
	std::vector<std::unique_ptr<CompChannel>> taken;
	for (uint32_t i = 0; i < n; i++) {
		int snd = ua_.takeDescriptor(tid, spares[i].send_fd, FdKind::UnixStream);
		if (snd < 0)
			return snd;
		int rcv = ua_.takeDescriptor(tid, spares[i].recv_fd, FdKind::UnixStream);
		if (rcv < 0) {
			ua_.discardDescriptor(snd);
			return rcv;
		}
		std::unique_ptr<CompChannel> ch;
		int ret = CompChannel::adopt(dev_.io(), ua_, snd, rcv, spares[i].recv_fd, ch);
		ua_.discardDescriptor(rcv);
		if (ret) {
			ua_.discardDescriptor(snd);
			return ret;
		}
		taken.push_back(std::move(ch));
	}
	for (auto &ch : taken)
		channels_.push_back(std::move(ch));
	return 0;
}

int UverbsFile::addSpares(Request &r)
{
	if (!ibemuProvider_)
		return -EOPNOTSUPP;
	auto cmd = r.cmd<ibemu_add_spares>();
	if (cmd.nspares > IBEMU_MAX_SPARES || cmd.reserved)
		return -EINVAL;
	if (int ret = takeSpares(r.tid, cmd.spares, cmd.nspares))
		return ret;
	ibemu_add_spares_resp resp{};
	for (auto &ch : channels_)
		resp.spares_held += !ch->handedOut;
	return respond(r, &resp, sizeof resp);
}

CompChannel *UverbsFile::channelOf(pid_t tid, int fd)
{
	if (channels_.empty()) /* no channels: take nothing */
		return nullptr;
	int copy = ua_.takeDescriptor(tid, fd, FdKind::UnixStream);
	if (copy < 0)
		return nullptr;
	CompChannel *found = nullptr;
	for (auto &ch : channels_)
		if (ch->handedOut && ch->number() == fd && ch->isOurs(copy))
			found = ch.get();
	ua_.discardDescriptor(copy);
	return found;
}

int UverbsFile::queryDevice(Request &r)
{
	ib_uverbs_query_device_resp resp;
	dev_.queryDevice(resp);
	return respond(r, &resp, sizeof resp);
}

int UverbsFile::exQueryDevice(Request &r)
{
	auto cmd = r.cmd<ib_uverbs_ex_query_device>();
	if (cmd.comp_mask || cmd.reserved)
		return -EINVAL;
	ib_uverbs_ex_query_device_resp resp{};
	dev_.queryDevice(resp.base);
	resp.response_length = static_cast<uint32_t>(std::min(r.outLen, sizeof resp));
	return respond(r, &resp, sizeof resp);
}

int UverbsFile::queryPort(Request &r)
{
	auto cmd = r.cmd<ib_uverbs_query_port>();
	ib_uverbs_query_port_resp resp;
	if (int ret = dev_.queryPort(cmd.port_num, resp))
		return ret;
	return respond(r, &resp, sizeof resp);
}

/* --- PD, AH, MR --- */

int UverbsFile::allocPd(Request &r)
{
	if (int rc = room(UType::Pd))
		return rc;
	Reservation res = reserve();
	ib_uverbs_alloc_pd_resp resp{ res.handle() };
	if (int ret = respond(r, &resp, sizeof resp))
		return ret;
	commit(res, std::make_unique<Pd>());
	return 0;
}

int UverbsFile::deallocPd(Request &r)
{
	return destroyHandle(r.cmd<ib_uverbs_dealloc_pd>().pd_handle, UType::Pd);
}

int UverbsFile::createAh(Request &r)
{
	auto cmd = r.cmd<ib_uverbs_create_ah>();
	Reservation res = reserve();
	Pd *pd = nullptr;
	int ret = portValid(dev_, cmd.attr.port_num) ? get(cmd.pd_handle, pd) : -EINVAL;
	/* qib_check_ah(): an SL, a unicast DLID, or a multicast one with a GRH */
	if (!ret &&
	    (cmd.attr.sl > 15 || cmd.attr.dlid == 0 ||
	     (cmd.attr.dlid >= 0xc000 && cmd.attr.dlid != 0xffff && !cmd.attr.is_global)))
		ret = -EINVAL;
	if (!ret)
		ret = room(UType::Ah);
	if (ret)
		return ret;
	ib_uverbs_create_ah_resp resp{ res.handle() };
	if ((ret = respond(r, &resp, sizeof resp)))
		return ret;
	auto ah = std::make_unique<Ah>();
	ah->pd = pd;
	ah->attr = cmd.attr;
	ah->userHandle = cmd.user_handle;
	pd->usecnt++;
	commit(res, std::move(ah));
	return 0;
}

int UverbsFile::destroyAh(Request &r)
{
	/* UD sends posted to a ring before this resolve the AH they name now,
	 * before its handle can be another's (takeSends) */
	idr_.forEach([&](UObject &o) {
		if (o.type == UType::Qp && static_cast<Qp &>(o).qpType == IB_QPT_UD)
			takeSends(static_cast<Qp &>(o));
	});
	return destroyHandle(r.cmd<ib_uverbs_destroy_ah>().ah_handle, UType::Ah);
}

int UverbsFile::regMr(Request &r)
{
	auto cmd = r.cmd<ib_uverbs_reg_mr>();
	if ((cmd.start ^ cmd.hca_va) & (kPageSize - 1))
		return -EINVAL;
	/* ib_check_mr_access() */
	if ((cmd.access_flags & (IB_ACCESS_REMOTE_ATOMIC | IB_ACCESS_REMOTE_WRITE)) &&
	    !(cmd.access_flags & IB_ACCESS_LOCAL_WRITE))
		return -EINVAL;
	if (cmd.access_flags & ~IB_ACCESS_SUPPORTED)
		return -EINVAL;
	if (cmd.access_flags & IB_ACCESS_ON_DEMAND) /* no ODP */
		return -EINVAL;

	Reservation res = reserve();
	Pd *pd;
	if (int ret = get(cmd.pd_handle, pd))
		return ret;
	if (cmd.length == 0 || cmd.length > (uint64_t(1) << 40))
		return -EINVAL;
	if (int rc = room(UType::Mr))
		return rc;
	bool writable = cmd.access_flags &
		(IB_ACCESS_LOCAL_WRITE | IB_ACCESS_REMOTE_WRITE | IB_ACCESS_REMOTE_ATOMIC | IB_ACCESS_MW_BIND);
	auto mr = std::make_unique<Mr>();
	PinnedCharge pinned(pinned_);
	if (int ret = pinned.pin(ua_, r.tid, cmd.start, cmd.length, writable))
		return ret;
	if (int ret = memoryOf(r.tid, pinned.pid(), cmd.start, mr->mem))
		return ret;
	mr->pd = pd;
	mr->start = cmd.start;
	mr->iova = cmd.hca_va;
	mr->length = cmd.length;
	mr->access = cmd.access_flags;
	dev_.addMr(mr.get());
	ib_uverbs_reg_mr_resp resp{ res.handle(), mr->lkey, mr->rkey };
	if (int ret = respond(r, &resp, sizeof resp)) {
		dev_.removeMr(mr.get());
		return ret;
	}
	pinned.take(mr->pid, mr->npages);
	pd->usecnt++;
	commit(res, std::move(mr));
	return 0;
}

int UverbsFile::deregMr(Request &r)
{
	return destroyHandle(r.cmd<ib_uverbs_dereg_mr>().mr_handle, UType::Mr);
}

/* --- memory windows (rxe_mw.c); their binds are work requests (verbs_req.cpp) --- */

int UverbsFile::allocMw(Request &r)
{
	auto cmd = r.cmd<ib_uverbs_alloc_mw>();
	Reservation res = reserve();
	Pd *pd;
	if (int ret = get(cmd.pd_handle, pd))
		return ret;
	if (cmd.mw_type != IB_MW_TYPE_1 && cmd.mw_type != IB_MW_TYPE_2)
		return -EINVAL;
	if (int rc = room(UType::Mw))
		return rc;
	auto mw = std::make_unique<Mw>();
	mw->pd = pd;
	mw->mwType = cmd.mw_type;
	mw->valid = cmd.mw_type == IB_MW_TYPE_1;
	dev_.addMw(mw.get());
	ib_uverbs_alloc_mw_resp resp{ res.handle(), mw->rkey };
	if (int ret = respond(r, &resp, sizeof resp)) {
		dev_.removeMw(mw.get());
		return ret;
	}
	pd->usecnt++;
	commit(res, std::move(mw));
	return 0;
}

int UverbsFile::deallocMw(Request &r)
{
	return destroyHandle(r.cmd<ib_uverbs_dealloc_mw>().mw_handle, UType::Mw);
}

Mw *UverbsFile::memoryWindow(uint32_t handle) const
{
	Mw *mw = nullptr;
	return get(handle, mw) == 0 ? mw : nullptr;
}

} /* namespace ibemu::emu */
