// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// One port's umad and issm devices (the kernel's struct ib_umad_port).
//
// Interface:
//   device nodes  /dev/infiniband/umadN (this port's MAD access),
//                 /dev/infiniband/issmN (claims IsSM for the port)
//   sysfs         /sys/class/infiniband_mad/{umadN,issmN}/{ibdev,port,dev}
//
// Lifetime rules: the Hca owns its UmadPorts. Each open umad file is owned by
// the transport (a unique_ptr per open), registers itself here and removes
// itself on close. When the HCA goes away the port is killed: open files are
// marked dead and woken (read/write -EIO, register -EPIPE, poll POLLERR) but
// stay valid until the transport closes them; new opens get -ENXIO.
#pragma once

#include <cerrno>
#include <cstdint>
#include <functional>
#include <list>
#include <string>
#include <utility>
#include <vector>

namespace ibemu::emu {

class MadPort;
class UmadFile;

class UmadPort {
public:
	UmadPort(MadPort &mad, unsigned devNum, std::string ibdev);
	~UmadPort();
	UmadPort(const UmadPort &) = delete;
	UmadPort &operator=(const UmadPort &) = delete;

	unsigned devNum() const { return devNum_; }
	const std::string &ibdev() const { return ibdev_; }
	unsigned portNum() const;
	MadPort &mad() const { return mad_; }
	bool dead() const { return dead_; }

	/* umad open: -ENXIO once the port is gone. */
	int openCheck() const { return dead_ ? -ENXIO : 0; }

	/* issm open: takes the port's single IsSM claim and sets IsSM in
	 * PortInfo:CapabilityMask. Returns 0, -EAGAIN while another open holds
	 * it (a blocking open waits for a watcher's call and tries again), -ENXIO
	 * once the port is gone. */
	int issmOpen();
	/* issm release: clears IsSM and lets the next opener in. */
	void issmRelease();
	bool issmHeld() const { return issmHeld_; }
	size_t openFiles() const { return files_.size(); }
	/* Called when the claim is released or the port dies. */
	/* Calls fn (until unwatched) when the claim is released or the port
	 * dies: each transport that parks blocking issm opens watches. */
	unsigned watchIssm(std::function<void()> fn)
	{
		issmWatchers_.emplace_back(++lastWatch_, std::move(fn));
		return lastWatch_;
	}
	void unwatchIssm(unsigned id)
	{
		std::erase_if(issmWatchers_, [id](const auto &w) { return w.first == id; });
	}

	/* Marks the port gone (HCA removal, daemon shutdown). */
	void kill();

private:
	friend class UmadFile;

	MadPort &mad_;
	unsigned devNum_;
	std::string ibdev_;
	bool dead_ = false;
	bool issmHeld_ = false;
	std::list<UmadFile *> files_;
	std::vector<std::pair<unsigned, std::function<void()>>> issmWatchers_;
	unsigned lastWatch_ = 0;

	void issmReleased()
	{
		auto watchers = issmWatchers_; /* one may unwatch */
		for (auto &w : watchers)
			w.second();
	}
};

/* issm file operations: only open and release do anything (kernel umad_sm_fops). */
namespace issm {
constexpr int readOrWrite()
{
	return -EINVAL; /* no read/write method */
}
constexpr int ioctl()
{
	return -ENOTTY; /* no unlocked_ioctl */
}
constexpr int llseek()
{
	return -ESPIPE; /* no_llseek */
}
unsigned poll(); /* DEFAULT_POLLMASK */
} /* namespace issm */

} /* namespace ibemu::emu */
