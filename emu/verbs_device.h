// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// The verbs side of one local HCA (what ib_uverbs and a software RDMA
// driver such as rdmavt keep per ib_device): its attributes, the
// device-wide QPN and memory key tables, its open uverbs files, and the
// data path that moves messages through the fabric.
//
// Where a work request goes: POST_SEND queues it on the
// QP and progress() executes the send queue in order. Each message is
// routed by the fabric's LFTs from the QP's port to its DLID
// (Subnet::routeData), lands on the QP of the VerbsDevice behind the
// destination port, and moves between the two processes' memory through
// UserAccess. Completions go to the CQs; errors move QPs to the Error state
// and flush them. The data path by role, as rxe splits it:
//   verbs_req.cpp   the requester (rxe_req.c)
//   verbs_resp.cpp  the responder (rxe_resp.c)
//   verbs_comp.cpp  the completer (rxe_comp.c)
//   verbs_mr.cpp    the copies between processes' memory (rxe_mr.c)
#pragma once

#include "emu/pinned_vm.h"
#include "emu/user_access.h"
#include "emu/uverbs_abi.h"
#include "emu/verbs_objects.h"
#include "fabric/packet_format.h"
#include "fabric/remote_cable.h"

#include <boost/asio/io_context.hpp>

#include <array>
#include <list>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

namespace ibemu::fabric {
struct Node;
struct Port;
class Subnet;
}

namespace ibemu::emu {

class Host;
struct Seg; /* a piece of process memory (verbs_mr.h) */
struct FarRequest; /* a request from another daemon, read back (verbs_resp.cpp) */
struct Inbound; /* a request as the responder takes it (verbs_path.h) */
struct Answer; /* the responder's answer (verbs_path.h) */

/* the destination QPN of every multicast packet (IBA 10.5.2.3) */
constexpr uint32_t kMulticastQpn = 0xffffff;

/* Where the device's async events go. ib_uverbs registers its event
 * handlers with the device and with each QP, CQ and SRQ it creates, and
 * rxe raises events through them without knowing uverbs; here the uverbs
 * file sets one sink on the device (uverbs_file.cpp), so the data path
 * never reaches into a file. */
class VerbsEventSink {
public:
	/* an event for file: about obj (a QP, CQ or SRQ it owns, element its
	 * user handle), or about a port (obj null, element its number) */
	virtual void asyncEvent(UverbsFile &file, uint64_t element, AsyncEvent type, UObject *obj) = 0;
	/* the device is gone (ib_uverbs disassociate) */
	virtual void deviceDied(UverbsFile &file) = 0;

protected:
	~VerbsEventSink() = default;
};

/* Device limits reported by QUERY_DEVICE and QUERY_PORT and enforced by the
 * commands. Smaller than a hardware HCA's: everything queued lives in the
 * daemon, and one message is copied in one turn of its io_context. */
struct VerbsLimits {
	uint32_t maxQp = 1024;
	uint32_t maxQpWr = 4096;
	uint32_t maxSge = 32;
	uint32_t maxCq = 1024;
	/* mlx5's: ofi_rxm asks for (rx + tx) x its universe, 262,144 by
	 * default; the caller's RLIMIT_MEMLOCK pays for it (CREATE_CQ) */
	uint32_t maxCqe = 4194303;
	/* a CQ without a ring of ibemu's provider (another provider, the raw
	 * ABI) keeps its completions in the daemon's heap: no larger than
	 * before max_cqe grew (EINVAL), so that a big CQ is the caller's memfd */
	uint32_t maxCqeWithoutRing = 65536;
	uint32_t maxMr = 4096;
	uint32_t maxMw = 4096;
	uint32_t maxPd = 1024;
	uint32_t maxQpRdAtom = 16;
	uint32_t maxQpInitRdAtom = 255;
	uint32_t maxAh = 4096;
	uint32_t maxSrq = 256;
	uint32_t maxSrqWr = 16384;
	uint32_t maxSrqSge = 32;
	uint32_t maxInline = 512;
	uint32_t maxMsgSize = 16u << 20;
	/* multicast: groups with a QP attached, QPs per group, attachments */
	uint32_t maxMcastGrp = 8192;
	uint32_t maxMcastQpAttach = 56;
	uint32_t maxTotalMcastQpAttach = 8192 * 56;
};

class VerbsDevice {
public:
	VerbsDevice(boost::asio::io_context &io, Host &host, fabric::Node &node);
	~VerbsDevice();
	VerbsDevice(const VerbsDevice &) = delete;
	VerbsDevice &operator=(const VerbsDevice &) = delete;

	boost::asio::io_context &io() const { return io_; }
	Host &host() const { return host_; }
	fabric::Node &node() const { return node_; }
	const VerbsLimits &limits() const { return limits_; }
	unsigned numPorts() const;
	fabric::Port *port(unsigned num) const; /* 1-based; null when out of range */

