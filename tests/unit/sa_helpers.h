// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// An SA for the rdma_cm tests and the fuzz_ucma target: a MAD agent on a
// local HCA's port that answers PathRecord Gets with the fabric's LIDs and
// MCMemberRecord Sets and Deletes as OpenSM would, and records what it
// was asked; and a sockaddr helper.
#pragma once

#include "tests/unit/emu_helpers.h"

#include "emu/mad_agent.h"
#include "emu/mad_port.h"
#include "emu/sa_query.h"

#include <functional>
#include <netinet/in.h>
#include <vector>

namespace ibemu::test {

struct TestSa final : emu::AgentClient {
	EmuFixture &fx;
	emu::MadAgent *agent = nullptr;
	bool silent = false; /* answer nothing */
	unsigned queries = 0;
	uint64_t lastMask = 0; /* of the last PathRecord query */
	/* MCMemberRecord Sets and Deletes, as received */
	struct McRequest {
		uint8_t method;
		uint64_t mask;
		emu::McMemberRecord rec;
	};
	std::vector<McRequest> mc;
	uint16_t mcStatus = 0; /* the MAD status to answer Sets with */
	uint16_t deleteStatus = 0; /* ... and Deletes */
	/* not 0: the Q_Key of the groups the SM has made itself (OpenSM's
	 * IPoIB broadcast groups have 0x0b1b), answered to a join without one */
	uint32_t groupQkey = 0;
	emu::MadPort &at;

	/* on host1's port, or host2's; both ports' SM LID becomes its LID */
	explicit TestSa(EmuFixture &f, bool onHost2 = false);
	~TestSa();
	TestSa(const TestSa &) = delete;
	TestSa &operator=(const TestSa &) = delete;

	void madReceived(emu::MadAgent &a, emu::MadRecv &&recv) override;
	void madSendDone(emu::MadAgent &, uint64_t, emu::SendStatus) override {}

private:
	uint16_t lidOf(const fabric::Gid &g) const;
	void mcMember(emu::MadAgent &a, const emu::MadRecv &recv);
	/* the request back with this method, status and record; a port that
	 * cannot send any more (its link went down) loses it */
	void answer(emu::MadAgent &a, const emu::MadRecv &recv, uint8_t method, uint16_t status,
		    const std::function<void(uint8_t *)> &put);
};

/* an IPv4 address and port in the sockaddr_in6 room of the rdma_cm ABI */
sockaddr_in6 ip4(uint32_t addr, uint16_t port);

} /* namespace ibemu::test */
