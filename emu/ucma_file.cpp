// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// rdma_cm files: the write() commands and the event queue (ucma.c).
#include "emu/ucma_file.h"

#include "emu/verbs_enums.h"

#include <algorithm>
#include <arpa/inet.h>
#include <cerrno>
#include <cstring>
#include <poll.h>

namespace ibemu::emu {

namespace {

constexpr uint32_t kMaxBacklog = 1024; /* ucma's max_backlog */
constexpr uint32_t kMaxOptionBytes = 4u << 20; /* KMALLOC_MAX_SIZE (x86-64): memdup_user's limit */

} /* namespace */

UcmaFile::UcmaFile(Cma &cma, UserAccess &ua, pid_t opener) : cma_(cma), ua_(ua), opener_(opener), openerId_(uint64_t(opener))
{}

/* ucma_close(): every ID of the file goes (a listener takes its unread
 * requests with it) */
UcmaFile::~UcmaFile()
{
	for (CmaId *id = cma_.firstOf(this); id; id = cma_.firstOf(this))
		destroyId(id);
	events_.clear();
}

UcmaFile::Handler UcmaFile::handler(uint32_t cmd)
{
	static const Handler table[RDMA_USER_CM_CMD_COUNT] = {
		&UcmaFile::createId,     &UcmaFile::destroyIdCmd,
		&UcmaFile::bindIp,       &UcmaFile::resolveIp,
		&UcmaFile::resolveRoute, &UcmaFile::queryRoute,
		&UcmaFile::connect,      &UcmaFile::listen,
		&UcmaFile::accept,       &UcmaFile::reject,
		&UcmaFile::disconnect,   &UcmaFile::initQpAttr,
		&UcmaFile::getEvent,     nullptr, /* GET_OPTION: the kernel has none */
		&UcmaFile::setOption,    &UcmaFile::notify,
		&UcmaFile::joinIpMcast,  &UcmaFile::leaveMcast,
		&UcmaFile::migrateId,    &UcmaFile::query,
		&UcmaFile::bind,         &UcmaFile::resolveAddr,
		&UcmaFile::joinMcast,
	};
	return cmd < RDMA_USER_CM_CMD_COUNT ? table[cmd] : nullptr;
}

/* ucma_write() */
ssize_t UcmaFile::write(pid_t tid, const uint8_t *buf, size_t count, bool nonblock)
{
	rdma_ucm_cmd_hdr hdr;
	if (count < sizeof hdr)
		return -EINVAL;
	memcpy(&hdr, buf, sizeof hdr);
	if (hdr.cmd >= RDMA_USER_CM_CMD_COUNT)
		return -EINVAL;
	if (sizeof hdr + hdr.in > count)
		return -EINVAL;
	Handler h = handler(hdr.cmd);
	if (!h)
		return -ENOSYS;
	Request r{ tid, buf + sizeof hdr, hdr.in, hdr.out, nonblock };
	ssize_t rc = (this->*h)(r);
	return rc < 0 ? rc : ssize_t(count);
}

unsigned UcmaFile::poll() const
{
	return events_.empty() ? 0 : POLLIN | POLLRDNORM;
}

int UcmaFile::get(uint32_t handle, CmaId *&out) const
{
	CmaId *id = cma_.find(handle);
	if (!id || !id->visible)
		return -ENOENT;
	if (id->owner != this)
		return -EINVAL;
	out = id;
	return 0;
}

int UcmaFile::respond(pid_t tid, uint64_t ptr, const void *resp, size_t len)
{
	return ua_.write(tid, ptr, resp, len) ? -EFAULT : 0;
}

void UcmaFile::destroyId(CmaId *id)
{
	uint32_t h = id->handle;
	std::erase_if(events_, [&](const Event &e) { return e.id == h || e.connReq == id; });
	cma_.destroy(id);
}

void UcmaFile::cmaEvent(CmaId &id, const rdma_ucm_event_resp &ev, CmaId *connReq)
{
	events_.push_back({ ev, id.handle, connReq });
	if (wakeup_)
		wakeup_();
}

void UcmaFile::cmaMcEvent(CmaMc &mc, const rdma_ucm_event_resp &ev)
{
	events_.push_back({ ev, mc.id->handle, nullptr, &mc });
	if (wakeup_)
		wakeup_();
}

/* ---------------- the commands ---------------- */

ssize_t UcmaFile::createId(Request &r)
{
	auto cmd = r.cmd<rdma_ucm_create_id>();
	if (r.outLen < sizeof(rdma_ucm_create_id_resp))
		return -ENOSPC;
	uint8_t qpType;
	switch (cmd.ps) { /* ucma_get_qp_type() */
	case RDMA_PS_IB:
		qpType = cmd.qp_type;
		break;
	case RDMA_PS_TCP:
		qpType = IB_QPT_RC;
		break;
	case RDMA_PS_UDP:
	case RDMA_PS_IPOIB:
		qpType = IB_QPT_UD;
		break;
	default:
		return -EINVAL;
	}
	if (cma_.countOf(this) >= kMaxIds)
		return -ENOMEM;
	CmaId *id = cma_.create(this, this, cmd.uid, cmd.ps, qpType);
	id->hostScope = hostScope_;
	rdma_ucm_create_id_resp resp{ id->handle };
	if (int rc = respond(r.tid, cmd.response, &resp, sizeof resp)) {
		cma_.destroy(id);
		return rc;
	}
	return 0;
}

ssize_t UcmaFile::destroyIdCmd(Request &r)
{
	auto cmd = r.cmd<rdma_ucm_destroy_id>();
	if (r.outLen < sizeof(rdma_ucm_destroy_id_resp))
		return -ENOSPC;
	CmaId *id;
	if (int rc = get(cmd.id, id))
		return rc;
	rdma_ucm_destroy_id_resp resp{ id->eventsReported };
	destroyId(id);
	return respond(r.tid, cmd.response, &resp, sizeof resp);
}

/* cma_use_port(): a port below 1024 (PROT_SOCK, whatever the namespace's
 * ip_unprivileged_port_start) only with CAP_NET_BIND_SERVICE, as the
 * kernel's capable() sees it. Asked of the caller at each such bind. */
int UcmaFile::mayUsePort(pid_t tid, const CmaId &id, const CmaAddr &a)
{
	constexpr uint16_t kProtSock = 1024;
	uint16_t port = a.port();
	if (id.state != CmaState::Idle || port == 0 || port >= kProtSock)
		return 0;
	ProcessCreds creds;
	if (ua_.credentials(tid, creds) != 0 || !creds.capNetBindService)
		return -EACCES;
	return 0;
}

ssize_t UcmaFile::bindIp(Request &r)
{
	auto cmd = r.cmd<rdma_ucm_bind_ip>();
	CmaAddr a = CmaAddr::from(&cmd.addr, sizeof cmd.addr);
	if (a.family() != AF_INET && a.family() != AF_INET6)
		return -EINVAL;
	CmaId *id;
	if (int rc = get(cmd.id, id))
		return rc;
	if (int rc = mayUsePort(r.tid, *id, a))
		return rc;
	return cma_.bind(*id, a);
}

ssize_t UcmaFile::bind(Request &r)
{
	auto cmd = r.cmd<rdma_ucm_bind>();
	CmaAddr a = CmaAddr::from(cmd.addr.data, sizeof cmd.addr.data);
	if (!cmd.addr_size || cmd.addr_size != a.size())
		return -EINVAL;
	CmaId *id;
	if (int rc = get(cmd.id, id))
		return rc;
	if (int rc = mayUsePort(r.tid, *id, a))
		return rc;
	return cma_.bind(*id, a);
}

ssize_t UcmaFile::resolveIp(Request &r)
{
	auto cmd = r.cmd<rdma_ucm_resolve_ip>();
	CmaAddr src = CmaAddr::from(&cmd.src_addr, sizeof cmd.src_addr);
	CmaAddr dst = CmaAddr::from(&cmd.dst_addr, sizeof cmd.dst_addr);
	bool srcGiven = src.family() != 0;
	if ((srcGiven && src.family() != AF_INET && src.family() != AF_INET6) ||
	    (dst.family() != AF_INET && dst.family() != AF_INET6))
		return -EINVAL;
	CmaId *id;
	if (int rc = get(cmd.id, id))
		return rc;
	if (int rc = srcGiven ? mayUsePort(r.tid, *id, src) : 0)
		return rc;
	return cma_.resolveAddr(*id, srcGiven ? &src : nullptr, dst, cmd.timeout_ms);
}

ssize_t UcmaFile::resolveAddr(Request &r)
{
	auto cmd = r.cmd<rdma_ucm_resolve_addr>();
	CmaAddr src = CmaAddr::from(cmd.src_addr.data, sizeof cmd.src_addr.data);
	CmaAddr dst = CmaAddr::from(cmd.dst_addr.data, sizeof cmd.dst_addr.data);
	if ((cmd.src_size && cmd.src_size != src.size()) || !cmd.dst_size || cmd.dst_size != dst.size())
		return -EINVAL;
	CmaId *id;
	if (int rc = get(cmd.id, id))
		return rc;
	if (int rc = cmd.src_size ? mayUsePort(r.tid, *id, src) : 0)
		return rc;
	return cma_.resolveAddr(*id, cmd.src_size ? &src : nullptr, dst, cmd.timeout_ms);
}

ssize_t UcmaFile::resolveRoute(Request &r)
{
	auto cmd = r.cmd<rdma_ucm_resolve_route>();
	CmaId *id;
	if (int rc = get(cmd.id, id))
		return rc;
	return cma_.resolveRoute(*id, cmd.timeout_ms);
}

namespace {

void toUserPath(const PathRecord &p, ib_user_path_rec &u)
{
	memcpy(u.dgid, p.dgid.data(), 16);
	memcpy(u.sgid, p.sgid.data(), 16);
	u.dlid = htons(p.dlid);
	u.slid = htons(p.slid);
	u.flow_label = htonl(p.flowLabel);
	u.reversible = p.reversible;
	u.mtu = p.mtu;
	u.pkey = htons(p.pkey);
	u.hop_limit = p.hopLimit;
	u.traffic_class = p.trafficClass;
	u.numb_path = p.numbPath;
	u.sl = p.sl;
	u.mtu_selector = p.mtuSelector;
	u.rate_selector = p.rateSelector;
	u.rate = p.rate;
	u.packet_life_time_selector = p.packetLifeTimeSelector;
	u.packet_life_time = p.packetLifeTime;
	u.preference = p.preference;
}

} /* namespace */

ssize_t UcmaFile::queryRoute(Request &r)
{
	auto cmd = r.cmd<rdma_ucm_query>();
	if (r.outLen < sizeof(rdma_ucm_query_route_resp))
		return -ENOSPC;
	CmaId *id;
	if (int rc = get(cmd.id, id))
		return rc;
	rdma_ucm_query_route_resp resp{};
	if (id->src.family() == AF_INET || id->src.family() == AF_INET6)
		memcpy(&resp.src_addr, id->src.ss.data, sizeof resp.src_addr);
	if (id->dst.family() == AF_INET || id->dst.family() == AF_INET6)
		memcpy(&resp.dst_addr, id->dst.ss.data, sizeof resp.dst_addr);
	if (id->hca) {
		resp.node_guid = htobe64(cma_.nodeGuid(*id));
		resp.ibdev_index = cma_.deviceIndex(*id);
		resp.port_num = id->portNum;
		if (id->havePath) {
			resp.num_paths = 1;
			toUserPath(id->path, resp.ib_route[0]);
		} else {
			fabric::Gid s, d;
			cma_.gids(*id, s, d);
			memcpy(resp.ib_route[0].sgid, s.data(), 16);
			memcpy(resp.ib_route[0].dgid, d.data(), 16);
			resp.ib_route[0].pkey = htons(id->pkey);
		}
	}
	return respond(r.tid, cmd.response, &resp, sizeof resp);
}

ssize_t UcmaFile::query(Request &r)
{
	auto cmd = r.cmd<rdma_ucm_query>();
	CmaId *id;
	if (int rc = get(cmd.id, id))
		return rc;
	switch (cmd.option) {
	case RDMA_USER_CM_QUERY_ADDR:
	case RDMA_USER_CM_QUERY_GID: {
		if (r.outLen < sizeof(rdma_ucm_query_addr_resp))
			return -ENOSPC;
		rdma_ucm_query_addr_resp resp{};
		if (id->hca) {
			resp.node_guid = htobe64(cma_.nodeGuid(*id));
			resp.ibdev_index = cma_.deviceIndex(*id);
			resp.port_num = id->portNum;
			resp.pkey = htons(id->pkey);
		}
		if (cmd.option == RDMA_USER_CM_QUERY_ADDR) {
			resp.src_size = uint16_t(id->src.size());
			memcpy(resp.src_addr.data, id->src.ss.data, resp.src_size);
			resp.dst_size = uint16_t(id->dst.size());
			memcpy(resp.dst_addr.data, id->dst.ss.data, resp.dst_size);
		} else { /* both ends as AF_IB: their GIDs and service IDs */
			fabric::Gid g[2];
			cma_.gids(*id, g[0], g[1]);
			const CmaAddr *a[2] = { &id->src, &id->dst };
			kernel_sockaddr_storage *out[2] = { &resp.src_addr, &resp.dst_addr };
			for (int i = 0; i < 2; i++) {
				sockaddr_ib sib{};
				if (a[i]->family() == kAfIb) {
					memcpy(&sib, a[i]->ss.data, sizeof sib);
				} else {
					sib.sib_family = kAfIb;
					sib.sib_pkey = resp.pkey;
					memcpy(sib.sib_addr, g[i].data(), 16);
					sib.sib_sid = htobe64(cma_.serviceId(*id, *a[i]));
					sib.sib_sid_mask = htobe64(~0ull);
				}
				memcpy(out[i]->data, &sib, sizeof sib);
			}
			resp.src_size = resp.dst_size = sizeof(sockaddr_ib);
		}
		return respond(r.tid, cmd.response, &resp, sizeof resp);
	}
	case RDMA_USER_CM_QUERY_PATH: {
		if (r.outLen < sizeof(rdma_ucm_query_path_resp))
			return -ENOSPC;
		uint8_t buf[sizeof(rdma_ucm_query_path_resp) + sizeof(ib_path_rec_data)] = {};
		rdma_ucm_query_path_resp head{};
		size_t len = sizeof head;
		if (id->havePath && r.outLen - sizeof head >= sizeof(ib_path_rec_data)) {
			head.num_paths = 1;
			ib_path_rec_data pd{};
			pd.flags = IB_PATH_GMP | IB_PATH_PRIMARY | IB_PATH_BIDIRECTIONAL;
			id->path.encode(pd.path_rec);
			memcpy(buf + sizeof head, &pd, sizeof pd);
			len += sizeof pd;
		}
		memcpy(buf, &head, sizeof head);
		return respond(r.tid, cmd.response, buf, len);
	}
	default:
		return -ENOSYS;
	}
}

ssize_t UcmaFile::connect(Request &r)
{
	auto cmd = r.cmd<rdma_ucm_connect>();
	if (!cmd.conn_param.valid)
		return -EINVAL;
	CmaId *id;
	if (int rc = get(cmd.id, id))
		return rc;
	return cma_.connect(*id, cmd.conn_param);
}

ssize_t UcmaFile::listen(Request &r)
{
	auto cmd = r.cmd<rdma_ucm_listen>();
	CmaId *id;
	if (int rc = get(cmd.id, id))
		return rc;
	uint32_t backlog = cmd.backlog > 0 && cmd.backlog < kMaxBacklog ? cmd.backlog : kMaxBacklog;
	return cma_.listen(*id, backlog);
}

ssize_t UcmaFile::accept(Request &r)
{
	auto cmd = r.cmd<rdma_ucm_accept>();
	CmaId *id;
	if (int rc = get(cmd.id, id))
		return rc;
	if (!cmd.conn_param.valid)
		return cma_.accept(*id, nullptr);
	uint64_t uid = id->uid;
	id->uid = cmd.uid;
	int rc = cma_.accept(*id, &cmd.conn_param);
	if (rc)
		id->uid = uid;
	return rc;
}

ssize_t UcmaFile::reject(Request &r)
{
	auto cmd = r.cmd<rdma_ucm_reject>();
	if (!cmd.reason)
		cmd.reason = cm::REJ_CONSUMER_DEFINED;
	if (cmd.reason != cm::REJ_CONSUMER_DEFINED && cmd.reason != cm::REJ_VENDOR_OPTION_NOT_SUPPORTED)
		return -EINVAL;
	CmaId *id;
	if (int rc = get(cmd.id, id))
		return rc;
	return cma_.reject(*id, cmd.reason, cmd.private_data, cmd.private_data_len);
}

ssize_t UcmaFile::disconnect(Request &r)
{
	auto cmd = r.cmd<rdma_ucm_disconnect>();
	CmaId *id;
	if (int rc = get(cmd.id, id))
		return rc;
	return cma_.disconnect(*id);
}

ssize_t UcmaFile::initQpAttr(Request &r)
{
	auto cmd = r.cmd<rdma_ucm_init_qp_attr>();
	if (r.outLen < sizeof(ib_uverbs_qp_attr))
		return -ENOSPC;
	if (cmd.qp_state > IB_QPS_ERR)
		return -EINVAL;
	CmaId *id;
	if (int rc = get(cmd.id, id))
		return rc;
	ib_uverbs_qp_attr resp{};
	if (int rc = cma_.initQpAttr(*id, cmd.qp_state, resp))
		return rc;
	return respond(r.tid, cmd.response, &resp, sizeof resp);
}

/* ucma_get_event(): an event the program cannot take stays queued */
ssize_t UcmaFile::getEvent(Request &r)
{
	auto cmd = r.cmd<rdma_ucm_get_event>();
	if (r.outLen < sizeof(rdma_ucm_event_resp))
		return -ENOSPC;
	if (events_.empty())
		return r.nonblock ? -EAGAIN : kBlocked;
	Event &e = events_.front();
	if (int rc = respond(r.tid, cmd.response, &e.resp, sizeof e.resp))
		return rc;
	Event ev = e;
	events_.pop_front();
	if (CmaId *id = cma_.find(ev.id)) /* a join's events count on its ID too */
		id->eventsReported++;
	if (ev.mc)
		ev.mc->eventsReported++;
	if (ev.connReq) { /* the new ID is the program's now */
		if (CmaId *l = ev.connReq->listener)
			l->backlog++;
		ev.connReq->listener = nullptr;
		ev.connReq->visible = true;
	}
	return 0;
}

ssize_t UcmaFile::setOption(Request &r)
{
	auto cmd = r.cmd<rdma_ucm_set_option>();
	if (cmd.optlen > kMaxOptionBytes)
		return -EINVAL;
	CmaId *id;
	if (int rc = get(cmd.id, id))
		return rc;
	/* the whole value first, whatever the option (memdup_user) */
	std::vector<uint8_t> opt(cmd.optlen);
	if (cmd.optlen && ua_.read(r.tid, cmd.optval, opt.data(), cmd.optlen))
		return -EFAULT;
	uint8_t val[8] = {};
	if (!opt.empty()) /* an empty vector's data() may be null */
		memcpy(val, opt.data(), std::min(opt.size(), sizeof val));
	int iv = 0;
	memcpy(&iv, val, sizeof iv);
	switch (cmd.level) {
	case RDMA_OPTION_ID:
		switch (cmd.optname) {
		case RDMA_OPTION_ID_TOS:
			if (cmd.optlen != 1)
				return -EINVAL;
			id->tos = val[0];
			return 0;
		case RDMA_OPTION_ID_REUSEADDR:
			if (cmd.optlen != sizeof(int))
				return -EINVAL;
			if (id->state != CmaState::Idle)
				return -EINVAL;
			id->reuseaddr = iv != 0;
			return 0;
		case RDMA_OPTION_ID_AFONLY:
			if (cmd.optlen != sizeof(int))
				return -EINVAL;
			if (id->state != CmaState::Idle)
				return -EINVAL;
			id->afonly = iv != 0;
			return 0;
		case RDMA_OPTION_ID_ACK_TIMEOUT:
			if (cmd.optlen != 1)
				return -EINVAL;
			id->ackTimeout = val[0];
			id->ackTimeoutSet = true;
			return 0;
		default:
			return -ENOSYS;
		}
	case RDMA_OPTION_IB:
		if (cmd.optname != RDMA_OPTION_IB_PATH)
			return -ENOSYS;
		/* ucma_set_ib_path(): whole records, the first one that is the
		 * primary path for GMPs both ways is the route */
		if (opt.size() % sizeof(ib_path_rec_data))
			return -EINVAL;
		for (size_t at = 0; at < opt.size(); at += sizeof(ib_path_rec_data)) {
			ib_path_rec_data pd;
			memcpy(&pd, opt.data() + at, sizeof pd);
			if (pd.flags == (IB_PATH_GMP | IB_PATH_PRIMARY | IB_PATH_BIDIRECTIONAL))
				return cma_.setIbPath(*id, PathRecord::decode(pd.path_rec));
		}
		return -EINVAL;
	default:
		return -ENOSYS;
	}
}

ssize_t UcmaFile::notify(Request &r)
{
	auto cmd = r.cmd<rdma_ucm_notify>();
	CmaId *id;
	if (int rc = get(cmd.id, id))
		return rc;
	return cma_.notify(*id, cmd.event);
}

/* ucma_migrate_id(): the ID moves from the file behind cmd.fd to this one,
 * with its queued events. As the kernel, the ID must be that file's, which
 * the caller holds; a transport that cannot tell which rdma_cm file fd is
 * (CUSE) has the ID's file opened by the process that opened this one, by
 * an identity no later process can have. */
ssize_t UcmaFile::migrateId(Request &r)
{
	auto cmd = r.cmd<rdma_ucm_migrate_id>();
	if (r.outLen < sizeof(rdma_ucm_migrate_resp))
		return -ENOSPC;
	const UcmaFile *held = nullptr;
	if (!cmFileOf_)
		return -EINVAL;
	if (int rc = cmFileOf_(r.tid, int(cmd.fd), held))
		return rc;
	CmaId *id = cma_.find(cmd.id);
	if (!id || !id->visible)
		return -ENOENT;
	auto *from = static_cast<UcmaFile *>(id->owner);
	if (held ? from != held : from->openerId_ != openerId_)
		return -EINVAL;
	if (from != this) {
		cma_.moveTo(*id, this, this);
		for (auto it = from->events_.begin(); it != from->events_.end();) {
			if (it->id == id->handle) {
				events_.push_back(*it);
				it = from->events_.erase(it);
			} else {
				++it;
			}
		}
		if (!events_.empty() && wakeup_)
			wakeup_();
	}
	rdma_ucm_migrate_resp resp{ id->eventsReported };
	return respond(r.tid, cmd.response, &resp, sizeof resp);
}

/* ---------------- multicast ---------------- */

/* ucma_join_ip_multicast(): the old command, a full member */
ssize_t UcmaFile::joinIpMcast(Request &r)
{
	auto cmd = r.cmd<rdma_ucm_join_ip_mcast>();
	rdma_ucm_join_mcast j{};
	j.response = cmd.response;
	j.uid = cmd.uid;
	j.id = cmd.id;
	CmaAddr a = CmaAddr::from(&cmd.addr, sizeof cmd.addr);
	if (a.family() != AF_INET && a.family() != AF_INET6) /* rdma_addr_size_in6() */
		return -EINVAL;
	j.addr_size = uint16_t(a.size());
	j.join_flags = RDMA_MC_JOIN_FLAG_FULLMEMBER;
	memcpy(&j.addr, &cmd.addr, j.addr_size);
	return processJoin(r, j);
}

ssize_t UcmaFile::joinMcast(Request &r)
{
	auto cmd = r.cmd<rdma_ucm_join_mcast>();
	if (!CmaAddr::from(&cmd.addr, sizeof cmd.addr).size()) /* rdma_addr_size_kss() */
		return -EINVAL;
	return processJoin(r, cmd);
}

/* ucma_process_join() */
ssize_t UcmaFile::processJoin(Request &r, const rdma_ucm_join_mcast &cmd)
{
	if (r.outLen < sizeof(rdma_ucm_create_id_resp))
		return -ENOSPC;
	CmaAddr a = CmaAddr::from(&cmd.addr, sizeof cmd.addr);
	if (cmd.addr_size != a.size())
		return -EINVAL;
	uint8_t joinState;
	if (cmd.join_flags == RDMA_MC_JOIN_FLAG_FULLMEMBER)
		joinState = 1u << 0;
	else if (cmd.join_flags == RDMA_MC_JOIN_FLAG_SENDONLY_FULLMEMBER)
		joinState = 1u << 3;
	else
		return -EINVAL;
	CmaId *id;
	if (int rc = get(cmd.id, id))
		return rc;
	if (!id->hca) /* ucma_get_ctx_dev() */
		return -EINVAL;
	if (cma_.mcCountOf(this) >= kMaxJoins)
		return -ENOMEM;
	CmaMc *mc;
	if (int rc = cma_.join(*id, a, joinState, cmd.uid, mc))
		return rc;
	rdma_ucm_create_id_resp resp{ mc->handle };
	if (int rc = respond(r.tid, cmd.response, &resp, sizeof resp)) {
		leave(mc);
		return rc;
	}
	return 0;
}

/* ucma_leave_multicast(): the join's unread events go with it */
ssize_t UcmaFile::leaveMcast(Request &r)
{
	auto cmd = r.cmd<rdma_ucm_destroy_id>();
	if (r.outLen < sizeof(rdma_ucm_destroy_id_resp))
		return -ENOSPC;
	CmaMc *mc = cma_.findMc(cmd.id);
	if (!mc)
		return -ENOENT;
	if (mc->id->owner != this)
		return -EINVAL;
	rdma_ucm_destroy_id_resp resp{ mc->eventsReported };
	leave(mc);
	return respond(r.tid, cmd.response, &resp, sizeof resp);
}

void UcmaFile::leave(CmaMc *mc)
{
	std::erase_if(events_, [&](const Event &e) { return e.mc == mc; });
	cma_.leave(mc);
}

} /* namespace ibemu::emu */
