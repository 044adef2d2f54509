// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// CUSE character devices for the umad and issm nodes.
#define FUSE_USE_VERSION 35
#include "cuse_dev/cuse_devices.h"

#include "cuse_dev/process_access.h"
#include "cuse_dev/rdma_cm_files.h"
#include "cuse_dev/session_pump.h"
#include "cuse_dev/umad_files.h"
#include "cuse_dev/verbs_files.h"
#include "emu/host.h"

#include <cuse_lowlevel.h>
#include <fuse_lowlevel.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

namespace ibemu::cuse_dev {

namespace {

/* One CUSE session: one device node. */
struct Device {
	struct CuseDevices::Impl *owner;
	NodeKind kind;
	emu::UmadPort *port = nullptr; /* umad, issm */
	emu::VerbsDevice *verbs = nullptr; /* uverbs */
	std::string devName; /* relative to /dev */
	fuse_session *se = nullptr;
	int fd = -1;
	std::unique_ptr<SessionPump> pump;
};

Device &dev(fuse_req_t req)
{
	return *static_cast<Device *>(fuse_req_userdata(req));
}

/* the node's name under the prefix: umadN, issmN, uverbsN, rdma_cm */
std::string nodeName(NodeKind k, unsigned num)
{
	if (k == NodeKind::RdmaCm)
		return "rdma_cm";
	return (k == NodeKind::Umad ? "umad" : k == NodeKind::Issm ? "issm" : "uverbs") + std::to_string(num);
}

} /* namespace */

struct CuseDevices::Impl {
	boost::asio::io_context &io;
	emu::Host &host;
	std::string prefix;
	UmadFiles files;
	ProcessAccess access;
	VerbsFiles verbsFiles;
	RdmaCmFiles cmFiles;
	std::vector<std::unique_ptr<Device>> devices;
	bool stopped = false;
	unsigned spinUs;

