// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
#define FUSE_USE_VERSION 35
#include "cuse_dev/open_files.h"

#include <fuse_lowlevel.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace ibemu::cuse_dev::open_files {

bool replyOpen(fuse_req_t req, fuse_file_info *fi, uint64_t fh)
{
	fi->fh = fh;
	fi->direct_io = 1;
	fi->nonseekable = 1;
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
	/* the context has the thread; its process is Tgid in /proc/TID/status */
	pid_t tid = fuse_req_ctx(req)->pid;
	char path[64], line[128];
	snprintf(path, sizeof path, "/proc/%d/status", static_cast<int>(tid));
	FILE *f = fopen(path, "re");
	pid_t tgid = tid;
	while (f && fgets(line, sizeof line, f))
		if (strncmp(line, "Tgid:", 5) == 0) {
			tgid = static_cast<pid_t>(atoi(line + 5));
			break;
		}
	if (f)
		fclose(f);
	return tgid;
}

} /* namespace ibemu::cuse_dev::open_files */
