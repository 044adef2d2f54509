// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// Seeds of fuzz_rmpp (tests/fuzz/make_seeds.cpp writes them).
#include "tests/fuzz/fuzz_common.h"
#include "tests/fuzz/seeds.h"

#include "emu/mad_rmpp.h"
#include "emu/uverbs_abi.h"
#include "fabric/pma.h"
#include "fabric/smp_attrs.h"
#include "fabric/topology.h"

#include <cstdio>
#include <map>
#include <sstream>

using namespace ibemu;
using namespace ibemu::fabric;
using namespace ibemu::emu;
using namespace ibemu::fuzz::seeds;
namespace seeds = ibemu::fuzz::seeds;

namespace {

struct RmppOps {
	Bytes b;
	explicit RmppOps(uint8_t setup) { b.push_back(setup); }
	void seg(uint8_t method, uint8_t tid, uint8_t type, uint8_t flags, uint32_t segNum, uint32_t paylen,
		 uint8_t status = 0, uint8_t version = 1)
	{
		b.insert(b.end(), { 0, method, tid, version, type, flags, status });
		seeds::be32(b, segNum);
		seeds::be32(b, paylen);
		b.push_back(uint8_t(segNum * 13));
	}
	void advance(uint16_t ms)
	{
		b.push_back(2);
		le16(b, ms);
	}
	void read(uint32_t n)
	{
		b.push_back(3);
		le32(b, n);
	}
	void send(uint8_t method, uint16_t len, uint16_t timeout, uint8_t retries, uint8_t flags, uint8_t tid)
	{
		b.push_back(4);
		b.push_back(method);
		le16(b, len);
		le16(b, timeout);
		b.push_back(retries);
		b.push_back(flags);
		b.push_back(tid);
	}
	void drop(uint32_t mask)
	{
		b.push_back(5);
		le32(b, mask);
	}
	void drain() { b.push_back(6); }
	void reopen() { b.push_back(7); }
};

constexpr uint8_t kActive = emu::IB_MGMT_RMPP_FLAG_ACTIVE;
constexpr uint8_t kFirst = emu::IB_MGMT_RMPP_FLAG_FIRST;
constexpr uint8_t kLast = emu::IB_MGMT_RMPP_FLAG_LAST;
constexpr uint8_t kData = emu::IB_MGMT_RMPP_TYPE_DATA;
constexpr uint8_t kAck = emu::IB_MGMT_RMPP_TYPE_ACK;

} /* namespace */

