// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// The built-in fabric used when the user names none: two switches joined by
// two cables, four hosts, two of them with dual-port HCAs cabled to both
// switches. host1 and host2 hang off different switches, so traffic between
// them always crosses the inter-switch links.
#include "fabric/topology.h"

namespace ibemu::fabric {

std::string_view defaultTopology()
{
	return R"(#
# ibemu built-in default fabric: 2 switches, 4 CAs, 8 links, all 4xEDR
#

vendid=0x2c9
devid=0xbd36
switchguid=0x2c90200000001(2c90200000001)
Switch	8 "S-0002c90200000001"		# "ibemu-sw1" base port 0 lid 0 lmc 0
[1]	"H-0002c90300000100"[1](2c90300000101) 		# "ibemu-host1 HCA-1" lid 0 4xEDR
[2]	"H-0002c90300000300"[1](2c90300000301) 		# "ibemu-host3 HCA-1" lid 0 4xEDR
[3]	"H-0002c90300000400"[2](2c90300000402) 		# "ibemu-host4 HCA-1" lid 0 4xEDR
[7]	"S-0002c90200000002"[7]		# "ibemu-sw2" lid 0 4xEDR
[8]	"S-0002c90200000002"[8]		# "ibemu-sw2" lid 0 4xEDR

vendid=0x2c9
devid=0xbd36
switchguid=0x2c90200000002(2c90200000002)
Switch	8 "S-0002c90200000002"		# "ibemu-sw2" base port 0 lid 0 lmc 0
[1]	"H-0002c90300000200"[1](2c90300000201) 		# "ibemu-host2 HCA-1" lid 0 4xEDR
[2]	"H-0002c90300000300"[2](2c90300000302) 		# "ibemu-host3 HCA-1" lid 0 4xEDR
[3]	"H-0002c90300000400"[1](2c90300000401) 		# "ibemu-host4 HCA-1" lid 0 4xEDR
[7]	"S-0002c90200000001"[7]		# "ibemu-sw1" lid 0 4xEDR
[8]	"S-0002c90200000001"[8]		# "ibemu-sw1" lid 0 4xEDR

vendid=0x2c9
devid=0x1017
caguid=0x2c90300000100
Ca	1 "H-0002c90300000100"		# "ibemu-host1 HCA-1"
[1](2c90300000101) 	"S-0002c90200000001"[1]		# lid 0 lmc 0 "ibemu-sw1" lid 0 4xEDR

vendid=0x2c9
devid=0x1017
caguid=0x2c90300000200
Ca	1 "H-0002c90300000200"		# "ibemu-host2 HCA-1"
[1](2c90300000201) 	"S-0002c90200000002"[1]		# lid 0 lmc 0 "ibemu-sw2" lid 0 4xEDR

vendid=0x2c9
devid=0x1017
caguid=0x2c90300000300
Ca	2 "H-0002c90300000300"		# "ibemu-host3 HCA-1"
[1](2c90300000301) 	"S-0002c90200000001"[2]		# lid 0 lmc 0 "ibemu-sw1" lid 0 4xEDR
[2](2c90300000302) 	"S-0002c90200000002"[2]		# lid 0 lmc 0 "ibemu-sw2" lid 0 4xEDR

vendid=0x2c9
devid=0x1017
caguid=0x2c90300000400
Ca	2 "H-0002c90300000400"		# "ibemu-host4 HCA-1"
[1](2c90300000401) 	"S-0002c90200000002"[3]		# lid 0 lmc 0 "ibemu-sw2" lid 0 4xEDR
[2](2c90300000402) 	"S-0002c90200000001"[3]		# lid 0 lmc 0 "ibemu-sw1" lid 0 4xEDR
)";
}

} /* namespace ibemu::fabric */
