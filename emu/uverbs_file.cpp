// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// The file operations of /dev/infiniband/uverbsN (the kernel's
// uverbs_main.c): write() with the header checks in ib_uverbs_write's
// order and the method table that dispatches it (uverbs_uapi), read() and
// poll() of the async events. The handlers are in uverbs_cmd*.cpp, teardown
// in uverbs_destroy.cpp.
#include "emu/uverbs_file.h"

#include "emu/verbs_device.h"

#include <array>
#include <cerrno>
#include <cstring>
#include <poll.h>

namespace ibemu::emu {

namespace {

constexpr size_t kMaxEvents = 4096;

/* ib_uverbs' event handlers: what the device raises goes to the queue
 * of the file that owns the object, or of every file for a port */
class FileEvents final : public VerbsEventSink {
public:
	void asyncEvent(UverbsFile &file, uint64_t element, AsyncEvent type, UObject *obj) override
	{
		file.asyncEvent(element, type, obj);
	}
	void deviceDied(UverbsFile &file) override { file.deviceDied(); }
};

FileEvents fileEvents;

} /* namespace */

UverbsFile::UverbsFile(VerbsDevice &dev, UserAccess &ua, PinnedVm &pinned) : dev_(dev), ua_(ua), pinned_(pinned)
{
	dev_.setEventSink(&fileEvents);
	dev_.attach(this);
	dead_ = dev_.dead();
}

ssize_t UverbsFile::read(uint8_t *buf, size_t count)
{
	ssize_t n = peek(buf, count);
	if (n > 0)
		consumeEvent();
	return n;
}

ssize_t UverbsFile::peek(uint8_t *buf, size_t count) const
{
	if (events_.empty())
		return dead_ ? -EIO : -EAGAIN;
	if (count < sizeof(ib_uverbs_async_event_desc))
		return -EINVAL;
	memcpy(buf, &events_.front().desc, sizeof(ib_uverbs_async_event_desc));
	return sizeof(ib_uverbs_async_event_desc);
}

void UverbsFile::consumeEvent()
{
	Event ev = events_.front();
	events_.pop_front();
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
		t[CMD_GET_CONTEXT] = { &UverbsFile::getContext, sizeof(ib_uverbs_get_context),
				       sizeof(ib_uverbs_get_context_resp) };
		t[CMD_QUERY_DEVICE] = { &UverbsFile::queryDevice, sizeof(ib_uverbs_query_device),
					sizeof(ib_uverbs_query_device_resp) };
		t[CMD_QUERY_PORT] = { &UverbsFile::queryPort, sizeof(ib_uverbs_query_port),
				      sizeof(ib_uverbs_query_port_resp) };
		t[CMD_ALLOC_PD] = { &UverbsFile::allocPd, sizeof(ib_uverbs_alloc_pd), sizeof(ib_uverbs_alloc_pd_resp) };
		t[CMD_DEALLOC_PD] = { &UverbsFile::deallocPd, sizeof(ib_uverbs_dealloc_pd), 0 };
		t[CMD_CREATE_AH] = { &UverbsFile::createAh, sizeof(ib_uverbs_create_ah),
				     sizeof(ib_uverbs_create_ah_resp) };
		t[CMD_MODIFY_AH] = { &UverbsFile::notSupported, 0, 0 };
		t[CMD_QUERY_AH] = { &UverbsFile::notSupported, 0, 0 };
		t[CMD_DESTROY_AH] = { &UverbsFile::destroyAh, sizeof(ib_uverbs_destroy_ah), 0 };
		t[CMD_REG_MR] = { &UverbsFile::regMr, sizeof(ib_uverbs_reg_mr), sizeof(ib_uverbs_reg_mr_resp) };
		t[CMD_REG_SMR] = { &UverbsFile::notSupported, 0, 0 };
		t[CMD_QUERY_MR] = { &UverbsFile::notSupported, 0, 0 };
		t[CMD_DEREG_MR] = { &UverbsFile::deregMr, sizeof(ib_uverbs_dereg_mr), 0 };
		t[CMD_BIND_MW] = { &UverbsFile::notSupported, 0, 0 };
		t[CMD_ALLOC_MW] = { &UverbsFile::allocMw, sizeof(ib_uverbs_alloc_mw), sizeof(ib_uverbs_alloc_mw_resp) };
		t[CMD_DEALLOC_MW] = { &UverbsFile::deallocMw, sizeof(ib_uverbs_dealloc_mw), 0 };
		t[CMD_CREATE_COMP_CHANNEL] = { &UverbsFile::createCompChannel, sizeof(ib_uverbs_create_comp_channel),
					       sizeof(ib_uverbs_create_comp_channel_resp) };
		t[CMD_CREATE_CQ] = { &UverbsFile::createCq, sizeof(ib_uverbs_create_cq),
				     sizeof(ib_uverbs_create_cq_resp) };
		t[CMD_RESIZE_CQ] = { &UverbsFile::resizeCq, sizeof(ib_uverbs_resize_cq),
				     sizeof(ib_uverbs_resize_cq_resp) };
		t[CMD_DESTROY_CQ] = { &UverbsFile::destroyCq, sizeof(ib_uverbs_destroy_cq),
				      sizeof(ib_uverbs_destroy_cq_resp) };
		t[CMD_POLL_CQ] = { &UverbsFile::pollCq, sizeof(ib_uverbs_poll_cq), sizeof(ib_uverbs_poll_cq_resp) };
		t[CMD_PEEK_CQ] = { &UverbsFile::notSupported, 0, 0 };
		t[CMD_REQ_NOTIFY_CQ] = { &UverbsFile::reqNotifyCq, sizeof(ib_uverbs_req_notify_cq), 0 };
		t[CMD_CREATE_QP] = { &UverbsFile::createQp, sizeof(ib_uverbs_create_qp),
				     sizeof(ib_uverbs_create_qp_resp) };
		t[CMD_QUERY_QP] = { &UverbsFile::queryQp, sizeof(ib_uverbs_query_qp), sizeof(ib_uverbs_query_qp_resp) };
		t[CMD_MODIFY_QP] = { &UverbsFile::modifyQp, sizeof(ib_uverbs_modify_qp), 0 };
		t[CMD_DESTROY_QP] = { &UverbsFile::destroyQp, sizeof(ib_uverbs_destroy_qp),
				      sizeof(ib_uverbs_destroy_qp_resp) };
		t[CMD_POST_SEND] = { &UverbsFile::postSend, sizeof(ib_uverbs_post_send),
				     sizeof(ib_uverbs_post_send_resp) };
		t[CMD_POST_RECV] = { &UverbsFile::postRecv, sizeof(ib_uverbs_post_recv),
				     sizeof(ib_uverbs_post_recv_resp) };
		t[CMD_ATTACH_MCAST] = { &UverbsFile::attachMcast, sizeof(ib_uverbs_attach_mcast), 0 };
		t[CMD_DETACH_MCAST] = { &UverbsFile::detachMcast, sizeof(ib_uverbs_detach_mcast), 0 };
		t[CMD_CREATE_SRQ] = { &UverbsFile::createSrq, sizeof(ib_uverbs_create_srq),
				      sizeof(ib_uverbs_create_srq_resp) };
		t[CMD_MODIFY_SRQ] = { &UverbsFile::modifySrq, sizeof(ib_uverbs_modify_srq), 0 };
		t[CMD_QUERY_SRQ] = { &UverbsFile::querySrq, sizeof(ib_uverbs_query_srq),
				     sizeof(ib_uverbs_query_srq_resp) };
		t[CMD_DESTROY_SRQ] = { &UverbsFile::destroySrq, sizeof(ib_uverbs_destroy_srq),
				       sizeof(ib_uverbs_destroy_srq_resp) };
		t[CMD_POST_SRQ_RECV] = { &UverbsFile::postSrqRecv, sizeof(ib_uverbs_post_recv),
					 sizeof(ib_uverbs_post_recv_resp) };
		t[CMD_OPEN_XRCD] = { &UverbsFile::openXrcd, sizeof(ib_uverbs_open_xrcd),
				     sizeof(ib_uverbs_open_xrcd_resp) };
		t[CMD_CLOSE_XRCD] = { &UverbsFile::closeXrcd, sizeof(ib_uverbs_close_xrcd), 0 };
		t[CMD_CREATE_XSRQ] = { &UverbsFile::createXsrq, sizeof(ib_uverbs_create_xsrq),
				       sizeof(ib_uverbs_create_srq_resp) };
		return t;
	}();
	static const Method addSpares = { &UverbsFile::addSpares, sizeof(ibemu_add_spares),
					  sizeof(ibemu_add_spares_resp) };
	static const Method attachQpRing = { &UverbsFile::attachQpRing, sizeof(ibemu_attach_qp_ring), 0 };
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
	if (idx == IBEMU_CMD_ADD_SPARES || idx == IBEMU_CMD_ATTACH_QP_RING) {
		known = true;
		return idx == IBEMU_CMD_ADD_SPARES ? &addSpares : &attachQpRing;
	}
	if (idx >= CMD_LEGACY_COUNT)
		return nullptr;
	known = true;
	return legacy[idx].fn ? &legacy[idx] : nullptr;
}

