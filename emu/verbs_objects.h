// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// The verbs objects a uverbs file owns (the kernel's ib_pd, ib_mr, ib_cq,
// ib_srq, ib_qp, ib_ah, ib_mw behind their ib_uobjects).
//
// Lifetime rules: the UverbsFile owns every object through its handle table.
// An object that others depend on counts them in usecnt (a PD its MRs, QPs,
// SRQs, AHs and MWs; a CQ and an SRQ their QPs) and cannot be destroyed
// while usecnt is not zero (EBUSY); an MR with windows bound (mws) not
// either (EINVAL, rxe_dereg_mr). The device's QPN and key tables hold
// plain pointers that the object's destruction removes.
#pragma once

#include "emu/clock.h"
#include "emu/cq_ring.h"
#include "emu/liveness.h"
#include "emu/user_access.h"
#include "emu/uverbs_abi.h"

#include <boost/asio/io_context.hpp>

#include <array>
#include <compare>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <span>
#include <vector>

namespace ibemu::emu {

class UverbsFile;
class VerbsDevice;
class CompChannel;
class QpRing;

enum class UType : uint8_t { Pd, Mr, Cq, Qp, Srq, Ah, Mw, Xrcd };
constexpr size_t kUTypes = 8;

struct UObject {
	explicit UObject(UType t) : type(t) {}
	virtual ~UObject() = default;
	UObject(const UObject &) = delete;
	UObject &operator=(const UObject &) = delete;

