// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// Seeds of fuzz_control (tests/fuzz/make_seeds.cpp writes them): control
// requests of every operation, a scenario, an ibsim script and a topology
// fragment, in the input format fuzz_control.cpp describes.
#include "tests/fuzz/seeds.h"

#include "fabric/mad.h"
#include "fabric/packet_format.h"

#include <string>

using namespace ibemu::fuzz::seeds;

namespace {

void text(const std::string &name, char mode, const std::string &body)
{
	Bytes b{ static_cast<uint8_t>(mode) };
	b.insert(b.end(), body.begin(), body.end());
	put("control", name, b);
}

} /* namespace */

void ibemu::fuzz::seeds::controlSeeds()
{
	text("requests", 'j',
	     R"({"op":"link.down","node":"ibemu-sw1","port":7}
{"op":"link.up","node":"0x0002c90200000002","port":7}
{"op":"link.flap","node":"ibemu-sw1","port":8,"count":2,"interval_ms":1}
{"op":"link.degrade","node":"ibemu-sw2","port":8,"width":"1x","speed":"SDR"}
{"op":"link.degrade","node":"ibemu-sw1","port":8}
{"op":"node.silence","node":"ibemu-host3"}
{"op":"node.restore","node":"ibemu-host3"}
{"op":"node.remove","node":"ibemu-sw2"}
{"op":"node.add","node":"S-0002c90200000002"}
{"op":"errors","node":"ibemu-sw1","port":1,"drop":0.5,"corrupt":0.1,"seed":3}
{"op":"errors","node":"ibemu-sw2","drop":0}
{"op":"counters.set","node":"ibemu-sw1","port":0,"counter":"all","value":15}
{"op":"link.down","node":"ibemu-host4","port":2}
{"op":"link.connect","node":"ibemu-host4","port":2,"peer":"ibemu-sw1","peer_port":5}
)");
	text("fragment", 'j',
	     R"({"op":"topology.add","file":"f","text":"Switch 4 \"S-9\" # \"leaf\"\n[1] \"H-0002c90300000900\"[1]\n[4] \"S-0002c90200000001\"[6]\nCa 1 \"H-0002c90300000900\" # \"h9\"\n[1] \"S-9\"[1]\n"}
{"op":"link.down","node":"leaf","port":4}
)");
	text("scenario", 's', R"(seed = 5
[[event]]
op = "link.down"
node = "ibemu-sw1"
port = 7

[[event]]
every = "1ms"
count = 3
probability = 0.5
op = "errors"
node = "ibemu-sw2"
drop = 0.2

[[event]]
at = "0s"
after = "sm-master"
op = "node.silence"
node = "ibemu-sw2"
)");
	text("ibsim", 'i', R"(# an ibsim script
Unlink "S-0002c90200000001"[7]
ReLink "S-0002c90200000001"[7]
Unlink "S-0002c90200000002"
ReLink "S-0002c90200000002"
Error "S-0002c90200000001"[8] 30
PerformanceSet "H-0002c90300000100"[1] PortCounters.PortRcvErrors=7
Link "H-0002c90300000400"[2] "S-0002c90200000001"[5]
Dump
)");
	text("capture", 'j', R"({"op":"capture","ports":["ibemu-sw1:7","ibemu-host1"],"kinds":["smp","data"],"count":3}
{"op":"capture","all":true}
{"op":"link.down","node":"ibemu-sw1","port":7}
)");

	/* captured packets: a DR SMP two hops out, seen at sw1's port 7 as
	 * it leaves, and a LID-routed PMA GMP arriving at host2 */
	ibemu::fabric::Packet dr;
	auto &smp = *ibemu::overlay<ibemu::ib_smp>(dr.mad.data());
	smp.base_version = 1;
	smp.mgmt_class = ibemu::IB_MGMT_CLASS_SUBN_DIRECTED_ROUTE;
	smp.class_version = 1;
	smp.method = ibemu::IB_MGMT_METHOD_GET;
	smp.hop_cnt = 2;
	smp.hop_ptr = 2;
	smp.initial_path[1] = 1;
	smp.initial_path[2] = 7;
	smp.return_path[1] = 1;
	smp.attr_id = ibemu::IB_SMP_ATTR_PORT_INFO;
	smp.dr_slid = ibemu::IB_LID_PERMISSIVE;
	smp.dr_dlid = ibemu::IB_LID_PERMISSIVE;
	Bytes b{ 'p', 0, 7 };
	auto bytes = ibemu::fabric::encodeMadPacket(dr);
	b.insert(b.end(), bytes.begin(), bytes.end());
	put("control", "packet-dr", b);

	ibemu::fabric::Packet gmp;
	gmp.slid = 1;
	gmp.dlid = 3;
	gmp.srcQp = gmp.dstQp = ibemu::IB_QP1;
	gmp.qkey = ibemu::IB_QP1_QKEY;
	gmp.mad[0] = 1;
	gmp.mad[1] = ibemu::IB_MGMT_CLASS_PERF_MGMT;
	gmp.mad[2] = 1;
	gmp.mad[3] = ibemu::IB_MGMT_METHOD_GET;
	gmp.mad[17] = ibemu::IB_PMA_PORT_COUNTERS;
	b = { 'p', 3, 0x81 };
	bytes = ibemu::fabric::encodeMadPacket(gmp);
	b.insert(b.end(), bytes.begin(), bytes.end());
	put("control", "packet-gmp", b);
}
