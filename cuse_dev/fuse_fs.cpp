// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// The FUSE transport: sysfs files and umad/issm device files served from
// the io_context. Where a request enters emu/: fsOpen, fsRead, fsWrite,
// fsIoctl, fsPoll, fsRelease below; everything else is plumbing.
#define FUSE_USE_VERSION 35
#include "cuse_dev/fuse_fs.h"

#include "cuse_dev/caller.h"
#include "cuse_dev/sysfs.h"
#include "emu/host.h"
#include "emu/umad_file.h"
#include "emu/umad_port.h"

#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/post.hpp>
#include <fuse_lowlevel.h>
#include <spdlog/spdlog.h>

#include <cerrno>
#include <cstring>
#include <deque>
#include <fcntl.h>
#include <list>
#include <poll.h>
#include <sys/syscall.h>
#include <sys/stat.h>
#include <unistd.h>
#include <unordered_map>

namespace ibemu::cuse_dev {

namespace {

constexpr double kEntryTimeout = 3600.0; /* the tree never changes shape */
constexpr double kAttrTimeout = 1.0;
constexpr off_t kSysfsFileSize = 4096; /* what sysfs reports for every attribute */

enum class Kind { Dir, Sysfs, Umad, Issm };

struct PendingRead {
	fuse_req_t req;
	size_t size;
};

/* One open() of one of our files. */
struct Open {
	Kind kind;
	SysfsNode *node = nullptr;
	SysfsValue value;
	emu::UmadPort *port = nullptr;
	std::unique_ptr<emu::UmadFile> umad;
	bool nonblock = false;
	std::deque<PendingRead> reads;
	fuse_pollhandle *ph = nullptr;
};

struct PendingIssm {
	fuse_req_t req;
	fuse_file_info fi;
	emu::UmadPort *port;
};

} /* namespace */

struct FuseFs::Impl {
	boost::asio::io_context &io;
	emu::Host &host;
	SysfsNode root;
	std::vector<SysfsNode *> byIno; /* ino - 1 */
	std::unordered_map<const SysfsNode *, std::pair<emu::UmadPort *, bool>> devices; /* port, issm */
	std::unordered_map<uint64_t, std::unique_ptr<Open>> opens;
	uint64_t nextFh = 1;
	std::list<PendingIssm> issmWaiters;
	fuse_session *se = nullptr;
	fuse_buf buf{}; /* libfuse's receive buffer, kept: allocating 132 KiB per request costs */
	std::unique_ptr<boost::asio::posix::stream_descriptor> sd;
	bool mounted = false;
	bool stopping = false;

	Impl(boost::asio::io_context &i, emu::Host &h) : io(i), host(h) {}

	void build();
	void number(SysfsNode *n);
	SysfsNode *node(fuse_ino_t ino) const { return ino >= 1 && ino <= byIno.size() ? byIno[ino - 1] : nullptr; }
	Kind kindOf(const SysfsNode *n) const;
	void fillAttr(const SysfsNode *n, struct stat &st) const;
	Open *openOf(fuse_file_info *fi) const;

