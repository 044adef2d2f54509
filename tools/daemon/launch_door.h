// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// The launch door (docs/transports.md, "Launching across hosts"): where an
// `ibemu exec` that runs under an ibemu seccomp filter asks the daemon to
// run `ibemu exec [--host H] -- CMD` for it. A seccomp filter with a
// listener cannot be added below another one (EBUSY), so a program of one
// host (mpirun's remote shell) could not start a program served as
// another host's; the daemon starts the ibemu next to it, outside any
// filter, as a child of its own, with the caller's descriptors 0, 1 and 2,
// its environment (handed over on descriptor 3 once that ibemu has dropped
// what the caller lacks: it starts with none) and working directory, and
// no more privilege than the caller has; the caller waits for the exit status and forwards its
// signals. The wire format is tools/instance/launch_wire.h.
//
// <run dir>/launch.sock, mode 0600: the daemon's user only, as the seccomp
// door; a caller must be of the daemon's user namespace with all four of
// its user ids the daemon's, a program of the instance's `ibemu exec` (in
// the mount and network namespaces of the daemon or of a host's holder),
// and hold no capability it dropped from its bounding set or effective set
// (CapPrm == CapEff == CapBnd). The command gets its resource limits and
// umask too; not its LSM label or cgroup (the daemon's). At most launch::kMaxLaunches connections at once
// (waiting for their request or running): one more is refused (EAGAIN).
// A request must arrive whole within kRequestTime.
//
// All on the io thread: the child is made with posix_spawn() (a vfork and
// an exec: nothing of the threaded daemon runs in it) and watched through
// a pidfd on the io_context.
#pragma once

#include "tools/daemon/seccomp_door.h"

#include <boost/asio/io_context.hpp>
#include <boost/asio/local/stream_protocol.hpp>

#include <chrono>
#include <functional>
#include <memory>
#include <set>
#include <string>

namespace ibemu::tools {

class LaunchDoor {
public:
	/* cli: the ibemu program to run; instance: the instance's name;
	 * holderOf(pid): the holder of the cluster host whose network
	 * namespace process pid is in, 0 for none */
	LaunchDoor(boost::asio::io_context &io, std::string cli, std::string instance,
		   std::function<pid_t(pid_t)> holderOf);
	~LaunchDoor();
	LaunchDoor(const LaunchDoor &) = delete;
	LaunchDoor &operator=(const LaunchDoor &) = delete;

	/* Listens at path: 0, or -1 with err set. */
	int listen(const std::string &path, std::string &err);
	/* No more launches; the commands running are killed (SIGKILL to their
	 * process groups), as programs under the filter fail once the daemon
	 * is gone anyway. */
	void close();

	static constexpr std::chrono::seconds kRequestTime{ 10 };

private:
	struct Launch;
	using LaunchPtr = std::shared_ptr<Launch>;
	void admit(boost::asio::local::stream_protocol::socket s);
	/* len bytes into buf, then next(l, true); next(l, false) at the end
	 * of the connection, an error, or a descriptor sent along */
	using Next = std::function<void(const LaunchPtr &, bool)>;
	void receive(const LaunchPtr &l, char *buf, size_t len, Next next);
	void readHead(const LaunchPtr &l);
	void readStrings(const LaunchPtr &l);
	void start(const LaunchPtr &l);
	void watchChild(const LaunchPtr &l);
	void readSignals(const LaunchPtr &l);
	/* our child pid reaped, without waiting on the io thread (it was
	 * killed: it ends soon) */
	void reap(pid_t pid);
	/* l is done: its answer (if any), and its connection closed */
	void finish(const LaunchPtr &l, uint32_t kind, int32_t value);

	boost::asio::io_context &io_;
	std::string cli_;
	std::string instance_;
	std::function<pid_t(pid_t)> holderOf_;
	OwnerOnlyListener door_;
	std::set<LaunchPtr> launches_;
};

} /* namespace ibemu::tools */