	void queryDevice(ib_uverbs_query_device_resp &r) const;
	int queryPort(unsigned num, ib_uverbs_query_port_resp &r) const;

	/* Device removal (ib_uverbs disassociate): open files get EIO. */
	void kill();
	bool dead() const { return dead_; }

	/* --- tables --- */
	void setEventSink(VerbsEventSink *sink) { events_ = sink; }
	void attach(UverbsFile *f) { files_.push_back(f); }
	void detach(UverbsFile *f) { files_.remove(f); }
	size_t openFiles() const { return files_.size(); }
	uint32_t addQp(Qp *qp);
	void removeQp(Qp *qp);
	Qp *qp(uint32_t qpn) const;
	void addMr(Mr *mr);
	void removeMr(Mr *mr);
	Mr *mrByKey(uint32_t key) const;
	/* Memory windows (rxe_mw.c): their rkeys' indexes lie above every
	 * MR's, as rxe's pools have them, so that a key names one or the other */
	static constexpr uint32_t kMwIndexBase = 0x10001;
	static bool isMwKey(uint32_t key) { return (key >> 8) >= kMwIndexBase; }
	void addMw(Mw *mw);
	void removeMw(Mw *mw);
	Mw *mwByKey(uint32_t key) const; /* by its index: the key byte is the caller's to check */
	void unbindMw(Mw &mw); /* from its MR and QP: rxe_do_invalidate_mw */
	/* the data path's BIND_MW and LOCAL_INV (rxe_bind_mw, rxe_invalidate_mw): IB_WC_SUCCESS or the status */
	WcStatus bindMw(const Qp &qp, const SendWqe &w);
	WcStatus localInvalidate(uint32_t rkey);
	/* a free SRQ number: 24 bits (an XRCETH's), never 0 */
	uint32_t nextSrqn()
	{
		while (nextSrqn_ == 0 || srqs_.count(nextSrqn_))
			nextSrqn_ = (nextSrqn_ + 1) & 0xffffff;
		uint32_t n = nextSrqn_;
		nextSrqn_ = (nextSrqn_ + 1) & 0xffffff;
		return n;
	}
	/* SRQs by number (an XRC request names one), and the XRC domains
	 * opened with a file, by its inode (ib_uverbs_device's xrcd tree): a
	 * domain stays findable while anything holds it */
	void addSrq(Srq *srq) { srqs_[srq->srqn] = srq; }
	void removeSrq(Srq *srq) { srqs_.erase(srq->srqn); }
	Srq *srqByNum(uint32_t srqn) const
	{
		auto it = srqs_.find(srqn);
		return it == srqs_.end() ? nullptr : it->second;
	}
	std::shared_ptr<XrcDomain> xrcdByInode(uint64_t mnt, uint64_t ino) const
	{
		auto it = xrcds_.find({ mnt, ino });
		return it == xrcds_.end() ? nullptr : it->second.lock();
	}
	void addXrcd(const std::shared_ptr<XrcDomain> &d)
	{
		std::erase_if(xrcds_, [](const auto &kv) { return kv.second.expired(); });
		xrcds_[{ d->mnt, d->ino }] = d;
	}
	/* Objects of a type on this device against its limit (max_qp, ...):
	 * 0 when a file of user `owner` may make one more; -ENOMEM on a full
	 * device, as the drivers answer; -EAGAIN past the user's share, as the
	 * kernel's rdma cgroup limit answers. Every user but root holds at
	 * most kUserShare of each limit, so that no one user takes all of a
	 * device's objects from the others (docs/robustness.md). */
	static constexpr double kUserShare = 0.75;
	int room(UType t, uid_t owner) const;
	void counted(UType t, int delta, uid_t owner);

	/* --- multicast attachments (verbs_mcast.cpp) --- */

	/* ib_attach_mcast(): 0 (also when already attached), -EINVAL for a
	 * GID that is not multicast, a LID outside the multicast range or a QP
	 * that is not UD, -ENOMEM past the device's limits */
	int attachMcast(Qp &qp, const McastGroup &g);
	/* ib_detach_mcast(): -EINVAL unless the QP is attached to the group */
	int detachMcast(Qp &qp, const McastGroup &g);
	/* every attachment of the QP goes (its file is being torn down) */
	void detachAllMcast(Qp &qp);

	/* --- data path (verbs_req.cpp, verbs_resp.cpp, verbs_comp.cpp) --- */

