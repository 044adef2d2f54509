// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// The FUSE transport: one filesystem with the sysfs view (class/...) and
// the device files (dev/umadN, dev/issmN). Device requests go to
// UmadFiles; sysfs files are rendered at open (sysfs.h).
#define FUSE_USE_VERSION 35
#include "cuse_dev/fuse_fs.h"

#include "cuse_dev/fuse_uring.h"
#include "cuse_dev/session_pump.h"
#include "cuse_dev/sysfs.h"
#include "cuse_dev/umad_files.h"
#include "emu/host.h"
#include "emu/umad_abi.h"

#include <fuse_lowlevel.h>

#include <sys/sysmacros.h>
#include <spdlog/spdlog.h>

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <poll.h>
#include <sys/stat.h>
#include <unordered_map>

namespace ibemu::cuse_dev {

namespace {

constexpr double kEntryTimeout = 3600.0; /* the tree never changes shape */
constexpr double kAttrTimeout = 1.0;
constexpr off_t kSysfsFileSize = 4096; /* what sysfs reports for every attribute */

struct SysfsOpen {
	SysfsNode *node;
	SysfsValue value;
};

} /* namespace */

struct FuseFs::Impl {
	boost::asio::io_context &io;
	emu::Host &host;
	SysfsNode root;
	std::vector<SysfsNode *> byIno; /* ino - 1 */
	std::unordered_map<const SysfsNode *, std::pair<emu::UmadPort *, bool>> devices; /* port, issm */
	UmadFiles umadFiles;
	std::unordered_map<uint64_t, SysfsOpen> sysfsOpens;
	uint64_t nextFh = 1;
	fuse_session *se = nullptr;
	std::unique_ptr<SessionPump> pump;
	std::unique_ptr<FuseUring> ring; /* --fuse-uring: stopped in shutdown(), after the unmount */
	bool mounted = false;
	bool stopped = false;
	unsigned spinUs = 0;
	bool useRing = false;
	unsigned ringDepth = 0;

	Impl(boost::asio::io_context &i, emu::Host &h) : io(i), host(h), umadFiles(i) {}

