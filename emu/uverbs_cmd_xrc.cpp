// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// The uverbs XRC domain commands (ib_uverbs_open_xrcd(),
// ib_uverbs_close_xrcd() of the kernel's uverbs_cmd.c). A domain opened
// with a file's descriptor is the device's for that file's inode: every
// open of the same file, in any process, shares it; one opened with fd -1
// is its own. XRC SRQs are made with CREATE_XSRQ (uverbs_cmd_srq.cpp),
// XRC QPs with CREATE_QP (uverbs_cmd_qp.cpp).
#include "emu/uverbs_file.h"

#include "emu/verbs_device.h"

#include <cerrno>
#include <fcntl.h>

namespace ibemu::emu {

int UverbsFile::openXrcd(Request &r)
{
	auto cmd = r.cmd<ib_uverbs_open_xrcd>();
	const int fd = static_cast<int>(cmd.fd);
	uint64_t mnt = 0, ino = 0;
	std::shared_ptr<XrcDomain> domain;
	if (fd != -1) {
		if (int ret = descriptorInode(r.tid, fd, mnt, ino))
			return ret;
		domain = dev_.xrcdByInode(mnt, ino);
		if (!domain && !(cmd.oflags & O_CREAT))
			return -EAGAIN; /* none for that file yet: O_CREAT makes it */
		if (domain && (cmd.oflags & O_EXCL))
			return -EINVAL;
	}
	Reservation res = reserve();
	if (int rc = room(UType::Xrcd))
		return rc;
	const bool made = !domain;
	if (made) {
		domain = std::make_shared<XrcDomain>();
		domain->dev = mnt;
		domain->ino = ino;
	}
	ib_uverbs_open_xrcd_resp resp{ res.handle() };
	if (int ret = respond(r, &resp, sizeof resp))
		return ret;
	if (made && fd != -1)
		dev_.addXrcd(domain);
	auto x = std::make_unique<Xrcd>();
	x->domain = std::move(domain);
	commit(res, std::move(x));
	return 0;
}

/* The handle goes; the domain with the last of what holds it. EBUSY
 * while SRQs or QPs made through this handle live (uverbs_free_xrcd()). */
int UverbsFile::closeXrcd(Request &r)
{
	auto cmd = r.cmd<ib_uverbs_close_xrcd>();
	return destroyHandle(cmd.xrcd_handle, UType::Xrcd);
}

} /* namespace ibemu::emu */
