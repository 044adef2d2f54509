// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
#include "tests/unit/emu_helpers.h"

#include "fabric/topology.h"

#include <catch2/catch.hpp>

namespace ibemu::test {

EmuFixture::EmuFixture() : EmuFixture(nullptr)
{}

EmuFixture::EmuFixture(void (*bringUp)(Subnet &))
{
	if (bringUp) {
		bringUp(subnet);
	} else {
		load(subnet, defaultTopology());
		/* bring the subnet up first, from host3, with the fabric alone */
		sm = std::make_unique<MiniSm>(subnet, subnet.findNodeByGuid(0x2c90300000300)->port(1));
		sm->run();
	}
	host = std::make_unique<emu::Host>(io, subnet);
	hca1 = host->addHca(*subnet.findNodeByGuid(0x2c90300000100), "mlx5_0");
	hca2 = host->addHca(*subnet.findNodeByGuid(0x2c90300000200), "mlx5_1");
	REQUIRE(hca1);
	REQUIRE(hca2);
	p1 = &hca1->node->port(1);
	p2 = &hca2->node->port(1);
	REQUIRE(p1->lid);
	REQUIRE(p2->lid);
	REQUIRE(p1->state == PortState::Active);
}

EmuFixture::~EmuFixture()
{
	host.reset();
	poll(); /* let handlers of the dead ports run and find nothing */
}

static void setMask(uint8_t *mask, std::initializer_list<unsigned> methods)
{
	for (unsigned m : methods)
		mask[m / 8] |= static_cast<uint8_t>(1u << (m % 8));
}

int regAgent(emu::UmadFile &f, uint8_t qpn, uint8_t mgmtClass, uint8_t version, std::initializer_list<unsigned> methods,
	     uint8_t rmppVersion, uint32_t *id, uint32_t oui)
{
	ib_user_mad_reg_req req{};
	req.id = 0xdeadbeef;
	req.qpn = qpn;
	req.mgmt_class = mgmtClass;
	req.mgmt_class_version = version;
	req.rmpp_version = rmppVersion;
	req.oui[0] = static_cast<uint8_t>(oui >> 16);
	req.oui[1] = static_cast<uint8_t>(oui >> 8);
	req.oui[2] = static_cast<uint8_t>(oui);
	setMask(reinterpret_cast<uint8_t *>(req.method_mask), methods);
	int rc = f.ioctl(IB_USER_MAD_REGISTER_AGENT, reinterpret_cast<uint8_t *>(&req), sizeof(req));
	if (id)
		*id = req.id;
	return rc;
}

int regAgent2(emu::UmadFile &f, uint32_t qpn, uint8_t mgmtClass, uint8_t version,
	      std::initializer_list<unsigned> methods, uint32_t flags, uint8_t rmppVersion, uint32_t *id, uint32_t oui,
	      uint32_t *flagsOut)
{
	ib_user_mad_reg_req2 req{};
	req.id = 0xdeadbeef;
	req.qpn = qpn;
	req.mgmt_class = mgmtClass;
	req.mgmt_class_version = version;
	req.flags = flags;
	req.oui = oui;
	req.rmpp_version = rmppVersion;
	setMask(reinterpret_cast<uint8_t *>(req.method_mask), methods);
	int rc = f.ioctl(IB_USER_MAD_REGISTER_AGENT2, reinterpret_cast<uint8_t *>(&req), sizeof(req));
	if (id)
		*id = req.id;
	if (flagsOut)
		*flagsOut = req.flags;
	return rc;
}

UmadMsg::UmadMsg(uint32_t agentId, uint8_t mgmtClass, uint8_t method, uint16_t attr, uint64_t tid)
{
	hdr.id = agentId;
	ib_mad_hdr &h = *overlay<ib_mad_hdr>(mad.data());
	h.base_version = 1;
	h.mgmt_class = mgmtClass;
	h.class_version = mgmtClass == IB_MGMT_CLASS_SUBN_ADM ? 2 : 1;
	h.method = method;
	h.tid = tid;
	h.attr_id = attr;
	hdr.qpn = isSmpClass(mgmtClass) ? 0 : 1;
	hdr.qkey = IB_QP1_QKEY;
}

std::vector<uint8_t> UmadMsg::bytes(size_t hs, size_t madLen) const
{
	std::vector<uint8_t> b(hs + madLen, 0);
	memcpy(b.data(), &hdr, hs);
	memcpy(b.data() + hs, mad.data(), std::min(madLen, mad.size()));
	return b;
}

UmadMsg drSmpMsg(uint32_t agentId, uint16_t attr, const std::vector<uint8_t> &path, uint64_t tid, uint8_t method)
{
	UmadMsg m(agentId, IB_MGMT_CLASS_SUBN_DIRECTED_ROUTE, method, attr, tid);
	ib_smp &s = *overlay<ib_smp>(m.mad.data());
	s.hop_cnt = static_cast<uint8_t>(path.size());
	for (size_t i = 0; i < path.size(); i++)
		s.initial_path[i + 1] = path[i];
	s.dr_slid = IB_LID_PERMISSIVE;
	s.dr_dlid = IB_LID_PERMISSIVE;
	m.hdr.lid = IB_LID_PERMISSIVE;
	m.hdr.qpn = 0;
	return m;
}

ssize_t readMad(emu::UmadFile &f, std::vector<uint8_t> &out, size_t size)
{
	ssize_t n = f.read(size, out);
	if (n >= 0)
		f.consume();
	return n;
}

} /* namespace ibemu::test */
