// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// Multicast memberships shared by a port's local joins (multicast.c).
#include "emu/sa_multicast.h"

#include <boost/asio/post.hpp>

#include <algorithm>
#include <cerrno>

namespace ibemu::emu {

namespace {

constexpr uint32_t kTimeoutMs = 3000; /* multicast.c's join and leave queries */

bool zero(const fabric::Gid &g)
{
	return std::all_of(g.begin(), g.end(), [](uint8_t b) { return b == 0; });
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
	boost::asio::post(io_, [this, g, alive = std::weak_ptr<bool>(alive_)] {
		if (alive.expired())
			return;
		for (auto &o : groups_)
			if (o.get() == g)
				return kick(*g);
	});
	return id;
}

/* Answers the members the port's membership covers, and asks the SA for
 * the next one it does not. */
void SaMulticast::kick(Group &g)
{
	if (g.query)
		return; /* again when it is answered */
	for (Member *m : g.members) {
		if (!m->done)
			continue;
		if (g.joinState && (m->rec.joinState & ~g.joinState) == 0) {
			Done done = std::move(m->done);
			m->done = nullptr;
			m->joined = true;
			done(0, g.rec);
			continue;
		}
		int64_t q = sa_.mcMemberSet(*g.port, true, m->rec, m->compMask, kTimeoutMs,
					    [this, &g](int status, const McMemberRecord &rec) {
						    g.query = 0;
						    answered(g, status, rec);
					    });
		if (q < 0) {
			Done done = std::move(m->done);
			m->done = nullptr;
			done(int(q), McMemberRecord{});
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
	} else if (m && m->done) { /* join_handler(): this member's join failed */
		Done done = std::move(m->done);
		m->done = nullptr;
		done(status, McMemberRecord{});
	}
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
 * more leave the group at the SA, and a group nobody wants goes. Not while
 * a Set is in flight: its answer comes back here. */
bool SaMulticast::trim(Group &g)
{
	if (g.query)
		return false;
	uint8_t wanted = 0;
	for (const Member *m : g.members)
		if (m->joined || m->done)
			wanted |= m->rec.joinState;
	if (uint8_t leaving = g.joinState & ~wanted) {
		sendLeave(g, leaving);
		g.joinState &= ~leaving;
	}
	if (!g.members.empty())
		return false;
	erase(g);
	return true;
}

/* send_leave(): a Delete of these join states */
void SaMulticast::sendLeave(const Group &g, uint8_t joinState)
{
	McMemberRecord rec = g.rec;
	rec.mgid = g.mgid;
	rec.joinState = joinState;
	sa_.mcMemberSet(*g.port, false, rec, MCR_MGID | MCR_PORT_GID | MCR_JOIN_STATE, kTimeoutMs,
			[](int, const McMemberRecord &) {});
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
