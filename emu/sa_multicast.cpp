// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// Multicast memberships shared by a port's local joins (multicast.c).
#include "emu/sa_multicast.h"

#include "emu/mad_port.h"
#include "emu/work_queue.h"
#include "fabric/node.h"

#include <algorithm>
#include <cerrno>

namespace ibemu::emu {

namespace {

constexpr uint32_t kTimeoutMs = 3000; /* multicast.c's join and leave queries */

bool zero(const fabric::Gid &g)
{
	return std::all_of(g.begin(), g.end(), [](uint8_t b) { return b == 0; });
}

/* ib_find_pkey(): the index of a P_Key in the port's table, a full
 * member's entry before a limited one's; -1 if it has neither */
int findPkey(const fabric::Port &p, uint16_t pkey)
{
	int limited = -1;
	for (size_t i = 0; i < p.pkeys.size(); i++) {
		if ((p.pkeys[i] & 0x7fff) != (pkey & 0x7fff))
			continue;
		if (p.pkeys[i] & 0x8000)
			return int(i);
		if (limited < 0)
			limited = int(i);
	}
	return limited;
}

} /* namespace */

SaMulticast::SaMulticast(boost::asio::io_context &io, SaClient &sa) : io_(io), sa_(sa)
{}

SaMulticast::~SaMulticast()
{
	*alive_ = false;
	for (auto &g : groups_)
		if (g->query)
			sa_.cancel(g->query);
}

int64_t SaMulticast::join(MadPort &port, const McMemberRecord &rec, uint64_t compMask, Done done)
{
	Group *g = nullptr;
	if (!zero(rec.mgid))
		for (auto &o : groups_)
			if (o->port == &port && o->mgid == rec.mgid)
				g = o.get();
	if (!g) {
		groups_.push_back(std::make_unique<Group>());
		g = groups_.back().get();
		g->port = &port;
		g->mgid = rec.mgid;
	}
	int64_t id = nextMember_++;
	auto m = std::make_unique<Member>(Member{ g, rec, compMask, std::move(done) });
	g->members.push_back(m.get());
	members_[id] = std::move(m);
	/* never answered from inside the caller's command */
	queueWork(io_, [this, g, alive = std::weak_ptr<bool>(alive_)] {
		if (alive.expired())
			return;
		for (auto &o : groups_)
			if (o.get() == g)
				return kick(*g);
	});
	return id;
}

/* Answers the joining members the port's membership covers, and asks the
 * SA for the next one it does not; nothing while a query is in flight. */
void SaMulticast::kick(Group &g)
{
	if (g.query)
		return; /* again when it is answered */
	for (Member *m : g.members) {
		if (m->state != State::Joining)
			continue;
		if (g.joinState && (m->rec.joinState & ~g.joinState) == 0) {
			m->state = State::Joined;
			m->done(0, g.rec);
			continue;
		}
		int64_t q = sa_.mcMemberSet(*g.port, true, m->rec, m->compMask, kTimeoutMs,
					    [this, &g](int status, const McMemberRecord &rec) {
						    g.query = 0;
						    answered(g, status, rec);
					    });
		if (q < 0) {
			m->state = State::Failed;
			m->done(int(q), McMemberRecord{});
			continue;
		}
		g.query = q;
		g.asking = m;
		return;
	}
}

void SaMulticast::answered(Group &g, int status, const McMemberRecord &rec)
{
	Member *m = g.asking;
	g.asking = nullptr;
	if (status == 0) {
		g.joinState |= rec.joinState;
		g.rec = rec;
		if (zero(g.mgid))
			g.mgid = rec.mgid; /* the SA named the group */
		if (g.pkeyIndex < 0)
			g.pkeyIndex = findPkey(g.port->port(), rec.pkey);
	} else if (m && m->state == State::Joining) { /* join_handler(): this member's join failed */
		m->state = State::Failed;
		m->done(status, McMemberRecord{});
	}
	/* an event while the Set was out fails the group now; the member it
	 * was for is still joining and asks again */
	if (g.failed)
		fail(g);
	if (!trim(g))
		kick(g);
}

void SaMulticast::leave(int64_t member)
{
	auto it = members_.find(member);
	if (it == members_.end())
		return;
	Member *m = it->second.get();
	Group &g = *m->group;
	std::erase(g.members, m);
	if (g.asking == m)
		g.asking = nullptr;
	members_.erase(it);
	trim(g);
}

/* get_leave_state(): the join states no member holds or is asking for any
 * more leave the group at the SA, and a group nobody wants goes once that
 * Delete is answered. Not while a query is in flight: its answer comes
 * back here. */
bool SaMulticast::trim(Group &g)
{
	if (g.query)
		return false;
	uint8_t wanted = 0;
	for (const Member *m : g.members)
		if (m->state != State::Failed)
			wanted |= m->rec.joinState;
	if (uint8_t leaving = g.joinState & ~wanted) {
		g.joinState &= ~leaving;
		sendLeave(g, leaving);
		if (g.query)
			return false;
	}
	if (!g.members.empty())
		return false;
	erase(g);
	return true;
}

/* send_leave(): a Delete of these join states, awaited */
void SaMulticast::sendLeave(Group &g, uint8_t joinState)
{
	McMemberRecord rec = g.rec;
	rec.mgid = g.mgid;
	rec.joinState = joinState;
	g.leaving = joinState;
	int64_t q = sa_.mcMemberSet(*g.port, false, rec, MCR_MGID | MCR_PORT_GID | MCR_JOIN_STATE, kTimeoutMs,
				    [this, &g](int status, const McMemberRecord &) {
					    g.query = 0;
					    left(g, status);
				    });
	if (q > 0)
		g.query = q;
}

/* leave_handler(): a Delete that failed goes again, up to the group's
 * retries; then the group goes on */
void SaMulticast::left(Group &g, int status)
{
	if (status && g.leaveRetries > 0) {
		sendLeave(g, g.leaving);
		if (g.query) {
			g.leaveRetries--;
			return;
		}
	}
	g.leaving = 0;
	if (g.failed)
		fail(g);
	if (!trim(g))
		kick(g);
}

/* process_group_error(): the SA may have forgotten the port's membership.
 * Every joined member hears -ENETRESET and holds nothing any more; no
 * Delete is sent for what the SA no longer has. */
void SaMulticast::fail(Group &g)
{
	g.failed = false;
	g.joinState = 0;
	std::vector<Member *> hit;
	for (Member *m : g.members)
		if (m->state == State::Joined) {
			m->state = State::Failed;
			hit.push_back(m);
		}
	for (Member *m : hit)
		m->done(-ENETRESET, g.rec);
}

void SaMulticast::portEvent(MadPort &port, PortEvent ev)
{
	std::vector<Group *> hit;
	for (auto &g : groups_) {
		if (g->port != &port)
			continue;
		/* a P_Key change matters to a group whose P_Key moved or went */
		if (ev == PortEvent::PkeyChange && g->pkeyIndex >= 0 &&
		    findPkey(port.port(), g->rec.pkey) == g->pkeyIndex)
			continue;
		hit.push_back(g.get());
	}
	for (Group *g : hit) {
		if (g->query) { /* after its answer (answered(), left()) */
			g->failed = true;
			continue;
		}
		fail(*g);
		if (!trim(*g))
			kick(*g);
	}
}

void SaMulticast::erase(Group &g)
{
	std::erase_if(groups_, [&](const auto &o) { return o.get() == &g; });
}

void SaMulticast::removePort(MadPort &port)
{
	for (auto it = members_.begin(); it != members_.end();)
		it = it->second->group->port == &port ? members_.erase(it) : std::next(it);
	for (auto &g : groups_)
		if (g->port == &port && g->query)
			sa_.cancel(g->query);
	std::erase_if(groups_, [&](const auto &g) { return g->port == &port; });
}

} /* namespace ibemu::emu */