	void serveReads(uint64_t fh);
	void notifyPoll(Open &o);
	void retryIssm();
	void waitForRequests();
	void serveOneRequest();
};

/* ---------------- the tree ---------------- */

void FuseFs::Impl::number(SysfsNode *n)
{
	byIno.push_back(n);
	n->ino = byIno.size();
	for (auto &c : n->children)
		number(c.get());
}

void FuseFs::Impl::build()
{
	root.dir = true;
	root.mode = 0755;
	DevNumbers numbers;
	numbers.umad = [](unsigned dev, bool issm) {
		return std::make_pair(unsigned(IB_UMAD_MAJOR), issm ? IB_ISSM_MINOR_BASE + dev : dev);
	};
	buildSysfs(root, host, numbers);
	SysfsNode *dev = root.addDir("dev");
	for (const auto &hca : host.hcas())
		for (const auto &u : hca->umadPorts)
			for (bool issm : { false, true }) {
				SysfsNode *f = dev->addFile((issm ? "issm" : "umad") + std::to_string(u->devNum()), nullptr, 0600);
				devices[f] = { u.get(), issm };
			}
	number(&root);

	for (const auto &hca : host.hcas())
		for (const auto &u : hca->umadPorts)
			u->onIssmReleased = [this] { boost::asio::post(io, [this] { retryIssm(); }); };
}

Kind FuseFs::Impl::kindOf(const SysfsNode *n) const
{
	if (n->dir)
		return Kind::Dir;
	auto it = devices.find(n);
	if (it == devices.end())
		return Kind::Sysfs;
	return it->second.second ? Kind::Issm : Kind::Umad;
}

void FuseFs::Impl::fillAttr(const SysfsNode *n, struct stat &st) const
{
	memset(&st, 0, sizeof(st));
	st.st_ino = n->ino;
	st.st_mode = (n->dir ? S_IFDIR : S_IFREG) | n->mode;
	st.st_nlink = n->dir ? 2 : 1;
	st.st_size = n->dir || devices.count(n) ? 0 : kSysfsFileSize;
	st.st_blksize = 4096;
}

Open *FuseFs::Impl::openOf(fuse_file_info *fi) const
{
	auto it = opens.find(fi->fh);
	return it == opens.end() ? nullptr : it->second.get();
}

/* ---------------- FUSE operations ---------------- */

namespace {

FuseFs::Impl &self(fuse_req_t req) { return *static_cast<FuseFs::Impl *>(fuse_req_userdata(req)); }

void fsLookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	auto &s = self(req);
	SysfsNode *p = s.node(parent);
	SysfsNode *n = p && p->dir ? p->child(name) : nullptr;
	if (!n)
		return (void)fuse_reply_err(req, ENOENT);
	fuse_entry_param e{};
	e.ino = n->ino;
	e.entry_timeout = kEntryTimeout;
	e.attr_timeout = kAttrTimeout;
	s.fillAttr(n, e.attr);
	fuse_reply_entry(req, &e);
}

void fsGetattr(fuse_req_t req, fuse_ino_t ino, fuse_file_info *)
{
	auto &s = self(req);
	SysfsNode *n = s.node(ino);
	if (!n)
		return (void)fuse_reply_err(req, ENOENT);
	struct stat st;
	s.fillAttr(n, st);
	fuse_reply_attr(req, &st, kAttrTimeout);
}

void fsReaddir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, fuse_file_info *)
{
	auto &s = self(req);
	SysfsNode *n = s.node(ino);
	if (!n || !n->dir)
		return (void)fuse_reply_err(req, ENOTDIR);
	std::vector<char> buf(size);
	size_t used = 0;
	std::vector<std::pair<std::string, const SysfsNode *>> entries{ { ".", n }, { "..", n->parent ? n->parent : n } };
	for (const auto &c : n->children)
		entries.emplace_back(c->name, c.get());
	for (size_t i = static_cast<size_t>(off); i < entries.size(); i++) {
		struct stat st;
		s.fillAttr(entries[i].second, st);
		size_t len = fuse_add_direntry(req, buf.data() + used, size - used, entries[i].first.c_str(), &st,
					       static_cast<off_t>(i + 1));
		if (len > size - used)
			break;
		used += len;
	}
	fuse_reply_buf(req, buf.data(), used);
}

void issmInterrupted(fuse_req_t req, void *data)
{
	auto &s = *static_cast<FuseFs::Impl *>(data);
	for (auto it = s.issmWaiters.begin(); it != s.issmWaiters.end(); ++it)
		if (it->req == req) {
			s.issmWaiters.erase(it);
			fuse_reply_err(req, EINTR);
			return;
		}
}

