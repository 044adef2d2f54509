// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// The InfiniBand Communication Manager of the emulated host (the kernel's
// drivers/infiniband/core/cm.c): one MAD agent for class 0x07 on every
// local port, connection IDs with the IBA 12.9 state machine, and the CM
// messages they exchange through the fabric (emu/cm_msgs.h); for UD, the
// service ID resolution (SIDR_REQ, SIDR_REP).
//
// Sends that wait for an answer (REQ, REP, DREQ) go through the MAD layer
// with the CM's timeout and retries and are cancelled when the answer
// comes; an MRA stretches the wait. A REQ no listener takes is rejected
// with "invalid service ID", and an ID destroyed mid-way sends what the
// kernel's cm_destroy_id() sends (REJ, DREQ or DREP).
//
// Where it is (the kernel's cm.c, by direction):
//   ib_cm.cpp       IDs, ports, listening, sending with retries, timewait
//   ib_cm_send.cpp  the messages an ID sends (ib_send_cm_*())
//   ib_cm_recv.cpp  what arrives, by attribute (cm_*_handler())
//
// Lifetime rules: IbCm owns every CmId. A CmId's handler is called from
// handlers run by the io_context, never from inside a call the handler
// made; destroy() ends the ID at once and no event for it follows.
#pragma once

#include "emu/cm_msgs.h"
#include "emu/mad_agent.h"

#include <boost/asio/io_context.hpp>

#include <cstdint>
#include <map>
#include <memory>

namespace ibemu::emu {

class MadPort;
struct CmId;

enum class CmState {
	Idle,
	Listen,
	ReqSent,
	MraReqRcvd, /* the passive side asked for more time */
	ReqRcvd,
	MraReqSent,
	RepSent,
	MraRepRcvd,
	RepRcvd,
	Established,
	DreqSent,
	DreqRcvd,
	Timewait,
	SidrReqSent,
	SidrReqRcvd,
};

enum class CmEventType {
	ReqReceived, /* to a listener's handler; newId is the passive side's ID */
	RepReceived,
	RtuReceived,
	RejReceived,
	ReqError, /* no REP after every retry */
	RepError, /* no RTU after every retry */
	DreqReceived,
	DrepReceived,
	DreqError,
	TimewaitExit,
	SidrReqReceived, /* to a listener's handler; newId answers it */
	SidrRepReceived,
	SidrReqError, /* no SIDR_REP after every retry */
};

struct CmEvent {
	CmEventType type;
	CmId *newId = nullptr;
	cm::Req req;
	cm::Rep rep;
	cm::Rej rej;
	cm::SidrReq sidrReq;
	cm::SidrRep sidrRep;
};

class CmHandler {
public:
	virtual void cmEvent(CmId &id, const CmEvent &ev) = 0;

protected:
	~CmHandler() = default;
};

struct CmId {
	uint32_t localId = 0;
	uint32_t remoteId = 0;
	CmState state = CmState::Idle;
	CmHandler *handler = nullptr;
	MadPort *port = nullptr; /* where its MADs go from */
	MadAddress av; /* the peer's CM: LID, SL, P_Key index, QP1 */
	uint64_t serviceId = 0; /* listen: with serviceMask */
	uint64_t serviceMask = 0;
	uint64_t remoteCaGuid = 0;
	uint32_t remoteQpn = 0;
	uint8_t packetLifeTime = 0; /* of the path; sets the timewait */
	uint32_t timeoutMs = 0; /* of a REQ/REP/DREQ try */
	uint8_t maxCmRetries = 0;
	uint64_t tid = 0; /* of the REQ: every MAD of the connection carries it */
	uint64_t sendCookie = 0; /* the outstanding REQ/REP/DREQ, 0 if none */
	ibemu::Mad lastMad{}; /* what a duplicate asks to be sent again (MRA, RTU, DREP) */
	uint16_t lastAttr = 0;
	std::unique_ptr<Timer> timewait;
};

class IbCm final : public AgentClient {
public:
	explicit IbCm(boost::asio::io_context &io);
	~IbCm();
	IbCm(const IbCm &) = delete;
	IbCm &operator=(const IbCm &) = delete;

	/* a local port's agent (ib_cm_add_one / remove_one) */
	void addPort(MadPort &port);
	void removePort(MadPort &port);

	CmId *create(CmHandler *handler);
	/* ib_destroy_cm_id(): what the state asks is sent, then the ID goes */
	void destroy(CmId *id);

	/* ib_cm_listen(): -EBUSY if another listener has the service ID */
	int listen(CmId &id, uint64_t serviceId, uint64_t mask);
	/* ib_send_cm_req(): av reaches the peer's port, lid and GID are in req */
	int sendReq(CmId &id, MadPort &port, const MadAddress &av, cm::Req req);
	int sendRep(CmId &id, cm::Rep rep);
	int sendRtu(CmId &id);
	int sendMra(CmId &id, uint8_t serviceTimeout);
	int sendRej(CmId &id, uint16_t reason, const uint8_t *priv, size_t len);
	int sendDreq(CmId &id);
	int sendDrep(CmId &id);
	/* ib_send_cm_sidr_req(): timeoutMs a try, retries more */
	int sendSidrReq(CmId &id, MadPort &port, const MadAddress &av, cm::SidrReq req, uint32_t timeoutMs,
			uint8_t retries);
	/* ib_send_cm_sidr_rep(): the answer to a SIDR_REQ received; the ID is done */
	int sendSidrRep(CmId &id, cm::SidrRep rep);

	/* AgentClient */
	void madReceived(MadAgent &agent, MadRecv &&recv) override;
	void madSendDone(MadAgent &agent, uint64_t cookie, SendStatus status) override;

private:
	CmId *find(uint32_t localId) const;
	/* the ID listening for this service ID, or null */
	CmId *listenerFor(uint64_t serviceId) const;
	int aim(CmId &id, MadPort &port, const MadAddress &av);
	/* sends mad from the ID's port; withTimeout: the REQ/REP/DREQ kind */
	int send(CmId &id, const ibemu::Mad &mad, bool withTimeout);
	/* a reply to a MAD that has no ID (REJ, DREP), to where it came from */
	void reply(MadAgent &agent, const MadAddress &src, const ibemu::Mad &mad);
	void cancelSend(CmId &id);
	void enterTimewait(CmId &id);
	void event(CmId &id, CmEvent ev);

	void onReq(MadAgent &agent, const MadRecv &recv);
	void onMra(const uint8_t *mad);
	void onRej(const uint8_t *mad);
	void onRep(const uint8_t *mad);
	void onRtu(const uint8_t *mad);
	void onDreq(MadAgent &agent, const MadRecv &recv);
	void onDrep(const uint8_t *mad);
	void onSidrReq(MadAgent &agent, const MadRecv &recv);
	void onSidrRep(const uint8_t *mad);

	boost::asio::io_context &io_;
	std::map<MadPort *, MadAgent *> agents_;
	std::map<uint32_t, std::unique_ptr<CmId>> ids_;
	uint32_t nextId_;
	uint32_t idOperand_; /* local IDs are a counter XOR this, as the kernel's */
	uint64_t nextCookie_ = 1;
	std::map<uint64_t, CmId *> cookies_; /* outstanding sends */
};

} /* namespace ibemu::emu */
