// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// Destroying a uverbs file's objects (the kernel's rdma_core.c): one at a
// time for a DESTROY command, all of them when the file closes
// (uverbs_destroy_ufile_hw), and the address-space descriptors their MRs
// share, which close with the last of them.
#include "emu/uverbs_file.h"

#include "emu/verbs_device.h"

#include <algorithm>
#include <cerrno>
#include <vector>

namespace ibemu::emu {

/* uverbs_destroy_ufile_hw(RDMA_REMOVE_CLOSE): walk the objects in creation
 * order; one still in use (EBUSY) waits for the next pass. */
UverbsFile::~UverbsFile()
{
	/* ib_uverbs_detach_umcast(): a closing file's QPs leave their groups */
	idr_.forEach([&](UObject &o) {
		if (o.type == UType::Qp)
			dev_.detachAllMcast(static_cast<Qp &>(o));
	});
	for (;;) {
		std::vector<UObject *> objs;
		idr_.forEach([&](UObject &o) { objs.push_back(&o); });
		if (objs.empty())
			break;
		std::sort(objs.begin(), objs.end(),
			  [](const UObject *a, const UObject *b) { return a->created < b->created; });
		bool progress = false;
		for (UObject *o : objs)
			if (destroy(*o, false) == 0)
				progress = true;
		if (!progress) { /* cannot happen with the usecnt rules; never leak, and
				  * never touch a freed object: dependants first */
			for (UType t : { UType::Qp, UType::Ah, UType::Mw, UType::Mr, UType::Srq, UType::Cq, UType::Pd,
					 UType::Xrcd })
				for (UObject *&o : objs)
					if (o && o->type == t) {
						destroy(*o, true);
						o = nullptr;
					}
		}
	}
	if (hasContext_ && cg_)
		cg_->uncharge(cgChain_, true);
	dev_.detach(this);
}

/* Destroys one object unless others still use it (-EBUSY). force: at the
 * end of a teardown that could not make progress. */
int UverbsFile::destroy(UObject &obj, bool force)
{
	if (obj.usecnt && !force)
		return -EBUSY;
	switch (obj.type) {
	case UType::Pd:
		break;
	case UType::Mr: {
		auto &mr = static_cast<Mr &>(obj);
		if (mr.mws && !force) /* rxe_dereg_mr(): windows are bound to it */
			return -EINVAL;
		dev_.removeMr(&mr);
		pinned_.release(mr.pid, mr.npages);
		mr.pd->usecnt--;
		break;
	}
	case UType::Cq: {
		auto &cq = static_cast<Cq &>(obj);
		pinned_.release(cq.pid, cq.npages);
		if (cq.channel) { /* no copy of the program's end: its events are dropped */
			cq.channel->forget(cq, -1);
			cq.channel->cqs--;
		}
		break;
	}
	case UType::Srq: {
		auto &srq = static_cast<Srq &>(obj);
		dev_.removeSrq(&srq);
		srq.pd->usecnt--;
		if (srq.cq)
			srq.cq->usecnt--;
		if (srq.xrcdHandle)
			srq.xrcdHandle->usecnt--;
		break;
	}
	case UType::Xrcd:
		break;
	case UType::Ah:
		static_cast<Ah &>(obj).pd->usecnt--;
		break;
	case UType::Mw: {
		auto &mw = static_cast<Mw &>(obj);
		dev_.unbindMw(mw);
		dev_.removeMw(&mw);
		mw.pd->usecnt--;
		break;
	}
	case UType::Qp: {
		auto &qp = static_cast<Qp &>(obj);
		dev_.forget(qp);
		dev_.responderGone(qp);
		dev_.removeQp(&qp);
		if (qp.xrcdHandle) { /* an XRC target: nothing else */
			qp.xrcdHandle->usecnt--;
			break;
		}
		qp.pd->usecnt--;
		qp.sendCq->usecnt--;
		qp.recvCq->usecnt--; /* counted twice when it is the send CQ too */
		if (qp.srq)
			qp.srq->usecnt--;
		break;
	}
	}
	dev_.counted(obj.type, -1, owner_);
	if (cg_)
		cg_->uncharge(cgChain_, false);
	/* ib_uverbs_release_uevent(): its unread events go with it */
	std::erase_if(events_, [&](const Event &e) { return e.obj == &obj; });
	idr_.remove(obj.handle);
	return 0;
}

/* uobj_perform_destroy(): a DESTROY command that answers nothing */
int UverbsFile::destroyHandle(uint32_t handle, UType type)
{
	UObject *o;
	if (int ret = lookup(handle, type, o))
		return ret;
	return destroy(*o, false);
}

/* One descriptor per process and file, not per MR (the daemon's
 * descriptors are finite). A cached one is reused only while its address
 * space still answers: after an exec it reads as empty, and a new one is
 * opened. */
int UverbsFile::memoryOf(pid_t tid, pid_t pid, uint64_t addr, std::shared_ptr<const int> &out)
{
	auto it = mems_.find(pid);
	if (it != mems_.end()) {
		if (auto m = it->second.lock()) {
			uint8_t b;
			if (ua_.readMemory(*m, addr, &b, 1) == 0) {
				out = m;
				return 0;
			}
		}
	}
	int fd = ua_.openMemory(tid);
	if (fd < 0)
		return fd;
	UserAccess *ua = &ua_;
	out = std::shared_ptr<const int>(new int(fd), [ua](const int *p) {
		ua->closeMemory(*p);
		delete p;
	});
	mems_[pid] = out;
	std::erase_if(mems_, [](const auto &kv) { return kv.second.expired(); });
	return 0;
}

} /* namespace ibemu::emu */