	void number(SysfsNode *n)
	{
		byIno.push_back(n);
		n->ino = byIno.size();
		for (auto &c : n->children)
			number(c.get());
	}
	SysfsNode *node(fuse_ino_t ino) const { return ino >= 1 && ino <= byIno.size() ? byIno[ino - 1] : nullptr; }
	void fillAttr(const SysfsNode *n, struct stat &st) const
	{
		memset(&st, 0, sizeof(st));
		st.st_ino = n->ino;
		st.st_mode = (n->dir ? S_IFDIR : (n->mode & S_IFMT) ? 0 : S_IFREG) | n->mode;
		st.st_nlink = n->dir ? 2 : 1;
		st.st_rdev = n->rdev;
		st.st_size = n->dir || devices.count(n) || (n->mode & S_IFMT) ? 0 : kSysfsFileSize;
		st.st_blksize = 4096;
	}
};

namespace {

FuseFs::Impl &self(fuse_req_t req)
{
	return *static_cast<FuseFs::Impl *>(fuse_req_userdata(req));
}

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
	std::vector<std::pair<std::string, const SysfsNode *>> entries{ { ".", n },
									{ "..", n->parent ? n->parent : n } };
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

void fsOpen(fuse_req_t req, fuse_ino_t ino, fuse_file_info *fi)
{
	auto &s = self(req);
	SysfsNode *n = s.node(ino);
	if (!n)
		return (void)fuse_reply_err(req, ENOENT);
	if (n->dir)
		return (void)fuse_reply_err(req, EISDIR);
	if (auto it = s.devices.find(n); it != s.devices.end())
		return s.umadFiles.open(req, *it->second.first, it->second.second, fi);
	if ((fi->flags & O_ACCMODE) != O_RDONLY && !n->store)
		return (void)fuse_reply_err(req, EACCES);
	SysfsValue v;
	try { /* nothing may unwind into libfuse's C frames */
		if (n->render)
			v = n->render();
	} catch (const std::exception &e) {
		spdlog::error("sysfs: rendering {} failed: {}", n->name, e.what());
		return (void)fuse_reply_err(req, EIO);
	}
	fi->direct_io = 1;
	fi->noflush = 1; /* open_files::replyOpen() */
	fi->fh = s.nextFh++;
	s.sysfsOpens[fi->fh] = { n, std::move(v) };
	fuse_reply_open(req, fi);
}

void fsRead(fuse_req_t req, fuse_ino_t, size_t size, off_t off, fuse_file_info *fi)
{
	auto &s = self(req);
	if (UmadFiles::owns(fi->fh))
		return s.umadFiles.read(req, size, fi);
	auto it = s.sysfsOpens.find(fi->fh);
	if (it == s.sysfsOpens.end())
		return (void)fuse_reply_err(req, EBADF);
	const SysfsValue &v = it->second.value;
	if (v.err)
		return (void)fuse_reply_err(req, v.err);
	if (off >= static_cast<off_t>(v.text.size()))
		return (void)fuse_reply_buf(req, nullptr, 0);
	fuse_reply_buf(req, v.text.data() + off, std::min(size, v.text.size() - size_t(off)));
}

void fsWrite(fuse_req_t req, fuse_ino_t, const char *buf, size_t size, off_t, fuse_file_info *fi)
{
	auto &s = self(req);
	if (UmadFiles::owns(fi->fh))
		return s.umadFiles.write(req, buf, size, fi);
	auto it = s.sysfsOpens.find(fi->fh);
	if (it == s.sysfsOpens.end() || !it->second.node->store)
		return (void)fuse_reply_err(req, EACCES);
	if (int rc = it->second.node->store(std::string(buf, size)))
		return (void)fuse_reply_err(req, -rc);
	fuse_reply_write(req, size);
}

void fsIoctl(fuse_req_t req, fuse_ino_t, unsigned int cmd, void *arg, fuse_file_info *fi, unsigned flags,
	     const void *in, size_t inSize, size_t outSize)
{
	auto &s = self(req);
	if (!UmadFiles::owns(fi->fh))
		return (void)fuse_reply_err(req, ENOTTY);
	s.umadFiles.ioctl(req, cmd, arg, fi, flags, in, inSize, outSize);
}

void fsPoll(fuse_req_t req, fuse_ino_t, fuse_file_info *fi, fuse_pollhandle *ph)
{
	auto &s = self(req);
	if (UmadFiles::owns(fi->fh))
		return s.umadFiles.poll(req, fi, ph);
	if (ph)
		fuse_pollhandle_destroy(ph);
	fuse_reply_poll(req, POLLIN | POLLRDNORM);
}

void fsRelease(fuse_req_t req, fuse_ino_t, fuse_file_info *fi)
{
	auto &s = self(req);
	if (UmadFiles::owns(fi->fh))
		return s.umadFiles.release(req, fi);
	s.sysfsOpens.erase(fi->fh);
	fuse_reply_err(req, 0);
}

/* The session's I/O once a ring is prepared: its INIT and its replies
 * pass through the ring (fuse_uring.h). */
ssize_t ioRead(int fd, void *buf, size_t len, void *userdata)
{
	return static_cast<FuseFs::Impl *>(userdata)->ring->read(fd, buf, len);
}

ssize_t ioWritev(int fd, struct iovec *iov, int count, void *userdata)
{
	return static_cast<FuseFs::Impl *>(userdata)->ring->writev(fd, iov, count);
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

FuseFs::FuseFs(boost::asio::io_context &io, emu::Host &host, const Options &opts)
	: impl_(std::make_unique<Impl>(io, host))
{
	Impl &s = *impl_;
	s.root.dir = true;
	s.root.mode = 0755;
	s.spinUs = opts.spinUs;
	s.useRing = opts.fuseUring;
	s.ringDepth = opts.uringDepth;
	DevNumbers numbers;
	numbers.umad = opts.umadNumbers ? opts.umadNumbers : [](unsigned dev, bool issm) {
		return std::make_pair(unsigned(IB_UMAD_MAJOR), issm ? IB_ISSM_MINOR_BASE + dev : dev);
	};
	numbers.uverbs = opts.uverbsNumbers;
	numbers.rdmaCm = opts.rdmaCmNumbers;
	buildSysfs(s.root, host, numbers, opts.pciIdentity);
	buildHostSysfs(s.root, host, numbers, opts.pciIdentity);
	if (opts.status) {
		auto render = opts.status;
		s.root.addFile("status.json", [render] { return SysfsValue{ 0, render() }; });
	}
	if (opts.deviceFiles) {
		SysfsNode *dev = s.root.addDir("dev");
		for (const auto &hca : host.hcas())
			for (const auto &u : hca->umadPorts) {
				for (bool issm : { false, true }) {
					SysfsNode *f = dev->addFile(
						(issm ? "issm" : "umad") + std::to_string(u->devNum()), nullptr, 0600);
					s.devices[f] = { u.get(), issm };
				}
				s.umadFiles.watch(*u);
			}
		/* the seccomp transport's: character nodes with the kernel's
		 * numbers, for stat() (a program under `ibemu exec` never opens
		 * them: its filter serves the open; anyone else finds no such
		 * device behind them) */
		if (numbers.uverbs) {
			for (const auto &hca : host.hcas()) {
				auto [maj, min] = numbers.uverbs(hca->verbsNum);
				dev->addFile("uverbs" + std::to_string(hca->verbsNum), nullptr, S_IFCHR | 0666)->rdev =
					makedev(maj, min);
			}
		}
		if (numbers.rdmaCm) {
			auto [maj, min] = numbers.rdmaCm();
			dev->addFile("rdma_cm", nullptr, S_IFCHR | 0666)->rdev = makedev(maj, min);
		}
	}
	s.number(&s.root);
}

FuseFs::~FuseFs()
{
	shutdown();
}

void FuseFs::openers(std::map<pid_t, unsigned> &out) const
{
	impl_->umadFiles.openers(out);
}

/* Before the kernel's INIT is answered: the queues must be ready to
 * register when the reply goes out. */
void FuseFs::prepareRing()
{
	Impl &s = *impl_;
	fuse_session *se = s.se;
	std::string why;
	s.ring = FuseUring::prepare(
		fuse_session_fd(se), s.ringDepth,
		[se](const char *req, size_t len) {
			fuse_buf b{};
			b.mem = const_cast<char *>(req);
			b.size = len;
			fuse_session_process_buf(se, &b);
		},
		why);
	if (!s.ring) {
		spdlog::info("fuse-uring: not in use ({}); requests go through /dev/fuse", why);
		return;
	}
	static const fuse_custom_io io = { ioWritev, ioRead, nullptr, nullptr };
	if (int rc = fuse_session_custom_io(se, &io, fuse_session_fd(se)); rc < 0) {
		spdlog::info("fuse-uring: not in use (libfuse refused custom I/O: {}); requests go through /dev/fuse",
			     strerror(-rc));
		s.ring.reset();
	}
}

bool FuseFs::overIoUring() const
{
	return impl_->ring && impl_->ring->active();
}

int FuseFs::mount(const std::string &mountpoint, std::string &err)
{
	Impl &s = *impl_;
	const char *argv[] = { "ibemud", "-o", "allow_other,default_permissions,fsname=ibemu,subtype=ibemu" };
	fuse_args args = FUSE_ARGS_INIT(3, const_cast<char **>(argv));
	s.se = fuse_session_new(&args, &kOps, sizeof(kOps), &s);
	fuse_opt_free_args(&args); /* parsing copied them into args.argv */
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
	if (s.useRing)
		prepareRing();
	s.pump = std::make_unique<SessionPump>(s.io, s.se, s.spinUs);
	s.pump->start();
	return 0;
}

void FuseFs::shutdown()
{
	Impl &s = *impl_;
	if (s.stopped)
		return;
	s.stopped = true;
	s.umadFiles.shutdown();
	if (s.ring) /* the answers just given, before the unmount ends their requests */
		s.ring->close();
	if (s.pump)
		s.pump->stop();
	if (s.se) {
		if (s.mounted)
			fuse_session_unmount(s.se);
		if (s.ring) /* the connection is gone: its queues return their entries */
			s.ring->stop();
		fuse_session_destroy(s.se);
		s.se = nullptr;
	}
	s.sysfsOpens.clear();
}

} /* namespace ibemu::cuse_dev */
