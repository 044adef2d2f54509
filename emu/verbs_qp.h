// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// QP states (verbs_qp.cpp): which transitions are legal (the kernel's
// ib_modify_qp_is_ok), what a QP may do in each state (rdmavt's
// ib_rvt_state_ops[]), and the attribute checks and state change of
// modify_qp (rvt_modify_qp).
#pragma once

#include "emu/uverbs_abi.h"

#include <cstdint>

namespace ibemu::emu {

struct Qp;
class VerbsDevice;

/* What a QP may do in a state: the flags of rdmavt's ib_rvt_state_ops[].
 * rdmavt's RVT_PROCESS_SEND_OK (carry on with the WQE in progress) has no
 * flag here: a message executes whole, so only starting the next counts. */
enum : unsigned {
	kPostSendOk = 1u << 0, /* POST_SEND accepts work requests */
	kPostRecvOk = 1u << 1, /* POST_RECV accepts work requests */
	kProcessRecvOk = 1u << 2, /* requests from the wire are executed (the responder) */
	kProcessNextSendOk = 1u << 3, /* the send queue starts its next WQE */
	kFlushSend = 1u << 4, /* queued sends complete as flushed */
	kFlushRecv = 1u << 5, /* receives, queued or newly posted, complete as flushed */
};

/* rdmavt's SQE also has RVT_FLUSH_SEND; ibemu's send queue holds in SQE,
 * which no transition enters (a send error takes the QP to ERR). */
inline constexpr unsigned kQpStateOps[IB_QPS_ERR + 1] = {
	0, /* RESET */
	kPostRecvOk, /* INIT */
	kPostRecvOk | kProcessRecvOk, /* RTR */
	kPostRecvOk | kProcessRecvOk | kPostSendOk | kProcessNextSendOk, /* RTS */
	kPostRecvOk | kProcessRecvOk | kPostSendOk, /* SQD */
	kPostRecvOk | kProcessRecvOk | kPostSendOk, /* SQE */
	kPostRecvOk | kFlushRecv | kPostSendOk | kFlushSend, /* ERR */
};

inline unsigned qpStateOps(QpState s)
{
	return s <= IB_QPS_ERR ? kQpStateOps[s] : 0;
}

/* ib_modify_qp_is_ok(): is cur -> next legal for the type with this mask? */
bool qpTransitionOk(QpState cur, QpState next, QpType type, uint32_t mask);
/* The QP attribute checks and state change of a software driver's
 * modify_qp (rdmavt's rvt_modify_qp). 0 or -EINVAL. */
int applyModifyQp(VerbsDevice &dev, Qp &qp, const ib_uverbs_modify_qp &cmd);

} /* namespace ibemu::emu */
