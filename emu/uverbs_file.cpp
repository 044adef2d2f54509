// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// The uverbs write() command ABI: header checks in ib_uverbs_write's order,
// then one handler per command as uverbs_cmd.c has them.
#include "emu/uverbs_file.h"

#include "emu/verbs_device.h"

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <poll.h>
#include <vector>

namespace ibemu::emu {

/* One command being served: where its request is and where its response
 * goes (the kernel's uverbs_attr_bundle ucore and driver_udata). */
struct UverbsFile::Request {
	pid_t tid;
	const uint8_t *in;  /* the core request, then the driver's udata */
	size_t inLen;
	uint64_t response;  /* user pointer; 0 for commands without one */
	size_t outLen;

	template <typename T>
	T cmd() const
	{
		T t{};
		memcpy(&t, in, std::min(sizeof t, inLen));
		return t;
	}
};

namespace {

constexpr uint32_t kNumCompVectors = 1;
constexpr size_t kMaxEvents = 4096;

/* uverbs_request_next_ptr(): the WRs, then the SGEs, must lie within the
 * request (-ENOSPC). Division first: the counts come from the caller. */
int checkSlices(size_t inLen, uint32_t wqeSize, uint32_t wrCount, uint32_t sgeCount)
{
	size_t left = inLen - sizeof(ib_uverbs_post_send);
	if (wrCount && (wqeSize == 0 || wrCount > left / wqeSize))
		return wqeSize == 0 ? 0 : -ENOSPC;
	left -= size_t(wqeSize) * wrCount;
	if (sgeCount > left / sizeof(ib_uverbs_sge))
		return -ENOSPC;
	return 0;
}

bool portValid(const VerbsDevice &dev, unsigned num)
{
	return num >= 1 && num <= dev.numPorts();
}

} /* namespace */

UverbsFile::UverbsFile(VerbsDevice &dev, UserAccess &ua, PinnedVm &pinned) : dev_(dev), ua_(ua), pinned_(pinned)
{
	dev_.attach(this);
	dead_ = dev_.dead();
}

/* uverbs_destroy_ufile_hw(RDMA_REMOVE_CLOSE): walk the objects in creation
 * order; one still in use (EBUSY) waits for the next pass. */
UverbsFile::~UverbsFile()
{
	for (;;) {
		std::vector<UObject *> objs;
		idr_.forEach([&](UObject &o) { objs.push_back(&o); });
		if (objs.empty())
			break;
		std::sort(objs.begin(), objs.end(),
			  [](const UObject *a, const UObject *b) { return a->created < b->created; });
		bool progress = false;
		for (UObject *o : objs)
			if (destroy(*o, false) == 0)
				progress = true;
		if (!progress) { /* cannot happen with the usecnt rules; never leak, and
				  * never touch a freed object: dependants first */
			for (UType t : { UType::Qp, UType::Ah, UType::Mr, UType::Srq, UType::Cq, UType::Pd })
				for (UObject *&o : objs)
					if (o && o->type == t) {
						destroy(*o, true);
						o = nullptr;
					}
		}
	}
	dev_.detach(this);
}

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

template <typename T>
int UverbsFile::get(uint32_t handle, T *&out) const
{
	UObject *o;
	if (int ret = lookup(handle, T::kType, o))
		return ret;
	out = static_cast<T *>(o);
	return 0;
}

template <typename T>
uint32_t UverbsFile::commit(uint32_t handle, std::unique_ptr<T> obj)
{
	obj->handle = handle;
	obj->created = nextSeq_++;
	dev_.counted(T::kType, +1);
	idr_.commit(handle, std::move(obj));
	return handle;
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

/* One descriptor per process and file, not per MR (the daemon's
 * descriptors are finite). A cached one is reused only while its address
 * space still answers: after an exec it reads as empty, and a new one is
 * opened. */
int UverbsFile::memoryOf(pid_t tid, pid_t pid, uint64_t addr, std::shared_ptr<const int> &out)
{
	auto it = mems_.find(pid);
	if (it != mems_.end()) {
		if (auto m = it->second.lock()) {
			uint8_t b;
			if (ua_.readMemory(*m, addr, &b, 1) == 0) {
				out = m;
				return 0;
			}
		}
	}
	int fd = ua_.openMemory(tid);
	if (fd < 0)
		return fd;
	UserAccess *ua = &ua_;
	out = std::shared_ptr<const int>(new int(fd), [ua](const int *p) {
		ua->closeMemory(*p);
		delete p;
	});
	mems_[pid] = out;
	std::erase_if(mems_, [](const auto &kv) { return kv.second.expired(); });
	return 0;
}

/* Destroys one object unless others still use it (-EBUSY). force: at the
 * end of a teardown that could not make progress. */
int UverbsFile::destroy(UObject &obj, bool force)
{
	if (obj.usecnt && !force)
		return -EBUSY;
	if (destroyHook_)
		destroyHook_(obj);
	switch (obj.type) {
	case UType::Pd:
		break;
	case UType::Mr: {
		auto &mr = static_cast<Mr &>(obj);
		dev_.removeMr(&mr);
		pinned_.release(mr.pid, mr.npages);
		mr.pd->usecnt--;
		break;
	}
	case UType::Cq:
		break;
	case UType::Srq:
		static_cast<Srq &>(obj).pd->usecnt--;
		break;
	case UType::Ah:
		static_cast<Ah &>(obj).pd->usecnt--;
		break;
	case UType::Qp: {
		auto &qp = static_cast<Qp &>(obj);
		dev_.forget(qp);
		dev_.responderGone(qp);
		dev_.removeQp(&qp);
		qp.pd->usecnt--;
		qp.sendCq->usecnt--;
		qp.recvCq->usecnt--; /* counted twice when it is the send CQ too */
		if (qp.srq)
			qp.srq->usecnt--;
		break;
	}
	}
	dev_.counted(obj.type, -1);
	/* ib_uverbs_release_uevent(): its unread events go with it */
	std::erase_if(events_, [&](const Event &e) { return e.obj == &obj; });
	idr_.remove(obj.handle);
	return 0;
}

ssize_t UverbsFile::read(uint8_t *buf, size_t count)
{
	if (events_.empty())
		return dead_ ? -EIO : -EAGAIN;
	if (count < sizeof(ib_uverbs_async_event_desc))
		return -EINVAL;
	Event ev = events_.front();
	events_.pop_front();
	memcpy(buf, &ev.desc, sizeof ev.desc);
	if (ev.obj) {
		switch (ev.obj->type) {
		case UType::Qp:
			static_cast<Qp *>(ev.obj)->eventsReported++;
			break;
		case UType::Cq:
			static_cast<Cq *>(ev.obj)->asyncEventsReported++;
			break;
		case UType::Srq:
			static_cast<Srq *>(ev.obj)->eventsReported++;
			break;
		default:
			break;
		}
	}
	return sizeof(ib_uverbs_async_event_desc);
}

int UverbsFile::ioctl(unsigned) const
{
	return -ENOTTY;
}

unsigned UverbsFile::poll() const
{
	unsigned mask = 0;
	if (!events_.empty())
		mask |= POLLIN | POLLRDNORM;
	if (dead_)
		mask |= POLLERR;
	return mask;
}

void UverbsFile::asyncEvent(uint64_t element, AsyncEvent type, UObject *obj)
{
	if (!hasContext_)
		return;
	if (events_.size() >= kMaxEvents) /* nobody reads them: keep the daemon bounded */
		return;
	events_.push_back({ { element, type, 0 }, obj });
	if (wakeup_)
		wakeup_();
}

void UverbsFile::deviceDied()
{
	dead_ = true;
	if (wakeup_)
		wakeup_();
}

/* --- the method table (uverbs_uapi: write methods and their sizes) --- */

const UverbsFile::Method *UverbsFile::method(uint32_t command, bool &known)
{
	static const auto legacy = [] {
		std::array<Method, CMD_LEGACY_COUNT> t{};
		t[CMD_GET_CONTEXT] = { &UverbsFile::getContext, sizeof(ib_uverbs_get_context), sizeof(ib_uverbs_get_context_resp) };
		t[CMD_QUERY_DEVICE] = { &UverbsFile::queryDevice, sizeof(ib_uverbs_query_device), sizeof(ib_uverbs_query_device_resp) };
		t[CMD_QUERY_PORT] = { &UverbsFile::queryPort, sizeof(ib_uverbs_query_port), sizeof(ib_uverbs_query_port_resp) };
		t[CMD_ALLOC_PD] = { &UverbsFile::allocPd, sizeof(ib_uverbs_alloc_pd), sizeof(ib_uverbs_alloc_pd_resp) };
		t[CMD_DEALLOC_PD] = { &UverbsFile::deallocPd, sizeof(ib_uverbs_dealloc_pd), 0 };
		t[CMD_CREATE_AH] = { &UverbsFile::createAh, sizeof(ib_uverbs_create_ah), sizeof(ib_uverbs_create_ah_resp) };
		t[CMD_MODIFY_AH] = { &UverbsFile::notSupported, 0, 0 };
		t[CMD_QUERY_AH] = { &UverbsFile::notSupported, 0, 0 };
		t[CMD_DESTROY_AH] = { &UverbsFile::destroyAh, sizeof(ib_uverbs_destroy_ah), 0 };
		t[CMD_REG_MR] = { &UverbsFile::regMr, sizeof(ib_uverbs_reg_mr), sizeof(ib_uverbs_reg_mr_resp) };
		t[CMD_REG_SMR] = { &UverbsFile::notSupported, 0, 0 };
		t[CMD_QUERY_MR] = { &UverbsFile::notSupported, 0, 0 };
		t[CMD_DEREG_MR] = { &UverbsFile::deregMr, sizeof(ib_uverbs_dereg_mr), 0 };
		t[CMD_BIND_MW] = { &UverbsFile::notSupported, 0, 0 };
		t[CMD_CREATE_COMP_CHANNEL] = { &UverbsFile::createCompChannel, sizeof(ib_uverbs_create_comp_channel), sizeof(ib_uverbs_create_comp_channel_resp) };
		t[CMD_CREATE_CQ] = { &UverbsFile::createCq, sizeof(ib_uverbs_create_cq), sizeof(ib_uverbs_create_cq_resp) };
		t[CMD_RESIZE_CQ] = { &UverbsFile::resizeCq, sizeof(ib_uverbs_resize_cq), sizeof(ib_uverbs_resize_cq_resp) };
		t[CMD_DESTROY_CQ] = { &UverbsFile::destroyCq, sizeof(ib_uverbs_destroy_cq), sizeof(ib_uverbs_destroy_cq_resp) };
		t[CMD_POLL_CQ] = { &UverbsFile::pollCq, sizeof(ib_uverbs_poll_cq), sizeof(ib_uverbs_poll_cq_resp) };
		t[CMD_PEEK_CQ] = { &UverbsFile::notSupported, 0, 0 };
		t[CMD_REQ_NOTIFY_CQ] = { &UverbsFile::reqNotifyCq, sizeof(ib_uverbs_req_notify_cq), 0 };
		t[CMD_CREATE_QP] = { &UverbsFile::createQp, sizeof(ib_uverbs_create_qp), sizeof(ib_uverbs_create_qp_resp) };
		t[CMD_QUERY_QP] = { &UverbsFile::queryQp, sizeof(ib_uverbs_query_qp), sizeof(ib_uverbs_query_qp_resp) };
		t[CMD_MODIFY_QP] = { &UverbsFile::modifyQp, sizeof(ib_uverbs_modify_qp), 0 };
		t[CMD_DESTROY_QP] = { &UverbsFile::destroyQp, sizeof(ib_uverbs_destroy_qp), sizeof(ib_uverbs_destroy_qp_resp) };
		t[CMD_POST_SEND] = { &UverbsFile::postSend, sizeof(ib_uverbs_post_send), sizeof(ib_uverbs_post_send_resp) };
		t[CMD_POST_RECV] = { &UverbsFile::postRecv, sizeof(ib_uverbs_post_recv), sizeof(ib_uverbs_post_recv_resp) };
		t[CMD_CREATE_SRQ] = { &UverbsFile::createSrq, sizeof(ib_uverbs_create_srq), sizeof(ib_uverbs_create_srq_resp) };
		t[CMD_MODIFY_SRQ] = { &UverbsFile::modifySrq, sizeof(ib_uverbs_modify_srq), 0 };
		t[CMD_QUERY_SRQ] = { &UverbsFile::querySrq, sizeof(ib_uverbs_query_srq), sizeof(ib_uverbs_query_srq_resp) };
		t[CMD_DESTROY_SRQ] = { &UverbsFile::destroySrq, sizeof(ib_uverbs_destroy_srq), sizeof(ib_uverbs_destroy_srq_resp) };
		t[CMD_POST_SRQ_RECV] = { &UverbsFile::postSrqRecv, sizeof(ib_uverbs_post_recv), sizeof(ib_uverbs_post_recv_resp) };
		return t;
	}();
	static const Method exQueryDevice = { &UverbsFile::exQueryDevice, sizeof(ib_uverbs_ex_query_device),
					      offsetof(ib_uverbs_ex_query_device_resp, odp_general_caps) };
	uint32_t idx = command & IB_USER_VERBS_CMD_COMMAND_MASK;
	known = false;
	if (command & IB_USER_VERBS_CMD_FLAG_EXTENDED) {
		if (idx >= EX_CMD_COUNT)
			return nullptr;
		known = true;
		return idx == EX_CMD_QUERY_DEVICE ? &exQueryDevice : nullptr;
	}
	if (idx >= CMD_LEGACY_COUNT)
		return nullptr;
	known = true;
	return legacy[idx].fn ? &legacy[idx] : nullptr;
}

/* ib_uverbs_write() */
ssize_t UverbsFile::write(pid_t tid, const uint8_t *buf, size_t count)
{
	if (count < sizeof(ib_uverbs_cmd_hdr))
		return -EINVAL;
	ib_uverbs_cmd_hdr hdr;
	memcpy(&hdr, buf, sizeof hdr);
	if (hdr.command & ~(IB_USER_VERBS_CMD_FLAG_EXTENDED | IB_USER_VERBS_CMD_COMMAND_MASK))
		return -EINVAL;
	bool known;
	const Method *m = method(hdr.command, known);
	if (!m) /* unknown, or a method this device does not have */
		return -EOPNOTSUPP;
	bool extended = hdr.command & IB_USER_VERBS_CMD_FLAG_EXTENDED;

	Request r{};
	r.tid = tid;
	if (!extended) {
		/* legacy: in_words counts the header too, in 4-byte words */
		if (size_t(hdr.in_words) * 4 != count)
			return -EINVAL;
		bool oldDestroyCq = (hdr.command & IB_USER_VERBS_CMD_COMMAND_MASK) == CMD_DESTROY_CQ && count == 16;
		if (count < m->reqSize + sizeof hdr && !oldDestroyCq)
			return -ENOSPC;
		if (size_t(hdr.out_words) * 4 < m->respSize)
			return -ENOSPC;
		r.in = buf + sizeof hdr;
		r.inLen = count - sizeof hdr;
		r.outLen = size_t(hdr.out_words) * 4;
		if (m->respSize) /* the response pointer leads the request */
			memcpy(&r.response, r.in, sizeof r.response);
	} else {
		if (count < sizeof hdr + sizeof(ib_uverbs_ex_cmd_hdr))
			return -EINVAL;
		ib_uverbs_ex_cmd_hdr ex;
		memcpy(&ex, buf + sizeof hdr, sizeof ex);
		size_t body = count - sizeof hdr - sizeof ex;
		if ((size_t(hdr.in_words) + ex.provider_in_words) * 8 != body)
			return -EINVAL;
		if (size_t(hdr.in_words) * 8 < m->reqSize)
			return -ENOSPC;
		if (ex.cmd_hdr_reserved)
			return -EINVAL;
		if (ex.response) {
			if (!hdr.out_words && !ex.provider_out_words)
				return -EINVAL;
			if (size_t(hdr.out_words) * 8 < m->respSize)
				return -ENOSPC;
		} else if (hdr.out_words || ex.provider_out_words) {
			return -EINVAL;
		}
		r.in = buf + sizeof hdr + sizeof ex;
		r.inLen = body;
		r.response = ex.response;
		r.outLen = size_t(hdr.out_words) * 8;
	}
	if (m->fn == &UverbsFile::notSupported) /* ib_uverbs_notsupp: no context needed */
		return -EOPNOTSUPP;
	if (dead_)
		return -EIO;
	if (!hasContext_ && m->fn != &UverbsFile::getContext)
		return -EINVAL;
	int ret = (this->*m->fn)(r);
	return ret < 0 ? ret : static_cast<ssize_t>(count);
}

int UverbsFile::notSupported(Request &)
{
	return -EOPNOTSUPP;
}

/* --- device and context --- */

int UverbsFile::getContext(Request &r)
{
	if (hasContext_)
		return -EINVAL;
	/* The async event file: a CUSE server cannot create a descriptor in the
	 * caller, so the uverbs descriptor itself is the async event file. */
	int fd = ua_.descriptorOf(r.tid, *this);
	if (fd < 0)
		return fd;
	ib_uverbs_get_context_resp resp{ static_cast<uint32_t>(fd), kNumCompVectors };
	if (int ret = respond(r, &resp, sizeof resp))
		return ret;
	hasContext_ = true;
	return 0;
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
	if (dev_.full(UType::Pd))
		return -ENOMEM;
	uint32_t h = idr_.reserve();
	ib_uverbs_alloc_pd_resp resp{ h };
	if (int ret = respond(r, &resp, sizeof resp)) {
		idr_.abandon(h);
		return ret;
	}
	commit(h, std::make_unique<Pd>());
	return 0;
}

int UverbsFile::deallocPd(Request &r)
{
	UObject *o;
	if (int ret = lookup(r.cmd<ib_uverbs_dealloc_pd>().pd_handle, UType::Pd, o))
		return ret;
	return destroy(*o, false);
}

int UverbsFile::createAh(Request &r)
{
	auto cmd = r.cmd<ib_uverbs_create_ah>();
	uint32_t h = idr_.reserve();
	Pd *pd = nullptr;
	int ret = portValid(dev_, cmd.attr.port_num) ? get(cmd.pd_handle, pd) : -EINVAL;
	/* qib_check_ah(): an SL, a unicast DLID, or a multicast one with a GRH */
	if (!ret && (cmd.attr.sl > 15 || cmd.attr.dlid == 0 ||
		     (cmd.attr.dlid >= 0xc000 && cmd.attr.dlid != 0xffff && !cmd.attr.is_global)))
		ret = -EINVAL;
	if (!ret && dev_.full(UType::Ah))
		ret = -ENOMEM;
	if (ret) {
		idr_.abandon(h);
		return ret;
	}
	ib_uverbs_create_ah_resp resp{ h };
	if ((ret = respond(r, &resp, sizeof resp))) {
		idr_.abandon(h);
		return ret;
	}
	auto ah = std::make_unique<Ah>();
	ah->pd = pd;
	ah->attr = cmd.attr;
	ah->userHandle = cmd.user_handle;
	pd->usecnt++;
	commit(h, std::move(ah));
	return 0;
}

int UverbsFile::destroyAh(Request &r)
{
	UObject *o;
	if (int ret = lookup(r.cmd<ib_uverbs_destroy_ah>().ah_handle, UType::Ah, o))
		return ret;
	return destroy(*o, false);
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

	uint32_t h = idr_.reserve();
	Pd *pd;
	if (int ret = get(cmd.pd_handle, pd)) {
		idr_.abandon(h);
		return ret;
	}
	if (cmd.length == 0 || cmd.length > (uint64_t(1) << 40)) {
		idr_.abandon(h);
		return -EINVAL;
	}
	if (dev_.full(UType::Mr)) {
		idr_.abandon(h);
		return -ENOMEM;
	}
	bool writable = cmd.access_flags & (IB_ACCESS_LOCAL_WRITE | IB_ACCESS_REMOTE_WRITE |
					    IB_ACCESS_REMOTE_ATOMIC | IB_ACCESS_MW_BIND);
	auto mr = std::make_unique<Mr>();
	if (int ret = pinned_.pin(ua_, r.tid, cmd.start, cmd.length, writable, mr->pid, mr->npages)) {
		idr_.abandon(h);
		return ret;
	}
	if (int ret = memoryOf(r.tid, mr->pid, cmd.start, mr->mem)) {
		pinned_.release(mr->pid, mr->npages);
		idr_.abandon(h);
		return ret;
	}
	mr->pd = pd;
	mr->start = cmd.start;
	mr->iova = cmd.hca_va;
	mr->length = cmd.length;
	mr->access = cmd.access_flags;
	dev_.addMr(mr.get());
	ib_uverbs_reg_mr_resp resp{ h, mr->lkey, mr->rkey };
	if (int ret = respond(r, &resp, sizeof resp)) {
		dev_.removeMr(mr.get());
		pinned_.release(mr->pid, mr->npages);
		idr_.abandon(h);
		return ret;
	}
	pd->usecnt++;
	commit(h, std::move(mr));
	return 0;
}

int UverbsFile::deregMr(Request &r)
{
	UObject *o;
	if (int ret = lookup(r.cmd<ib_uverbs_dereg_mr>().mr_handle, UType::Mr, o))
		return ret;
	return destroy(*o, false);
}

/* --- CQ --- */

/* A completion channel is a new file in the caller; a CUSE server cannot
 * make one (docs/verbs.md). */
int UverbsFile::createCompChannel(Request &)
{
	return -EOPNOTSUPP;
}

int UverbsFile::createCq(Request &r)
{
	auto cmd = r.cmd<ib_uverbs_create_cq>();
	if (cmd.comp_vector >= kNumCompVectors)
		return -EINVAL;
	uint32_t h = idr_.reserve();
	if (cmd.comp_channel >= 0 || cmd.cqe < 1 || cmd.cqe > dev_.limits().maxCqe) {
		idr_.abandon(h);
		return -EINVAL;
	}
	if (dev_.full(UType::Cq)) {
		idr_.abandon(h);
		return -ENOMEM;
	}
	ib_uverbs_create_cq_resp resp{ h, cmd.cqe };
	if (int ret = respond(r, &resp, sizeof resp)) {
		idr_.abandon(h);
		return ret;
	}
	auto cq = std::make_unique<Cq>();
	cq->file = this;
	cq->cqe = cmd.cqe;
	cq->userHandle = cmd.user_handle;
	commit(h, std::move(cq));
	return 0;
}

int UverbsFile::resizeCq(Request &r)
{
	auto cmd = r.cmd<ib_uverbs_resize_cq>();
	Cq *cq;
	if (int ret = get(cmd.cq_handle, cq))
		return ret;
	if (cmd.cqe < 1 || cmd.cqe > dev_.limits().maxCqe || cmd.cqe < cq->queue.size())
		return -EINVAL;
	cq->cqe = cmd.cqe;
	ib_uverbs_resize_cq_resp resp{ cmd.cqe, 0 };
	return respond(r, &resp, sizeof resp);
}

int UverbsFile::destroyCq(Request &r)
{
	auto cmd = r.cmd<ib_uverbs_destroy_cq>();
	UObject *o;
	if (int ret = lookup(cmd.cq_handle, UType::Cq, o))
		return ret;
	auto *cq = static_cast<Cq *>(o);
	if (cq->usecnt)
		return -EBUSY;
	ib_uverbs_destroy_cq_resp resp{ cq->compEventsReported, cq->asyncEventsReported };
	destroy(*cq, false);
	return respond(r, &resp, sizeof resp);
}

int UverbsFile::pollCq(Request &r)
{
	auto cmd = r.cmd<ib_uverbs_poll_cq>();
	Cq *cq;
	if (int ret = get(cmd.cq_handle, cq))
		return ret;
	ib_uverbs_poll_cq_resp hdr{};
	uint64_t at = r.response + sizeof hdr;
	while (hdr.count < cmd.ne && !cq->queue.empty()) {
		ib_uverbs_wc wc = cq->queue.front();
		cq->queue.pop_front();
		if (int ret = ua_.write(r.tid, at, &wc, sizeof wc))
			return ret;
		at += sizeof wc;
		hdr.count++;
	}
	return ua_.write(r.tid, r.response, &hdr, sizeof hdr);
}

int UverbsFile::reqNotifyCq(Request &r)
{
	auto cmd = r.cmd<ib_uverbs_req_notify_cq>();
	Cq *cq;
	if (int ret = get(cmd.cq_handle, cq))
		return ret;
	/* arming matters only to a completion channel, which cannot exist here */
	return 0;
}

/* --- QP --- */

int UverbsFile::createQp(Request &r)
{
	auto cmd = r.cmd<ib_uverbs_create_qp>();
	switch (cmd.qp_type) {
	case IB_QPT_RC:
	case IB_QPT_UC:
	case IB_QPT_UD:
		break;
	case 8: /* RAW_PACKET: needs CAP_NET_RAW, then the driver lacks it */
	case 9: /* XRC_INI */
	case 10: /* XRC_TGT */
	case 0xff: /* DRIVER */
		return -EOPNOTSUPP;
	default:
		return -EINVAL;
	}
	uint32_t h = idr_.reserve();
	auto fail = [&](int e) {
		idr_.abandon(h);
		return e;
	};
	Srq *srq = nullptr;
	Cq *rcq = nullptr, *scq = nullptr;
	Pd *pd = nullptr;
	if (cmd.is_srq)
		if (int ret = get(cmd.srq_handle, srq))
			return fail(ret);
	if (cmd.recv_cq_handle != cmd.send_cq_handle)
		if (int ret = get(cmd.recv_cq_handle, rcq))
			return fail(ret);
	if (int ret = get(cmd.send_cq_handle, scq))
		return fail(ret);
	rcq = rcq ? rcq : scq;
	if (int ret = get(cmd.pd_handle, pd))
		return fail(ret);
	const VerbsLimits &lim = dev_.limits();
	if (cmd.max_send_sge > lim.maxSge || cmd.max_send_wr > lim.maxQpWr || cmd.max_inline_data > lim.maxInline)
		return fail(-EINVAL);
	if (!srq && (cmd.max_recv_sge > lim.maxSge || cmd.max_recv_wr > lim.maxQpWr))
		return fail(-EINVAL);
	if (dev_.full(UType::Qp))
		return fail(-ENOMEM);

	auto qp = std::make_unique<Qp>(dev_.io());
	qp->file = this;
	qp->dev = &dev_;
	qp->qpType = static_cast<QpType>(cmd.qp_type);
	qp->pd = pd;
	qp->sendCq = scq;
	qp->recvCq = rcq;
	qp->srq = srq;
	qp->maxSendWr = std::max(cmd.max_send_wr, 1u);
	qp->maxSendSge = cmd.max_send_sge;
	qp->maxRecvWr = srq ? 0 : std::max(cmd.max_recv_wr, 1u);
	qp->maxRecvSge = srq ? 0 : cmd.max_recv_sge;
	qp->maxInline = cmd.max_inline_data;
	qp->sqSigAll = cmd.sq_sig_all;
	qp->userHandle = cmd.user_handle;
	uint32_t qpn = dev_.addQp(qp.get());
	ib_uverbs_create_qp_resp resp{ h, qpn, qp->maxSendWr, qp->maxRecvWr, qp->maxSendSge, qp->maxRecvSge,
				       qp->maxInline, 0 };
	if (int ret = respond(r, &resp, sizeof resp)) {
		dev_.removeQp(qp.get());
		return fail(ret);
	}
	pd->usecnt++;
	scq->usecnt++;
	rcq->usecnt++;
	if (srq)
		srq->usecnt++;
	commit(h, std::move(qp));
	return 0;
}

int UverbsFile::queryQp(Request &r)
{
	auto cmd = r.cmd<ib_uverbs_query_qp>();
	Qp *qp;
	if (int ret = get(cmd.qp_handle, qp))
		return ret;
	ib_uverbs_query_qp_resp resp{};
	resp.dest = qp->av;
	resp.alt_dest = qp->altAv;
	resp.max_send_wr = qp->maxSendWr;
	resp.max_recv_wr = qp->maxRecvWr;
	resp.max_send_sge = qp->maxSendSge;
	resp.max_recv_sge = qp->maxRecvSge;
	resp.max_inline_data = qp->maxInline;
	resp.qkey = qp->qkey;
	resp.rq_psn = qp->rqPsn;
	resp.sq_psn = qp->sqPsn;
	resp.dest_qp_num = qp->destQpn;
	resp.qp_access_flags = qp->accessFlags;
	resp.pkey_index = qp->pkeyIndex;
	resp.alt_pkey_index = qp->altPkeyIndex;
	resp.qp_state = qp->state;
	resp.cur_qp_state = qp->state;
	resp.path_mtu = qp->pathMtu;
	resp.path_mig_state = qp->pathMigState;
	resp.sq_draining = 0;
	resp.max_rd_atomic = qp->maxRdAtomic;
	resp.max_dest_rd_atomic = qp->maxDestRdAtomic;
	resp.min_rnr_timer = qp->minRnrTimer;
	resp.port_num = qp->portNum;
	resp.timeout = qp->timeout;
	resp.retry_cnt = qp->retryCnt;
	resp.rnr_retry = qp->rnrRetry;
	resp.alt_port_num = qp->altPortNum;
	resp.alt_timeout = qp->altTimeout;
	resp.sq_sig_all = qp->sqSigAll;
	return respond(r, &resp, sizeof resp);
}

int UverbsFile::modifyQp(Request &r)
{
	auto cmd = r.cmd<ib_uverbs_modify_qp>();
	/* the legacy command knows the attributes up to DEST_QPN */
	if (cmd.attr_mask & ~((IB_QP_DEST_QPN << 1) - 1))
		return -EOPNOTSUPP;
	Qp *qp;
	if (int ret = get(cmd.qp_handle, qp))
		return ret;
	if ((cmd.attr_mask & IB_QP_PORT) && !portValid(dev_, cmd.port_num))
		return -EINVAL;
	if ((cmd.attr_mask & IB_QP_AV) && !portValid(dev_, cmd.dest.port_num))
		return -EINVAL;
	if ((cmd.attr_mask & IB_QP_ALT_PATH) &&
	    (!portValid(dev_, cmd.alt_port_num) || !portValid(dev_, cmd.alt_dest.port_num) ||
	     cmd.alt_port_num != cmd.alt_dest.port_num))
		return -EINVAL;
	if (((cmd.attr_mask & IB_QP_CUR_STATE) && cmd.cur_qp_state > IB_QPS_ERR) ||
	    ((cmd.attr_mask & IB_QP_STATE) && cmd.qp_state > IB_QPS_ERR))
		return -EINVAL;
	return applyModifyQp(dev_, *qp, cmd);
}

int UverbsFile::destroyQp(Request &r)
{
	auto cmd = r.cmd<ib_uverbs_destroy_qp>();
	UObject *o;
	if (int ret = lookup(cmd.qp_handle, UType::Qp, o))
		return ret;
	ib_uverbs_destroy_qp_resp resp{ static_cast<Qp *>(o)->eventsReported };
	destroy(*o, false);
	return respond(r, &resp, sizeof resp);
}

namespace {

/* What the rdmavt state table (ib_rvt_state_ops) allows. */
bool postSendOk(QpState s)
{
	return s == IB_QPS_RTS || s == IB_QPS_SQD || s == IB_QPS_SQE || s == IB_QPS_ERR;
}

bool opcodeOk(QpType t, uint32_t op)
{
	switch (op) {
	case IB_WR_SEND:
	case IB_WR_SEND_WITH_IMM:
		return true;
	case IB_WR_RDMA_WRITE:
	case IB_WR_RDMA_WRITE_WITH_IMM:
		return t != IB_QPT_UD;
	case IB_WR_RDMA_READ:
	case IB_WR_ATOMIC_CMP_AND_SWP:
	case IB_WR_ATOMIC_FETCH_AND_ADD:
		return t == IB_QPT_RC;
	default:
		return false;
	}
}

} /* namespace */

/* ib_uverbs_post_send(), then the driver's post_send */
int UverbsFile::postSend(Request &r)
{
	auto cmd = r.cmd<ib_uverbs_post_send>();
	if (int ret = checkSlices(r.inLen, cmd.wqe_size, cmd.wr_count, cmd.sge_count))
		return ret;
	if (cmd.wqe_size < sizeof(ib_uverbs_send_wr))
		return -EINVAL;
	Qp *qp;
	if (int ret = get(cmd.qp_handle, qp))
		return ret;
	const uint8_t *wqes = r.in + sizeof cmd;
	const uint8_t *sgls = wqes + size_t(cmd.wqe_size) * cmd.wr_count;

	/* parse everything first: a bad WR fails the command before any posts */
	std::vector<SendWqe> list(cmd.wr_count);
	uint32_t sgInd = 0;
	for (uint32_t i = 0; i < cmd.wr_count; i++) {
		SendWqe &w = list[i];
		memcpy(&w.wr, wqes + size_t(i) * cmd.wqe_size, sizeof w.wr);
		if (uint64_t(w.wr.num_sge) + sgInd > cmd.sge_count)
			return -EINVAL;
		if (qp->qpType == IB_QPT_UD) {
			if (w.wr.opcode != IB_WR_SEND && w.wr.opcode != IB_WR_SEND_WITH_IMM)
				return -EINVAL;
			Ah *ah;
			if (int ret = get(w.wr.wr.ud.ah, ah))
				return ret;
			w.ah = ah->attr;
			w.ahPd = ah->pd;
		} else if (w.wr.opcode > IB_WR_SEND_WITH_INV || w.wr.opcode == IB_WR_LOCAL_INV ||
			   w.wr.opcode == IB_WR_BIND_MW) {
			return -EINVAL;
		}
		for (uint32_t s = 0; s < w.wr.num_sge; s++) {
			ib_uverbs_sge sge;
			memcpy(&sge, sgls + size_t(sgInd + s) * sizeof sge, sizeof sge);
			w.sges.push_back({ sge.addr, sge.length, sge.lkey });
		}
		sgInd += w.wr.num_sge;
	}

	ib_uverbs_post_send_resp resp{};
	int ret = 0;
	if (!postSendOk(qp->state)) {
		resp.bad_wr = 1;
		ret = -EINVAL;
	}
	for (uint32_t i = 0; i < cmd.wr_count && !ret; i++) {
		SendWqe &w = list[i];
		uint64_t total = 0;
		for (const Sge &s : w.sges)
			total += s.length;
		bool atomic = w.wr.opcode == IB_WR_ATOMIC_CMP_AND_SWP || w.wr.opcode == IB_WR_ATOMIC_FETCH_AND_ADD;
		if (w.wr.num_sge > qp->maxSendSge || !opcodeOk(qp->qpType, w.wr.opcode) ||
		    ((w.wr.send_flags & IB_SEND_INLINE) && total > qp->maxInline))
			ret = -EINVAL;
		/* rvt_post_one_wr(): READ and atomics need responder resources;
		 * an atomic an 8-byte aligned target and an 8-byte result buffer */
		else if ((atomic || w.wr.opcode == IB_WR_RDMA_READ) && qp->maxRdAtomic == 0)
			ret = -EINVAL;
		else if (atomic && (w.sges.empty() || w.sges[0].length < 8 || (w.wr.wr.atomic.remote_addr & 7)))
			ret = -EINVAL;
		else if (qp->qpType == IB_QPT_UD && w.ahPd != qp->pd) /* an AH of another PD */
			ret = -EINVAL;
		else if ((w.wr.send_flags & IB_SEND_INLINE) && (atomic || w.wr.opcode == IB_WR_RDMA_READ))
			ret = -EINVAL; /* inline data is only ever sent */
		else if (qp->sq.size() >= qp->maxSendWr)
			ret = -ENOMEM;
		else if (w.wr.send_flags & IB_SEND_INLINE) {
			/* inline data is copied at post time, without lkeys */
			w.isInline = true;
			w.inlineData.resize(total);
			size_t at = 0;
			for (const Sge &s : w.sges) {
				if (s.length && ua_.read(r.tid, s.addr, w.inlineData.data() + at, s.length) != 0) {
					ret = -EFAULT;
					break;
				}
				at += s.length;
			}
		}
		if (ret) {
			resp.bad_wr = i + 1;
			break;
		}
		w.retriesLeft = qp->retryCnt;
		w.rnrRetriesLeft = qp->rnrRetry;
		qp->sq.push_back(std::move(w));
	}
	dev_.progress(*qp);
	if (int r2 = respond(r, &resp, sizeof resp))
		ret = r2;
	return ret;
}

namespace {

int parseRecv(const uint8_t *in, size_t inLen, std::vector<RecvWqe> &list);

} /* namespace */

int UverbsFile::postRecv(Request &r)
{
	auto cmd = r.cmd<ib_uverbs_post_recv>();
	std::vector<RecvWqe> list;
	if (int ret = parseRecv(r.in, r.inLen, list))
		return ret;
	Qp *qp;
	if (int ret = get(cmd.qp_handle, qp))
		return ret;
	ib_uverbs_post_recv_resp resp{};
	int ret = 0;
	if (qp->srq || qp->state == IB_QPS_RESET) {
		resp.bad_wr = 1;
		ret = -EINVAL;
	}
	for (size_t i = 0; i < list.size() && !ret; i++) {
		if (list[i].sges.size() > qp->maxRecvSge)
			ret = -EINVAL;
		else if (qp->rq.size() >= qp->maxRecvWr)
			ret = -ENOMEM;
		if (ret) {
			resp.bad_wr = static_cast<uint32_t>(i + 1);
			break;
		}
		if (qp->state == IB_QPS_ERR) { /* flushed at once */
			ib_uverbs_wc wc{};
			wc.wr_id = list[i].wrId;
			wc.status = IB_WC_WR_FLUSH_ERR;
			wc.opcode = IB_WC_RECV;
			wc.qp_num = qp->qpn;
			dev_.complete(*qp->recvCq, wc);
			continue;
		}
		qp->rq.push_back(std::move(list[i]));
	}
	dev_.recvPosted(qp, nullptr);
	if (int r2 = respond(r, &resp, sizeof resp))
		ret = r2;
	return ret;
}

/* --- SRQ --- */

int UverbsFile::createSrq(Request &r)
{
	auto cmd = r.cmd<ib_uverbs_create_srq>();
	uint32_t h = idr_.reserve();
	Pd *pd;
	if (int ret = get(cmd.pd_handle, pd)) {
		idr_.abandon(h);
		return ret;
	}
	const VerbsLimits &lim = dev_.limits();
	if (cmd.max_wr == 0 || cmd.max_wr > lim.maxSrqWr || cmd.max_sge == 0 || cmd.max_sge > lim.maxSrqSge ||
	    cmd.srq_limit > cmd.max_wr) {
		idr_.abandon(h);
		return -EINVAL;
	}
	if (dev_.full(UType::Srq)) {
		idr_.abandon(h);
		return -ENOMEM;
	}
	auto srq = std::make_unique<Srq>();
	srq->file = this;
	srq->pd = pd;
	srq->maxWr = cmd.max_wr;
	srq->maxSge = cmd.max_sge;
	srq->limit = cmd.srq_limit;
	srq->userHandle = cmd.user_handle;
	srq->srqn = dev_.nextSrqn();
	ib_uverbs_create_srq_resp resp{ h, srq->maxWr, srq->maxSge, srq->srqn };
	if (int ret = respond(r, &resp, sizeof resp)) {
		idr_.abandon(h);
		return ret;
	}
	pd->usecnt++;
	commit(h, std::move(srq));
	return 0;
}

int UverbsFile::modifySrq(Request &r)
{
	auto cmd = r.cmd<ib_uverbs_modify_srq>();
	Srq *srq;
	if (int ret = get(cmd.srq_handle, srq))
		return ret;
	if (cmd.attr_mask & ~(IB_SRQ_MAX_WR | IB_SRQ_LIMIT))
		return -EINVAL;
	uint32_t maxWr = (cmd.attr_mask & IB_SRQ_MAX_WR) ? cmd.max_wr : srq->maxWr;
	if ((cmd.attr_mask & IB_SRQ_MAX_WR) &&
	    (maxWr == 0 || maxWr > dev_.limits().maxSrqWr || maxWr < srq->queue.size()))
		return -EINVAL;
	if ((cmd.attr_mask & IB_SRQ_LIMIT) && cmd.srq_limit >= maxWr)
		return -EINVAL;
	srq->maxWr = maxWr;
	if (cmd.attr_mask & IB_SRQ_LIMIT)
		srq->limit = cmd.srq_limit;
	return 0;
}

int UverbsFile::querySrq(Request &r)
{
	auto cmd = r.cmd<ib_uverbs_query_srq>();
	Srq *srq;
	if (int ret = get(cmd.srq_handle, srq))
		return ret;
	ib_uverbs_query_srq_resp resp{ srq->maxWr, srq->maxSge, srq->limit, 0 };
	return respond(r, &resp, sizeof resp);
}

int UverbsFile::destroySrq(Request &r)
{
	auto cmd = r.cmd<ib_uverbs_destroy_srq>();
	UObject *o;
	if (int ret = lookup(cmd.srq_handle, UType::Srq, o))
		return ret;
	if (o->usecnt)
		return -EBUSY;
	ib_uverbs_destroy_srq_resp resp{ static_cast<Srq *>(o)->eventsReported };
	destroy(*o, false);
	return respond(r, &resp, sizeof resp);
}

int UverbsFile::postSrqRecv(Request &r)
{
	auto cmd = r.cmd<ib_uverbs_post_recv>();
	std::vector<RecvWqe> list;
	if (int ret = parseRecv(r.in, r.inLen, list))
		return ret;
	Srq *srq;
	if (int ret = get(cmd.qp_handle, srq))
		return ret;
	ib_uverbs_post_recv_resp resp{};
	int ret = 0;
	for (size_t i = 0; i < list.size(); i++) {
		if (list[i].sges.size() > srq->maxSge)
			ret = -EINVAL;
		else if (srq->queue.size() >= srq->maxWr)
			ret = -ENOMEM;
		if (ret) {
			resp.bad_wr = static_cast<uint32_t>(i + 1);
			break;
		}
		srq->queue.push_back(std::move(list[i]));
	}
	dev_.recvPosted(nullptr, srq);
	if (int r2 = respond(r, &resp, sizeof resp))
		ret = r2;
	return ret;
}

namespace {

/* The recv WRs and SGEs that follow ib_uverbs_post_recv (ib_uverbs_unmarshall_recv). */
int parseRecv(const uint8_t *in, size_t inLen, std::vector<RecvWqe> &list)
{
	ib_uverbs_post_recv cmd;
	memcpy(&cmd, in, sizeof cmd);
	if (int ret = checkSlices(inLen, cmd.wqe_size, cmd.wr_count, cmd.sge_count))
		return ret;
	if (cmd.wqe_size < sizeof(ib_uverbs_recv_wr))
		return -EINVAL;
	const uint8_t *wqes = in + sizeof cmd;
	const uint8_t *sgls = wqes + size_t(cmd.wqe_size) * cmd.wr_count;
	uint32_t sgInd = 0;
	list.resize(cmd.wr_count);
	for (uint32_t i = 0; i < cmd.wr_count; i++) {
		ib_uverbs_recv_wr wr;
		memcpy(&wr, wqes + size_t(i) * cmd.wqe_size, sizeof wr);
		if (uint64_t(wr.num_sge) + sgInd > cmd.sge_count)
			return -EINVAL;
		list[i].wrId = wr.wr_id;
		for (uint32_t s = 0; s < wr.num_sge; s++) {
			ib_uverbs_sge sge;
			memcpy(&sge, sgls + size_t(sgInd + s) * sizeof sge, sizeof sge);
			list[i].sges.push_back({ sge.addr, sge.length, sge.lkey });
		}
		sgInd += wr.num_sge;
	}
	return 0;
}

} /* namespace */

} /* namespace ibemu::emu */