	/* Executes the QP's send queue as far as it can. */
	void progress(Qp &qp);
	/* A QP enters the Error state: its work requests complete as flushed,
	 * and an SRQ QP reports its last WQE. */
	void enterError(Qp &qp);
	/* Completes every queued work request of the QP as flushed. */
	void flush(Qp &qp);
	/* A ring QP (emu/qp_ring.h): the receives the program has posted to
	 * its ring since the last call, into qp.rq. One that fails POST_RECV's
	 * checks is taken as a bad receive, which fails when a message uses it. */
	void takeRecvs(Qp &qp);
	/* A receive was posted to qp (or to srq): requesters that got an RNR
	 * NAK from it retry now. */
	void recvPosted(const Qp *qp, const Srq *srq);
	/* qp is being destroyed: requesters waiting on it stop looking at it. */
	void responderGone(const Qp &qp);
	/* The QP is going away: forget it in every wait list. */
	void forget(Qp &qp);
	/* Appends a completion (an overrun raises CQ_ERR instead). */
	/* solicited: a receive of a message sent with IB_SEND_SOLICITED */
	void complete(Cq &cq, const ib_uverbs_wc &wc, bool solicited = false);
	/* Raises an async event about obj (a QP, CQ or SRQ) on the file that
	 * owns it (none: nobody hears it). */
	void objectEvent(UverbsFile *file, UObject &obj, AsyncEvent ev);
	/* Raises an async event about a port on every open file. */
	void portEvent(unsigned portNum, AsyncEvent ev);
	/* The fabric says a port may have changed: compares it with what was
	 * last seen and returns the events the kernel's drivers would raise
	 * (PORT_ACTIVE, PORT_ERR, LID_CHANGE, SM_CHANGE, PKEY_CHANGE,
	 * CLIENT_REREGISTER), for the host to dispatch (Host::portEvent). */
	std::vector<AsyncEvent> portChanged(fabric::Port &port, bool clientReregister);

	/* A data message from another daemon reached `port`: a request for a
	 * responder QP here, or the reply to a request of ours. */
	void receiveRemote(fabric::Port &port, fabric::DataPackets &&packets);

private:
	enum class Outcome { Done, Wait, Error };
	Outcome execute(Qp &qp, SendWqe &w, WcStatus &status, uint32_t &byteLen);
	/* a UD send to a multicast DLID: every attached QP the subnet's MFTs
	 * reach gets a copy; the status is the sender's */
	WcStatus sendMulticast(Qp &qp, const SendWqe &w, fabric::Port &src, const std::vector<Seg> &local, uint64_t len,
			       uint32_t packets, uint64_t wireBytes);
	void finishHead(Qp &qp, WcStatus status, uint32_t byteLen);
	/* the completer (verbs_comp.cpp): the answer to the head WQE, from a
	 * responder here (`here`) or in another daemon */
	Outcome applyAnswer(Qp &qp, SendWqe &w, const Answer &a, const std::vector<Seg> &local, uint64_t len,
			    const Qp *here, WcStatus &status);
	/* the far side (verbs_req.cpp, verbs_resp.cpp, verbs_comp.cpp) */
	WcStatus sendAway(Qp &qp, const SendWqe &w, const fabric::Away &away, const fabric::PacketHeaders &base,
			  const std::vector<Seg> &local, uint64_t len, unsigned mtu);
	void replyArrived(fabric::Port &port, const fabric::PacketView &v, const fabric::DataPackets &packets);
	void respondRemote(fabric::Port &port, const fabric::DataPackets &packets);
	void respondTo(Qp &qp, fabric::Port &dst, const FarRequest &r);
	/* the responder (verbs_resp.cpp): every request for a QP here goes through it */
	Answer respond(Qp &rqp, fabric::Port &dst, const Inbound &in);
	void answered(Qp &rqp, const Answer &a);
	void waitForRetry(Qp &qp, std::chrono::nanoseconds d);

	boost::asio::io_context &io_;
	Host &host_;
	fabric::Node &node_;
	VerbsLimits limits_;
	bool dead_ = false;
	std::list<UverbsFile *> files_;
	VerbsEventSink *events_ = nullptr;
	std::map<uint32_t, Qp *> qps_;
	std::map<uint32_t, Mr *> keys_;
	std::map<McastGroup, std::vector<Qp *>> mcast_; /* attached QPs by group */
	size_t mcastAttached_ = 0;
	std::set<Qp *> rnrWaiting_; /* QPs of this device waiting after an RNR NAK */
	std::vector<Qp *> responderErrors_; /* set by execute(): to Error once the WQE is done */
	struct PortSeen {
		bool active = false;
		uint16_t lid = 0;
		uint8_t lmc = 0;
		uint16_t smLid = 0;
		uint8_t smSl = 0;
		std::vector<uint16_t> pkeys;
	};
	std::vector<PortSeen> seen_; /* index = port number - 1 */
	uint32_t nextQpn_ = 0x11;
	long objects_[kUTypes] = {};
	std::map<uid_t, std::array<long, kUTypes>> byUser_; /* but root's */
	uint32_t nextKey_ = 0x1000;
	std::map<uint32_t, Mw *> mws_; /* by index */
	uint32_t nextMwIndex_ = kMwIndexBase;
	uint8_t nextMwKey_ = 0;
	uint32_t nextSrqn_ = 1;
	std::map<uint32_t, Srq *> srqs_;
	std::map<std::pair<uint64_t, uint64_t>, std::weak_ptr<XrcDomain>> xrcds_;
};

} /* namespace ibemu::emu */