	const UType type;
	uint32_t handle = 0;
	uint64_t userHandle = 0;
	uint64_t created = 0; /* creation order, for teardown */
	unsigned usecnt = 0;
};

struct Pd final : UObject {
	static constexpr UType kType = UType::Pd;
	Pd() : UObject(kType) {}
};

/* An XRC domain (ib_xrcd): what XRC SRQs and XRC target QPs belong to.
 * One opened with a file's descriptor is the device's for that inode,
 * shared by every uverbs file that opens the same file (the device's
 * table holds it weakly); each open is an Xrcd handle of its own. The
 * domain lives while a handle, an XRC SRQ or a target QP holds it. */
struct XrcDomain {
	XrcDomain() = default;
	XrcDomain(const XrcDomain &) = delete;
	XrcDomain &operator=(const XrcDomain &) = delete;
	~XrcDomain()
	{
		if (file >= 0)
			ua->discardDescriptor(file);
	}
	/* the file's mount id and inode number (fdinfo's mnt_id: and ino:);
	 * both 0: none */
	uint64_t mnt = 0, ino = 0;
	/* the daemon's copy of the file's descriptor (UserAccess::takeFile),
	 * which keeps the inode and its number while the domain lives, as
	 * the kernel's igrab() does; -1 for a domain of no file */
	int file = -1;
	UserAccess *ua = nullptr;
};

struct Xrcd final : UObject {
	static constexpr UType kType = UType::Xrcd;
	Xrcd() : UObject(kType) {}
	/* usecnt: the SRQs and QPs made through this handle (uxrcd->refcnt):
	 * CLOSE_XRCD is EBUSY while there are any */
	std::shared_ptr<XrcDomain> domain;
};

struct Mr final : UObject {
	static constexpr UType kType = UType::Mr;
	Mr() : UObject(kType) {}
	Pd *pd = nullptr;
	uint64_t start = 0; /* user virtual address */
	uint64_t iova = 0; /* the address the keys use */
	uint64_t length = 0;
	uint32_t access = 0;
	uint32_t lkey = 0;
	uint32_t rkey = 0;
	pid_t pid = 0; /* the process charged for the pages */
	std::shared_ptr<const int> mem; /* its address space (UserAccess::openMemory), shared by the process's MRs */
	uint64_t npages = 0; /* charged at registration */
	unsigned mws = 0; /* memory windows bound to it (rxe's num_mw) */
};

struct Qp;

/* A memory window (rxe_mw): a type 1 one is valid from allocation and
 * bound by ibv_bind_mw, a type 2 one free until a BIND_MW work request
 * binds it to the QP that posted it, and free again when invalidated. */
struct Mw final : UObject {
	static constexpr UType kType = UType::Mw;
	Mw() : UObject(kType) {}
	Pd *pd = nullptr;
	uint32_t mwType = 1; /* IB_MW_TYPE_1 or _2 */
	uint32_t rkey = 0; /* index << 8 | key */
	bool valid = false; /* bound (type 2) or allocated (type 1) */
	Mr *mr = nullptr; /* bound to, with these bounds and this access */
	uint64_t addr = 0;
	uint64_t length = 0;
	uint32_t access = 0;
	const Qp *qp = nullptr; /* type 2: the QP it is bound to */
};

struct Sge {
	uint64_t addr;
	uint32_t length;
	uint32_t lkey;
};

struct RecvWqe {
	uint64_t wrId = 0;
	std::vector<Sge> sges;
	bool bad = false; /* a ring slot that failed POST_RECV's checks */
};

struct Cq final : UObject {
	static constexpr UType kType = UType::Cq;
	Cq() : UObject(kType) {}
	UverbsFile *file = nullptr;
	uint32_t cqe = 0; /* capacity */
	/* the pages of its ring charged to the creating process, as mlx5
	 * pins its CQ buffer (ibemu_cq_ring_bytes() of what it asked for) */
	pid_t pid = 0;
	uint64_t npages = 0;
	std::deque<ib_uverbs_wc> queue; /* unless the completions go to ... */
	std::unique_ptr<CqRing> ring; /* ... memory shared with ibemu's provider */
	bool overflowed = false;
	CompChannel *channel = nullptr; /* where its completion events go */
	uint32_t notify = 0; /* armed: IB_CQ_SOLICITED or IB_CQ_NEXT_COMP; 0 not */
	uint32_t compEventsReported = 0; /* events the program read from the channel */
	uint32_t asyncEventsReported = 0;
};

struct Srq final : UObject {
	static constexpr UType kType = UType::Srq;
	Srq() : UObject(kType) {}
	UverbsFile *file = nullptr;
	Pd *pd = nullptr;
	uint32_t srqn = 0;
	uint32_t maxWr = 0;
	uint32_t maxSge = 0;
	uint32_t limit = 0; /* armed limit event, 0: off */
	/* an XRC SRQ (IB_SRQT_XRC): its domain, the handle it was made
	 * through, and the CQ its receives complete on */
	std::shared_ptr<XrcDomain> xrcd;
	Xrcd *xrcdHandle = nullptr;
	Cq *cq = nullptr;
	std::deque<RecvWqe> queue;
	uint32_t eventsReported = 0;
};

struct Ah final : UObject {
	static constexpr UType kType = UType::Ah;
	Ah() : UObject(kType) {}
	Pd *pd = nullptr;
	ib_uverbs_ah_attr attr{};
};

/* A multicast group as a QP attaches to it: MLID and MGID. */
struct McastGroup {
	uint16_t mlid = 0;
	std::array<uint8_t, 16> mgid{};
	auto operator<=>(const McastGroup &) const = default;
};

/* One posted send work request, as the data path executes it. */
struct SendWqe {
	ib_uverbs_send_wr wr{};
	std::vector<Sge> sges;
	std::vector<uint8_t> inlineData; /* IB_SEND_INLINE: copied at post time */
	bool isInline = false;
	/* UD: the address vector resolved from the AH at post time */
	ib_uverbs_ah_attr ah{};
	const Pd *ahPd = nullptr; /* checked at post time only */
	/* IB_WR_BIND_MW (rxe's wr.mw): the window by handle, its rkey as the
	 * program knew it, the new rkey, the MR by lkey (0: unbind) and the
	 * bounds and access to give it */
	struct {
		uint32_t mwHandle = 0, mwRkey = 0, rkey = 0, mrLkey = 0, access = 0;
		uint64_t addr = 0, length = 0;
	} bind;
	uint32_t xrcSrqn = 0; /* XRC_INI: the remote SRQ (the XRCETH) */
	WcStatus failStatus = IB_WC_SUCCESS; /* a ring slot that failed its checks: completes so */
	unsigned retriesLeft = 0;
	unsigned rnrRetriesLeft = 0;
	/* a retry uses its PSNs again: the responder answers a duplicate
	 * without executing it twice (verbs_resp.cpp, IBA 9.7.7.2.4) */
	bool timedOut = false; /* the last try was lost; its ACK timer ran out */
	uint32_t psn = 0; /* its first PSN, taken from the QP's SQ PSN when first sent */
	bool psnSet = false;
};

/* A datagram for a kernel ULP's UD QP (IPoIB, emu/ipoib.h), as its
 * receive completion and buffer tell it: who sent it (what IPoIB uses to
 * drop its own looped-back broadcasts) and the payload as it came, without
 * a GRH. Valid only during the call. */
struct KernelDatagram {
	uint16_t slid = 0;
	uint32_t srcQp = 0;
	std::span<const uint8_t> payload;
};

struct Qp final : UObject {
	static constexpr UType kType = UType::Qp;
	/* out of line, in verbs_qp.cpp, where QpRing is a complete type */
	explicit Qp(boost::asio::io_context &io);
	~Qp() override;
	UverbsFile *file = nullptr;
	VerbsDevice *dev = nullptr;
	QpType qpType = IB_QPT_RC;
	QpState state = IB_QPS_RESET;
	uint32_t qpn = 0;
	Pd *pd = nullptr;
	Cq *sendCq = nullptr;
	Cq *recvCq = nullptr;
	Srq *srq = nullptr;
	/* XRC_TGT: its domain (no PD, CQs or SRQ: a request names the SRQ,
	 * whose PD and CQ serve it) and the handle it was made through */
	std::shared_ptr<XrcDomain> xrcd;
	Xrcd *xrcdHandle = nullptr;

