// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// A local HCA's verbs attributes and device-wide tables.
#include "emu/verbs_device.h"

#include <algorithm>

#include "fabric/node.h"

#include <cerrno>
#include <cstring>

namespace ibemu::emu {

namespace {

uint64_t be64(uint64_t v)
{
	return __builtin_bswap64(v);
}

} /* namespace */

VerbsDevice::VerbsDevice(boost::asio::io_context &io, Host &host, fabric::Node &node)
	: io_(io), host_(host), node_(node), seen_(node.numPorts)
{
	for (unsigned n = 1; n <= node.numPorts; n++) {
		const fabric::Port &p = node.port(n);
		seen_[n - 1] = { p.state == fabric::PortState::Active, p.lid, p.lmc, p.smLid, p.masterSmSl, p.pkeys };
	}
}

VerbsDevice::~VerbsDevice() = default;

unsigned VerbsDevice::numPorts() const
{
	return node_.numPorts;
}

fabric::Port *VerbsDevice::port(unsigned num) const
{
	return node_.hasPort(num) && num >= 1 ? &node_.port(num) : nullptr;
}

void VerbsDevice::queryDevice(ib_uverbs_query_device_resp &r) const
{
	memset(&r, 0, sizeof r);
	r.fw_ver = 0;
	r.node_guid = be64(node_.nodeGuid);
	r.sys_image_guid = be64(node_.sysImageGuid ? node_.sysImageGuid : node_.nodeGuid);
	r.max_mr_size = ~uint64_t(0);
	r.page_size_cap = ~uint64_t(kPageSize - 1);
	r.vendor_id = node_.vendorId;
	r.vendor_part_id = node_.deviceId;
	r.hw_ver = node_.revision;
	r.max_qp = limits_.maxQp;
	r.max_qp_wr = limits_.maxQpWr;
	/* BAD_PKEY_CNTR | BAD_QKEY_CNTR | SHUTDOWN_PORT | SYS_IMAGE_GUID |
	 * RC_RNR_NAK_GEN | PORT_ACTIVE_EVENT | SRQ_RESIZE | MEM_WINDOW |
	 * MEM_WINDOW_TYPE_2B (rxe's memory window flags) | XRC (rxe has none) */
	r.device_cap_flags = (1u << 1) | (1u << 2) | (1u << 7) | (1u << 10) | (1u << 12) | (1u << 14) | (1u << 13) |
		(1u << 17) | (1u << 24) | (1u << 20);
	r.max_sge = limits_.maxSge;
	r.max_sge_rd = limits_.maxSge;
	r.max_cq = limits_.maxCq;
	r.max_cqe = limits_.maxCqe;
	r.max_mr = limits_.maxMr;
	r.max_mw = limits_.maxMw;
	r.max_pd = limits_.maxPd;
	r.max_qp_rd_atom = limits_.maxQpRdAtom;
	r.max_res_rd_atom = limits_.maxQpRdAtom * limits_.maxQp;
	r.max_qp_init_rd_atom = limits_.maxQpInitRdAtom;
	r.atomic_cap = IB_ATOMIC_HCA;
	r.max_ah = limits_.maxAh;
	r.max_srq = limits_.maxSrq;
	r.max_srq_wr = limits_.maxSrqWr;
	r.max_srq_sge = limits_.maxSrqSge;
	r.max_mcast_grp = limits_.maxMcastGrp;
	r.max_mcast_qp_attach = limits_.maxMcastQpAttach;
	r.max_total_mcast_qp_attach = limits_.maxTotalMcastQpAttach;
	r.max_pkeys = node_.numPorts ? node_.port(1).pkeyCap() : 0;
	r.local_ca_ack_delay = 15;
	r.phys_port_cnt = node_.numPorts;
}

namespace {

/* enum ib_port_speed */
uint8_t ibSpeed(fabric::Speed s)
{
	using fabric::Speed;
	switch (s) {
	case Speed::SDR:
		return 1;
	case Speed::DDR:
		return 2;
	case Speed::QDR:
		return 4;
	case Speed::FDR10:
		return 8;
	case Speed::FDR:
		return 16;
	case Speed::EDR:
		return 32;
	case Speed::HDR:
		return 64;
	case Speed::NDR:
		return 128;
	}
	return 1;
}

} /* namespace */

int VerbsDevice::queryPort(unsigned num, ib_uverbs_query_port_resp &r) const
{
	const fabric::Port *p = port(num);
	if (!p)
		return -EINVAL;
	memset(&r, 0, sizeof r);
	r.port_cap_flags = p->capMask;
	r.max_msg_sz = limits_.maxMsgSize;
	r.bad_pkey_cntr = p->pkeyViolations;
	r.qkey_viol_cntr = p->qkeyViolations;
	r.gid_tbl_len = p->guidCap;
	r.pkey_tbl_len = p->pkeyCap();
	r.lid = p->lid;
	r.sm_lid = p->smLid;
	r.state = static_cast<uint8_t>(p->state);
	r.max_mtu = p->mtuCap;
	r.active_mtu = p->linkUp() ? std::min(p->neighborMtu, p->mtuCap) : uint8_t(fabric::kMtu256);
	r.lmc = p->lmc;
	r.max_vl_num = p->vlCap;
	r.sm_sl = p->masterSmSl;
	r.subnet_timeout = p->subnetTimeout;
	r.init_type_reply = p->initTypeReply;
	r.active_width = p->linkWidthActive;
	r.active_speed = ibSpeed(p->speedActive);
	r.phys_state = static_cast<uint8_t>(p->physState);
	r.link_layer = 1; /* IB_LINK_LAYER_INFINIBAND */
	return 0;
}

int VerbsDevice::room(UType t, uid_t owner) const
{
	uint32_t limit = 0;
	switch (t) {
	case UType::Pd:
		limit = limits_.maxPd;
		break;
	case UType::Mr:
		limit = limits_.maxMr;
		break;
	case UType::Cq:
		limit = limits_.maxCq;
		break;
	case UType::Qp:
		limit = limits_.maxQp;
		break;
	case UType::Srq:
		limit = limits_.maxSrq;
		break;
	case UType::Ah:
		limit = limits_.maxAh;
		break;
	case UType::Mw:
		limit = limits_.maxMw;
		break;
	case UType::Xrcd:
		limit = limits_.maxPd;
		break;
	}
	size_t i = static_cast<size_t>(t);
	if (objects_[i] >= long(limit))
		return -ENOMEM;
	if (owner == 0)
		return 0;
	auto it = byUser_.find(owner);
	long share = std::max(1L, long(double(limit) * kUserShare));
	return it != byUser_.end() && it->second[i] >= share ? -EAGAIN : 0;
}

void VerbsDevice::counted(UType t, int delta, uid_t owner)
{
	size_t i = static_cast<size_t>(t);
	objects_[i] += delta;
	if (owner == 0)
		return;
	auto &mine = byUser_[owner];
	mine[i] += delta;
	if (std::all_of(mine.begin(), mine.end(), [](long n) { return n == 0; }))
		byUser_.erase(owner);
}

/* A removed device's QPs stop: no timers, no more work. */
void VerbsDevice::kill()
{
	dead_ = true;
	for (auto &[qpn, qp] : qps_)
		forget(*qp);
	if (events_)
		for (UverbsFile *f : files_)
			events_->deviceDied(*f);
}

uint32_t VerbsDevice::addQp(Qp *qp)
{
	while (qps_.count(nextQpn_) || nextQpn_ < 2)
		nextQpn_ = (nextQpn_ + 1) & 0xffffff;
	qp->qpn = nextQpn_;
	qps_[qp->qpn] = qp;
	nextQpn_ = (nextQpn_ + 1) & 0xffffff;
	return qp->qpn;
}

void VerbsDevice::removeQp(Qp *qp)
{
	for (auto &[index, mw] : mws_) /* a type 2 window of a QP that is gone serves no other */
		if (mw->qp == qp)
			mw->qp = nullptr;
	auto it = qps_.find(qp->qpn);
	if (it != qps_.end() && it->second == qp)
		qps_.erase(it);
}

Qp *VerbsDevice::qp(uint32_t qpn) const
{
	auto it = qps_.find(qpn);
	return it == qps_.end() ? nullptr : it->second;
}

/* lkey == rkey; the low byte is a key that changes with every registration,
 * so a stale key of a freed MR does not find its successor. */
void VerbsDevice::addMr(Mr *mr)
{
	do {
		nextKey_ += 0x101;
		if (isMwKey(nextKey_)) /* the windows' keys */
			nextKey_ = 0x1000;
	} while (keys_.count(nextKey_) || nextKey_ == 0);
	mr->lkey = mr->rkey = nextKey_;
	keys_[nextKey_] = mr;
}

void VerbsDevice::removeMr(Mr *mr)
{
	keys_.erase(mr->lkey);
}

Mr *VerbsDevice::mrByKey(uint32_t key) const
{
	auto it = keys_.find(key);
	return it == keys_.end() ? nullptr : it->second;
}

/* rxe_alloc_mw(): the lowest free index from the last, a new key byte */
void VerbsDevice::addMw(Mw *mw)
{
	while (mws_.count(nextMwIndex_))
		nextMwIndex_ = nextMwIndex_ == 0xffffff ? kMwIndexBase : nextMwIndex_ + 1;
	mw->rkey = (nextMwIndex_ << 8) | nextMwKey_++;
	mws_[nextMwIndex_] = mw;
	nextMwIndex_ = nextMwIndex_ == 0xffffff ? kMwIndexBase : nextMwIndex_ + 1;
}

void VerbsDevice::removeMw(Mw *mw)
{
	mws_.erase(mw->rkey >> 8);
}

Mw *VerbsDevice::mwByKey(uint32_t key) const
{
	auto it = mws_.find(key >> 8);
	return it == mws_.end() ? nullptr : it->second;
}

void VerbsDevice::unbindMw(Mw &mw)
{
	if (mw.mr)
		mw.mr->mws--;
	mw.mr = nullptr;
	mw.qp = nullptr;
	mw.addr = mw.length = 0;
	mw.access = 0;
}

void VerbsDevice::portEvent(unsigned portNum, AsyncEvent ev)
{
	if (events_)
		for (UverbsFile *f : files_)
			events_->asyncEvent(*f, portNum, ev, nullptr);
}

void VerbsDevice::objectEvent(UverbsFile *file, UObject &obj, AsyncEvent ev)
{
	if (file && events_)
		events_->asyncEvent(*file, obj.userHandle, ev, &obj);
}

std::vector<AsyncEvent> VerbsDevice::portChanged(fabric::Port &p, bool clientReregister)
{
	std::vector<AsyncEvent> events;
	if (p.node != &node_ || p.num < 1 || p.num > seen_.size())
		return events;
	PortSeen &was = seen_[p.num - 1];
	PortSeen now{ p.state == fabric::PortState::Active, p.lid, p.lmc, p.smLid, p.masterSmSl, p.pkeys };
	if (now.active != was.active)
		events.push_back(now.active ? IB_EVENT_PORT_ACTIVE : IB_EVENT_PORT_ERR);
	if (now.lid != was.lid || now.lmc != was.lmc)
		events.push_back(IB_EVENT_LID_CHANGE);
	if (now.smLid != was.smLid || now.smSl != was.smSl)
		events.push_back(IB_EVENT_SM_CHANGE);
	if (now.pkeys != was.pkeys)
		events.push_back(IB_EVENT_PKEY_CHANGE);
	if (clientReregister)
		events.push_back(IB_EVENT_CLIENT_REREGISTER);
	was = std::move(now);
	return events;
}

} /* namespace ibemu::emu */
