// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// The kernel's FUSE-over-io_uring interface (protocol 7.42, Linux 6.14;
// include/uapi/linux/fuse.h and Documentation/filesystems/fuse-io-uring.rst).
// Debian 12's <linux/fuse.h> is 7.38 and lacks it, so the layouts are
// written out here and checked.
//
// A server answers INIT with FUSE_OVER_IO_URING, then hands the kernel
// ring entries: an io_uring SQE (IORING_OP_URING_CMD on the /dev/fuse
// descriptor, 128-byte SQEs) whose command area holds fuse_uring_cmd_req,
// with two buffers: the 288-byte header below and a payload buffer. The
// kernel completes the SQE when it has copied a request into them; the
// server answers with COMMIT_AND_FETCH, which also hands the entry back.
#pragma once

#include <cstddef>
#include <cstdint>

namespace ibemu::cuse_dev::uring {

/* fuse_init_in/out.flags2: bit 41 of the 64-bit INIT flags */
constexpr uint32_t kInitFlags2OverIoUring = 1u << (41 - 32);

/* sqe->cmd_op */
enum CmdOp : uint32_t {
	kCmdRegister = 1,
	kCmdCommitAndFetch = 2,
};

/* in the SQE's command area (sqe->cmd, SQE offset 48) */
struct CmdReq {
	uint64_t flags; /* 0 */
	uint64_t commitId; /* COMMIT_AND_FETCH: the id the request came with */
	uint16_t qid; /* the queue: a CPU number */
	uint8_t padding[6];
};
static_assert(sizeof(CmdReq) == 24);
static_assert(offsetof(CmdReq, qid) == 16);

struct EntInOut {
	uint64_t flags;
	uint64_t commitId;
	uint32_t payloadSz; /* bytes of payload: written by the kernel, then by the server */
	uint32_t padding;
	uint64_t reserved;
};
static_assert(sizeof(EntInOut) == 32);

/* the first buffer of a ring entry */
struct ReqHeader {
	uint8_t inOut[128]; /* fuse_in_header in, fuse_out_header out */
	uint8_t opIn[128]; /* the request's first argument (fuse_write_in, ...) */
	EntInOut ent;
};
static_assert(sizeof(ReqHeader) == 288);
static_assert(offsetof(ReqHeader, opIn) == 128);
static_assert(offsetof(ReqHeader, ent) == 256);

/* the SQE's command area starts here in a 128-byte SQE */
constexpr size_t kSqeCmdOffset = 48;

} /* namespace ibemu::cuse_dev::uring */
