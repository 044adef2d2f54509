// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
#include "tools/cli/rdma_netlink.h"

#include "cuse_dev/seccomp_filter.h"

#include <cerrno>
#include <cstring>
#include <linux/netlink.h>
#include <seccomp.h>
#include <sys/socket.h>

namespace ibemu::tools {

int hideRdmaNetlink(std::string &err)
{
	scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
	if (!ctx) {
		err = "seccomp_init failed";
		return -1;
	}
	scmp_arg_cmp domain{}, protocol{}; /* SCMP_A0()/SCMP_A2() are C compound literals */
	domain.arg = 0;
	domain.op = SCMP_CMP_EQ;
	domain.datum_a = AF_NETLINK;
	protocol.arg = 2;
	protocol.op = SCMP_CMP_EQ;
	protocol.datum_a = NETLINK_RDMA;
	int rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPROTONOSUPPORT), SCMP_SYS(socket), 2, domain, protocol);
	/* 32-bit programs reach socket() through socketcall, whose arguments
	 * a filter cannot read: load() leaves them alone */
	if (rc == 0)
		rc = cuse_dev::seccomp::load(ctx);
	seccomp_release(ctx);
	if (rc != 0) {
		err = std::string("a seccomp filter for NETLINK_RDMA: ") + strerror(-rc);
		return -1;
	}
	return 0;
}

} /* namespace ibemu::tools */
