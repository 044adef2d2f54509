// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// The uverbs XRC domain commands (ib_uverbs_open_xrcd(),
// ib_uverbs_close_xrcd() of the kernel's uverbs_cmd.c). A domain opened
// with a file's descriptor is the device's for that file's inode: every
// open of the same file, in any process, shares it; one opened with fd -1
// is its own. The domain keeps the daemon's copy of the descriptor, so
// the inode, and its number, outlive none of it (the kernel's igrab()). XRC SRQs are made with CREATE_XSRQ (uverbs_cmd_srq.cpp),
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
	/* the domain that would be made: for a file, with the daemon's copy
	 * of its descriptor, which pins the inode while the domain lives */
	auto made = std::make_shared<XrcDomain>();
	std::shared_ptr<XrcDomain> domain;
	if (fd != -1) {
		int file = ua_.takeFile(r.tid, fd, made->mnt, made->ino);
		if (file < 0)
			return file;
		made->file = file;
		made->ua = &ua_;
		domain = dev_.xrcdByInode(made->mnt, made->ino);
		if (!domain && !(cmd.oflags & O_CREAT))
			return -EAGAIN; /* none for that file yet: O_CREAT makes it */
		if (domain && (cmd.oflags & O_EXCL))
			return -EINVAL;
	}
	Reservation res = reserve();
	if (int rc = room(UType::Xrcd))
		return rc;
	if (!domain)
		domain = made;
	ib_uverbs_open_xrcd_resp resp{ res.handle() };
	if (int ret = respond(r, &resp, sizeof resp))
		return ret;
	if (domain == made && fd != -1)
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
