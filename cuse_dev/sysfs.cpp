// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// The sysfs trees of the local HCAs, in the kernel's formats.
#include "cuse_dev/sysfs.h"

#include "emu/hca_attrs.h"
#include "emu/host.h"
#include "emu/rdma_cm_abi.h"
#include "emu/umad_abi.h"
#include "emu/uverbs_abi.h"

#include <cerrno>
#include <cinttypes>
#include <cstdarg>
#include <cstdio>
#include <cstring>

namespace ibemu::cuse_dev {

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

SysfsValue text(std::string s)
{
	return { 0, std::move(s) };
}

/* counters/: sysfs.c's pma_attrs_ext, as the PMA's ClassPortInfo has
 * ExtWidth: the 64-bit data and packet counters */
struct CounterFile {
	const char *name;
	emu::PortCounter counter;
};
constexpr CounterFile kCounterFiles[] = {
	{ "symbol_error", emu::PortCounter::SymbolError },
	{ "link_error_recovery", emu::PortCounter::LinkErrorRecovery },
	{ "link_downed", emu::PortCounter::LinkDowned },
	{ "port_rcv_errors", emu::PortCounter::RcvErrors },
	{ "port_rcv_remote_physical_errors", emu::PortCounter::RcvRemotePhysicalErrors },
	{ "port_rcv_switch_relay_errors", emu::PortCounter::RcvSwitchRelayErrors },
	{ "port_xmit_discards", emu::PortCounter::XmitDiscards },
	{ "port_xmit_constraint_errors", emu::PortCounter::XmitConstraintErrors },
	{ "port_rcv_constraint_errors", emu::PortCounter::RcvConstraintErrors },
	{ "local_link_integrity_errors", emu::PortCounter::LocalLinkIntegrityErrors },
	{ "excessive_buffer_overrun_errors", emu::PortCounter::ExcessiveBufferOverrunErrors },
	{ "VL15_dropped", emu::PortCounter::Vl15Dropped },
	{ "port_xmit_wait", emu::PortCounter::XmitWait },
	{ "port_xmit_data", emu::PortCounter::XmitData },
	{ "port_rcv_data", emu::PortCounter::RcvData },
	{ "port_xmit_packets", emu::PortCounter::XmitPackets },
	{ "port_rcv_packets", emu::PortCounter::RcvPackets },
	{ "unicast_xmit_packets", emu::PortCounter::UnicastXmitPackets },
	{ "unicast_rcv_packets", emu::PortCounter::UnicastRcvPackets },
	{ "multicast_xmit_packets", emu::PortCounter::MulticastXmitPackets },
	{ "multicast_rcv_packets", emu::PortCounter::MulticastRcvPackets },
};

/* sysfs.c show_pma_counter(): each read asks the PMA (emu::queryCounter) */
void buildCounters(SysfsNode &portDir, emu::MadPort &mad)
{
	SysfsNode *c = portDir.addDir("counters");
	for (const CounterFile &f : kCounterFiles)
		c->addFile(f.name, [&mad, counter = f.counter] {
			uint64_t v = 0;
			if (int rc = emu::queryCounter(mad, counter, v))
				return SysfsValue{ -rc, {} };
			return text(fmt("%llu\n", static_cast<unsigned long long>(v)));
		});
}

/* sysfs.c show_port_attr(): each file asks ib_query_port() (emu::queryPort) */
void addPortAttr(SysfsNode &dir, const char *name, emu::MadPort &mad, std::string (*show)(const emu::PortAttr &))
{
	dir.addFile(name, [&mad, show] { return text(show(emu::queryPort(mad))); });
}

void buildPortAttrs(SysfsNode &d, emu::MadPort &mad)
{
	using A = emu::PortAttr;
	addPortAttr(d, "state", mad, [](const A &a) {
		return fmt("%d: %s\n", static_cast<int>(a.state), fabric::portStateName(a.state));
	});
	addPortAttr(d, "phys_state", mad, [](const A &a) {
		return fmt("%u: %s\n", static_cast<unsigned>(a.physState), fabric::physStateName(a.physState));
	});
	addPortAttr(d, "lid", mad, [](const A &a) { return fmt("0x%x\n", a.lid); });
	addPortAttr(d, "sm_lid", mad, [](const A &a) { return fmt("0x%x\n", a.smLid); });
	addPortAttr(d, "lid_mask_count", mad, [](const A &a) { return fmt("%u\n", a.lmc); });
	addPortAttr(d, "sm_sl", mad, [](const A &a) { return fmt("%u\n", a.smSl); });
	addPortAttr(d, "cap_mask", mad, [](const A &a) { return fmt("0x%08x\n", a.capMask); });
	addPortAttr(d, "rate", mad, [](const A &a) {
		uint8_t w = a.activeWidth ? a.activeWidth : uint8_t(fabric::kWidth1x);
		return fabric::rateString(w, a.activeSpeed) + "\n";
	});
	d.addFile("link_layer", [] { return text("InfiniBand\n"); });
}

void buildPort(SysfsNode &ports, unsigned num, emu::MadPort &mad)
{
	const emu::PortAttr attr = emu::queryPort(mad); /* the table sizes */
	SysfsNode *d = ports.addDir(std::to_string(num));
	buildPortAttrs(*d, mad);

	SysfsNode *gids = d->addDir("gids");
	SysfsNode *attrs = d->addDir("gid_attrs");
	SysfsNode *types = attrs->addDir("types");
	SysfsNode *ndevs = attrs->addDir("ndevs");
	for (unsigned i = 0; i < attr.gidTblLen; i++) {
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
	for (unsigned i = 0; i < attr.pkeyTblLen; i++)
		pkeys->addFile(std::to_string(i), [&mad, i] { return text(fmt("0x%04x\n", emu::queryPkey(mad, i))); });
	buildCounters(*d, mad);
}

/* sysfs.c's device attributes: each read asks the device (emu::queryDevice) */
SysfsNode *addDeviceAttr(SysfsNode &dir, const char *name, const emu::Hca &hca,
			 std::string (*show)(const emu::DeviceAttr &), uint32_t mode = 0444)
{
	return dir.addFile(
		name, [&hca, show] { return text(show(emu::queryDevice(hca))); }, mode);
}

/* class/infiniband/<dev>: the device's attributes and its ports */
SysfsNode &buildDevice(SysfsNode &ib, emu::Hca &hca)
{
	using D = emu::DeviceAttr;
	SysfsNode *d = ib.addDir(hca.name);
	addDeviceAttr(*d, "node_type", hca, [](const D &a) {
		return fmt("%u: %s\n", static_cast<unsigned>(a.nodeType), fabric::nodeTypeName(a.nodeType));
	});
	addDeviceAttr(*d, "node_guid", hca, [](const D &a) { return formatGuid(a.nodeGuid) + "\n"; });
	addDeviceAttr(*d, "sys_image_guid", hca, [](const D &a) { return formatGuid(a.sysImageGuid) + "\n"; });
	d->addFile("fw_ver", [] { return text("16.35.2000\n"); });
	d->addFile("hw_rev", [] { return text("0\n"); });
	addDeviceAttr(*d, "hca_type", hca, [](const D &a) { return fmt("MT%u\n", a.vendorPartId); });
	addDeviceAttr(*d, "board_id", hca, [](const D &a) { return fmt("IBEMU_%016" PRIx64 "\n", a.nodeGuid); });
	SysfsNode *desc = addDeviceAttr(
		*d, "node_desc", hca, [](const D &a) { return a.nodeDesc.substr(0, 64) + "\n"; }, 0644);
	desc->store = [&hca](const std::string &v) {
		std::string s = v.substr(0, 64);
		if (!s.empty() && s.back() == '\n')
			s.pop_back();
		emu::modifyNodeDesc(hca, s);
		return 0;
	};
	SysfsNode *ports = d->addDir("ports");
	for (size_t k = 0; k < hca.madPorts.size(); k++) /* index = port number - 1 */
		buildPort(*ports, static_cast<unsigned>(k + 1), *hca.madPorts[k]);
	return *d;
}

/* class/infiniband_verbs/uverbsN, and the PCI identity in the device's dir */
void buildVerbs(SysfsNode &dev, SysfsNode &verbs, const emu::Hca &hca, const DevNumbers &numbers, bool pciIdentity)
{
	/* The device's identity for libibverbs' provider matching: a QLogic
	 * QLE7340 (qib), which the stock ipathverbs provider drives entirely
	 * through write() with a per-device ABI of 1 (docs/verbs.md). */
	SysfsNode *pci = dev.addDir("device");
	if (pciIdentity)
		pci->addFile("modalias",
			     [] { return text("pci:v00001077d00007322sv00001077sd00007322bc0Csc06i00\n"); });
	emu::VerbsDevice *vd = hca.verbs.get();
	unsigned vn = hca.verbsNum;
	std::string ibdev = hca.name;
	SysfsNode *u = verbs.addDir("uverbs" + std::to_string(vn));
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

/* class/infiniband_mad/{umadN,issmN} of the device's ports (user_mad.c) */
void buildUmad(SysfsNode &mad, const emu::Hca &hca, const DevNumbers &numbers)
{
	for (const auto &up : hca.umadPorts) {
		emu::UmadPort *u = up.get();
		for (bool issm : { false, true }) {
			SysfsNode *e = mad.addDir((issm ? "issm" : "umad") + std::to_string(u->devNum()));
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

namespace {

void buildClasses(SysfsNode &root, emu::Host &host, const DevNumbers &numbers, bool pciIdentity,
		  const std::string &onlyHost)
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
	if (numbers.rdmaCm) {
		SysfsNode *misc = cls->child("misc") ? cls->child("misc") : cls->addDir("misc");
		SysfsNode *cm = misc->addDir("rdma_cm");
		cm->addFile("abi_version", [] { return text(fmt("%u\n", emu::RDMA_USER_CM_ABI_VERSION)); });
		auto num = numbers.rdmaCm;
		cm->addFile("dev", [num] {
			auto [maj, min] = num();
			return text(fmt("%u:%u\n", maj, min));
		});
	}
	for (const auto &hca : host.hcas()) {
		if (!onlyHost.empty() && hca->hostName != onlyHost)
			continue;
		SysfsNode &d = buildDevice(*ib, *hca);
		if (verbs)
			buildVerbs(d, *verbs, *hca, numbers, pciIdentity);
		buildUmad(*mad, *hca, numbers);
	}
}

} /* namespace */

void buildSysfs(SysfsNode &root, emu::Host &host, const DevNumbers &numbers, bool pciIdentity)
{
	buildClasses(root, host, numbers, pciIdentity, {});
}

void buildHostSysfs(SysfsNode &root, emu::Host &host, const DevNumbers &numbers, bool pciIdentity)
{
	DevNumbers noCm = numbers; /* misc/rdma_cm stays the instance's */
	noCm.rdmaCm = nullptr;
	for (const auto &hca : host.hcas()) {
		SysfsNode *hosts = root.child("hosts") ? root.child("hosts") : root.addDir("hosts");
		if (hca->hostName.empty() || hosts->child(hca->hostName))
			continue;
		buildClasses(*hosts->addDir(hca->hostName), host, noCm, pciIdentity, hca->hostName);
	}
}

} /* namespace ibemu::cuse_dev */