void fsOpen(fuse_req_t req, fuse_ino_t ino, fuse_file_info *fi)
{
	auto &s = self(req);
	SysfsNode *n = s.node(ino);
	if (!n)
		return (void)fuse_reply_err(req, ENOENT);
	auto o = std::make_unique<Open>();
	o->kind = s.kindOf(n);
	o->node = n;
	o->nonblock = fi->flags & O_NONBLOCK;
	fi->direct_io = 1;

	switch (o->kind) {
	case Kind::Dir:
		return (void)fuse_reply_err(req, EISDIR);
	case Kind::Sysfs:
		if ((fi->flags & O_ACCMODE) != O_RDONLY && !n->store)
			return (void)fuse_reply_err(req, EACCES);
		o->value = n->render ? n->render() : SysfsValue{};
		break;
	case Kind::Umad: {
		/* ib_umad_open() */
		emu::UmadPort *port = s.devices.at(n).first;
		if (int rc = port->openCheck())
			return (void)fuse_reply_err(req, -rc);
		o->port = port;
		o->umad = std::make_unique<emu::UmadFile>(*port);
		fi->nonseekable = 1;
		uint64_t fh = s.nextFh;
		o->umad->setWakeup([&s, fh] {
			boost::asio::post(s.io, [&s, fh] { s.serveReads(fh); });
		});
		break;
	}
	case Kind::Issm: {
		/* ib_umad_sm_open(): one holder per port */
		emu::UmadPort *port = s.devices.at(n).first;
		int rc = port->issmOpen();
		if (rc == -EAGAIN && !o->nonblock) {
			s.issmWaiters.push_back({ req, *fi, port });
			fuse_req_interrupt_func(req, issmInterrupted, &s);
			return;
		}
		if (rc)
			return (void)fuse_reply_err(req, -rc);
		o->port = port;
		fi->nonseekable = 1;
		break;
	}
	}
	fi->fh = s.nextFh++;
	s.opens.emplace(fi->fh, std::move(o));
	if (fuse_reply_open(req, fi) == -ENOENT) /* the caller went away meanwhile */
		s.opens.erase(fi->fh);
}

void readInterrupted(fuse_req_t req, void *data)
{
	auto &s = *static_cast<FuseFs::Impl *>(data);
	for (auto &[fh, o] : s.opens)
		for (auto it = o->reads.begin(); it != o->reads.end(); ++it)
			if (it->req == req) {
				o->reads.erase(it);
				fuse_reply_err(req, EINTR);
				return;
			}
}

void fsRead(fuse_req_t req, fuse_ino_t, size_t size, off_t off, fuse_file_info *fi)
{
	auto &s = self(req);
	Open *o = s.openOf(fi);
	if (!o)
		return (void)fuse_reply_err(req, EBADF);
	switch (o->kind) {
	case Kind::Sysfs: {
		if (o->value.err)
			return (void)fuse_reply_err(req, o->value.err);
		const std::string &t = o->value.text;
		if (off >= static_cast<off_t>(t.size()))
			return (void)fuse_reply_buf(req, nullptr, 0);
		return (void)fuse_reply_buf(req, t.data() + off, std::min(size, t.size() - size_t(off)));
	}
	case Kind::Issm:
		return (void)fuse_reply_err(req, EINVAL);
	case Kind::Umad: {
		/* ib_umad_read(): a blocking reader waits here for a MAD */
		o->reads.push_back({ req, size });
		if (o->reads.size() == 1)
			s.serveReads(fi->fh);
		if (!o->reads.empty() && o->reads.back().req == req)
			fuse_req_interrupt_func(req, readInterrupted, &s);
		return;
	}
	case Kind::Dir:
		return (void)fuse_reply_err(req, EISDIR);
	}
}

void fsWrite(fuse_req_t req, fuse_ino_t, const char *buf, size_t size, off_t, fuse_file_info *fi)
{
	auto &s = self(req);
	Open *o = s.openOf(fi);
	if (!o)
		return (void)fuse_reply_err(req, EBADF);
	switch (o->kind) {
	case Kind::Umad: {
		ssize_t rc = o->umad->write(reinterpret_cast<const uint8_t *>(buf), size);
		if (rc < 0)
			return (void)fuse_reply_err(req, static_cast<int>(-rc));
		return (void)fuse_reply_write(req, static_cast<size_t>(rc));
	}
	case Kind::Sysfs:
		if (!o->node->store)
			return (void)fuse_reply_err(req, EACCES);
		if (int rc = o->node->store(std::string(buf, size)))
			return (void)fuse_reply_err(req, -rc);
		return (void)fuse_reply_write(req, size);
	default:
		return (void)fuse_reply_err(req, EINVAL);
	}
}

