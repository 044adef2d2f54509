// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// rdma_cm connections over the IB CM (the cma_ib_* and cma_*_handler
// functions of drivers/infiniband/core/cma.c): rdma_listen() on a shared
// IB CM listener per service ID, rdma_connect() as a REQ with the cma_hdr
// in its private data (or a SIDR_REQ for a UD ID), rdma_accept() as the
// REP, RTU or SIDR_REP, rejects and disconnects, rdma_init_qp_attr(), and
// the IB CM's events (emu/ib_cm.h) turned into rdma_cm events: a REQ
// makes a new ID for its listener (cma_ib_req_handler()), the rest go to
// the ID of the connection (cma_ib_handler(), cma_sidr_rep_handler()).
#include "emu/cma.h"

#include "emu/hca_attrs.h"
#include "emu/host.h"
#include "emu/verbs_enums.h"

#include <algorithm>
#include <arpa/inet.h>
#include <cerrno>
#include <cstring>

namespace ibemu::emu {

namespace {

constexpr uint8_t kCmResponseTimeout = 20; /* CMA_CM_RESPONSE_TIMEOUT */
constexpr uint8_t kMaxCmRetries = 15; /* CMA_MAX_CM_RETRIES */
constexpr uint8_t kMraSetting = 24; /* CMA_CM_MRA_SETTING */
constexpr size_t kCmaHdr = 36; /* struct cma_hdr in a REQ's private data */

/* the 16-byte form of an address in a cma_hdr (IPv4 in the last 4) */
void hdrAddr(const CmaAddr &a, uint8_t *out)
{
	memset(out, 0, 16);
	if (a.family() == AF_INET)
		memcpy(out + 12, &reinterpret_cast<const sockaddr_in *>(a.ss.data)->sin_addr, 4);
	else if (a.family() == AF_INET6)
		memcpy(out, &reinterpret_cast<const sockaddr_in6 *>(a.ss.data)->sin6_addr, 16);
}

CmaAddr addrFromHdr(const uint8_t *in, bool v6, uint16_t port)
{
	CmaAddr a;
	if (v6) {
		auto *s = reinterpret_cast<sockaddr_in6 *>(a.ss.data);
		s->sin6_family = AF_INET6;
		memcpy(&s->sin6_addr, in, 16);
	} else {
		auto *s = reinterpret_cast<sockaddr_in *>(a.ss.data);
		s->sin_family = AF_INET;
		memcpy(&s->sin_addr, in + 12, 4);
	}
	a.setPort(port);
	return a;
}

/* the P_Key table index of pkey on a port (its membership bit aside) */
uint16_t pkeyIndexOf(const MadPort &mp, uint16_t pkey)
{
	unsigned n = queryPort(mp).pkeyTblLen;
	for (unsigned i = 0; i < n; i++)
		if ((queryPkey(mp, i) & 0x7fff) == (pkey & 0x7fff))
			return uint16_t(i);
	return 0;
}

} /* namespace */

/* ---------------- connections ---------------- */

int Cma::listen(CmaId &id, uint32_t backlog)
{
	if (id.state == CmaState::Idle) { /* rdma_listen() binds an idle ID to any IPv4 address */
		CmaAddr any;
		uint16_t f = AF_INET;
		memcpy(any.ss.data, &f, 2);
		if (int rc = bind(id, any))
			return rc;
	}
	if (id.state != CmaState::AddrBound)
		return -EINVAL;
	auto [from, to] = byPort_.equal_range(portKey(id.ps, id.src.port()));
	for (auto it = from; it != to; ++it) { /* a second listener on the port */
		const CmaId *o = it->second;
		if (o == &id || o->state != CmaState::Listen || apart(*o, id))
			continue;
		if (o->src.isAny() || id.src.isAny() || memcmp(o->src.ss.data, id.src.ss.data, id.src.size()) == 0)
			return -EADDRINUSE;
	}
	uint64_t sid = serviceId(id, id.src);
	auto it = cmListens_.find(sid);
	if (it == cmListens_.end()) {
		CmId *c = cm_.create(this);
		if (int rc = cm_.listen(*c, sid, ~0ull)) {
			cm_.destroy(c);
			return rc;
		}
		it = cmListens_.emplace(sid, std::make_pair(c, 0u)).first;
	}
	it->second.second++;
	id.backlog = backlog;
	id.state = CmaState::Listen;
	return 0;
}

/* rdma_connect(): cma_connect_ib() */
int Cma::connect(CmaId &id, const rdma_ucm_conn_param &p)
{
	if (id.state != CmaState::RouteResolved)
		return -EINVAL;
	size_t off = id.dst.family() == kAfIb ? 0 : kCmaHdr;
	size_t room = id.qpType == IB_QPT_UD ? cm::kSidrReqPrivate : cm::kReqPrivate;
	if (p.private_data_len > room - off)
		return -EINVAL;
	MadPort *mp = madPort(id);
	if (!mp)
		return -EINVAL;
	const PathRecord &path = id.path;
	uint8_t hdr[kCmaHdr] = {};
	if (off) { /* struct cma_hdr: version, IP version, our port, both addresses */
		hdr[1] = uint8_t((id.dst.family() == AF_INET6 ? 6 : 4) << 4);
		hdr[2] = uint8_t(id.src.port() >> 8);
		hdr[3] = uint8_t(id.src.port());
		hdrAddr(id.src, hdr + 4);
		hdrAddr(id.dst, hdr + 20);
	}
	MadAddress av;
	av.lid = path.dlid;
	av.sl = path.sl;
	av.pkeyIndex = pkeyIndexOf(*mp, path.pkey);
	if (id.qpType == IB_QPT_UD) { /* cma_resolve_ib_udp(): a SIDR_REQ */
		cm::SidrReq sreq;
		sreq.serviceId = serviceId(id, id.dst);
		sreq.pkey = path.pkey;
		memcpy(sreq.privateData.data(), hdr, off);
		memcpy(sreq.privateData.data() + off, p.private_data, p.private_data_len);
		setCm(id, cm_.create(this));
		if (int rc = cm_.sendSidrReq(*id.cm, *mp, av, sreq, cm::timeToMs(kCmResponseTimeout), kMaxCmRetries)) {
			cm_.destroy(id.cm);
			setCm(id, nullptr);
			return rc;
		}
		id.state = CmaState::Connect;
		return 0;
	}
	cm::Req req;
	req.serviceId = serviceId(id, id.dst);
	req.localCaGuid = nodeGuid(id);
	req.localQpn = p.qp_num;
	req.responderResources = p.responder_resources;
	req.initiatorDepth = p.initiator_depth;
	req.remoteCmResponseTimeout = kCmResponseTimeout;
	req.localCmResponseTimeout = kCmResponseTimeout;
	req.transportType = id.qpType == IB_QPT_UC ? 1 : 0;
	req.endToEndFlowControl = p.flow_control;
	req.startingPsn = id.seqNum;
	req.retryCount = p.retry_count & 7;
	req.rnrRetryCount = p.rnr_retry_count & 7;
	req.maxCmRetries = kMaxCmRetries;
	req.srq = p.srq;
	req.pkey = path.pkey;
	req.pathMtu = path.mtu;
	req.primary.localLid = path.slid;
	req.primary.remoteLid = path.dlid;
	req.primary.localGid = path.sgid;
	req.primary.remoteGid = path.dgid;
	req.primary.flowLabel = path.flowLabel;
	req.primary.packetRate = path.rate;
	req.primary.trafficClass = path.trafficClass;
	req.primary.hopLimit = path.hopLimit;
	req.primary.sl = path.sl;
	req.primary.subnetLocal = path.hopLimit <= 1;
	req.primary.localAckTimeout = uint8_t(std::min(31, path.packetLifeTime + 1));
	memcpy(req.privateData.data(), hdr, off);
	memcpy(req.privateData.data() + off, p.private_data, p.private_data_len);
	setCm(id, cm_.create(this));
	id.qpNum = p.qp_num;
	id.peer.retryCount = req.retryCount;
	id.peer.ackTimeout = req.primary.localAckTimeout;
	if (int rc = cm_.sendReq(*id.cm, *mp, av, req)) {
		cm_.destroy(id.cm);
		setCm(id, nullptr);
		return rc;
	}
	id.state = CmaState::Connect;
	return 0;
}

/* rdma_accept(): the passive side's REP, or (p null) the active side's
 * RTU once its program has moved its QP to RTS */
int Cma::accept(CmaId &id, const rdma_ucm_conn_param *p)
{
	if (id.state != CmaState::Connect || !id.cm)
		return -EINVAL;
	if (id.qpType == IB_QPT_UD) { /* cma_send_sidr_rep(): our QP and its Q_Key */
		cm::SidrRep rep;
		if (p && p->private_data_len > cm::kSidrRepPrivate)
			return -EINVAL;
		if (p) {
			id.qpNum = p->qp_num;
			memcpy(rep.privateData.data(), p->private_data, p->private_data_len);
		}
		rep.status = cm::SIDR_SUCCESS;
		rep.qpn = id.qpNum;
		rep.qkey = p && p->qkey ? p->qkey : kUdpQkey;
		return cm_.sendSidrRep(*id.cm, rep);
	}
	if (!p) {
		if (int rc = cm_.sendRtu(*id.cm))
			return rc;
		id.state = CmaState::Established;
		return 0;
	}
	if (p->private_data_len > cm::kRepPrivate)
		return -EINVAL;
	cm::Rep rep;
	rep.localQpn = p->qp_num;
	rep.startingPsn = id.seqNum;
	rep.responderResources = p->responder_resources;
	rep.initiatorDepth = p->initiator_depth;
	rep.targetAckDelay = kCmResponseTimeout;
	rep.endToEndFlowControl = p->flow_control;
	rep.rnrRetryCount = std::min<uint8_t>(7, p->rnr_retry_count);
	rep.srq = p->srq;
	rep.localCaGuid = nodeGuid(id);
	memcpy(rep.privateData.data(), p->private_data, p->private_data_len);
	id.qpNum = p->qp_num;
	/* what INIT_QP_ATTR gives for RTR and RTS from now on */
	id.peer.responderResources = p->responder_resources;
	id.peer.initiatorDepth = p->initiator_depth;
	return cm_.sendRep(*id.cm, rep);
}

int Cma::reject(CmaId &id, uint8_t reason, const uint8_t *priv, size_t len)
{
	if (!id.cm)
		return -EINVAL;
	if (id.qpType == IB_QPT_UD) {
		if (len > cm::kSidrRepPrivate)
			return -EINVAL;
		cm::SidrRep rep;
		rep.status = cm::SIDR_REJECT;
		memcpy(rep.privateData.data(), priv, len);
		return cm_.sendSidrRep(*id.cm, rep);
	}
	if (len > cm::kRejPrivate)
		return -EINVAL;
	return cm_.sendRej(*id.cm, reason, priv, len);
}

/* rdma_disconnect(): start a disconnection, or answer the peer's */
int Cma::disconnect(CmaId &id)
{
	if (!id.cm)
		return -EINVAL;
	if (cm_.sendDreq(*id.cm) != 0)
		cm_.sendDrep(*id.cm);
	return 0;
}

int Cma::notify(CmaId &id, uint32_t)
{
	return id.cm ? 0 : -EINVAL;
}

/* rdma_init_qp_attr(): cma_ib_init_qp_attr() before a connection,
 * ib_cm_init_qp_attr() during one */
int Cma::initQpAttr(const CmaId &id, uint32_t state, ib_uverbs_qp_attr &a) const
{
	MadPort *mp = madPort(id);
	if (!mp)
		return -EINVAL;
	a = {};
	a.qp_state = state;
	bool connected = id.cm && id.qpType != IB_QPT_UD;
	switch (state) {
	case IB_QPS_INIT:
		a.qp_attr_mask = IB_QP_STATE | IB_QP_PKEY_INDEX | IB_QP_PORT;
		a.pkey_index = pkeyIndexOf(*mp, id.havePath ? id.path.pkey : id.pkey);
		a.port_num = id.portNum;
		if (id.qpType == IB_QPT_UD) {
			a.qp_attr_mask |= IB_QP_QKEY;
			a.qkey = kUdpQkey;
		} else {
			a.qp_attr_mask |= IB_QP_ACCESS_FLAGS;
			if (connected) {
				a.qp_access_flags = IB_ACCESS_REMOTE_WRITE;
				if (id.peer.responderResources)
					a.qp_access_flags |= IB_ACCESS_REMOTE_READ | IB_ACCESS_REMOTE_ATOMIC;
			}
		}
		return 0;
	case IB_QPS_RTR:
		if (!connected) {
			if (id.qpType != IB_QPT_UD)
				return -EINVAL;
			a.qp_attr_mask = IB_QP_STATE;
			return 0;
		}
		a.qp_attr_mask = IB_QP_STATE | IB_QP_AV | IB_QP_PATH_MTU | IB_QP_DEST_QPN | IB_QP_RQ_PSN |
			IB_QP_MAX_DEST_RD_ATOMIC | IB_QP_MIN_RNR_TIMER;
		a.ah_attr.dlid = id.path.dlid;
		a.ah_attr.sl = id.path.sl;
		a.ah_attr.static_rate = id.path.rate;
		a.ah_attr.port_num = id.portNum;
		a.path_mtu = id.path.mtu;
		a.dest_qp_num = id.peer.qpn;
		a.rq_psn = id.seqNum;
		a.max_dest_rd_atomic = id.peer.responderResources;
		return 0;
	case IB_QPS_RTS:
		if (!connected) {
			if (id.qpType != IB_QPT_UD)
				return -EINVAL;
			a.qp_attr_mask = IB_QP_STATE | IB_QP_SQ_PSN;
			return 0;
		}
		a.qp_attr_mask = IB_QP_STATE | IB_QP_SQ_PSN | IB_QP_TIMEOUT | IB_QP_RETRY_CNT | IB_QP_RNR_RETRY |
			IB_QP_MAX_QP_RD_ATOMIC;
		a.sq_psn = id.peer.psn;
		a.timeout = id.ackTimeoutSet ? id.ackTimeout : id.peer.ackTimeout;
		a.retry_cnt = id.peer.retryCount;
		a.rnr_retry = id.peer.rnrRetryCount;
		a.max_rd_atomic = id.peer.initiatorDepth;
		return 0;
	default:
		return -EINVAL;
	}
}

/* ---------------- IB CM events ---------------- */

/* cma_ib_req_handler(): a new ID for the listener the REQ is for */
void Cma::onRequest(const CmEvent &ev)
{
	const cm::Req &req = ev.req;
	bool sidr = ev.type == CmEventType::SidrReqReceived;
	CmId *newCm = ev.newId;
	uint64_t sid = sidr ? ev.sidrReq.serviceId : req.serviceId;
	uint16_t port = uint16_t(sid);
	uint16_t ps = uint16_t(sid >> 16);
	const uint8_t *hdr = sidr ? ev.sidrReq.privateData.data() : req.privateData.data();
	bool v6 = (hdr[1] >> 4) == 6;
	Hca *rxHca = nullptr;
	uint8_t rxPort = 0;
	for (const auto &h : host_.hcas())
		for (unsigned p = 1; p <= h->madPorts.size(); p++)
			if (h->madPorts[p - 1].get() == newCm->port) {
				rxHca = h.get();
				rxPort = uint8_t(p);
			}
	CmaId *listener = nullptr;
	auto [from, to] = byPort_.equal_range(portKey(ps, port));
	for (auto it = from; it != to; ++it) {
		CmaId *o = it->second;
		if (o->state != CmaState::Listen)
			continue;
		if (o->hca && (o->hca != rxHca || o->portNum != rxPort))
			continue;
		if (!o->hostScope.empty() && rxHca && rxHca->hostName != o->hostScope)
			continue; /* a wildcard listener hears its own host's ports only */
		listener = o;
		if (!o->src.isAny())
			break; /* the specific address wins over the wildcard */
	}
	if (!listener || listener->backlog == 0 || !rxHca) {
		if (!sidr)
			cm_.sendRej(*newCm, cm::REJ_CONSUMER_DEFINED, nullptr, 0);
		cm_.destroy(newCm); /* a SIDR_REQ: SIDR_REP "rejected" */
		return;
	}
	CmaId *id = create(listener->sink, listener->owner, 0, listener->ps, listener->qpType);
	id->hostScope = listener->hostScope;
	id->listener = listener;
	id->visible = false;
	id->hca = rxHca;
	id->portNum = rxPort;
	id->src = addrFromHdr(hdr + 20, v6, port);
	id->dst = addrFromHdr(hdr + 4, v6, uint16_t(hdr[2] << 8 | hdr[3]));
	setCm(*id, newCm);
	newCm->handler = this;
	listener->backlog--;
	id->state = CmaState::Connect;
	if (sidr) { /* cma_ib_req_handler() for UD: the private data, nothing else */
		id->pkey = ev.sidrReq.pkey;
		rdma_ucm_event_resp e{};
		e.uid = listener->uid;
		e.id = id->handle;
		e.event = RDMA_CM_EVENT_CONNECT_REQUEST;
		e.param.ud.private_data_len = uint8_t(cm::kSidrReqPrivate - kCmaHdr);
		memcpy(e.param.ud.private_data, hdr + kCmaHdr, e.param.ud.private_data_len);
		return send(*listener, e, id);
	}
	/* the route is the REQ's primary path, seen from this end */
	PathRecord &p = id->path;
	p.slid = req.primary.remoteLid;
	p.dlid = req.primary.localLid;
	p.sgid = req.primary.remoteGid;
	p.dgid = req.primary.localGid;
	p.flowLabel = req.primary.flowLabel;
	p.rate = req.primary.packetRate;
	p.trafficClass = req.primary.trafficClass;
	p.hopLimit = req.primary.hopLimit;
	p.sl = req.primary.sl;
	p.pkey = req.pkey;
	p.mtu = req.pathMtu;
	p.packetLifeTime = uint8_t(req.primary.localAckTimeout ? req.primary.localAckTimeout - 1 : 0);
	p.numbPath = 1;
	p.reversible = true;
	id->havePath = true;
	id->pkey = req.pkey;
	id->peer.qpn = req.localQpn;
	id->peer.psn = req.startingPsn;
	id->peer.retryCount = req.retryCount;
	id->peer.rnrRetryCount = req.rnrRetryCount;
	id->peer.ackTimeout = req.primary.localAckTimeout;
	id->peer.responderResources = req.initiatorDepth;
	id->peer.initiatorDepth = req.responderResources;

	rdma_ucm_event_resp e{};
	e.uid = listener->uid;
	e.id = id->handle;
	e.event = RDMA_CM_EVENT_CONNECT_REQUEST;
	rdma_ucm_conn_param &c = e.param.conn;
	c.private_data_len = uint8_t(cm::kReqPrivate - kCmaHdr);
	memcpy(c.private_data, req.privateData.data() + kCmaHdr, c.private_data_len);
	c.responder_resources = req.initiatorDepth;
	c.initiator_depth = req.responderResources;
	c.flow_control = req.endToEndFlowControl;
	c.retry_count = req.retryCount;
	c.rnr_retry_count = req.rnrRetryCount;
	c.srq = req.srq;
	c.qp_num = req.localQpn;
	send(*listener, e, id);
	/* the program answers later: the requester is asked to wait */
	cm_.sendMra(*newCm, kMraSetting);
}

void Cma::cmEvent(CmId &cm, const CmEvent &ev)
{
	if (ev.type == CmEventType::ReqReceived || ev.type == CmEventType::SidrReqReceived)
		return onRequest(ev);
	CmaId *id = byCm(cm);
	if (!id)
		return;
	rdma_ucm_event_resp e{};
	e.uid = id->uid;
	e.id = id->handle;
	rdma_ucm_conn_param &c = e.param.conn;
	switch (ev.type) {
	case CmEventType::RepReceived:
		id->peer.qpn = ev.rep.localQpn;
		id->peer.psn = ev.rep.startingPsn;
		id->peer.rnrRetryCount = ev.rep.rnrRetryCount;
		id->peer.responderResources = ev.rep.initiatorDepth;
		id->peer.initiatorDepth = ev.rep.responderResources;
		e.event = RDMA_CM_EVENT_CONNECT_RESPONSE;
		c.private_data_len = uint8_t(cm::kRepPrivate);
		memcpy(c.private_data, ev.rep.privateData.data(), cm::kRepPrivate);
		c.responder_resources = ev.rep.responderResources;
		c.initiator_depth = ev.rep.initiatorDepth;
		c.flow_control = ev.rep.endToEndFlowControl;
		c.rnr_retry_count = ev.rep.rnrRetryCount;
		c.srq = ev.rep.srq;
		c.qp_num = ev.rep.localQpn;
		break;
	case CmEventType::RtuReceived:
		id->state = CmaState::Established;
		e.event = RDMA_CM_EVENT_ESTABLISHED;
		break;
	case CmEventType::RejReceived:
		e.event = RDMA_CM_EVENT_REJECTED;
		e.status = ev.rej.reason;
		c.private_data_len = uint8_t(cm::kRejPrivate);
		memcpy(c.private_data, ev.rej.privateData.data(), cm::kRejPrivate);
		break;
	case CmEventType::ReqError:
	case CmEventType::RepError:
		e.event = RDMA_CM_EVENT_UNREACHABLE;
		e.status = uint32_t(-ETIMEDOUT);
		break;
	case CmEventType::DreqReceived:
	case CmEventType::DrepReceived:
	case CmEventType::DreqError:
		id->state = CmaState::Disconnect;
		e.event = RDMA_CM_EVENT_DISCONNECTED;
		break;
	case CmEventType::TimewaitExit:
		e.event = RDMA_CM_EVENT_TIMEWAIT_EXIT;
		break;
	case CmEventType::SidrRepReceived: /* cma_sidr_rep_handler() */
		if (ev.sidrRep.status != cm::SIDR_SUCCESS) {
			e.event = RDMA_CM_EVENT_UNREACHABLE;
			e.status = ev.sidrRep.status;
			break;
		}
		e.event = RDMA_CM_EVENT_ESTABLISHED;
		e.param.ud.qp_num = ev.sidrRep.qpn;
		e.param.ud.qkey = ev.sidrRep.qkey;
		e.param.ud.ah_attr.dlid = id->path.dlid;
		e.param.ud.ah_attr.sl = id->path.sl;
		e.param.ud.ah_attr.static_rate = id->path.rate;
		e.param.ud.ah_attr.port_num = id->portNum;
		e.param.ud.private_data_len = uint8_t(cm::kSidrRepPrivate);
		memcpy(e.param.ud.private_data, ev.sidrRep.privateData.data(), cm::kSidrRepPrivate);
		break;
	case CmEventType::SidrReqError:
		e.event = RDMA_CM_EVENT_UNREACHABLE;
		e.status = uint32_t(-ETIMEDOUT);
		break;
	default:
		return;
	}
	send(*id, e);
}

} /* namespace ibemu::emu */
