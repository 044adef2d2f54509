// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// PathRecord queries to the SM (sa_query.c).
#include "emu/sa_query.h"

#include "emu/hca_attrs.h"
#include "emu/mad_port.h"

#include <cerrno>
#include <cstring>

namespace ibemu::emu {

namespace {

constexpr uint16_t kAttrPathRecord = 0x0035;
constexpr uint16_t kAttrMcMemberRecord = 0x0038;
constexpr uint8_t kMethodSet = 0x02;
constexpr uint8_t kMethodDelete = 0x15;
constexpr size_t kSaData = 56; /* MAD, RMPP and SA headers */
constexpr unsigned kTries = 10; /* the kernel's nmbr_sa_query_retries */

void put16(uint8_t *p, uint16_t v)
{
	p[0] = uint8_t(v >> 8);
	p[1] = uint8_t(v);
}
void put32(uint8_t *p, uint32_t v)
{
	put16(p, uint16_t(v >> 16));
	put16(p + 2, uint16_t(v));
}
void put64(uint8_t *p, uint64_t v)
{
	put32(p, uint32_t(v >> 32));
	put32(p + 4, uint32_t(v));
}
uint16_t get16(const uint8_t *p)
{
	return uint16_t(p[0] << 8 | p[1]);
}
uint32_t get32(const uint8_t *p)
{
	return uint32_t(get16(p)) << 16 | get16(p + 2);
}
uint64_t get64(const uint8_t *p)
{
	return uint64_t(get32(p)) << 32 | get32(p + 4);
}

} /* namespace */

void PathRecord::encode(uint8_t *o) const
{
	memset(o, 0, 64);
	put64(o, serviceId);
	memcpy(o + 8, dgid.data(), 16);
	memcpy(o + 24, sgid.data(), 16);
	put16(o + 40, dlid);
	put16(o + 42, slid);
	put32(o + 44, (flowLabel & 0xfffff) << 8 | hopLimit);
	o[48] = trafficClass;
	o[49] = uint8_t(uint8_t(reversible) << 7 | (numbPath & 0x7f));
	put16(o + 50, pkey);
	put16(o + 52, uint16_t((qosClass & 0xfff) << 4 | (sl & 0xf)));
	o[54] = uint8_t(mtuSelector << 6 | (mtu & 0x3f));
	o[55] = uint8_t(rateSelector << 6 | (rate & 0x3f));
	o[56] = uint8_t(packetLifeTimeSelector << 6 | (packetLifeTime & 0x3f));
	o[57] = preference;
}

PathRecord PathRecord::decode(const uint8_t *i)
{
	PathRecord r;
	r.serviceId = get64(i);
	memcpy(r.dgid.data(), i + 8, 16);
	memcpy(r.sgid.data(), i + 24, 16);
	r.dlid = get16(i + 40);
	r.slid = get16(i + 42);
	uint32_t w = get32(i + 44);
	r.flowLabel = (w >> 8) & 0xfffff;
	r.hopLimit = uint8_t(w);
	r.trafficClass = i[48];
	r.reversible = i[49] >> 7;
	r.numbPath = i[49] & 0x7f;
	r.pkey = get16(i + 50);
	uint16_t q = get16(i + 52);
	r.qosClass = q >> 4;
	r.sl = q & 0xf;
	r.mtuSelector = i[54] >> 6;
	r.mtu = i[54] & 0x3f;
	r.rateSelector = i[55] >> 6;
	r.rate = i[55] & 0x3f;
	r.packetLifeTimeSelector = i[56] >> 6;
	r.packetLifeTime = i[56] & 0x3f;
	r.preference = i[57];
	return r;
}

void McMemberRecord::encode(uint8_t *o) const
{
	memset(o, 0, 52);
	memcpy(o, mgid.data(), 16);
	memcpy(o + 16, portGid.data(), 16);
	put32(o + 32, qkey);
	put16(o + 36, mlid);
	o[38] = uint8_t(mtuSelector << 6 | (mtu & 0x3f));
	o[39] = trafficClass;
	put16(o + 40, pkey);
	o[42] = uint8_t(rateSelector << 6 | (rate & 0x3f));
	o[43] = uint8_t(packetLifeTimeSelector << 6 | (packetLifeTime & 0x3f));
	put32(o + 44, uint32_t(sl & 0xf) << 28 | (flowLabel & 0xfffff) << 8 | hopLimit);
	o[48] = uint8_t(scope << 4 | (joinState & 0xf));
	o[49] = uint8_t(uint8_t(proxyJoin) << 7);
}

McMemberRecord McMemberRecord::decode(const uint8_t *i)
{
	McMemberRecord r;
	memcpy(r.mgid.data(), i, 16);
	memcpy(r.portGid.data(), i + 16, 16);
	r.qkey = get32(i + 32);
	r.mlid = get16(i + 36);
	r.mtuSelector = i[38] >> 6;
	r.mtu = i[38] & 0x3f;
	r.trafficClass = i[39];
	r.pkey = get16(i + 40);
	r.rateSelector = i[42] >> 6;
	r.rate = i[42] & 0x3f;
	r.packetLifeTimeSelector = i[43] >> 6;
	r.packetLifeTime = i[43] & 0x3f;
	uint32_t w = get32(i + 44);
	r.sl = uint8_t(w >> 28);
	r.flowLabel = (w >> 8) & 0xfffff;
	r.hopLimit = uint8_t(w);
	r.scope = i[48] >> 4;
	r.joinState = i[48] & 0xf;
	r.proxyJoin = i[49] >> 7;
	return r;
}

SaClient::SaClient(boost::asio::io_context &io) : io_(io)
{}

SaClient::~SaClient()
{
	while (!agents_.empty())
		removePort(*agents_.begin()->first);
}

void SaClient::addPort(MadPort &port)
{
	MadAgent *agent = nullptr;
	if (port.registerAgent(1, nullptr, 0, 0, this, nullptr, &agent) == 0)
		agents_[&port] = agent;
}

void SaClient::removePort(MadPort &port)
{
	auto it = agents_.find(&port);
	if (it == agents_.end())
		return;
	std::erase_if(queries_, [&](const auto &q) { return q.second.port == &port; });
	port.unregisterAgent(it->second);
	agents_.erase(it);
}

int64_t SaClient::pathRecGet(MadPort &port, const PathRecord &rec, uint64_t compMask, uint32_t timeoutMs, Done done)
{
	uint8_t r[64];
	rec.encode(r);
	return send(port, IB_MGMT_METHOD_GET, kAttrPathRecord, compMask, r, sizeof r, timeoutMs,
		    [done = std::move(done)](int status, const uint8_t *resp) {
			    done(status, resp ? PathRecord::decode(resp) : PathRecord{});
		    });
}

int64_t SaClient::mcMemberSet(MadPort &port, bool join, const McMemberRecord &rec, uint64_t compMask,
			      uint32_t timeoutMs, McDone done)
{
	uint8_t r[52];
	rec.encode(r);
	return send(port, join ? kMethodSet : kMethodDelete, kAttrMcMemberRecord, compMask, r, sizeof r, timeoutMs,
		    [done = std::move(done)](int status, const uint8_t *resp) {
			    done(status, resp ? McMemberRecord::decode(resp) : McMemberRecord{});
		    });
}

int64_t SaClient::send(MadPort &port, uint8_t method, uint16_t attr, uint64_t compMask, const uint8_t *rec,
		       size_t recLen, uint32_t timeoutMs, RawDone done)
{
	auto it = agents_.find(&port);
	if (it == agents_.end())
		return -ENODEV;
	PortAttr pa = queryPort(port);
	if (!pa.smLid)
		return -EAGAIN; /* the kernel's "no sm_ah" */
	MadAgent &agent = *it->second;
	int64_t id = nextId_++;
	uint64_t tid = uint64_t(agent.hiTid()) << 32 | nextTid_++;

	auto s = std::make_shared<MadSend>();
	s->msg.assign(kMadSize, 0);
	uint8_t *m = s->msg.data();
	m[0] = 1;
	m[1] = IB_MGMT_CLASS_SUBN_ADM;
	m[2] = 2;
	m[3] = method;
	put64(m + 8, tid);
	put16(m + 16, attr);
	put64(m + 48, compMask);
	memcpy(m + kSaData, rec, recLen);
	s->ah.lid = pa.smLid;
	s->ah.sl = pa.smSl;
	s->ah.remoteQpn = 1;
	s->ah.remoteQkey = 0x80010000;
	s->hdrLen = kSaData;
	s->dataLen = kMadSize - kSaData;
	s->cookie = uint64_t(id);
	/* send_mad(): the time split over the tries */
	s->timeoutMs = timeoutMs / kTries;
	s->retries = kTries;
	if (!s->timeoutMs) {
		s->timeoutMs = 1;
		s->retries = timeoutMs;
	}
	queries_[id] = Query{ &port, tid, std::move(done) };
	if (int rc = port.postSend(agent, s)) {
		queries_.erase(id);
		return rc;
	}
	return id;
}

void SaClient::cancel(int64_t query)
{
	auto it = queries_.find(query);
	if (it == queries_.end())
		return;
	MadPort *port = it->second.port;
	queries_.erase(it);
	auto a = agents_.find(port);
	if (a != agents_.end())
		port->cancelSend(*a->second, uint64_t(query));
}

void SaClient::madReceived(MadAgent &, MadRecv &&recv)
{
	if (recv.mad.size() < kSaData + 64)
		return;
	uint64_t tid = get64(recv.mad.data() + 8);
	for (auto it = queries_.begin(); it != queries_.end(); ++it) {
		if (it->second.tid != tid)
			continue;
		RawDone done = std::move(it->second.done);
		queries_.erase(it);
		uint16_t status = get16(recv.mad.data() + 4);
		return done(status ? -EINVAL : 0, recv.mad.data() + kSaData);
	}
}

void SaClient::madSendDone(MadAgent &, uint64_t cookie, SendStatus status)
{
	auto it = queries_.find(int64_t(cookie));
	if (it == queries_.end())
		return; /* answered already, or cancelled */
	RawDone done = std::move(it->second.done);
	queries_.erase(it);
	done(status == SendStatus::ResponseTimeout ? -ETIMEDOUT : -EIO, nullptr);
}

} /* namespace ibemu::emu */
