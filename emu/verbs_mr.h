// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// The data path's memory (rxe_mr.c): pieces of process memory as the
// keys resolve them, and the copies between them. Private to the data
// path's files (emu/verbs_req.cpp, verbs_resp.cpp, verbs_comp.cpp).
#pragma once

#include "emu/user_access.h"
#include "emu/verbs_objects.h"
#include "fabric/node.h"

#include <cstdint>
#include <vector>

namespace ibemu::emu {

class VerbsDevice;

/* A piece of process memory (or of our own buffer when local is set). */
struct Seg {
	int mem = -1; /* UserAccess::openMemory handle */
	uint64_t addr = 0;
	uint64_t len = 0;
	const uint8_t *local = nullptr;
};

/* What copySegs says besides 0 */
constexpr int kSourceFault = -1; /* a source piece could not be read */
constexpr int kDestFault = -2; /* nor a destination piece written */
constexpr int kSourceGone = -3; /* the source's process has no address space any more */

/* Writes into a memory region, a process that is gone included (see verbs_mr.cpp). */
int dmaWrite(UserAccess &ua, int mem, uint64_t addr, const void *buf, size_t len);
/* Copies len bytes from the src pieces to the dst pieces: 0 or one of the above. */
int copySegs(UserAccess &ua, const std::vector<Seg> &src, const std::vector<Seg> &dst, uint64_t len);
/* Local SGEs: lkey, PD, bounds and (for writes) IB_ACCESS_LOCAL_WRITE. */
bool resolveLocal(const VerbsDevice &dev, const Pd *pd, const std::vector<Sge> &sges, bool write, std::vector<Seg> &out,
		  uint64_t &total);
/* A remote address: rkey (an MR's or a window's) in pd (the QP's, or for
 * XRC the SRQ's the request names), bounds and the access the operation
 * needs; a type 2 window must be bound to qp. */
bool resolveRemote(const VerbsDevice &dev, const Qp &qp, const Pd *pd, uint32_t rkey, uint64_t va, uint64_t len,
		   uint32_t access, Seg &out);
/* The first len bytes the pieces hold, into out: 0, kSourceFault or kSourceGone */
int gather(UserAccess &ua, const std::vector<Seg> &segs, uint64_t len, std::vector<uint8_t> &out);
/* The same, for a capture: an unreadable piece reads as zeros */
std::vector<uint8_t> gather(UserAccess &ua, const std::vector<Seg> &segs, uint64_t len);
/* The GRH a UD message from src to the address vector ah carries */
void putGrh(uint8_t grh[40], const fabric::Port &src, const ib_uverbs_ah_attr &ah, uint64_t payload);
/* The first 40 bytes of a UD receive buffer hold the GRH (grh, null:
 * none): dst and room move past them; false when the buffer is smaller */
bool placeGrh(UserAccess &ua, std::vector<Seg> &dst, uint64_t &room, const uint8_t *grh, ib_uverbs_wc &wc);

} /* namespace ibemu::emu */
