// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// ibemu's libibverbs provider: device matching, the context with its
// completion-channel spares, and the verbs that are plain write() commands
// (provider.h says what the provider is for).
#include "tools/provider/provider.h"

#include "emu/ibemu_user_verbs.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <new>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

namespace ibemu::provider {

namespace {

/* Spares kept ready: ibv_create_comp_channel() has no provider hook, so a
 * program can create this many channels before the provider next runs. */
constexpr unsigned kSpares = 4;

/* Makes n spare pairs into out (receiving, sending); false on failure with
 * the ones made closed. */
bool makeSpares(ibemu_spare *out, unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		int sv[2];
		if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) {
			while (i--) {
				close(out[i].recv_fd);
				close(out[i].send_fd);
			}
			return false;
		}
		out[i] = { sv[0], sv[1] };
	}
	return true;
}

/* Is spare s still the socket we made, under its number? */
bool stillOurs(const Spare &s)
{
	struct stat st;
	return fstat(s.fd, &st) == 0 && st.st_dev == s.dev && st.st_ino == s.ino;
}

/* After the device took its copies (or failed to): our sending ends go,
 * the receiving ends stay spares (or go too). */
void settleSpares(Context *ctx, const ibemu_spare *s, unsigned n, bool taken)
{
	for (unsigned i = 0; i < n; i++) {
		close(s[i].send_fd);
		struct stat st;
		if (taken && fstat(s[i].recv_fd, &st) == 0)
			ctx->spares->push_back({ s[i].recv_fd, st.st_dev, st.st_ino });
		else
			close(s[i].recv_fd);
	}
}

} /* namespace */

/* The channel's spare is used up; spares the program closed (a channel
 * destroyed before any CQ used it) are forgotten; below half, top up. */
void channelUsed(ibv_context *context, ibv_comp_channel *channel)
{
	Context *ctx = ctxOf(context);
	std::lock_guard<std::mutex> guard(*ctx->spareLock);
	std::erase_if(*ctx->spares, [&](const Spare &s) { return s.fd == channel->fd || !stillOurs(s); });
	if (ctx->spares->size() > kSpares / 2)
		return;
	struct {
		ib_uverbs_cmd_hdr hdr;
		ibemu_add_spares body;
	} cmd{};
	ibemu_add_spares_resp resp{};
	unsigned n = kSpares - static_cast<unsigned>(ctx->spares->size());
	if (!makeSpares(cmd.body.spares, n))
		return; /* later channels fail with EMFILE, as the device says */
	cmd.hdr = { IBEMU_CMD_ADD_SPARES, sizeof cmd / 4, sizeof resp / 4 };
	cmd.body.response = reinterpret_cast<uintptr_t>(&resp);
	cmd.body.nspares = n;
	bool taken = write(context->cmd_fd, &cmd, sizeof cmd) == ssize_t(sizeof cmd);
	settleSpares(ctx, cmd.body.spares, n, taken);
}

Cq *newCq(ibv_context *context, int cqe, ibv_comp_channel *channel, int compVector)
{
	auto *cq = new (std::nothrow) Cq{};
	if (!cq) {
		errno = ENOMEM;
		return nullptr;
	}
	struct {
		struct ibv_create_cq core;
		ibemu_create_cq_req drv;
	} cmd{};
	struct {
		uint32_t cq_handle, cqe; /* ib_uverbs_create_cq_resp */
		ibemu_create_cq_resp drv;
	} resp{};
	/* without a ring (no memfd), completions come by POLL_CQ */
	RingArea &area = *ctxOf(context)->area;
	cmd.drv.ring_fd = -1;
	if (cqe > 0) {
		cq->ringLen = ibemu_cq_ring_bytes(uint32_t(cqe));
		cq->ring = area.ring(cq->ringLen, "ibemu-cq", cmd.drv.ring_fd, cmd.drv.area_offset);
	}
	int ret = ibv_cmd_create_cq(context, cqe, channel, compVector, &cq->vcq.cq, &cmd.core, sizeof cmd,
				    reinterpret_cast<ib_uverbs_create_cq_resp *>(&resp), sizeof resp);
	if (cmd.drv.ring_fd >= 0)
		close(cmd.drv.ring_fd);
	if (ret == 0 && cq->ring && resp.drv.ring_entries != ibemu_cq_ring_entries(uint32_t(cqe))) {
		/* a device that does not speak our ring; if the CQ stays, so may
		 * its writes: its ring is left, never handed out again */
		if (ibv_cmd_destroy_cq(&cq->vcq.cq) != 0)
			cq->ring = nullptr;
		ret = EPROTO;
	}
	if (ret) {
		area.release(cq->ring, cq->ringLen);
		delete cq;
		errno = ret;
		return nullptr;
	}
	cq->ringEntries = resp.drv.ring_entries;
	if (channel)
		channelUsed(context, channel);
	return cq;
}