void fsIoctl(fuse_req_t req, fuse_ino_t, unsigned int cmd, void *, fuse_file_info *fi, unsigned flags,
	     const void *inBuf, size_t inSize, size_t outSize)
{
	auto &s = self(req);
	Open *o = s.openOf(fi);
	if (!o)
		return (void)fuse_reply_err(req, EBADF);
	if (o->kind != Kind::Umad || (flags & FUSE_IOCTL_COMPAT))
		return (void)fuse_reply_err(req, ENOTTY);
	std::vector<uint8_t> arg(std::max<size_t>({ size_t(iocSize(cmd)), inSize, outSize, size_t(1) }), 0);
	if (inSize)
		memcpy(arg.data(), inBuf, inSize);
	int rc = o->umad->ioctl(cmd, arg.data(), iocSize(cmd));
	/* REGISTER_AGENT2 writes the supported flags back even when it fails */
	if (rc == 0 || (rc == -EINVAL && cmd == IB_USER_MAD_REGISTER_AGENT2))
		return (void)fuse_reply_ioctl(req, rc, outSize ? arg.data() : nullptr, outSize);
	fuse_reply_err(req, -rc);
}

void fsPoll(fuse_req_t req, fuse_ino_t, fuse_file_info *fi, fuse_pollhandle *ph)
{
	auto &s = self(req);
	Open *o = s.openOf(fi);
	if (!o) {
		if (ph)
			fuse_pollhandle_destroy(ph);
		return (void)fuse_reply_err(req, EBADF);
	}
	if (ph) {
		if (o->ph)
			fuse_pollhandle_destroy(o->ph);
		o->ph = ph;
	}
	unsigned mask = o->kind == Kind::Umad ? o->umad->poll() : emu::issm::poll();
	fuse_reply_poll(req, mask);
}

void fsRelease(fuse_req_t req, fuse_ino_t, fuse_file_info *fi)
{
	auto &s = self(req);
	auto it = s.opens.find(fi->fh);
	if (it != s.opens.end()) {
		Open &o = *it->second;
		for (auto &r : o.reads)
			fuse_reply_err(r.req, EBADF);
		o.reads.clear();
		if (o.ph)
			fuse_pollhandle_destroy(o.ph);
		if (o.kind == Kind::Issm && o.port)
			o.port->issmRelease(); /* ib_umad_sm_close() */
		s.opens.erase(it);         /* a umad file's close: ib_umad_close() */
	}
	fuse_reply_err(req, 0);
}

const fuse_lowlevel_ops kOps = [] {
	fuse_lowlevel_ops ops{};
	ops.lookup = fsLookup;
	ops.getattr = fsGetattr;
	ops.readdir = fsReaddir;
	ops.open = fsOpen;
	ops.read = fsRead;
	ops.write = fsWrite;
	ops.ioctl = fsIoctl;
	ops.poll = fsPoll;
	ops.release = fsRelease;
	return ops;
}();

} /* namespace */

/* ---------------- waking parked requests ---------------- */

void FuseFs::Impl::serveReads(uint64_t fh)
{
	auto it = opens.find(fh);
	if (it == opens.end())
		return;
	Open &o = *it->second;
	while (!o.reads.empty()) {
		PendingRead r = o.reads.front();
		std::vector<uint8_t> buf(r.size);
		ssize_t n = o.umad->read(buf.data(), buf.size());
		if (n == -EAGAIN && !o.nonblock && !stopping)
			break; /* stays parked until the next MAD */
		o.reads.pop_front();
		fuse_req_interrupt_func(r.req, nullptr, nullptr);
		if (n == -ENOSPC) {
			/* The kernel returns ENOSPC *after* copying the header (whose
			 * length says what is needed) and the first segment; libibumad
			 * reads that length. A FUSE reply is data or an error, so the
			 * bytes go straight into the reader's buffer. */
			long nr;
			uint64_t args[6];
			pid_t tid = fuse_req_ctx(r.req)->pid;
			size_t copied = o.umad->hdrSize() + kMadSize;
			if (callerSyscall(tid, nr, args) == 0 && nr == SYS_read && args[2] >= copied)
				writeCaller(tid, args[1], buf.data(), copied);
			fuse_reply_err(r.req, ENOSPC);
		} else if (n < 0)
			fuse_reply_err(r.req, static_cast<int>(-n));
		else
			fuse_reply_buf(r.req, reinterpret_cast<const char *>(buf.data()), static_cast<size_t>(n));
	}
	notifyPoll(o);
}

void FuseFs::Impl::notifyPoll(Open &o)
{
	if (o.ph)
		fuse_lowlevel_notify_poll(o.ph);
}

