// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// The host's multicast memberships (the kernel's
// drivers/infiniband/core/multicast.c): local joins of one MGID on one port
// share one membership at the SA. The first join, and a join that needs a
// join state the port does not hold yet, sends an MCMemberRecord Set to the
// SM (emu/sa_query.h); a join the port's membership already covers is
// answered from it. A join state that no local member holds any more is
// left at the SA (Delete, retried up to three times, and awaited before
// the group's next Set), and with the last member the whole group. Joins
// with a zero MGID ask the SA to create a group and share nothing.
//
// A port event that may have cost the port its memberships at the SA (its
// link going down, a new LID, a client reregister from an SM that took
// over, a P_Key table that moved the group's P_Key) puts its groups in
// error: every joined member is told -ENETRESET (rdma_cm's
// MULTICAST_ERROR), holds nothing any more, and must leave and join again.
//
// Lifetime rules: a member's done is called from the io_context, never
// after leave(): once with the join's outcome, and once more with
// -ENETRESET if its group fails after a successful join. done must not
// call join() or leave() (it runs while the group's members are walked);
// rdma_cm's queues an event. SaMulticast owns groups and members.
#pragma once

#include "emu/sa_query.h"

#include <boost/asio/io_context.hpp>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <vector>

namespace ibemu::emu {

class MadPort;

class SaMulticast {
public:
	using Done = std::function<void(int status, const McMemberRecord &rec)>;

	SaMulticast(boost::asio::io_context &io, SaClient &sa);
	~SaMulticast();
	SaMulticast(const SaMulticast &) = delete;
	SaMulticast &operator=(const SaMulticast &) = delete;

	/* ib_sa_join_multicast(): a member ID (> 0); done tells how the join
	 * went (0 and the group's record, or a negative errno) */
	int64_t join(MadPort &port, const McMemberRecord &rec, uint64_t compMask, Done done);
	/* ib_sa_free_multicast(): the member goes and done is never called */
	void leave(int64_t member);
	/* a port goes away: its groups and members with it, silently */
	void removePort(MadPort &port);
	/* mcast_event_handler(): a port event of the port's HCA. An error
	 * event (PORT_ERR, LID_CHANGE, CLIENT_REREGISTER) fails the port's
	 * groups; a P_Key change those whose P_Key moved or went. */
	enum class PortEvent { Error, PkeyChange };
	void portEvent(MadPort &port, PortEvent ev);

private:
	struct Group;
	enum class State { Joining, Joined, Failed };
	struct Member {
		Group *group;
		McMemberRecord rec;
		uint64_t compMask;
		Done done;
		State state = State::Joining;
	};
	struct Group {
		MadPort *port;
		fabric::Gid mgid;
		uint8_t joinState = 0; /* what the port holds at the SA */
		McMemberRecord rec; /* the SA's answer */
		int pkeyIndex = -1; /* of rec.pkey when first answered */
		int64_t query = 0; /* the Set or Delete in flight */
		Member *asking = nullptr; /* the member a Set is for */
		uint8_t leaving = 0; /* the join states a Delete in flight leaves */
		int leaveRetries = 3; /* multicast.c's group->retries */
		bool failed = false; /* an event came while a query was in flight */
		std::vector<Member *> members;
	};

	void kick(Group &g);
	void answered(Group &g, int status, const McMemberRecord &rec);
	void left(Group &g, int status);
	bool trim(Group &g); /* true: g is gone */
	void sendLeave(Group &g, uint8_t joinState);
	void fail(Group &g);
	void erase(Group &g);

	boost::asio::io_context &io_;
	SaClient &sa_;
	std::vector<std::unique_ptr<Group>> groups_;
	std::map<int64_t, std::unique_ptr<Member>> members_;
	int64_t nextMember_ = 1;
	std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
};

} /* namespace ibemu::emu */
