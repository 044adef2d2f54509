// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// The host's SA client (the kernel's drivers/infiniband/core/sa_query.c):
// PathRecord queries and MCMemberRecord joins and leaves from a local port
// to the subnet's SM, over the fabric, answered by whatever SM runs there
// (OpenSM). A query waits
// timeout/10 per try and tries 10 times, as the kernel's does; the SM is
// the one the port's PortInfo names (MasterSMLID, MasterSMSL).
#pragma once

#include "emu/mad_agent.h"
#include "fabric/packet.h"

#include <boost/asio/io_context.hpp>

#include <array>
#include <cstdint>
#include <functional>
#include <map>

namespace ibemu::emu {

class MadPort;

/* The PathRecord attribute (IBA 15.2.5.16) as the SA sends it. */
struct PathRecord {
	uint64_t serviceId = 0;
	fabric::Gid dgid{};
	fabric::Gid sgid{};
	uint16_t dlid = 0;
	uint16_t slid = 0;
	uint32_t flowLabel = 0;
	uint8_t hopLimit = 0;
	uint8_t trafficClass = 0;
	bool reversible = false;
	uint8_t numbPath = 0;
	uint16_t pkey = 0;
	uint16_t qosClass = 0;
	uint8_t sl = 0;
	uint8_t mtuSelector = 0;
	uint8_t mtu = 0;
	uint8_t rateSelector = 0;
	uint8_t rate = 0;
	uint8_t packetLifeTimeSelector = 0;
	uint8_t packetLifeTime = 0;
	uint8_t preference = 0;

	void encode(uint8_t *out) const; /* 64 bytes */
	static PathRecord decode(const uint8_t *in);
};

/* PathRecord component mask bits (IBA table 207) */
enum : uint64_t {
	PR_SERVICE_ID = 3ull << 0,
	PR_DGID = 1ull << 2,
	PR_SGID = 1ull << 3,
	PR_TCLASS = 1ull << 10,
	PR_REVERSIBLE = 1ull << 11,
	PR_NUMB_PATH = 1ull << 12,
	PR_PKEY = 1ull << 13,
	PR_QOS_CLASS = 1ull << 14,
};

/* The MCMemberRecord attribute (IBA 15.2.5.17). */
struct McMemberRecord {
	fabric::Gid mgid{};
	fabric::Gid portGid{};
	uint32_t qkey = 0;
	uint16_t mlid = 0;
	uint8_t mtuSelector = 0;
	uint8_t mtu = 0;
	uint8_t trafficClass = 0;
	uint16_t pkey = 0;
	uint8_t rateSelector = 0;
	uint8_t rate = 0;
	uint8_t packetLifeTimeSelector = 0;
	uint8_t packetLifeTime = 0;
	uint8_t sl = 0;
	uint32_t flowLabel = 0;
	uint8_t hopLimit = 0;
	uint8_t scope = 0;
	uint8_t joinState = 0; /* bit 0 full, 1 non-member, 2 send-only non-member, 3 send-only full */
	bool proxyJoin = false;

	void encode(uint8_t *out) const; /* 52 bytes */
	static McMemberRecord decode(const uint8_t *in);
};

/* MCMemberRecord component mask bits (IBA table 209) */
enum : uint64_t {
	MCR_MGID = 1ull << 0,
	MCR_PORT_GID = 1ull << 1,
	MCR_QKEY = 1ull << 2,
	MCR_TCLASS = 1ull << 6,
	MCR_PKEY = 1ull << 7,
	MCR_SL = 1ull << 12,
	MCR_FLOW_LABEL = 1ull << 13,
	MCR_JOIN_STATE = 1ull << 16,
};

class SaClient final : public AgentClient {
public:
	/* status 0 and the path; -ETIMEDOUT with no answer after every try,
	 * -EINVAL for an answer with an error status, -ECANCELED never (a
	 * cancelled query calls nothing) */
	using Done = std::function<void(int status, const PathRecord &path)>;

	explicit SaClient(boost::asio::io_context &io);
	~SaClient();
	SaClient(const SaClient &) = delete;
	SaClient &operator=(const SaClient &) = delete;

	void addPort(MadPort &port);
	void removePort(MadPort &port);

	/* ib_sa_path_rec_get(): returns a query ID (> 0) or a negative errno
	 * (-EAGAIN while the port knows no SM); done is called later */
	int64_t pathRecGet(MadPort &port, const PathRecord &rec, uint64_t compMask, uint32_t timeoutMs, Done done);
	/* ib_sa_mcmember_rec_query(): SubnAdmSet (join) or SubnAdmDelete
	 * (leave) of a member record; the same IDs and errors */
	using McDone = std::function<void(int status, const McMemberRecord &rec)>;
	int64_t mcMemberSet(MadPort &port, bool join, const McMemberRecord &rec, uint64_t compMask, uint32_t timeoutMs,
			    McDone done);
	/* ib_sa_cancel_query(): done is never called */
	void cancel(int64_t query);
	/* queries neither answered, timed out nor cancelled */
	size_t outstanding() const { return queries_.size(); }

	void madReceived(MadAgent &agent, MadRecv &&recv) override;
	void madSendDone(MadAgent &agent, uint64_t cookie, SendStatus status) override;

private:
	/* status, and the record of the answer (null without one) */
	using RawDone = std::function<void(int status, const uint8_t *rec)>;
	struct Query {
		MadPort *port;
		uint64_t tid;
		RawDone done;
	};
	int64_t send(MadPort &port, uint8_t method, uint16_t attr, uint64_t compMask, const uint8_t *rec, size_t recLen,
		     uint32_t timeoutMs, RawDone done);
	boost::asio::io_context &io_;
	std::map<MadPort *, MadAgent *> agents_;
	std::map<int64_t, Query> queries_; /* by ID, which is the send's cookie */
	int64_t nextId_ = 1;
	uint32_t nextTid_ = 1;
};

} /* namespace ibemu::emu */