void FuseFs::Impl::retryIssm()
{
	for (auto it = issmWaiters.begin(); it != issmWaiters.end();) {
		int rc = it->port->issmOpen();
		if (rc == -EAGAIN && !stopping) {
			++it;
			continue;
		}
		fuse_req_interrupt_func(it->req, nullptr, nullptr);
		if (rc) {
			fuse_reply_err(it->req, stopping ? EINTR : -rc);
		} else {
			auto o = std::make_unique<Open>();
			o->kind = Kind::Issm;
			o->port = it->port;
			it->fi.fh = nextFh++;
			it->fi.nonseekable = 1;
			it->fi.direct_io = 1;
			opens.emplace(it->fi.fh, std::move(o));
			if (fuse_reply_open(it->req, &it->fi) == -ENOENT)
				opens.erase(it->fi.fh);
		}
		it = issmWaiters.erase(it);
	}
}

/* ---------------- the session on the io_context ---------------- */

void FuseFs::Impl::waitForRequests()
{
	sd->async_wait(boost::asio::posix::stream_descriptor::wait_read, [this](const boost::system::error_code &ec) {
		if (ec || stopping)
			return;
		serveOneRequest();
	});
}

/*
 * One request per turn of the loop, then the next turn: handlers the request
 * posted (a MAD's delivery, a wakeup) run before the next request is read, so
 * a client's poll() that follows its write() already sees the answer.
 */
void FuseFs::Impl::serveOneRequest()
{
	int r = fuse_session_receive_buf(se, &buf);
	if (r == -EAGAIN || r == -EINTR)
		return waitForRequests();
	if (r <= 0) {
		spdlog::get("cuse")->info("FUSE session ended ({})", r);
		return;
	}
	fuse_session_process_buf(se, &buf);
	if (!stopping && !fuse_session_exited(se))
		boost::asio::post(io, [this] {
			if (!stopping)
				serveOneRequest();
		});
}

FuseFs::FuseFs(boost::asio::io_context &io, emu::Host &host) : impl_(std::make_unique<Impl>(io, host))
{
	if (!spdlog::get("cuse"))
		spdlog::default_logger()->clone("cuse");
	impl_->build();
}

FuseFs::~FuseFs()
{
	shutdown();
}

int FuseFs::mount(const std::string &mountpoint, std::string &err)
{
	Impl &s = *impl_;
	const char *argv[] = { "ibemud", "-o", "allow_other,default_permissions,fsname=ibemu,subtype=ibemu" };
	fuse_args args = FUSE_ARGS_INIT(3, const_cast<char **>(argv));
	s.se = fuse_session_new(&args, &kOps, sizeof(kOps), &s);
	if (!s.se) {
		err = "cannot create a FUSE session";
		return -ENOMEM;
	}
	if (fuse_session_mount(s.se, mountpoint.c_str()) != 0) {
		err = "cannot mount FUSE at " + mountpoint + " (is /dev/fuse there, and are we root?)";
		fuse_session_destroy(s.se);
		s.se = nullptr;
		return -EIO;
	}
	s.mounted = true;
	int fd = fuse_session_fd(s.se);
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
	s.sd = std::make_unique<boost::asio::posix::stream_descriptor>(s.io, dup(fd));
	s.waitForRequests();
	return 0;
}

void FuseFs::shutdown()
{
	Impl &s = *impl_;
	if (s.stopping)
		return;
	s.stopping = true;
	for (auto &[fh, o] : s.opens) {
		for (auto &r : o->reads) {
			fuse_req_interrupt_func(r.req, nullptr, nullptr);
			fuse_reply_err(r.req, EIO);
		}
		o->reads.clear();
	}
	for (auto &w : s.issmWaiters) {
		fuse_req_interrupt_func(w.req, nullptr, nullptr);
		fuse_reply_err(w.req, ENXIO);
	}
	s.issmWaiters.clear();
	if (s.sd) {
		boost::system::error_code ec;
		s.sd->close(ec);
	}
	if (s.se) {
		if (s.mounted)
			fuse_session_unmount(s.se);
		fuse_session_destroy(s.se);
		s.se = nullptr;
	}
	for (auto &[fh, o] : s.opens)
		if (o->ph)
			fuse_pollhandle_destroy(o->ph);
	s.opens.clear();
	free(s.buf.mem);
	s.buf.mem = nullptr;
}

} /* namespace ibemu::cuse_dev */