int fetch(Cq *cq, int n, ibv_wc *wc)
{
	if (!cq->ring)
		return ibv_cmd_poll_cq(&cq->vcq.cq, n, wc);
	auto *hdr = static_cast<ibemu_cq_ring *>(cq->ring);
	auto *entries = reinterpret_cast<const ib_uverbs_wc *>(hdr + 1);
	uint32_t producer = __atomic_load_n(&hdr->producer, __ATOMIC_ACQUIRE);
	uint32_t consumer = hdr->consumer;
	int got = 0;
	for (; got < n && consumer != producer; got++, consumer++) {
		const ib_uverbs_wc &k = entries[consumer & (cq->ringEntries - 1)];
		ibv_wc &w = wc[got];
		w.wr_id = k.wr_id;
		w.status = static_cast<ibv_wc_status>(k.status);
		w.opcode = static_cast<ibv_wc_opcode>(k.opcode);
		w.vendor_err = k.vendor_err;
		w.byte_len = k.byte_len;
		w.imm_data = k.ex.imm_data;
		w.qp_num = k.qp_num;
		w.src_qp = k.src_qp;
		/* the kernel's IB_WC_WITH_INVALIDATE (1 << 2) is libibverbs'
		 * IBV_WC_WITH_INV (1 << 3); GRH and WITH_IMM agree */
		w.wc_flags = (k.wc_flags & 3) | (k.wc_flags & 4 ? IBV_WC_WITH_INV : 0);
		w.pkey_index = k.pkey_index;
		w.slid = k.slid;
		w.sl = k.sl;
		w.dlid_path_bits = k.dlid_path_bits;
	}
	__atomic_store_n(&hdr->consumer, consumer, __ATOMIC_RELEASE);
	return got;
}

