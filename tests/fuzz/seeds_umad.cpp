// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// Seeds of fuzz_umad (tests/fuzz/make_seeds.cpp writes them).
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

namespace {

struct Ops {
	Bytes b;
	void op(uint8_t kind, int file, const Bytes &payload)
	{
		b.push_back(uint8_t(kind | (file << 7)));
		le16(b, uint16_t(payload.size()));
		append(b, payload);
	}
};

Bytes regReq(uint8_t qpn, uint8_t cls, uint8_t version, std::initializer_list<unsigned> methods, uint8_t rmpp = 0,
	     uint32_t oui = 0)
{
	ib_user_mad_reg_req r{};
	r.qpn = qpn;
	r.mgmt_class = cls;
	r.mgmt_class_version = version;
	r.rmpp_version = rmpp;
	r.oui[0] = uint8_t(oui >> 16);
	r.oui[1] = uint8_t(oui >> 8);
	r.oui[2] = uint8_t(oui);
	for (unsigned m : methods)
		reinterpret_cast<uint8_t *>(r.method_mask)[m / 8] |= uint8_t(1u << (m % 8));
	Bytes b{ 0 };
	append(b, r);
	return b;
}

Bytes regReq2(uint8_t qpn, uint8_t cls, uint8_t version, std::initializer_list<unsigned> methods, uint8_t rmpp = 0,
	      uint32_t oui = 0, uint32_t flags = 0)
{
	ib_user_mad_reg_req2 r{};
	r.qpn = qpn;
	r.mgmt_class = cls;
	r.mgmt_class_version = version;
	r.rmpp_version = rmpp;
	r.oui = oui;
	r.flags = flags;
	for (unsigned m : methods)
		reinterpret_cast<uint8_t *>(r.method_mask)[m / 8] |= uint8_t(1u << (m % 8));
	Bytes b{ 1 };
	append(b, r);
	return b;
}

Bytes unreg(uint32_t id)
{
	Bytes b{ 2 };
	le32(b, id);
	return b;
}

const Bytes enablePkey{ 3 };

Bytes count(uint32_t n)
{
	Bytes b;
	le32(b, n);
	return b;
}

/* hdr (56 or 64 bytes) and the MAD */
Bytes umadWrite(size_t hs, const test::UmadMsg &m, size_t madLen = kMadSize)
{
	return m.bytes(hs, madLen);
}

} /* namespace */

