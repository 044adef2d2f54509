// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// Topology generators: fat trees, rings and tori, built into a Subnet (and
// written out with writeTopology()).
#pragma once

#include "fabric/types.h"

#include <string>
#include <vector>

namespace ibemu::fabric {

class Subnet;

struct LinkSpec {
	uint8_t width = kWidth4x;
	Speed speed = Speed::EDR;
};

/*
 * A fat tree with `levels` (2 or 3) switch levels of `radix`-port switches
 * and `hosts` single-port CAs. Two levels: leaves with radix/2 hosts and
 * radix/2 uplinks, radix/2 spines (at most radix*radix/2 hosts). Three
 * levels: pods of radix/2 leaves and radix/2 aggregation switches, and
 * (radix/2)^2 core switches (at most radix^3/4 hosts).
 * Returns 0, or -EINVAL with a message in err.
 */
int generateFatTree(Subnet &subnet, unsigned levels, unsigned hosts, unsigned radix, const LinkSpec &link,
		    std::string &err);

/* `switches` switches in a ring, each with `hostsPerSwitch` CAs. */
int generateRing(Subnet &subnet, unsigned switches, unsigned hostsPerSwitch, const LinkSpec &link, std::string &err);

/* A 2D or 3D torus of switches with wrap-around links, hosts on each switch. */
int generateTorus(Subnet &subnet, const std::vector<unsigned> &dims, unsigned hostsPerSwitch, const LinkSpec &link,
		  std::string &err);

} /* namespace ibemu::fabric */