namespace {

/* --- device and context --- */

int queryDeviceEx(ibv_context *context, const ibv_query_device_ex_input *input, ibv_device_attr_ex *attr,
		  size_t attrSize)
{
	ib_uverbs_ex_query_device_resp resp;
	size_t respSize = sizeof resp;
	return ibv_cmd_query_device_any(context, input, attr, attrSize, &resp, &respSize);
}

int queryPort(ibv_context *context, uint8_t port, ibv_port_attr *attr)
{
	struct ibv_query_port cmd;
	return ibv_cmd_query_port(context, port, attr, &cmd, sizeof cmd);
}

ibv_pd *allocPd(ibv_context *context)
{
	auto *pd = new (std::nothrow) ibv_pd{};
	if (!pd) {
		errno = ENOMEM;
		return nullptr;
	}
	struct ibv_alloc_pd cmd;
	ib_uverbs_alloc_pd_resp resp;
	if (int ret = ibv_cmd_alloc_pd(context, pd, &cmd, sizeof cmd, &resp, sizeof resp)) {
		delete pd;
		errno = ret;
		return nullptr;
	}
	return pd;
}

int deallocPd(ibv_pd *pd)
{
	if (int ret = ibv_cmd_dealloc_pd(pd))
		return ret;
	delete pd;
	return 0;
}

ibv_mr *regMr(ibv_pd *pd, void *addr, size_t length, uint64_t hcaVa, int access)
{
	auto *vmr = new (std::nothrow) verbs_mr{};
	if (!vmr) {
		errno = ENOMEM;
		return nullptr;
	}
	struct ibv_reg_mr cmd;
	ib_uverbs_reg_mr_resp resp;
	if (int ret = ibv_cmd_reg_mr(pd, addr, length, hcaVa, access, vmr, &cmd, sizeof cmd, &resp, sizeof resp)) {
		delete vmr;
		errno = ret;
		return nullptr;
	}
	return &vmr->mr;
}

int deregMr(verbs_mr *vmr)
{
	if (int ret = ibv_cmd_dereg_mr(vmr))
		return ret;
	delete vmr;
	return 0;
}

/* Memory windows as rxe's provider has them: a type 1 bind is a BIND_MW
 * work request with the next key, which the window takes once posted (a
 * program that gets an error completion undoes it). */
ibv_mw *allocMw(ibv_pd *pd, ibv_mw_type type)
{
	auto *mw = new (std::nothrow) ibv_mw{};
	if (!mw) {
		errno = ENOMEM;
		return nullptr;
	}
	struct ibv_alloc_mw cmd;
	ib_uverbs_alloc_mw_resp resp;
	if (int ret = ibv_cmd_alloc_mw(pd, type, mw, &cmd, sizeof cmd, &resp, sizeof resp)) {
		delete mw;
		errno = ret;
		return nullptr;
	}
	return mw;
}

int deallocMw(ibv_mw *mw)
{
	if (int ret = ibv_cmd_dealloc_mw(mw))
		return ret;
	delete mw;
	return 0;
}

int bindMw(ibv_qp *qp, ibv_mw *mw, ibv_mw_bind *bind)
{
	if (bind->bind_info.mw_access_flags & IBV_ACCESS_ZERO_BASED)
		return errno = EINVAL;
	ibv_send_wr wr{};
	wr.wr_id = bind->wr_id;
	wr.opcode = IBV_WR_BIND_MW;
	wr.send_flags = bind->send_flags;
	wr.bind_mw.mw = mw;
	wr.bind_mw.rkey = ibv_inc_rkey(mw->rkey);
	wr.bind_mw.bind_info = bind->bind_info;
	ibv_send_wr *bad = nullptr;
	if (int ret = postSend(qp, &wr, &bad))
		return errno = ret;
	mw->rkey = wr.bind_mw.rkey;
	return 0;
}

ibv_ah *createAh(ibv_pd *pd, ibv_ah_attr *attr)
{
	auto *ah = new (std::nothrow) ibv_ah{};
	if (!ah) {
		errno = ENOMEM;
		return nullptr;
	}
	ib_uverbs_create_ah_resp resp;
	if (int ret = ibv_cmd_create_ah(pd, ah, attr, &resp, sizeof resp)) {
		delete ah;
		errno = ret;
		return nullptr;
	}
	return ah;
}

int destroyAh(ibv_ah *ah)
{
	if (int ret = ibv_cmd_destroy_ah(ah))
		return ret;
	delete ah;
	return 0;
}

/* --- CQ --- */

ibv_cq *createCq(ibv_context *context, int cqe, ibv_comp_channel *channel, int compVector)
{
	Cq *cq = newCq(context, cqe, channel, compVector);
	return cq ? &cq->vcq.cq : nullptr;
}

/* A ring CQ moves to a new ring (emu/ibemu_user_verbs.h): the device
 * copies the completions not yet read to its start, in order, while we
 * hold the CQ's lock, so no poll reads either ring meanwhile. */
int resizeCq(ibv_cq *ibcq, int cqe)
{
	Cq *cq = cqOf(ibcq);
	std::lock_guard<std::mutex> guard(cq->lock);
	struct {
		struct ibv_resize_cq core;
		ibemu_resize_cq_req drv;
	} cmd{};
	struct {
		uint32_t cqe, reserved; /* ib_uverbs_resize_cq_resp */
		ibemu_resize_cq_resp drv;
	} resp{};
	cmd.drv.ring_fd = -1;
	RingArea &area = *ctxOf(ibcq->context)->area;
	void *ring = nullptr;
	size_t len = 0;
	if (cq->ring && cqe > 0) { /* else the device answers EINVAL */
		len = ibemu_cq_ring_bytes(uint32_t(cqe));
		ring = area.ring(len, "ibemu-cq", cmd.drv.ring_fd, cmd.drv.area_offset);
		if (!ring)
			return ENOMEM;
	}
	int ret = ibv_cmd_resize_cq(ibcq, cqe, &cmd.core, sizeof cmd,
				    reinterpret_cast<ib_uverbs_resize_cq_resp *>(&resp), sizeof resp);
	if (cmd.drv.ring_fd >= 0)
		close(cmd.drv.ring_fd);
	if (ret) {
		area.release(ring, len);
		return ret;
	}
	if (ring && resp.drv.ring_entries != ibemu_cq_ring_entries(uint32_t(cqe))) {
		area.release(ring, len); /* a device that kept the old ring */
	} else if (ring) {
		area.release(cq->ring, cq->ringLen);
		cq->ring = ring;
		cq->ringLen = len;
		cq->ringEntries = resp.drv.ring_entries;
	}
	return 0;
}

int destroyCq(ibv_cq *ibcq)
{
	if (int ret = ibv_cmd_destroy_cq(ibcq))
		return ret;
	Cq *cq = cqOf(ibcq);
	ctxOf(ibcq->context)->area->release(cq->ring, cq->ringLen);
	delete cq;
	return 0;
}

/* --- QP and SRQ --- */

ibv_qp *createQp(ibv_pd *pd, ibv_qp_init_attr *attr)
{
	ibv_qp_init_attr_ex ex{};
	memcpy(&ex, attr, sizeof *attr);
	ex.comp_mask = IBV_QP_INIT_ATTR_PD;
	ex.pd = pd;
	ibv_qp *qp = createQpEx(pd->context, &ex);
	if (qp)
		memcpy(attr, &ex, sizeof *attr); /* the capabilities granted */
	return qp;
}

int queryQp(ibv_qp *qp, ibv_qp_attr *attr, int mask, ibv_qp_init_attr *init)
{
	struct ibv_query_qp cmd;
	return ibv_cmd_query_qp(qp, attr, mask, init, &cmd, sizeof cmd);
}

int modifyQp(ibv_qp *qp, ibv_qp_attr *attr, int mask)
{
	return modifyRingQp(qpOf(qp), attr, mask);
}

int destroyQp(ibv_qp *qp)
{
	if (int ret = ibv_cmd_destroy_qp(qp))
		return ret;
	detachRing(qpOf(qp));
	delete qpOf(qp);
	return 0;
}

/* A new T, kept when command(T *) answers 0; else null with its errno. */
template <typename T, typename Command> T *made(Command command)
{
	auto *o = new (std::nothrow) T{};
	if (!o) {
		errno = ENOMEM;
		return nullptr;
	}
	if (int ret = command(o)) {
		delete o;
		errno = ret;
		return nullptr;
	}
	return o;
}

ibv_srq *createSrq(ibv_pd *pd, ibv_srq_init_attr *attr)
{
	verbs_srq *srq = made<verbs_srq>([&](verbs_srq *s) {
		struct ibv_create_srq cmd;
		ib_uverbs_create_srq_resp resp;
		return ibv_cmd_create_srq(pd, &s->srq, attr, &cmd, sizeof cmd, &resp, sizeof resp);
	});
	return srq ? &srq->srq : nullptr;
}

/* XRC SRQs (and basic ones this way too): CREATE_XSRQ */
ibv_srq *createSrqEx(ibv_context *context, ibv_srq_init_attr_ex *attr)
{
	verbs_srq *srq = made<verbs_srq>([&](verbs_srq *s) {
		struct ibv_create_xsrq cmd;
		ib_uverbs_create_srq_resp resp;
		return ibv_cmd_create_srq_ex(context, s, attr, &cmd, sizeof cmd, &resp, sizeof resp);
	});
	return srq ? &srq->srq : nullptr;
}

int getSrqNum(ibv_srq *srq, uint32_t *num)
{
	*num = reinterpret_cast<verbs_srq *>(srq)->srq_num;
	return 0;
}

ibv_xrcd *openXrcd(ibv_context *context, ibv_xrcd_init_attr *attr)
{
	verbs_xrcd *xrcd = made<verbs_xrcd>([&](verbs_xrcd *x) {
		struct ibv_open_xrcd cmd;
		ib_uverbs_open_xrcd_resp resp;
		return ibv_cmd_open_xrcd(context, x, sizeof *x, attr, &cmd, sizeof cmd, &resp, sizeof resp);
	});
	return xrcd ? &xrcd->xrcd : nullptr;
}

int closeXrcd(ibv_xrcd *ibxrcd)
{
	auto *xrcd = reinterpret_cast<verbs_xrcd *>(ibxrcd);
	if (int ret = ibv_cmd_close_xrcd(xrcd))
		return ret;
	delete xrcd;
	return 0;
}

int modifySrq(ibv_srq *srq, ibv_srq_attr *attr, int mask)
{
	struct ibv_modify_srq cmd;
	return ibv_cmd_modify_srq(srq, attr, mask, &cmd, sizeof cmd);
}

int querySrq(ibv_srq *srq, ibv_srq_attr *attr)
{
	struct ibv_query_srq cmd;
	return ibv_cmd_query_srq(srq, attr, &cmd, sizeof cmd);
}

int destroySrq(ibv_srq *srq)
{
	if (int ret = ibv_cmd_destroy_srq(srq))
		return ret;
	delete reinterpret_cast<verbs_srq *>(srq);
	return 0;
}

void freeContext(ibv_context *context)
{
	Context *ctx = ctxOf(context);
	for (const Spare &sp : *ctx->spares) /* spares never handed out */
		if (stillOurs(sp))
			close(sp.fd);
	delete ctx->spares;
	delete ctx->spareLock;
	delete ctx->area;
	verbs_uninit_context(&ctx->vctx);
	free(ctx);
}

const verbs_context_ops kOps = [] {
	verbs_context_ops o{};
	o.alloc_mw = allocMw;
	o.alloc_pd = allocPd;
	o.attach_mcast = ibv_cmd_attach_mcast;
	o.bind_mw = bindMw;
	o.create_ah = createAh;
	o.create_cq = createCq;
	o.create_cq_ex = createCqEx;
	o.create_qp = createQp;
	o.create_qp_ex = createQpEx;
	o.create_srq = createSrq;
	o.create_srq_ex = createSrqEx;
	o.close_xrcd = closeXrcd;
	o.get_srq_num = getSrqNum;
	o.open_xrcd = openXrcd;
	o.dealloc_mw = deallocMw;
	o.dealloc_pd = deallocPd;
	o.dereg_mr = deregMr;
	o.destroy_ah = destroyAh;
	o.destroy_cq = destroyCq;
	o.destroy_qp = destroyQp;
	o.destroy_srq = destroySrq;
	o.detach_mcast = ibv_cmd_detach_mcast;
	o.free_context = freeContext;
	o.modify_qp = modifyQp;
	o.modify_srq = modifySrq;
	o.poll_cq = pollCq;
	o.post_recv = postRecv;
	o.post_send = postSend;
	o.post_srq_recv = ibv_cmd_post_srq_recv;
	o.query_device_ex = queryDeviceEx;
	o.query_port = queryPort;
	o.query_qp = queryQp;
	o.query_srq = querySrq;
	o.reg_mr = regMr;
	o.req_notify_cq = ibv_cmd_req_notify_cq;
	o.resize_cq = resizeCq;
	return o;
}();

verbs_context *allocContext(ibv_device *ibdev, int cmdFd, void *)
{
	auto *ctx = static_cast<Context *>(_verbs_init_and_alloc_context(
		ibdev, cmdFd, sizeof(Context), reinterpret_cast<verbs_context *>(offsetof(Context, vctx)), 0));
	if (!ctx)
		return nullptr;
	ctx->spareLock = new std::mutex;
	ctx->spares = new std::vector<Spare>;
	ctx->area = new RingArea;
	struct {
		struct ibv_get_context core;
		ibemu_get_context_req drv;
	} cmd{};
	struct {
		uint32_t async_fd, num_comp_vectors; /* ib_uverbs_get_context_resp */
		ibemu_get_context_resp drv;
	} resp{};
	cmd.drv.magic = IBEMU_UVERBS_MAGIC;
	cmd.drv.version = IBEMU_UVERBS_VERSION;
	cmd.drv.nspares = makeSpares(cmd.drv.spares, kSpares) ? kSpares : 0;
	cmd.drv.area_fd = ctx->area->create();
	int ret = ibv_cmd_get_context(&ctx->vctx, &cmd.core, sizeof cmd,
				      reinterpret_cast<ib_uverbs_get_context_resp *>(&resp), sizeof resp);
	settleSpares(ctx, cmd.drv.spares, cmd.drv.nspares, ret == 0);
	if (cmd.drv.area_fd >= 0)
		close(cmd.drv.area_fd); /* the mapping and the device's copy stay */
	if (ret != 0 || resp.drv.area_bytes != RingArea::bytes())
		ctx->area->drop(); /* every ring gets a memfd of its own */
	if (ret == EINVAL)
		fprintf(stderr, "libibemu: %s refused a version %u context: an older ibemud?\n", ibdev->name,
			IBEMU_UVERBS_VERSION);
	/* On CUSE the device answers its own descriptor as the async event
	 * file, and a copy of it keeps ibv_close_device() from closing one
	 * number twice; the seccomp transport makes a file of its own, as the
	 * kernel does (ibv_cmd_get_context() took its number). */
	if (ret != 0 || int(resp.async_fd) == cmdFd)
		ctx->vctx.context.async_fd = ret == 0 ? fcntl(cmdFd, F_DUPFD_CLOEXEC, 0) : -1;
	if (ret == 0 && ctx->vctx.context.async_fd < 0)
		ret = errno;
	if (ret == 0 && resp.drv.magic != IBEMU_UVERBS_MAGIC) {
		fprintf(stderr, "libibemu: %s is not ibemud's verbs device, or an older ibemud's\n", ibdev->name);
		ret = EPROTO;
	}
	if (ret) {
		freeContext(&ctx->vctx.context);
		errno = ret;
		return nullptr;
	}
	verbs_set_ops(&ctx->vctx, &kOps);
	return &ctx->vctx;
}

/* --- the device --- */

verbs_device *allocDevice(verbs_sysfs_dev *)
{
	return static_cast<verbs_device *>(calloc(1, sizeof(verbs_device)));
}

void uninitDevice(verbs_device *dev)
{
	free(dev);
}

/* libibverbs matches "rdma_device:N<ibdev name>" against this pattern
 * (VERBS_NAME_MATCH): every ibemu device is named ibemuN. */
const verbs_match_ent kMatch[] = {
	{ nullptr, { "rdma_device:*Nibemu*" }, 0, 0, VERBS_MATCH_MODALIAS },
	{},
};

const verbs_device_ops kDeviceOps = {
	"ibemu", 1, 1, kMatch, nullptr, nullptr, allocContext, nullptr, allocDevice, uninitDevice,
};

__attribute__((constructor)) void registerProvider()
{
	verbs_register_driver_34(&kDeviceOps);
}

} /* namespace */

} /* namespace ibemu::provider */