/* legacy: in_words counts the header too, in 4-byte words; extended: both
 * headers, then in_words and provider_in_words in 8-byte words */
size_t UverbsFile::commandSize(const uint8_t *buf, size_t len)
{
	ib_uverbs_cmd_hdr hdr;
	if (len < sizeof hdr)
		return 0;
	memcpy(&hdr, buf, sizeof hdr);
	if (!(hdr.command & IB_USER_VERBS_CMD_FLAG_EXTENDED))
		return size_t(hdr.in_words) * 4;
	ib_uverbs_ex_cmd_hdr ex;
	if (len < sizeof hdr + sizeof ex)
		return 0;
	memcpy(&ex, buf + sizeof hdr, sizeof ex);
	return sizeof hdr + sizeof ex + (size_t(hdr.in_words) + ex.provider_in_words) * 8;
}

/* ib_uverbs_write()'s checks of the headers (with verify_hdr()), in its
 * order, on the first `have` of the write()'s count bytes */
int UverbsFile::checkHeaders(const uint8_t *buf, size_t have, size_t count, const Method *&m)
{
	ib_uverbs_cmd_hdr hdr;
	if (count < sizeof hdr)
		return -EINVAL;
	if (have < sizeof hdr)
		return -EFAULT;
	memcpy(&hdr, buf, sizeof hdr);
	if (hdr.command & ~(IB_USER_VERBS_CMD_FLAG_EXTENDED | IB_USER_VERBS_CMD_COMMAND_MASK))
		return -EINVAL;
	bool known;
	m = method(hdr.command, known);
	if (!m) /* unknown, or a method this device does not have */
		return -EOPNOTSUPP;
	if (!(hdr.command & IB_USER_VERBS_CMD_FLAG_EXTENDED)) {
		if (commandSize(buf, have) != count) /* in_words counts the header too */
			return -EINVAL;
		bool oldDestroyCq = (hdr.command & IB_USER_VERBS_CMD_COMMAND_MASK) == CMD_DESTROY_CQ && count == 16;
		if (count < m->reqSize + sizeof hdr && !oldDestroyCq)
			return -ENOSPC;
		if (size_t(hdr.out_words) * 4 < m->respSize)
			return -ENOSPC;
		return 0;
	}
	ib_uverbs_ex_cmd_hdr ex;
	if (count < sizeof hdr + sizeof ex)
		return -EINVAL;
	if (have < sizeof hdr + sizeof ex)
		return -EFAULT;
	memcpy(&ex, buf + sizeof hdr, sizeof ex);
	if (commandSize(buf, have) != count)
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
	return 0;
}

/* ib_uverbs_write() */
ssize_t UverbsFile::write(pid_t tid, const uint8_t *buf, size_t count)
{
	const Method *m;
	if (int rc = checkHeaders(buf, count, count, m))
		return rc;
	ib_uverbs_cmd_hdr hdr;
	memcpy(&hdr, buf, sizeof hdr);
	Request r{};
	r.tid = tid;
	if (!(hdr.command & IB_USER_VERBS_CMD_FLAG_EXTENDED)) {
		r.in = buf + sizeof hdr;
		r.inLen = count - sizeof hdr;
		r.outLen = size_t(hdr.out_words) * 4;
		if (m->respSize) /* the response pointer leads the request */
			memcpy(&r.response, r.in, sizeof r.response);
	} else {
		ib_uverbs_ex_cmd_hdr ex;
		memcpy(&ex, buf + sizeof hdr, sizeof ex);
		r.in = buf + sizeof hdr + sizeof ex;
		r.inLen = count - sizeof hdr - sizeof ex;
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

} /* namespace ibemu::emu */