	Impl(boost::asio::io_context &i, emu::Host &h, std::string p, unsigned spin)
		: io(i), host(h), prefix(std::move(p)), files(i), verbsFiles(i, h), cmFiles(i, h), spinUs(spin)
	{}
};

namespace {

void cdOpen(fuse_req_t req, fuse_file_info *fi)
{
	Device &d = dev(req);
	d.owner->files.open(req, *d.port, d.kind == NodeKind::Issm, fi);
}
void cdRead(fuse_req_t req, size_t size, off_t, fuse_file_info *fi)
{
	dev(req).owner->files.read(req, size, fi);
}
void cdWrite(fuse_req_t req, const char *buf, size_t size, off_t, fuse_file_info *fi)
{
	dev(req).owner->files.write(req, buf, size, fi);
}
void cdIoctl(fuse_req_t req, int cmd, void *arg, fuse_file_info *fi, unsigned flags, const void *in, size_t inSize,
	     size_t outSize)
{
	dev(req).owner->files.ioctl(req, static_cast<unsigned>(cmd), arg, fi, flags, in, inSize, outSize);
}
void cdPoll(fuse_req_t req, fuse_file_info *fi, fuse_pollhandle *ph)
{
	dev(req).owner->files.poll(req, fi, ph);
}
void cdRelease(fuse_req_t req, fuse_file_info *fi)
{
	dev(req).owner->files.release(req, fi);
}

void uvOpen(fuse_req_t req, fuse_file_info *fi)
{
	Device &d = dev(req);
	d.owner->verbsFiles.open(req, *d.verbs, fi);
}
void uvRead(fuse_req_t req, size_t size, off_t, fuse_file_info *fi)
{
	dev(req).owner->verbsFiles.read(req, size, fi);
}
void uvWrite(fuse_req_t req, const char *buf, size_t size, off_t, fuse_file_info *fi)
{
	dev(req).owner->verbsFiles.write(req, buf, size, fi);
}
void uvIoctl(fuse_req_t req, int cmd, void *, fuse_file_info *fi, unsigned, const void *, size_t, size_t)
{
	dev(req).owner->verbsFiles.ioctl(req, static_cast<unsigned>(cmd), fi);
}
void uvPoll(fuse_req_t req, fuse_file_info *fi, fuse_pollhandle *ph)
{
	dev(req).owner->verbsFiles.poll(req, fi, ph);
}
void uvRelease(fuse_req_t req, fuse_file_info *fi)
{
	dev(req).owner->verbsFiles.release(req, fi);
}

void cmOpen(fuse_req_t req, fuse_file_info *fi)
{
	dev(req).owner->cmFiles.open(req, fi);
}
void cmWrite(fuse_req_t req, const char *buf, size_t size, off_t, fuse_file_info *fi)
{
	dev(req).owner->cmFiles.write(req, buf, size, fi);
}
void cmPoll(fuse_req_t req, fuse_file_info *fi, fuse_pollhandle *ph)
{
	dev(req).owner->cmFiles.poll(req, fi, ph);
}
void cmRelease(fuse_req_t req, fuse_file_info *fi)
{
	dev(req).owner->cmFiles.release(req, fi);
}

const cuse_lowlevel_ops kCmOps = [] {
	cuse_lowlevel_ops ops{};
	ops.open = cmOpen;
	ops.write = cmWrite;
	ops.poll = cmPoll;
	ops.release = cmRelease;
	return ops;
}();

const cuse_lowlevel_ops kVerbsOps = [] {
	cuse_lowlevel_ops ops{};
	ops.open = uvOpen;
	ops.read = uvRead;
	ops.write = uvWrite;
	ops.ioctl = uvIoctl;
	ops.poll = uvPoll;
	ops.release = uvRelease;
	return ops;
}();

const cuse_lowlevel_ops kOps = [] {
	cuse_lowlevel_ops ops{};
	ops.open = cdOpen;
	ops.read = cdRead;
	ops.write = cdWrite;
	ops.ioctl = cdIoctl;
	ops.poll = cdPoll;
	ops.release = cdRelease;
	return ops;
}();

} /* namespace */

bool cuseAvailable()
{
	return access("/dev/cuse", R_OK | W_OK) == 0;
}

CuseDevices::CuseDevices(boost::asio::io_context &io, emu::Host &host, std::string prefix, unsigned spinUs)
	: impl_(std::make_unique<Impl>(io, host, std::move(prefix), spinUs))
{}

CuseDevices::~CuseDevices()
{
	shutdown();
}

int CuseDevices::start(std::string &err)
{
	Impl &s = *impl_;
	s.host.setAccess(&s.access);
	auto create = [&](NodeKind kind, unsigned num, emu::UmadPort *port, emu::VerbsDevice *verbs) {
		auto d = std::make_unique<Device>();
		d->owner = &s;
		d->kind = kind;
		d->port = port;
		d->verbs = verbs;
		d->devName = s.prefix + nodeName(kind, num);
		std::string devInfo = "DEVNAME=" + d->devName;
		const char *devInfoArgv[] = { devInfo.c_str() };
		cuse_info ci{};
		ci.dev_info_argc = 1;
		ci.dev_info_argv = devInfoArgv;
		const char *argv[] = { "ibemud" };
		fuse_args args = FUSE_ARGS_INIT(1, const_cast<char **>(argv));
		const cuse_lowlevel_ops *ops = kind == NodeKind::Uverbs ? &kVerbsOps
			: kind == NodeKind::RdmaCm                      ? &kCmOps
									: &kOps;
		d->se = cuse_lowlevel_new(&args, &ci, ops, d.get());
		fuse_opt_free_args(&args); /* parsing copied them into args.argv */
		if (!d->se) {
			err = "cannot create a CUSE session for " + d->devName;
			return -ENOMEM;
		}
		d->fd = open("/dev/cuse", O_RDWR | O_CLOEXEC);
		if (d->fd < 0) {
			int e = errno;
			err = std::string("cannot open /dev/cuse: ") + strerror(e);
			fuse_session_destroy(d->se);
			d->se = nullptr;
			return -e;
		}
		/* libfuse takes a ready descriptor as "/dev/fd/N" */
		std::string fdPath = "/dev/fd/" + std::to_string(d->fd);
		if (fuse_session_mount(d->se, fdPath.c_str()) != 0) {
			err = "cannot start the CUSE session for " + d->devName;
			fuse_session_destroy(d->se);
			close(d->fd);
			return -EIO;
		}
		d->pump = std::make_unique<SessionPump>(s.io, d->se, s.spinUs);
		d->pump->start();
		s.devices.push_back(std::move(d));
		return 0;
	};
	for (const auto &hca : s.host.hcas()) {
		for (const auto &u : hca->umadPorts) {
			s.files.watch(*u);
			for (NodeKind k : { NodeKind::Umad, NodeKind::Issm })
				if (int rc = create(k, u->devNum(), u.get(), nullptr))
					return rc;
		}
		if (int rc = create(NodeKind::Uverbs, hca->verbsNum, nullptr, hca->verbs.get()))
			return rc;
	}
	/* the kernel's rdma_ucm misc device: one for the host */
	if (int rc = create(NodeKind::RdmaCm, 0, nullptr, nullptr))
		return rc;
	return 0;
}

std::string CuseDevices::path(NodeKind kind, unsigned num) const
{
	return "/dev/" + impl_->prefix + nodeName(kind, num);
}

std::pair<unsigned, unsigned> CuseDevices::numbers(NodeKind kind, unsigned num) const
{
	/* The kernel publishes them in /sys/class/cuse/<name, '/' as '!'>/dev;
	 * /dev/infiniband itself is covered in our namespace. */
	std::string name = impl_->prefix + nodeName(kind, num);
	std::replace(name.begin(), name.end(), '/', '!');
	FILE *f = fopen(("/sys/class/cuse/" + name + "/dev").c_str(), "re");
	unsigned maj = 0, min = 0;
	if (f) {
		if (fscanf(f, "%u:%u", &maj, &min) != 2)
			maj = min = 0;
		fclose(f);
	}
	return { maj, min };
}

void CuseDevices::setRdmaCmNode(std::string p)
{
	impl_->cmFiles.setNode(std::move(p));
}

void CuseDevices::setHostOf(std::function<std::string(pid_t tid)> hostOf)
{
	impl_->cmFiles.setHostOf(std::move(hostOf));
}

void CuseDevices::openers(std::map<pid_t, unsigned> &out) const
{
	impl_->files.openers(out);
	impl_->verbsFiles.openers(out);
	impl_->cmFiles.openers(out);
}

void CuseDevices::shutdown()
{
	Impl &s = *impl_;
	if (s.stopped)
		return;
	s.stopped = true;
	s.files.shutdown();
	s.cmFiles.shutdown(); /* its IDs end while their ports can still tell the peers */
	s.verbsFiles.shutdown(); /* closes every uverbs file while the HCAs still exist */
	for (auto &d : s.devices) {
		if (d->pump)
			d->pump->stop();
		if (d->se) {
			fuse_session_unmount(d->se); /* closes the /dev/cuse descriptor: the node goes */
			fuse_session_destroy(d->se);
		}
	}
	s.devices.clear();
}

} /* namespace ibemu::cuse_dev */
