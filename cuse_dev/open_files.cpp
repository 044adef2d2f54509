// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
#define FUSE_USE_VERSION 35
#include "cuse_dev/open_files.h"

#include "cuse_dev/caller.h"

#include <fuse_lowlevel.h>

namespace ibemu::cuse_dev::open_files {

bool replyOpen(fuse_req_t req, fuse_file_info *fi, uint64_t fh)
{
	fi->fh = fh;
	fi->direct_io = 1;
	fi->nonseekable = 1;
	/* nothing to flush: a close need not ask us (FOPEN_NOFLUSH), so no
	 * close waits for our answer, not even one ibemud itself waits on (a
	 * seccomp ADDFD that replaces such a file in a program) */
	fi->noflush = 1;
	return fuse_reply_open(req, fi) != -ENOENT;
}

void replyPoll(fuse_req_t req, WaitQueue *wait, fuse_pollhandle *ph, unsigned events)
{
	if (!wait) {
		if (ph)
			fuse_pollhandle_destroy(ph);
		return (void)fuse_reply_err(req, EBADF);
	}
	wait->setPollHandle(ph);
	fuse_reply_poll(req, events);
}

uid_t callerUid(fuse_req_t req)
{
	return fuse_req_ctx(req)->uid;
}

pid_t callerProcess(fuse_req_t req)
{
	/* the context has the thread */
	pid_t tid = fuse_req_ctx(req)->pid;
	pid_t tgid = tgidOf(tid);
	return tgid > 0 ? tgid : tid;
}

} /* namespace ibemu::cuse_dev::open_files */
