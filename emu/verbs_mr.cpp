// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// The data path's memory (the copying half of rxe_mr.c): what the keys
// resolve to, and the copies through UserAccess between processes.
#include "emu/verbs_mr.h"

#include "emu/uverbs_file.h"
#include "emu/verbs_device.h"
#include "emu/verbs_path.h"

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace ibemu::emu {

/* Writes into a memory region: the pages are pinned (ib_umem) until the MR
 * is deregistered, and a dying process's files, its MRs with them, are
 * released only after its address space is gone (do_exit: exit_mm, then
 * exit_files). In between, a hardware HCA still writes into those pages,
 * for nobody: so a write to a process that is gone succeeds here too, its
 * bytes dropped. (Reads cannot be served so: ibemu has no copy of what
 * the pages last held. See kSourceGone.) */
int dmaWrite(UserAccess &ua, int mem, uint64_t addr, const void *buf, size_t len)
{
	int e = ua.writeMemory(mem, addr, buf, len);
	return e == -ESRCH ? 0 : e;
}

/* Copies len bytes from the src pieces to the dst pieces through a bounce
 * buffer: 0 or one of the above. A responder whose source is gone answers
 * nothing, as if its response were lost: the requester retries, and gives
 * up after retry_cnt timeouts (docs/verbs.md). */
int copySegs(UserAccess &ua, const std::vector<Seg> &src, const std::vector<Seg> &dst, uint64_t len)
{
	constexpr size_t kChunk = 256 * 1024;
	std::vector<uint8_t> buf(std::min<uint64_t>(len, kChunk));
	size_t si = 0, di = 0;
	uint64_t so = 0, dOff = 0;
	while (len) {
		while (si < src.size() && so == src[si].len) {
			si++;
			so = 0;
		}
		while (di < dst.size() && dOff == dst[di].len) {
			di++;
			dOff = 0;
		}
		if (si == src.size() || di == dst.size())
			return kDestFault;
		uint64_t n = std::min({ len, uint64_t(buf.size()), src[si].len - so, dst[di].len - dOff });
		const Seg &s = src[si];
		if (s.local) {
			memcpy(buf.data(), s.local + s.addr + so, n);
		} else if (int e = ua.readMemory(s.mem, s.addr + so, buf.data(), n); e != 0) {
			return e == -ESRCH ? kSourceGone : kSourceFault;
		}
		if (dmaWrite(ua, dst[di].mem, dst[di].addr + dOff, buf.data(), n) != 0)
			return kDestFault;
		so += n;
		dOff += n;
		len -= n;
	}
	return 0;
}

/* Local SGEs: lkey, PD, bounds and (for writes) IB_ACCESS_LOCAL_WRITE. */
bool resolveLocal(const VerbsDevice &dev, const Pd *pd, const std::vector<Sge> &sges, bool write, std::vector<Seg> &out,
		  uint64_t &total)
{
	total = 0;
	for (const Sge &s : sges) {
		if (!s.length)
			continue;
		const Mr *mr = dev.mrByKey(s.lkey);
		if (!mr || mr->pd != pd || mr->lkey != s.lkey || s.addr < mr->iova ||
		    s.addr + s.length > mr->iova + mr->length || s.addr + s.length < s.addr)
			return false;
		if (write && !(mr->access & IB_ACCESS_LOCAL_WRITE))
			return false;
		out.push_back({ *mr->mem, mr->start + (s.addr - mr->iova), s.length, nullptr });
		total += s.length;
	}
	return true;
}

/* A remote address: rkey, PD, bounds and the access the operation needs.
 * A window's rkey (rxe_lookup_mw) must be its current one, in the QP's PD,
 * bound (a type 2 one to this QP) with that access; then, as rxe has it,
 * the bounds checked are its MR's, not the window's. */
bool resolveRemote(const VerbsDevice &dev, const Qp &qp, const Pd *pd, uint32_t rkey, uint64_t va, uint64_t len,
		   uint32_t access, Seg &out)
{
	const Mr *mr = nullptr;
	if (VerbsDevice::isMwKey(rkey)) {
		const Mw *mw = dev.mwByKey(rkey);
		if (!mw || mw->rkey != rkey || mw->pd != pd || !mw->valid || !mw->mr || !mw->length ||
		    (mw->mwType == IB_MW_TYPE_2 && mw->qp != &qp) || !(mw->access & access))
			return false;
		mr = mw->mr;
		if (mw->access & IB_ZERO_BASED)
			va += mw->addr;
	} else {
		mr = dev.mrByKey(rkey);
		if (!mr || mr->pd != pd || mr->rkey != rkey || !(mr->access & access))
			return false;
	}
	if (va < mr->iova || va + len > mr->iova + mr->length || va + len < va)
		return false;
	out = { *mr->mem, mr->start + (va - mr->iova), len, nullptr };
	return true;
}

/* rxe_bind_mw() and rxe_check_bind_mw(): any failure is IB_WC_MW_BIND_ERR */
WcStatus VerbsDevice::bindMw(const Qp &qp, const SendWqe &w)
{
	Mw *mw = qp.file->memoryWindow(w.bind.mwHandle);
	if (!mw || mw->rkey != w.bind.mwRkey)
		return IB_WC_MW_BIND_ERR;
	Mr *mr = nullptr;
	if (w.bind.length) {
		mr = mrByKey(w.bind.mrLkey);
		if (!mr || mr->lkey != w.bind.mrLkey)
			return IB_WC_MW_BIND_ERR;
	}
	const uint32_t access = w.bind.access;
	if (mw->mwType == IB_MW_TYPE_1) {
		if (!mw->valid || (access & IB_ZERO_BASED))
			return IB_WC_MW_BIND_ERR;
	} else if (mw->valid || mw->pd != qp.pd || !mr) {
		return IB_WC_MW_BIND_ERR;
	}
	/* (ibemu also holds the MR to the window's PD: an MR of another
	 * file would outlive its windows' teardown otherwise) */
	if (mr) {
		if (mr->pd != mw->pd || !(mr->access & IB_ACCESS_MW_BIND))
			return IB_WC_MW_BIND_ERR;
		if ((access & (IB_ACCESS_REMOTE_WRITE | IB_ACCESS_REMOTE_ATOMIC)) &&
		    !(mr->access & IB_ACCESS_LOCAL_WRITE))
			return IB_WC_MW_BIND_ERR;
		const uint64_t end = w.bind.addr + w.bind.length;
		if ((access & IB_ZERO_BASED)
			    ? w.bind.length > mr->length
			    : w.bind.addr < mr->iova || end > mr->iova + mr->length || end < w.bind.addr)
			return IB_WC_MW_BIND_ERR;
	}
	unbindMw(*mw);
	mw->rkey = (mw->rkey & ~0xffu) | (w.bind.rkey & 0xff);
	mw->valid = true;
	mw->access = access;
	mw->addr = w.bind.addr;
	mw->length = w.bind.length;
	if (mw->length) {
		mw->mr = mr;
		mr->mws++;
	}
	if (mw->mwType == IB_MW_TYPE_2)
		mw->qp = &qp;
	return IB_WC_SUCCESS;
}

/* rxe_invalidate_mw(): a type 2 window's current rkey; a type 1 window or
 * an MR of the program's own (rxe_invalidate_mr: not a fast-register one)
 * cannot be invalidated */
WcStatus VerbsDevice::localInvalidate(uint32_t rkey)
{
	Mw *mw = isMwKey(rkey) ? mwByKey(rkey) : nullptr;
	if (!mw || mw->rkey != rkey || mw->mwType != IB_MW_TYPE_2)
		return IB_WC_LOC_QP_OP_ERR;
	unbindMw(*mw);
	mw->valid = false;
	return IB_WC_SUCCESS;
}

/* The first len bytes the pieces hold, into out: 0, or kSourceFault or
 * kSourceGone when a piece cannot be read (what was read stays, the rest
 * reads as zeros) */
int gather(UserAccess &ua, const std::vector<Seg> &segs, uint64_t len, std::vector<uint8_t> &out)
{
	out.assign(len, 0);
	uint64_t off = 0;
	for (const Seg &s : segs) {
		if (off == len)
			break;
		uint64_t n = std::min(s.len, len - off);
		if (s.local)
			memcpy(out.data() + off, s.local + s.addr, n);
		else if (int e = ua.readMemory(s.mem, s.addr, out.data() + off, n); e != 0)
			return e == -ESRCH ? kSourceGone : kSourceFault;
		off += n;
	}
	return 0;
}

/* The same, for a capture: an unreadable piece reads as zeros (the
 * message fails anyway) */
std::vector<uint8_t> gather(UserAccess &ua, const std::vector<Seg> &segs, uint64_t len)
{
	std::vector<uint8_t> out;
	(void)gather(ua, segs, len, out);
	return out;
}

void putGrh(uint8_t grh[40], const fabric::Port &src, const ib_uverbs_ah_attr &ah, uint64_t payload)
{
	memset(grh, 0, 40);
	uint32_t w0 = (6u << 28) | (uint32_t(ah.grh.traffic_class) << 20) | (ah.grh.flow_label & 0xfffff);
	grh[0] = w0 >> 24;
	grh[1] = w0 >> 16;
	grh[2] = w0 >> 8;
	grh[3] = w0;
	uint16_t paylen = static_cast<uint16_t>(payload + 12 + 8 + 4); /* BTH, DETH, ICRC */
	grh[4] = paylen >> 8;
	grh[5] = paylen;
	grh[6] = 0x1b; /* next header: IBA transport */
	grh[7] = ah.grh.hop_limit;
	const fabric::Gid sgid = portGid(src);
	memcpy(grh + 8, sgid.data(), sgid.size());
	memcpy(grh + 24, ah.grh.dgid, 16);
}

/* The first 40 bytes of a UD receive buffer hold the GRH, written when the
 * message had one (`grh`, null: none): dst and room move past them. false
 * when the buffer is smaller than that. */
bool placeGrh(UserAccess &ua, std::vector<Seg> &dst, uint64_t &room, const uint8_t *grh, ib_uverbs_wc &wc)
{
	if (room < 40)
		return false;
	if (grh) {
		Seg g{ -1, 0, 40, grh };
		copySegs(ua, { g }, dst, 40);
		wc.wc_flags |= IB_WC_GRH;
	}
	uint64_t skip = 40;
	while (skip && !dst.empty()) {
		uint64_t n = std::min(skip, dst.front().len);
		dst.front().addr += n;
		dst.front().len -= n;
		skip -= n;
		if (!dst.front().len)
			dst.erase(dst.begin());
	}
	room -= 40;
	wc.byte_len += 40;
	return true;
}

} /* namespace ibemu::emu */
