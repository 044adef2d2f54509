// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// What the verbs check tools (verbs_queues, verbs_mw, verbs_xrc) share: a
// check that counts its failures, errnos by name as the tools print them,
// and bringing a connected QP up and polling its completions.
#pragma once

#include <infiniband/verbs.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <unistd.h>

namespace verbs_check {

inline int failures = 0;

inline void check(bool ok, const char *what)
{
	if (!ok) {
		fprintf(stderr, "FAILED: %s\n", what);
		failures++;
	}
}

inline const char *errName(int e)
{
	switch (e) {
	case 0:
		return "ok";
	case EINVAL:
		return "EINVAL";
	case EOPNOTSUPP:
		return "EOPNOTSUPP";
	case ENOMEM:
		return "ENOMEM";
	case EPERM:
		return "EPERM";
	default:
		return strerror(e);
	}
}

/* RESET to RTS, connected to QP destQpn at dlid through port 1 (MTU 1024,
 * PSNs 0, one read or atomic each way, RNR timer 12, timeout 14, retries
 * 7), with the access flags given; rtr and rts: the attributes given at
 * RTR and at RTS besides the state (kRcRtr and kRcRts for RC). On an
 * Ethernet port (rdma_rxe, which the VM suite compares with) there are no
 * LIDs: both QPs are then on the one device, and the address is a GRH to
 * the port's own first GID. */
constexpr int kRcRtr = IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
	IBV_QP_MIN_RNR_TIMER;
constexpr int kRcRts = IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC;

inline bool toRts(ibv_qp *qp, uint32_t destQpn, uint16_t dlid, unsigned access, int rtr, int rts)
{
	ibv_qp_attr x{};
	x.qp_state = IBV_QPS_INIT;
	x.port_num = 1;
	x.qp_access_flags = access;
	if (ibv_modify_qp(qp, &x, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS))
		return false;
	x = {};
	x.qp_state = IBV_QPS_RTR;
	x.path_mtu = IBV_MTU_1024;
	x.dest_qp_num = destQpn;
	x.max_dest_rd_atomic = 1;
	x.min_rnr_timer = 12;
	x.ah_attr.dlid = dlid;
	x.ah_attr.port_num = 1;
	ibv_port_attr port{};
	if (ibv_query_port(qp->context, 1, &port) == 0 && port.link_layer == IBV_LINK_LAYER_ETHERNET) {
		x.ah_attr.is_global = 1;
		x.ah_attr.grh.hop_limit = 64;
		if (ibv_query_gid(qp->context, 1, 0, &x.ah_attr.grh.dgid))
			return false;
	}
	if (ibv_modify_qp(qp, &x, IBV_QP_STATE | rtr))
		return false;
	x = {};
	x.qp_state = IBV_QPS_RTS;
	x.timeout = 14;
	x.retry_cnt = 7;
	x.rnr_retry = 7;
	x.max_rd_atomic = 1;
	return ibv_modify_qp(qp, &x, IBV_QP_STATE | rts) == 0;
}

/* one completion, or a status no verbs gives (-1) when none comes */
inline ibv_wc pollOne(ibv_cq *cq)
{
	ibv_wc wc{};
	for (int i = 0; i < 2000; i++) {
		if (ibv_poll_cq(cq, 1, &wc) == 1)
			return wc;
		usleep(1000);
	}
	wc.status = static_cast<ibv_wc_status>(-1);
	return wc;
}

inline const char *status(const ibv_wc &wc)
{
	return int(wc.status) == -1 ? "no completion" : ibv_wc_status_str(wc.status);
}

} /* namespace verbs_check */
