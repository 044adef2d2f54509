// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// QP state transitions: the required and optional attributes of each
// transition per QP type (IBA 11.2.4.2, the kernel's qp_state_table in
// verbs.c) and the attribute checks of a software driver's modify_qp.
// What a QP may do in each state is the table in verbs_qp.h.
#include "emu/verbs_qp.h"

#include "emu/qp_ring.h"
#include "emu/verbs_device.h"
#include "fabric/node.h"

#include <array>
#include <cerrno>

namespace ibemu::emu {

Qp::Qp(boost::asio::io_context &io) : UObject(kType), timer(io)
{}
Qp::~Qp() = default;

namespace {

struct Transition {
	bool valid = false;
	uint32_t req[3] = {}; /* RC, UC, UD */
	uint32_t opt[3] = {};
};

unsigned typeIndex(QpType t)
{
	return t == IB_QPT_RC || t == IB_QPT_XRC_INI || t == IB_QPT_XRC_TGT ? 0 : t == IB_QPT_UC ? 1 : 2;
}

/* XRC's halves take RC's attributes but those of the half they lack
 * (ib_modify_qp_is_ok()'s table): the initiator no responder's at RTR,
 * the target no requester's at RTS. ibemu takes them as optional. */
uint32_t xrcOptional(QpType t, QpState cur, QpState next)
{
	if (t == IB_QPT_XRC_INI && cur == IB_QPS_INIT && next == IB_QPS_RTR)
		return IB_QP_MAX_DEST_RD_ATOMIC | IB_QP_MIN_RNR_TIMER;
	if (t == IB_QPT_XRC_TGT && cur == IB_QPS_RTR && next == IB_QPS_RTS)
		return IB_QP_RETRY_CNT | IB_QP_RNR_RETRY | IB_QP_MAX_QP_RD_ATOMIC;
	return 0;
}

constexpr uint32_t kAlt = IB_QP_ALT_PATH | IB_QP_PATH_MIG_STATE;

using Table = std::array<std::array<Transition, 7>, 7>;

/* [cur][next]: RESET INIT RTR RTS SQD SQE ERR */
const Table &table()
{
	static const Table table = [] {
		Table t{};
		for (auto &row : t) { /* any state may go to RESET or ERR ... */
			row[IB_QPS_RESET].valid = true;
			row[IB_QPS_ERR].valid = true;
		}
		t[IB_QPS_RESET][IB_QPS_ERR].valid = false; /* ... but RESET only to RESET and INIT */

		auto &ri = t[IB_QPS_RESET][IB_QPS_INIT];
		ri = { true,
		       { IB_QP_PKEY_INDEX | IB_QP_PORT | IB_QP_ACCESS_FLAGS,
			 IB_QP_PKEY_INDEX | IB_QP_PORT | IB_QP_ACCESS_FLAGS,
			 IB_QP_PKEY_INDEX | IB_QP_PORT | IB_QP_QKEY },
		       {} };
		t[IB_QPS_INIT][IB_QPS_INIT] = { true,
						{},
						{ IB_QP_PKEY_INDEX | IB_QP_PORT | IB_QP_ACCESS_FLAGS,
						  IB_QP_PKEY_INDEX | IB_QP_PORT | IB_QP_ACCESS_FLAGS,
						  IB_QP_PKEY_INDEX | IB_QP_PORT | IB_QP_QKEY } };
		t[IB_QPS_INIT][IB_QPS_RTR] = { true,
					       { IB_QP_AV | IB_QP_PATH_MTU | IB_QP_DEST_QPN | IB_QP_RQ_PSN |
							 IB_QP_MAX_DEST_RD_ATOMIC | IB_QP_MIN_RNR_TIMER,
						 IB_QP_AV | IB_QP_PATH_MTU | IB_QP_DEST_QPN | IB_QP_RQ_PSN, 0 },
					       { IB_QP_ALT_PATH | IB_QP_ACCESS_FLAGS | IB_QP_PKEY_INDEX,
						 IB_QP_ALT_PATH | IB_QP_ACCESS_FLAGS | IB_QP_PKEY_INDEX,
						 IB_QP_PKEY_INDEX | IB_QP_QKEY } };
		t[IB_QPS_RTR][IB_QPS_RTS] = {
			true,
			{ IB_QP_TIMEOUT | IB_QP_RETRY_CNT | IB_QP_RNR_RETRY | IB_QP_SQ_PSN | IB_QP_MAX_QP_RD_ATOMIC,
			  IB_QP_SQ_PSN, IB_QP_SQ_PSN },
			{ IB_QP_CUR_STATE | kAlt | IB_QP_ACCESS_FLAGS | IB_QP_MIN_RNR_TIMER,
			  IB_QP_CUR_STATE | kAlt | IB_QP_ACCESS_FLAGS, IB_QP_CUR_STATE | IB_QP_QKEY }
		};
		t[IB_QPS_RTS][IB_QPS_RTS] = { true,
					      {},
					      { IB_QP_CUR_STATE | IB_QP_ACCESS_FLAGS | kAlt | IB_QP_MIN_RNR_TIMER,
						IB_QP_CUR_STATE | IB_QP_ACCESS_FLAGS | kAlt,
						IB_QP_CUR_STATE | IB_QP_QKEY } };
		t[IB_QPS_RTS][IB_QPS_SQD] = {
			true, {}, { IB_QP_EN_SQD_ASYNC_NOTIFY, IB_QP_EN_SQD_ASYNC_NOTIFY, IB_QP_EN_SQD_ASYNC_NOTIFY }
		};
		t[IB_QPS_SQD][IB_QPS_RTS] = t[IB_QPS_RTS][IB_QPS_RTS];
		t[IB_QPS_SQD][IB_QPS_SQD] = {
			true,
			{},
			{ IB_QP_PORT | IB_QP_AV | IB_QP_TIMEOUT | IB_QP_RETRY_CNT | IB_QP_RNR_RETRY |
				  IB_QP_MAX_QP_RD_ATOMIC | IB_QP_MAX_DEST_RD_ATOMIC | kAlt | IB_QP_ACCESS_FLAGS |
				  IB_QP_PKEY_INDEX | IB_QP_MIN_RNR_TIMER,
			  IB_QP_AV | kAlt | IB_QP_ACCESS_FLAGS | IB_QP_PKEY_INDEX, IB_QP_PKEY_INDEX | IB_QP_QKEY }
		};
		t[IB_QPS_SQE][IB_QPS_RTS] = {
			true, {}, { 0, IB_QP_CUR_STATE | IB_QP_ACCESS_FLAGS, IB_QP_CUR_STATE | IB_QP_QKEY }
		};
		return t;
	}();
	return table;
}

} /* namespace */

bool qpTransitionOk(QpState cur, QpState next, QpType type, uint32_t mask)
{
	if (cur > IB_QPS_ERR || next > IB_QPS_ERR)
		return false;
	if ((mask & IB_QP_CUR_STATE) && cur != IB_QPS_RTR && cur != IB_QPS_RTS && cur != IB_QPS_SQD &&
	    cur != IB_QPS_SQE)
		return false;
	const Transition &tr = table()[cur][next];
	if (!tr.valid)
		return false;
	/* RC cannot leave SQE (it never enters it) */
	if (cur == IB_QPS_SQE && next == IB_QPS_RTS && typeIndex(type) == 0)
		return false;
	uint32_t req = tr.req[typeIndex(type)] & ~xrcOptional(type, cur, next);
	uint32_t opt = tr.opt[typeIndex(type)] | xrcOptional(type, cur, next);
	if ((mask & req) != req)
		return false;
	return (mask & ~(req | opt | IB_QP_STATE)) == 0;
}

namespace {

/* IBA MTU enum (1: 256 ... 5: 4096) */
bool mtuOk(const VerbsDevice &dev, const Qp &qp, uint8_t mtu)
{
	const fabric::Port *p = dev.port(qp.portNum);
	return mtu >= 1 && mtu <= 5 && p && mtu <= p->mtuCap;
}

} /* namespace */

/* rvt_modify_qp(): checks, then the state change, then the attributes */
int applyModifyQp(VerbsDevice &dev, Qp &qp, const ib_uverbs_modify_qp &cmd)
{
	uint32_t mask = cmd.attr_mask;
	QpState cur = (mask & IB_QP_CUR_STATE) ? static_cast<QpState>(cmd.cur_qp_state) : qp.state;
	QpState next = (mask & IB_QP_STATE) ? static_cast<QpState>(cmd.qp_state) : cur;
	if (!qpTransitionOk(cur, next, qp.qpType, mask))
		return -EINVAL;
	if (mask & IB_QP_AV) { /* rvt and qib_check_ah() */
		if (cmd.dest.dlid >= 0xc000 || cmd.dest.dlid == 0 || cmd.dest.sl > 15)
			return -EINVAL;
	}
	if ((mask & IB_QP_PKEY_INDEX)) {
		const fabric::Port *p = dev.port((mask & IB_QP_PORT) ? cmd.port_num : qp.portNum);
		if (!p || cmd.pkey_index >= p->pkeyCap())
			return -EINVAL;
	}
	if ((mask & IB_QP_MIN_RNR_TIMER) && cmd.min_rnr_timer > 31)
		return -EINVAL;
	if ((mask & IB_QP_PORT) && (cmd.port_num == 0 || cmd.port_num > dev.numPorts()))
		return -EINVAL;
	if ((mask & IB_QP_DEST_QPN) && cmd.dest_qp_num > 0xffffff)
		return -EINVAL;
	if ((mask & IB_QP_RETRY_CNT) && cmd.retry_cnt > 7)
		return -EINVAL;
	if ((mask & IB_QP_RNR_RETRY) && cmd.rnr_retry > 7)
		return -EINVAL;
	if ((mask & IB_QP_PATH_MTU) && !mtuOk(dev, qp, cmd.path_mtu))
		return -EINVAL;
	if ((mask & IB_QP_PATH_MIG_STATE) && cmd.path_mig_state > 2)
		return -EINVAL;
	if ((mask & IB_QP_MAX_QP_RD_ATOMIC) && cmd.max_rd_atomic > dev.limits().maxQpInitRdAtom)
		return -EINVAL;
	if ((mask & IB_QP_MAX_DEST_RD_ATOMIC) && cmd.max_dest_rd_atomic > dev.limits().maxQpRdAtom)
		return -EINVAL;
	if ((mask & IB_QP_TIMEOUT) && cmd.timeout > 31)
		return -EINVAL;

	if (mask & IB_QP_ACCESS_FLAGS)
		qp.accessFlags = cmd.qp_access_flags;
	if (mask & IB_QP_PKEY_INDEX)
		qp.pkeyIndex = cmd.pkey_index;
	if (mask & IB_QP_PORT)
		qp.portNum = cmd.port_num;
	if (mask & IB_QP_QKEY)
		qp.qkey = cmd.qkey;
	if (mask & IB_QP_AV)
		qp.av = cmd.dest;
	if (mask & IB_QP_ALT_PATH) {
		qp.altAv = cmd.alt_dest;
		qp.altPortNum = cmd.alt_port_num;
		qp.altPkeyIndex = cmd.alt_pkey_index;
		qp.altTimeout = cmd.alt_timeout;
	}
	if (mask & IB_QP_PATH_MTU)
		qp.pathMtu = cmd.path_mtu;
	if (mask & IB_QP_TIMEOUT)
		qp.timeout = cmd.timeout;
	if (mask & IB_QP_RETRY_CNT)
		qp.retryCnt = cmd.retry_cnt;
	if (mask & IB_QP_RNR_RETRY)
		qp.rnrRetry = cmd.rnr_retry;
	if (mask & IB_QP_RQ_PSN)
		qp.rqPsn = cmd.rq_psn & 0xffffff;
	if (mask & IB_QP_SQ_PSN)
		qp.sqPsn = cmd.sq_psn & 0xffffff;
	if (mask & IB_QP_MAX_QP_RD_ATOMIC)
		qp.maxRdAtomic = cmd.max_rd_atomic;
	if (mask & IB_QP_MAX_DEST_RD_ATOMIC)
		qp.maxDestRdAtomic = cmd.max_dest_rd_atomic;
	if (mask & IB_QP_MIN_RNR_TIMER)
		qp.minRnrTimer = cmd.min_rnr_timer;
	if (mask & IB_QP_PATH_MIG_STATE)
		qp.pathMigState = cmd.path_mig_state;
	if (mask & IB_QP_DEST_QPN)
		qp.destQpn = cmd.dest_qp_num;
	if (mask & IB_QP_EN_SQD_ASYNC_NOTIFY)
		qp.enSqdAsyncNotify = cmd.en_sqd_async_notify;

	if (next != qp.state) {
		QpState was = qp.state;
		qp.state = next;
		switch (next) {
		case IB_QPS_RESET: /* queues emptied, no completions */
			dev.forget(qp);
			qp.msn = 0;
			/* the atomic a retry would be answered from */
			qp.lastAtomicPsn = 0xffffffff;
			qp.lastAtomicOrig = 0;
			qp.sq.clear();
			qp.rq.clear();
			if (qp.ring)
				qp.ring->reset();
			break;
		case IB_QPS_ERR:
			dev.enterError(qp);
			break;
		case IB_QPS_SQD:
			if (qp.enSqdAsyncNotify)
				dev.objectEvent(qp.file, qp, IB_EVENT_SQ_DRAINED);
			break;
		case IB_QPS_RTS:
			if (was == IB_QPS_SQD || was == IB_QPS_SQE)
				dev.progress(qp);
			break;
		default:
			break;
		}
	}
	return 0;
}

} /* namespace ibemu::emu */
