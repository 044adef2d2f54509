// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// Keeping `ibemu exec`'s programs off the host's RDMA netlink.
//
// libibverbs lists devices through NETLINK_RDMA first and reads sysfs only
// when that socket cannot be made (rdma-core's ibverbs_get_device_list):
// on a host where ib_core is loaded, netlink answers with the host's
// devices (none, or real and rxe ones) and ibemu's are never seen. A
// seccomp filter makes socket(AF_NETLINK, *, NETLINK_RDMA) fail with
// EPROTONOSUPPORT, as on a host without ib_core, so libibverbs reads the
// instance's /sys/class, which holds only ibemu's devices. The filter is
// inherited by every child and kept across exec.
#pragma once

#include <string>

namespace ibemu::tools {

/* 0, or -1 with err set */
int hideRdmaNetlink(std::string &err);

} /* namespace ibemu::tools */
