// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
#include "tools/observe/packet_text.h"

#include "fabric/mad.h"
#include "fabric/packet_format.h"
#include "fabric/smp_attrs.h"

#include <fmt/format.h>

namespace ibemu::tools {

namespace {

struct Named {
	unsigned id;
	const char *name;
};

const char *lookup(std::span<const Named> table, unsigned id)
{
	for (const Named &n : table)
		if (n.id == id)
			return n.name;
	return nullptr;
}

constexpr Named kSmpAttrs[] = {
	{ 0x0001, "ClassPortInfo" },
	{ IB_SMP_ATTR_NOTICE, "Notice" },
	{ IB_SMP_ATTR_NODE_DESC, "NodeDescription" },
	{ IB_SMP_ATTR_NODE_INFO, "NodeInfo" },
	{ IB_SMP_ATTR_SWITCH_INFO, "SwitchInfo" },
	{ IB_SMP_ATTR_GUID_INFO, "GUIDInfo" },
	{ IB_SMP_ATTR_PORT_INFO, "PortInfo" },
	{ IB_SMP_ATTR_PKEY_TABLE, "P_KeyTable" },
	{ IB_SMP_ATTR_SL_TO_VL_TABLE, "SLtoVLMappingTable" },
	{ IB_SMP_ATTR_VL_ARB_TABLE, "VLArbitrationTable" },
	{ IB_SMP_ATTR_LINEAR_FORWARD_TABLE, "LinearForwardingTable" },
	{ IB_SMP_ATTR_RANDOM_FORWARD_TABLE, "RandomForwardingTable" },
	{ IB_SMP_ATTR_MCAST_FORWARD_TABLE, "MulticastForwardingTable" },
	{ IB_SMP_ATTR_SM_INFO, "SMInfo" },
	{ IB_SMP_ATTR_VENDOR_DIAG, "VendorDiag" },
	{ IB_SMP_ATTR_LED_INFO, "LedInfo" },
	{ IB_SMP_ATTR_MLNX_EXT_PORT_INFO, "MlnxExtPortInfo" },
};
constexpr Named kSaAttrs[] = {
	{ 0x0001, "ClassPortInfo" },
	{ 0x0002, "Notice" },
	{ 0x0003, "InformInfo" },
	{ 0x0011, "NodeRecord" },
	{ 0x0012, "PortInfoRecord" },
	{ 0x0013, "SLtoVLMappingTableRecord" },
	{ 0x0014, "SwitchInfoRecord" },
	{ 0x0015, "LinearForwardingTableRecord" },
	{ 0x0016, "RandomForwardingTableRecord" },
	{ 0x0017, "MulticastForwardingTableRecord" },
	{ 0x0018, "SMInfoRecord" },
	{ 0x0020, "LinkRecord" },
	{ 0x0030, "GuidInfoRecord" },
	{ 0x0031, "ServiceRecord" },
	{ 0x0033, "P_KeyTableRecord" },
	{ 0x0035, "PathRecord" },
	{ 0x0036, "VLArbitrationTableRecord" },
	{ 0x0038, "MCMemberRecord" },
	{ 0x0039, "TraceRecord" },
	{ 0x003a, "MultiPathRecord" },
	{ 0x003b, "ServiceAssociationRecord" },
	{ 0x00f3, "InformInfoRecord" },
};
constexpr Named kPmaAttrs[] = {
	{ IB_PMA_CLASS_PORT_INFO, "ClassPortInfo" },          { IB_PMA_PORT_SAMPLES_CONTROL, "PortSamplesControl" },
	{ IB_PMA_PORT_SAMPLES_RESULT, "PortSamplesResult" },  { IB_PMA_PORT_COUNTERS, "PortCounters" },
	{ IB_PMA_PORT_COUNTERS_EXT, "PortCountersExtended" },
};
constexpr Named kCmAttrs[] = {
	{ 0x0001, "ClassPortInfo" }, { 0x0010, "REQ" },      { 0x0011, "MRA" },  { 0x0012, "REJ" },
	{ 0x0013, "REP" },           { 0x0014, "RTU" },      { 0x0015, "DREQ" }, { 0x0016, "DREP" },
	{ 0x0017, "SIDR_REQ" },      { 0x0018, "SIDR_REP" }, { 0x0019, "LAP" },  { 0x001a, "APR" },
};
constexpr Named kMethods[] = {
	{ IB_MGMT_METHOD_GET, "Get" },
	{ IB_MGMT_METHOD_SET, "Set" },
	{ IB_MGMT_METHOD_SEND, "Send" },
	{ IB_MGMT_METHOD_TRAP, "Trap" },
	{ IB_MGMT_METHOD_REPORT, "Report" },
	{ IB_MGMT_METHOD_TRAP_REPRESS, "TrapRepress" },
	{ IB_MGMT_METHOD_GET_RESP, "GetResp" },
	{ IB_MGMT_METHOD_REPORT_RESP, "ReportResp" },
	{ IB_SA_METHOD_GET_TABLE, "GetTable" },
	{ IB_SA_METHOD_GET_TABLE_RESP, "GetTableResp" },
	{ IB_SA_METHOD_DELETE, "Delete" },
	{ IB_SA_METHOD_DELETE | IB_MGMT_METHOD_RESP, "DeleteResp" },
	{ IB_MGMT_METHOD_SET | IB_MGMT_METHOD_RESP, "SetResp" },
};

const char *const kPortStates[] = { "NoChange", "Down", "Init", "Armed", "Active", "ActDefer" };
const char *const kPhysStates[] = {
	"NoChange",          "Sleep",  "Polling", "Disabled", "PortConfigurationTraining", "LinkUp",
	"LinkErrorRecovery", "PhyTest"
};
const char *const kSmStates[] = { "NotActive", "Discovering", "Standby", "Master" };

std::string portState(unsigned s)
{
	return s < std::size(kPortStates) ? kPortStates[s] : std::to_string(s);
}

std::string quoted(const std::string &name)
{
	return "\"" + name + "\"";
}

std::string transportName(uint8_t opcode)
{
	switch (opcode & 0xe0) {
	case fabric::IB_OPCODE_RC:
		return "RC";
	case fabric::IB_OPCODE_UC:
		return "UC";
	case fabric::IB_OPCODE_RD:
		return "RD";
	case fabric::IB_OPCODE_UD:
		return "UD";
	case fabric::IB_OPCODE_XRC:
		return "XRC";
	default:
		return fmt::format("transport {:#x}", opcode >> 5);
	}
}

} /* namespace */

std::string madMethodName(uint8_t mgmtClass, uint8_t method)
{
	const char *prefix = mgmtClass == IB_MGMT_CLASS_SUBN_LID_ROUTED ||
			mgmtClass == IB_MGMT_CLASS_SUBN_DIRECTED_ROUTE
		? "Subn"
		: mgmtClass == IB_MGMT_CLASS_SUBN_ADM  ? "SubnAdm"
		: mgmtClass == IB_MGMT_CLASS_PERF_MGMT ? "Perf"
		: mgmtClass == IB_MGMT_CLASS_CM        ? "CM"
						       : nullptr;
	const char *m = lookup(kMethods, method);
	std::string name = m ? m : fmt::format("Method{:#04x}", method);
	return prefix ? prefix + name : fmt::format("Class{:#04x} {}", mgmtClass, name);
}

std::string madAttrName(uint8_t mgmtClass, uint16_t attrId)
{
	const char *n = nullptr;
	switch (mgmtClass) {
	case IB_MGMT_CLASS_SUBN_LID_ROUTED:
	case IB_MGMT_CLASS_SUBN_DIRECTED_ROUTE:
		n = lookup(kSmpAttrs, attrId);
		break;
	case IB_MGMT_CLASS_SUBN_ADM:
		n = lookup(kSaAttrs, attrId);
		break;
	case IB_MGMT_CLASS_PERF_MGMT:
		n = lookup(kPmaAttrs, attrId);
		break;
	case IB_MGMT_CLASS_CM:
		n = lookup(kCmAttrs, attrId);
		break;
	}
	return n ? n : fmt::format("{:#06x}", attrId);
}

std::string opcodeName(uint8_t opcode)
{
	static const char *const ops[] = {
		"SEND FIRST",
		"SEND MIDDLE",
		"SEND LAST",
		"SEND LAST WITH IMMEDIATE",
		"SEND ONLY",
		"SEND ONLY WITH IMMEDIATE",
		"RDMA WRITE FIRST",
		"RDMA WRITE MIDDLE",
		"RDMA WRITE LAST",
		"RDMA WRITE LAST WITH IMMEDIATE",
		"RDMA WRITE ONLY",
		"RDMA WRITE ONLY WITH IMMEDIATE",
		"RDMA READ REQUEST",
		"RDMA READ RESPONSE FIRST",
		"RDMA READ RESPONSE MIDDLE",
		"RDMA READ RESPONSE LAST",
		"RDMA READ RESPONSE ONLY",
		"ACKNOWLEDGE",
		"ATOMIC ACKNOWLEDGE",
		"COMPARE SWAP",
		"FETCH ADD",
		"RESERVED",
		"SEND LAST WITH INVALIDATE",
		"SEND ONLY WITH INVALIDATE",
	};
	unsigned op = opcode & 0x1f;
	return transportName(opcode) + " " + (op < std::size(ops) ? ops[op] : fmt::format("opcode {:#04x}", opcode));
}

std::string PacketText::describe(std::span<const uint8_t> packet, const PacketPlace &at)
{
	fabric::PacketView v;
	if (!fabric::parsePacket(packet, v))
		return fmt::format("not an IBA packet ({} bytes)", packet.size());
	auto lids = [&] {
		std::string s = fmt::format("LID {}→{}", v.slid, v.dlid);
		if (!at.src.empty() || !at.dst.empty())
			s += fmt::format(" ({} → {})", at.src.empty() ? "?" : quoted(at.src),
					 at.dst.empty() ? "?" : quoted(at.dst));
		return s;
	};
	if (!v.isMad) {
		std::string s = fmt::format("{} QP {:#x} PSN {}", opcodeName(v.opcode), v.destQp, v.psn);
		if (v.payloadLen)
			s += fmt::format(" len {}", v.payloadLen);
		if (v.ackReq)
			s += " AckReq";
		return s + " " + lids();
	}

	const uint8_t *mad = packet.data() + v.payload;
	const ib_mad_hdr &h = *overlay<ib_mad_hdr>(mad);
	const bool response = h.method & IB_MGMT_METHOD_RESP;
	std::string s = madMethodName(h.mgmt_class, h.method) + "(" + madAttrName(h.mgmt_class, h.attr_id) + ")";

	/* where it goes */
	const bool dr = h.mgmt_class == IB_MGMT_CLASS_SUBN_DIRECTED_ROUTE;
	const std::string &remote = response ? at.src : at.dst;
	if (dr) {
		const ib_smp &smp = *overlay<ib_smp>(mad);
		s += " DR 0";
		for (unsigned i = 1; i <= smp.hop_cnt && i < IB_SMP_MAX_PATH_HOPS; i++)
			s += fmt::format(",{}", smp.initial_path[i]);
		if (!remote.empty())
			s += (response ? " ← " : " → ") + quoted(remote);
	} else {
		s += " " + lids();
	}
	const uint16_t status = h.status & 0x7fff;
	if (status)
		s += fmt::format(" status {:#06x}", status);

	/* what a student follows in a sweep */
	const bool smp = dr || h.mgmt_class == IB_MGMT_CLASS_SUBN_LID_ROUTED;
	if (!smp)
		return s;
	const uint8_t *data = mad + 64;
	const uint32_t mod = h.attr_mod;
	const bool shown = response || h.method == IB_MGMT_METHOD_SET || h.method == IB_MGMT_METHOD_TRAP;
	switch (uint16_t(h.attr_id)) {
	case IB_SMP_ATTR_NODE_INFO:
		if (response) {
			const auto &ni = *overlay<ib_node_info>(data);
			s += fmt::format(": {} with {} ports, GUID {:#018x}, port {}",
					 ni.node_type == 2           ? "switch"
						 : ni.node_type == 1 ? "CA"
								     : "router",
					 ni.num_ports, ni.node_guid.get(), ni.local_port_num);
		}
		break;
	case IB_SMP_ATTR_NODE_DESC:
		if (response)
			s += ": \"" +
				std::string(reinterpret_cast<const char *>(data),
					    strnlen(reinterpret_cast<const char *>(data), 64)) +
				"\"";
		break;
	case IB_SMP_ATTR_PORT_INFO: {
		s += fmt::format(" port {}", mod & 0xff);
		if (!shown)
			break;
		const auto &pi = *overlay<ib_port_info>(data);
		const std::string key = remote + ":" + std::to_string(mod & 0xff);
		const uint8_t state = loNibble(pi.linkspeed_portstate);
		auto it = ports_.find(key);
		if (h.method == IB_MGMT_METHOD_SET && it != ports_.end()) {
			s += it->second.lid == pi.lid ? fmt::format(": LID {}", pi.lid.get())
						      : fmt::format(": LID {} → {}", it->second.lid, pi.lid.get());
			if (state)
				s += ", state " + portState(it->second.state) + " → " + portState(state);
		} else {
			s += fmt::format(": LID {}", pi.lid.get());
			if (state)
				s += ", state " + portState(state);
			if (response) {
				unsigned phys = hiNibble(pi.portphysstate_linkdown);
				s += std::string(", ") + (phys < std::size(kPhysStates) ? kPhysStates[phys] : "?");
			}
		}
		/* what the port is: what it answers, not what a Set asks for */
		if (response && !remote.empty())
			ports_[key] = { pi.lid, state };
		break;
	}
	case IB_SMP_ATTR_SWITCH_INFO:
		if (shown) {
			const auto &si = *overlay<ib_switch_info>(data);
			s += fmt::format(": LinearFDBCap {}, LinearFDBTop {}", si.linear_fdb_cap.get(),
					 si.linear_fdb_top.get());
		}
		break;
	case IB_SMP_ATTR_PKEY_TABLE:
		s += (mod >> 16) ? fmt::format(" port {} block {}", mod >> 16, mod & 0xffff) : fmt::format(" block {}", mod);
		break;
	case IB_SMP_ATTR_LINEAR_FORWARD_TABLE:
		s += fmt::format(" block {} (LIDs {}-{})", mod, mod * 64, mod * 64 + 63);
		break;
	case IB_SMP_ATTR_SM_INFO:
		if (shown) {
			unsigned st = loNibble(data[20]);
			s += fmt::format(": GUID {:#018x}, priority {}, {}", overlay<be64>(data)->get(),
					 hiNibble(data[20]), st < std::size(kSmStates) ? kSmStates[st] : "?");
		}
		break;
	case IB_SMP_ATTR_NOTICE:
		if (h.method == IB_MGMT_METHOD_TRAP || h.method == IB_MGMT_METHOD_TRAP_REPRESS) {
			const auto &n = *overlay<ib_notice>(data);
			s += fmt::format(": trap {} from LID {}", n.trap_num.get(), n.issuer_lid.get());
		}
		break;
	default:
		break;
	}
	return s;
}

} /* namespace ibemu::tools */