void ibemu::fuzz::seeds::umadSeeds()
{
	fuzz::Fixture fx;
	uint16_t lid1 = fx.lid1(), lid2 = fx.lid2();
	/* hi_tids: two kernel agents per port (host1: 1, 2; host2: 3, 4), then
	 * the agents in the order the seed registers them */
	{
		Ops o;
		o.op(1, 0, regReq(1, IB_MGMT_CLASS_PERF_MGMT, 1, {}));
		test::UmadMsg m(0, IB_MGMT_CLASS_PERF_MGMT, IB_MGMT_METHOD_GET, IB_PMA_PORT_COUNTERS, 1);
		m.to(lid2, 1).timeout(100, 1);
		m.mad[kPmaDataOffset + 1] = 1;
		o.op(0, 0, umadWrite(56, m));
		o.op(3, 0, {});
		o.op(2, 0, count(56 + 256));
		o.op(2, 0, count(56 + 256));
		put("umad", "pma-get", o.b);
	}
	{
		Ops o;
		o.op(1, 0, regReq(0, IB_MGMT_CLASS_SUBN_DIRECTED_ROUTE, 1, {}));
		/* answers are delivered only to sends that wait for them */
		o.op(0, 0, umadWrite(56, test::drSmpMsg(0, IB_SMP_ATTR_NODE_INFO, { 1 }, 7).timeout(100, 1)));
		o.op(0, 0, umadWrite(56, test::drSmpMsg(0, IB_SMP_ATTR_PORT_INFO, {}, 8).timeout(100, 1)));
		o.op(0, 0, umadWrite(56, test::drSmpMsg(0, IB_SMP_ATTR_NODE_DESC, { 1, 7, 1 }, 9).timeout(100, 1)));
		test::UmadMsg lr(0, IB_MGMT_CLASS_SUBN_LID_ROUTED, IB_MGMT_METHOD_GET, IB_SMP_ATTR_NODE_INFO, 10);
		lr.to(lid2, 0).timeout(100, 1);
		o.op(1, 0, regReq(0, IB_MGMT_CLASS_SUBN_LID_ROUTED, 1, {}));
		lr.hdr.id = 1;
		o.op(0, 0, umadWrite(56, lr));
		o.op(3, 0, {});
		for (int i = 0; i < 4; i++)
			o.op(2, 0, count(56 + 256));
		put("umad", "smi-dr-and-lid", o.b);
	}
	{ /* SA GetTable across the fabric, answered with a 3-segment RMPP response */
		Ops o;
		o.op(1, 1, enablePkey);
		o.op(1, 1, regReq2(1, IB_MGMT_CLASS_SUBN_ADM, 2, { IB_MGMT_METHOD_GET, IB_SA_METHOD_GET_TABLE }, 1));
		o.op(1, 0, enablePkey);
		o.op(1, 0, regReq2(1, IB_MGMT_CLASS_SUBN_ADM, 2, {}, 1));
		test::UmadMsg q(0, IB_MGMT_CLASS_SUBN_ADM, IB_SA_METHOD_GET_TABLE, 0x11, 0x30);
		q.to(lid2, 1).timeout(1000, 1);
		o.op(0, 0, umadWrite(64, q));
		o.op(3, 0, {});
		o.op(2, 1, count(64 + 256));
		/* file 0's agent is the 6th hi_tid: the request arrives with TID 6:0x30 */
		test::UmadMsg r(0, IB_MGMT_CLASS_SUBN_ADM, IB_SA_METHOD_GET_TABLE_RESP, 0x11,
				(uint64_t(6) << 32) | 0x30);
		r.to(lid1, 1);
		r.mad[26] = emu::IB_MGMT_RMPP_FLAG_ACTIVE;
		r.mad[36 + 8 + 1] = 6; /* AttributeOffset */
		Bytes w = umadWrite(64, r, 56 + 500);
		for (size_t i = 64 + 56; i < w.size(); i++)
			w[i] = uint8_t(i);
		o.op(0, 1, w);
		o.op(3, 0, {});
		o.op(2, 0, count(64 + 256)); /* ENOSPC first */
		o.op(2, 0, count(1 << 16));
		o.op(2, 1, count(1 << 16));
		put("umad", "sa-rmpp-response", o.b);
	}
	{ /* a request nobody answers: resent, then a timeout report */
		Ops o;
		o.op(1, 0, regReq(1, IB_MGMT_CLASS_PERF_MGMT, 1, {}));
		test::UmadMsg m(0, IB_MGMT_CLASS_PERF_MGMT, IB_MGMT_METHOD_GET, IB_PMA_PORT_COUNTERS, 2);
		m.to(0x0bad, 1).timeout(10, 2);
		o.op(0, 0, umadWrite(56, m));
		o.op(0, 0, umadWrite(56, m)); /* a duplicate TID: EINVAL */
		for (int i = 0; i < 3; i++) /* the first try and two retries */
			o.op(4, 0, count(10));
		o.op(2, 0, count(56 + 256));
		put("umad", "timeout-report", o.b);
	}
	{ /* registration errors, unregister, unknown ioctls, close */
		Ops o;
		o.op(1, 0, enablePkey);
		o.op(1, 0, regReq2(1, IB_MGMT_CLASS_SUBN_ADM, 2, {}, 1, 0, 2)); /* unknown flag */
		o.op(1, 0, regReq2(1, IB_MGMT_CLASS_SUBN_ADM, 2, { IB_MGMT_METHOD_GET }, 1, 0, IB_USER_MAD_USER_RMPP));
		o.op(1, 0, regReq2(1, IB_MGMT_CLASS_SUBN_ADM, 2, { IB_MGMT_METHOD_GET }, 1)); /* method in use */
		o.op(1, 0, regReq2(2, IB_MGMT_CLASS_SUBN_ADM, 2, {})); /* QP 2 */
		o.op(1, 0, regReq(1, IB_MGMT_CLASS_SUBN_DIRECTED_ROUTE, 1, {})); /* SMP class on QP1 */
		o.op(1, 0, regReq(1, 0x30, 1, { IB_MGMT_METHOD_GET }, 0, 0)); /* vendor class without OUI */
		o.op(1, 0, enablePkey); /* too late */
		o.op(1, 0, unreg(0));
		o.op(1, 0, unreg(0));
		Bytes other{ 9 };
		le32(other, 0xc0101b05);
		other.resize(other.size() + 16, 0xaa);
		o.op(1, 0, other);
		o.op(5, 0, {});
		o.op(1, 0, regReq(1, IB_MGMT_CLASS_CM, 2, { IB_MGMT_METHOD_SEND }));
		put("umad", "ioctl-errors", o.b);
	}
	{ /* a vendor range-2 class with OUI, request and response between the files */
		Ops o;
		constexpr uint32_t oui = 0x001405;
		o.op(1, 1, regReq(1, 0x30, 1, { IB_MGMT_METHOD_GET }, 0, oui));
		o.op(1, 0, regReq(1, 0x30, 1, {}, 0, oui));
		test::UmadMsg q(0, 0x30, IB_MGMT_METHOD_GET, 0x10, 0x41);
		q.to(lid2, 1).timeout(500, 0);
		q.mad[37] = uint8_t(oui >> 16);
		q.mad[38] = uint8_t(oui >> 8);
		q.mad[39] = uint8_t(oui);
		o.op(0, 0, umadWrite(56, q));
		o.op(3, 0, {});
		o.op(2, 1, count(56 + 256));
		test::UmadMsg r = q;
		r.hdr.id = 0;
		r.to(lid1, 1).timeout(0, 0);
		r.mad[3] = IB_MGMT_METHOD_GET_RESP;
		overlay<ib_mad_hdr>(r.mad.data())->tid = (uint64_t(6) << 32) | 0x41;
		o.op(0, 1, umadWrite(56, r));
		o.op(3, 0, {});
		o.op(2, 0, count(56 + 256));
		/* and a Get of a class nobody registered: the MAD layer answers 0x000c */
		test::UmadMsg u(0, IB_MGMT_CLASS_DEVICE_MGMT, IB_MGMT_METHOD_GET, 0x10, 0x42);
		u.to(lid2, 1).timeout(500, 0);
		o.op(1, 0, regReq(1, IB_MGMT_CLASS_DEVICE_MGMT, 1, {}));
		u.hdr.id = 1;
		o.op(0, 0, umadWrite(56, u, 64 + 16));
		o.op(3, 0, {});
		o.op(2, 0, count(56 + 256));
		put("umad", "vendor-oui-and-unmatched", o.b);
	}
	{ /* issm, then the port dies under open files */
		Ops o;
		o.op(1, 1, regReq(0, IB_MGMT_CLASS_SUBN_LID_ROUTED, 1, { IB_MGMT_METHOD_TRAP }));
		o.op(7, 1, {});
		o.op(3, 1, {});
		o.op(2, 1, count(56 + 256));
		o.op(7, 1, {});
		o.op(6, 1, {});
		o.op(2, 1, count(56 + 256));
		o.op(0, 1, umadWrite(56, test::drSmpMsg(0, IB_SMP_ATTR_NODE_INFO, { 1 }, 7)));
		o.op(1, 1, regReq(1, IB_MGMT_CLASS_PERF_MGMT, 1, {}));
		o.op(5, 1, {});
		put("umad", "issm-and-kill", o.b);
	}
	{ /* a GRH-addressed send and a P_Key index */
		Ops o;
		o.op(1, 0, enablePkey);
		o.op(1, 0, regReq2(1, IB_MGMT_CLASS_PERF_MGMT, 1, {}));
		test::UmadMsg m(0, IB_MGMT_CLASS_PERF_MGMT, IB_MGMT_METHOD_GET, IB_PMA_CLASS_PORT_INFO, 3);
		m.to(lid2, 1).timeout(100, 0);
		m.hdr.grh_present = 1;
		m.hdr.gid_index = 0;
		m.hdr.hop_limit = 64;
		m.hdr.gid[0] = 0xfe;
		m.hdr.gid[1] = 0x80;
		for (int i = 0; i < 8; i++)
			m.hdr.gid[8 + i] = uint8_t(fx.p2->guid >> (56 - 8 * i));
		m.hdr.pkey_index = 0;
		o.op(0, 0, umadWrite(64, m));
		m.hdr.gid_index = 5;
		o.op(0, 0, umadWrite(64, m));
		o.op(3, 0, {});
		o.op(2, 0, count(64 + 256));
		put("umad", "grh", o.b);
	}
}
