// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// One open /dev/infiniband/rdma_cm (the kernel's ucma_file in ucma.c):
// librdmacm's event channel.
//
// Interface (what a transport calls):
//   write()   one command per call (struct rdma_ucm_cmd_hdr, then the
//             command); responses go into the caller's memory through
//             UserAccess; returns count, a negative errno, or kBlocked
//             for a GET_EVENT with nothing queued on a blocking file: the
//             transport parks the call and writes it again when woken
//   poll()    POLLIN with an event queued
//   close     the destructor: every ID of the file is destroyed, and the
//             peers hear what the kernel would send them
//
// The IDs live in emu::Cma (emu/cma.h), host-wide like the kernel's
// ctx_table, each owned by one file; events queue here until read.
#pragma once

#include "emu/cma.h"
#include "emu/user_access.h"

#include <deque>
#include <functional>
#include <string>
#include <sys/types.h>

namespace ibemu::emu {

class UcmaFile final : public CmaSink {
public:
	static constexpr ssize_t kBlocked = -1000;
	/* IDs one file may hold (the kernel bounds them by memory alone) */
	static constexpr size_t kMaxIds = 65536;
	/* multicast joins the file's IDs may hold together */
	static constexpr size_t kMaxJoins = 4096;

	/* opener: the process that opened the file */
	UcmaFile(Cma &cma, UserAccess &ua, pid_t opener);
	~UcmaFile();
	UcmaFile(const UcmaFile &) = delete;
	UcmaFile &operator=(const UcmaFile &) = delete;

	ssize_t write(pid_t tid, const uint8_t *buf, size_t count, bool nonblock);
	unsigned poll() const;
	/* called when an event is queued; must not call back synchronously */
	void setWakeup(std::function<void()> fn) { wakeup_ = std::move(fn); }
	pid_t opener() const { return opener_; }
	/* the cluster host the file was opened from (Hca::hostName; "": the
	 * whole instance): its IDs bind, listen and resolve through that
	 * host's HCAs only */
	void setHostScope(std::string host) { hostScope_ = std::move(host); }
	/* a number naming the opener that is never another process's (its
	 * ID is, once it has ended); the opener's ID until set */
	void setOpenerIdentity(uint64_t id) { openerId_ = id; }

	/* CmaSink */
	void cmaEvent(CmaId &id, const rdma_ucm_event_resp &ev, CmaId *connReq) override;
	void cmaMcEvent(CmaMc &mc, const rdma_ucm_event_resp &ev) override;

	/* The rdma_cm file behind descriptor fd of tid's process, for
	 * MIGRATE_ID: 0 with `file` that file, or 0 with nullptr when the
	 * transport knows only that fd is one of its rdma_cm files (CUSE);
	 * -ENOENT when tid has no such descriptor, -EINVAL when it is not an
	 * rdma_cm file (ucma_migrate_id()'s errnos). Must cost the same
	 * whatever the caller holds, and never block. */
	using CmFileOf = std::function<int(pid_t tid, int fd, const UcmaFile *&file)>;
	void setCmFileOf(CmFileOf fn) { cmFileOf_ = std::move(fn); }

private:
	struct Request {
		pid_t tid;
		const uint8_t *in;
		size_t inLen;
		size_t outLen;
		bool nonblock;
		template <typename T> T cmd() const
		{
			T t{};
			memcpy(&t, in, std::min(sizeof t, inLen));
			return t;
		}
	};
	using Handler = ssize_t (UcmaFile::*)(Request &);
	static Handler handler(uint32_t cmd);

	/* the file's ID with this handle: 0, -ENOENT or -EINVAL (another file's) */
	int get(uint32_t handle, CmaId *&out) const;
	int respond(pid_t tid, uint64_t ptr, const void *resp, size_t len);
	int mayUsePort(pid_t tid, const CmaId &id, const CmaAddr &a);
	void destroyId(CmaId *id);
	void leave(CmaMc *mc);

	ssize_t createId(Request &r);
	ssize_t destroyIdCmd(Request &r);
	ssize_t bindIp(Request &r);
	ssize_t bind(Request &r);
	ssize_t resolveIp(Request &r);
	ssize_t resolveAddr(Request &r);
	ssize_t resolveRoute(Request &r);
	ssize_t queryRoute(Request &r);
	ssize_t query(Request &r);
	ssize_t connect(Request &r);
	ssize_t listen(Request &r);
	ssize_t accept(Request &r);
	ssize_t reject(Request &r);
	ssize_t disconnect(Request &r);
	ssize_t initQpAttr(Request &r);
	ssize_t getEvent(Request &r);
	ssize_t setOption(Request &r);
	ssize_t notify(Request &r);
	ssize_t migrateId(Request &r);
	ssize_t joinIpMcast(Request &r);
	ssize_t joinMcast(Request &r);
	ssize_t leaveMcast(Request &r);
	ssize_t processJoin(Request &r, const rdma_ucm_join_mcast &cmd);

	struct Event {
		rdma_ucm_event_resp resp;
		uint32_t id; /* the ID it is counted on */
		CmaId *connReq; /* CONNECT_REQUEST: the new ID, until read */
		CmaMc *mc = nullptr; /* a join's event, counted on the join */
	};

	Cma &cma_;
	UserAccess &ua_;
	pid_t opener_;
	std::string hostScope_;
	uint64_t openerId_;
	std::deque<Event> events_;
	std::function<void()> wakeup_;
	CmFileOf cmFileOf_;
};

} /* namespace ibemu::emu */