	/* capabilities */
	uint32_t maxSendWr = 0, maxRecvWr = 0, maxSendSge = 0, maxRecvSge = 0, maxInline = 0;
	bool sqSigAll = false;

	/* attributes (ib_qp_attr) */
	uint32_t qkey = 0, rqPsn = 0, sqPsn = 0, destQpn = 0, accessFlags = 0;
	uint32_t msn = 0; /* messages completed as a responder (the AETH's MSN) */
	uint16_t pkeyIndex = 0, altPkeyIndex = 0;
	uint8_t pathMtu = 1, pathMigState = 0, maxRdAtomic = 0, maxDestRdAtomic = 0, minRnrTimer = 0;
	uint8_t portNum = 1, timeout = 0, retryCnt = 0, rnrRetry = 0, altPortNum = 0, altTimeout = 0;
	uint8_t enSqdAsyncNotify = 0;
	ib_uverbs_qp_dest av{}, altAv{};

	std::deque<SendWqe> sq;
	std::deque<RecvWqe> rq;
	/* ibemu's provider: work requests come from memory shared with the
	 * program (POST_SEND and POST_RECV are refused), taken into sq and rq
	 * as they are needed */
	std::unique_ptr<QpRing> ring;
	Timer timer; /* ACK timeout / RNR retry of the head WQE */
	bool waiting = false; /* the head WQE waits for the timer */
	uint64_t waitSeq = 0; /* which wait a timer handler belongs to */
	const Qp *rnrTarget = nullptr; /* the responder that sent the RNR NAK */
	/* Across daemons (verbs_req.cpp, "the far side"): the head WQE went
	 * to another daemon as packets and waits for its reply */
	bool awaitingReply = false;
	/* as a responder: the last atomic executed for a requester here or in any
	 * daemon, answered again to a duplicate of it (IBA 9.7.7.2.4) */
	uint32_t lastAtomicPsn = 0xffffffff;
	uint64_t lastAtomicOrig = 0;
	Liveness alive; /* for timer handlers */
	uint32_t eventsReported = 0;
	std::vector<McastGroup> mcast; /* the groups it is attached to (uqp->mcast_list) */
	/* A kernel ULP's QP (no file): its receive buffers are the ULP's
	 * own, so every datagram that passes the responder's checks goes
	 * here instead of to a posted receive */
	std::function<void(const KernelDatagram &)> kernelRecv;
};

} /* namespace ibemu::emu */