void ibemu::fuzz::seeds::rmppSeeds()
{
	for (uint8_t setup : { uint8_t(0), uint8_t(1) }) {
		std::string cls = setup ? "vendor" : "sa";
		uint32_t seg = setup ? 216 : 200; /* data bytes a segment */
		{
			RmppOps o(setup);
			o.seg(IB_SA_METHOD_GET_TABLE, 1, kData, kActive | kFirst, 1, 3 * seg - 10);
			o.seg(IB_SA_METHOD_GET_TABLE, 1, kData, kActive, 2, 0);
			o.seg(IB_SA_METHOD_GET_TABLE, 1, kData, kActive | kLast, 3, seg - 10);
			o.drain();
			o.read(64 + 256);
			o.read(1 << 16);
			o.seg(IB_SA_METHOD_GET_TABLE, 1, kData, kActive | kLast, 3, seg - 10); /* a late duplicate */
			o.advance(10000);
			put("rmpp", cls + "-recv-3-segments", o.b);
		}
		{
			RmppOps o(setup);
			o.seg(IB_MGMT_METHOD_SET, 2, kData, kActive | kFirst, 1, 4 * seg);
			o.seg(IB_MGMT_METHOD_SET, 2, kData, kActive, 3, 0);
			o.seg(IB_MGMT_METHOD_SET, 2, kData, kActive, 2, 0);
			o.seg(IB_MGMT_METHOD_SET, 2, kData, kActive, 2, 0);
			o.seg(IB_MGMT_METHOD_SET, 3, kData, kActive | kFirst, 1, 2 * seg);
			o.seg(IB_MGMT_METHOD_SET, 2, kData, kActive | kLast, 4, seg);
			o.read(1 << 16);
			o.advance(40000); /* record 3 never finishes: ABORT T2L */
			o.advance(10000);
			put("rmpp", cls + "-recv-out-of-order", o.b);
		}
	}
	{ /* the file sends a 5-segment GetTableResp; the input ACKs it */
		RmppOps o(0);
		o.send(0, 1000, 0, 3, 1, 5);
		o.drain();
		o.seg(0, 0x80, kAck, kActive, 1, 5);
		o.seg(0, 0x80, kAck, kActive, 5, 5);
		o.drain();
		o.read(64 + 256);
		put("rmpp", "sa-send-acked", o.b);
	}
	{ /* segment 3 is lost; the ACK timeout resends from last_ack + 1 */
		RmppOps o(0);
		o.drop(1u << 3);
		o.send(1, 1000, 5000, 3, 1, 6);
		o.seg(0, 0x80, kAck, kActive, 1, 5);
		o.seg(0, 0x80, kAck, kActive, 2, 5);
		o.advance(2000);
		o.seg(0, 0x80, kAck, kActive, 5, 5);
		o.advance(5000);
		o.read(64 + 256);
		put("rmpp", "sa-send-lost-segment", o.b);
	}
	{ /* nobody ACKs: retries, then a timeout; STOP and ABORT end others */
		RmppOps o(0);
		o.send(0, 2000, 100, 1, 1, 7);
		o.advance(100);
		o.advance(100);
		o.read(64 + 256);
		o.send(0, 2000, 0, 1, 1, 8);
		o.seg(0, 0x80, emu::IB_MGMT_RMPP_TYPE_STOP, kActive, 0, 0, emu::IB_MGMT_RMPP_STATUS_RESX);
		o.send(0, 2000, 0, 1, 1, 9);
		o.seg(0, 0x80, emu::IB_MGMT_RMPP_TYPE_ABORT, kActive, 0, 0, emu::IB_MGMT_RMPP_STATUS_T2L);
		o.send(0, 2000, 0, 1, 1, 10);
		o.seg(0, 0x80, kAck, kActive, 9, 3); /* window too small */
		o.seg(0, 0x80, 9, kActive, 1, 1); /* bad type */
		o.drain();
		o.read(64 + 256);
		put("rmpp", "sa-send-timeout-stop-abort", o.b);
	}
	{ /* an agent that does RMPP itself gets raw segments */
		RmppOps o(0x80);
		o.seg(IB_SA_METHOD_GET_TABLE, 4, kData, kActive | kFirst, 1, 400);
		o.read(64 + 256);
		o.send(0, 100, 0, 0, 1, 11); /* one segment: the agent's own */
		o.drain();
		put("rmpp", "user-rmpp", o.b);
	}
	{ /* close and reopen in the middle of a transfer, and a raw MAD */
		RmppOps o(0);
		o.seg(IB_MGMT_METHOD_SEND, 5, kData, kActive | kFirst, 1, 700);
		o.send(0, 700, 1000, 2, 1, 12);
		o.reopen();
		o.seg(IB_MGMT_METHOD_SEND, 5, kData, kActive | kLast, 2, 100);
		o.b.push_back(1);
		Mad raw{};
		ib_mad_hdr &h = *madHdr(raw);
		h.base_version = 1;
		h.mgmt_class = IB_MGMT_CLASS_SUBN_ADM;
		h.class_version = 2;
		h.method = IB_MGMT_METHOD_GET;
		h.tid = 0x99;
		raw[24] = 1;
		raw[25] = kData;
		raw[26] = kActive | kFirst | kLast;
		raw[31] = 1;
		raw[35] = 100;
		o.b.insert(o.b.end(), raw.begin(), raw.end());
		o.drain();
		o.read(1 << 16);
		put("rmpp", "reopen-and-raw", o.b);
	}
}
