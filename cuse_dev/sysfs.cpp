// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// The sysfs trees of the local HCAs, in the kernel's formats.
#include "cuse_dev/sysfs.h"

#include "emu/uverbs_abi.h"

#include "emu/host.h"
#include "emu/umad_abi.h"
#include "fabric/capability.h"
#include "fabric/pma.h"
#include "fabric/process_mad.h"
#include "fabric/subnet.h"

#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstdarg>
#include <cstring>

namespace ibemu::cuse_dev {

using fabric::Node;
using fabric::Port;

SysfsNode *SysfsNode::child(const std::string &n) const
{
	for (const auto &c : children)
		if (c->name == n)
			return c.get();
	return nullptr;
}

SysfsNode *SysfsNode::addDir(const std::string &n)
{
	auto d = std::make_unique<SysfsNode>();
	d->name = n;
	d->dir = true;
	d->mode = 0755;
	d->parent = this;
	children.push_back(std::move(d));
	return children.back().get();
}

SysfsNode *SysfsNode::addFile(const std::string &n, std::function<SysfsValue()> r, uint32_t m)
{
	auto f = std::make_unique<SysfsNode>();
	f->name = n;
	f->mode = m;
	f->parent = this;
	f->render = std::move(r);
	children.push_back(std::move(f));
	return children.back().get();
}

namespace {

std::string fmt(const char *f, ...) __attribute__((format(printf, 1, 2)));
std::string fmt(const char *f, ...)
{
	char buf[256];
	va_list ap;
	va_start(ap, f);
	vsnprintf(buf, sizeof(buf), f, ap);
	va_end(ap);
	return buf;
}

SysfsValue text(std::string s) { return { 0, std::move(s) }; }

/* sysfs.c get_perf_mad() + show_pma_counter(): ask the PMA, decode a field */
SysfsValue pmaCounter(fabric::Subnet &subnet, Port &port, uint16_t attr, unsigned bitOffset, unsigned width)
{
	fabric::Packet pkt;
	pkt.srcQp = pkt.dstQp = IB_QP1;
	pkt.slid = pkt.dlid = port.lid;
	ib_mad_hdr &h = *madHdr(pkt.mad);
	h.base_version = 1;
	h.mgmt_class = IB_MGMT_CLASS_PERF_MGMT;
	h.class_version = 1;
	h.method = IB_MGMT_METHOD_GET;
	h.attr_id = attr;
	pkt.mad[kPmaDataOffset + 1] = port.num;
	Mad reply;
	if (fabric::processMad(subnet, port, pkt, reply) != fabric::MadResult::Reply)
		return { EINVAL, {} };
	const uint8_t *a = reply.data() + kPmaDataOffset;
	const uint8_t *p = a + bitOffset / 8;
	switch (width) {
	case 4:
		return text(fmt("%d\n", (*p >> (4 - bitOffset % 8)) & 0xf));
	case 8:
		return text(fmt("%u\n", *p));
	case 16:
		return text(fmt("%u\n", overlay<be16>(p)->get()));
	case 32:
		return text(fmt("%u\n", overlay<be32>(p)->get()));
	default:
		return text(fmt("%llu\n", static_cast<unsigned long long>(overlay<be64>(p)->get())));
	}
}

void buildCounters(SysfsNode &portDir, fabric::Subnet &subnet, Port &port)
{
	SysfsNode *c = portDir.addDir("counters");
	auto add = [&](const char *name, uint16_t attr, unsigned off, unsigned width) {
		c->addFile(name, [&subnet, &port, attr, off, width] {
			return pmaCounter(subnet, port, attr, off, width);
		});
	};
	const uint16_t pc = IB_PMA_PORT_COUNTERS, px = IB_PMA_PORT_COUNTERS_EXT;
	add("symbol_error", pc, 32, 16);
	add("link_error_recovery", pc, 48, 8);
	add("link_downed", pc, 56, 8);
	add("port_rcv_errors", pc, 64, 16);
	add("port_rcv_remote_physical_errors", pc, 80, 16);
	add("port_rcv_switch_relay_errors", pc, 96, 16);
	add("port_xmit_discards", pc, 112, 16);
	add("port_xmit_constraint_errors", pc, 128, 8);
	add("port_rcv_constraint_errors", pc, 136, 8);
	add("local_link_integrity_errors", pc, 152, 4);
	add("excessive_buffer_overrun_errors", pc, 156, 4);
	add("VL15_dropped", pc, 176, 16);
	add("port_xmit_wait", pc, 320, 32);
	/* PMA ClassPortInfo has ExtWidth: the 64-bit set, as pma_attrs_ext */
	add("port_xmit_data", px, 64, 64);
	add("port_rcv_data", px, 128, 64);
	add("port_xmit_packets", px, 192, 64);
	add("port_rcv_packets", px, 256, 64);
	add("unicast_xmit_packets", px, 320, 64);
	add("unicast_rcv_packets", px, 384, 64);
	add("multicast_xmit_packets", px, 448, 64);
	add("multicast_rcv_packets", px, 512, 64);
}

void buildPort(SysfsNode &ports, emu::MadPort &mad, fabric::Subnet &subnet)
{
	Port &p = mad.port();
	SysfsNode *d = ports.addDir(std::to_string(p.num));
	d->addFile("state", [&p] {
		return text(fmt("%d: %s\n", static_cast<int>(p.state), fabric::portStateName(p.state)));
	});
	d->addFile("phys_state", [&p] {
		return text(fmt("%u: %s\n", static_cast<unsigned>(p.physState), fabric::physStateName(p.physState)));
	});
	d->addFile("lid", [&p] { return text(fmt("0x%x\n", p.lid)); });
	d->addFile("sm_lid", [&p] { return text(fmt("0x%x\n", p.smLid)); });
	d->addFile("lid_mask_count", [&p] { return text(fmt("%u\n", p.lmc)); });
	d->addFile("sm_sl", [&p] { return text(fmt("%u\n", p.masterSmSl)); });
	d->addFile("cap_mask", [&p] { return text(fmt("0x%08x\n", p.capMask)); });
	d->addFile("rate", [&p] {
		uint8_t w = p.linkWidthActive ? p.linkWidthActive : uint8_t(fabric::kWidth1x);
		return text(fabric::rateString(w, p.speedActive) + "\n");
	});
	d->addFile("link_layer", [] { return text("InfiniBand\n"); });

	SysfsNode *gids = d->addDir("gids");
	SysfsNode *attrs = d->addDir("gid_attrs");
	SysfsNode *types = attrs->addDir("types");
	SysfsNode *ndevs = attrs->addDir("ndevs");
	for (unsigned i = 0; i < mad.gidTableLen(); i++) {
		gids->addFile(std::to_string(i), [&mad, i] {
			fabric::Gid g{};
			mad.gid(i, g); /* an empty entry prints as zeros */
			return text(formatGid(g.data()) + "\n");
		});
		types->addFile(std::to_string(i), [&mad, i] {
			fabric::Gid g{};
			if (!mad.gid(i, g))
				return SysfsValue{ EINVAL, {} };
			return text("IB/RoCE v1\n");
		});
		ndevs->addFile(std::to_string(i), [] { return SysfsValue{ EINVAL, {} }; });
	}
	SysfsNode *pkeys = d->addDir("pkeys");
	for (unsigned i = 0; i < p.pkeyCap(); i++)
		pkeys->addFile(std::to_string(i), [&p, i] {
			return text(fmt("0x%04x\n", i < p.pkeys.size() ? p.pkeys[i] : 0));
		});
	buildCounters(*d, subnet, p);
}

} /* namespace */

std::string formatGuid(uint64_t g)
{
	return fmt("%04x:%04x:%04x:%04x", unsigned(g >> 48) & 0xffff, unsigned(g >> 32) & 0xffff,
		   unsigned(g >> 16) & 0xffff, unsigned(g) & 0xffff);
}

std::string formatGid(const uint8_t *gid)
{
	std::string s;
	for (int i = 0; i < 8; i++)
		s += fmt("%s%02x%02x", i ? ":" : "", gid[2 * i], gid[2 * i + 1]);
	return s;
}

void buildSysfs(SysfsNode &root, emu::Host &host, const DevNumbers &numbers)
{
	SysfsNode *cls = root.child("class") ? root.child("class") : root.addDir("class");
	SysfsNode *ib = cls->addDir("infiniband");
	SysfsNode *mad = cls->addDir("infiniband_mad");
	mad->addFile("abi_version", [] { return text(fmt("%u\n", IB_USER_MAD_ABI_VERSION)); });
	SysfsNode *verbs = nullptr;
	if (numbers.uverbs) {
		verbs = cls->addDir("infiniband_verbs");
		verbs->addFile("abi_version", [] { return text(fmt("%u\n", emu::IB_USER_VERBS_ABI_VERSION)); });
	}
	fabric::Subnet &subnet = host.subnet();

	for (const auto &hca : host.hcas()) {
		Node &n = *hca->node;
		SysfsNode *d = ib->addDir(hca->name);
		d->addFile("node_type", [&n] {
			return text(fmt("%u: %s\n", static_cast<unsigned>(n.type), fabric::nodeTypeName(n.type)));
		});
		d->addFile("node_guid", [&n] { return text(formatGuid(n.nodeGuid) + "\n"); });
		d->addFile("sys_image_guid", [&n] { return text(formatGuid(n.sysImageGuid) + "\n"); });
		d->addFile("fw_ver", [] { return text("16.35.2000\n"); });
		d->addFile("hw_rev", [] { return text("0\n"); });
		d->addFile("hca_type", [&n] { return text(fmt("MT%u\n", n.deviceId)); });
		d->addFile("board_id", [&n] { return text(fmt("IBEMU_%016" PRIx64 "\n", n.nodeGuid)); });
		SysfsNode *desc = d->addFile("node_desc", [&n] { return text(n.desc.substr(0, 64) + "\n"); }, 0644);
		desc->store = [&n](const std::string &v) {
			std::string s = v.substr(0, 64);
			if (!s.empty() && s.back() == '\n')
				s.pop_back();
			n.desc = s;
			return 0;
		};
		SysfsNode *ports = d->addDir("ports");
		for (const auto &mp : hca->madPorts)
			buildPort(*ports, *mp, subnet);
		if (verbs) {
			/* The device's identity for libibverbs' provider matching: a
			 * QLogic QLE7340 (qib), which the stock ipathverbs provider
			 * drives entirely through write() with a per-device ABI of 1
			 * (docs/verbs.md). */
			SysfsNode *pci = d->addDir("device");
			pci->addFile("modalias", [] { return text("pci:v00001077d00007322sv00001077sd00007322bc0Csc06i00\n"); });
			emu::VerbsDevice *vd = hca->verbs.get();
			unsigned vn = hca->verbsNum;
			std::string ibdev = hca->name;
			SysfsNode *u = verbs->addDir("uverbs" + std::to_string(vn));
			u->addFile("ibdev", [vd, ibdev] {
				if (vd->dead())
					return SysfsValue{ ENODEV, {} };
				return text(ibdev + "\n");
			});
			u->addFile("abi_version", [] { return text("1\n"); });
			u->addFile("dev", [vn, numbers] {
				auto [maj, min] = numbers.uverbs(vn);
				return text(fmt("%u:%u\n", maj, min));
			});
		}

		for (const auto &up : hca->umadPorts) {
			emu::UmadPort *u = up.get();
			for (bool issm : { false, true }) {
				SysfsNode *e = mad->addDir((issm ? "issm" : "umad") + std::to_string(u->devNum()));
				e->addFile("ibdev", [u] {
					if (u->dead())
						return SysfsValue{ ENODEV, {} };
					return text(u->ibdev() + "\n");
				});
				e->addFile("port", [u] {
					if (u->dead())
						return SysfsValue{ ENODEV, {} };
					return text(fmt("%u\n", u->portNum()));
				});
				e->addFile("dev", [u, issm, numbers] {
					auto [maj, min] = numbers.umad(u->devNum(), issm);
					return text(fmt("%u:%u\n", maj, min));
				});
			}
		}
	}
}

} /* namespace ibemu::cuse_dev */
