// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// The host-wide switch FUSE over io_uring needs
// (/sys/module/fuse/parameters/enable_uring), shared by every ibemud on the
// host: the kernel offers the ring to a mount only while it is Y.
//
// An instance started with --fuse-uring holds a UringSwitch for its life.
// The first one turns the switch on (and notes in the lock file that ibemu
// did); the last one to go turns it back off, and only if ibemu turned it
// on: instances never pull it from under each other (an instance mounting
// while another exits would lose the ring), and a switch the administrator
// set stays as it was. Who holds it is counted with a shared lock on a lock
// file (/run/ibemu-fuse-uring.lock), so a daemon that dies still lets go.
#pragma once

#include <string>

namespace ibemu::tools {

class UringSwitch {
public:
	/* "Y", "N", or "" when the kernel has no such parameter */
	static std::string state();

	UringSwitch() = default;
	~UringSwitch();
	UringSwitch(const UringSwitch &) = delete;
	UringSwitch &operator=(const UringSwitch &) = delete;

	/* Turns the switch on if it is off, and holds it. False, with why,
	 * when it cannot be turned on. turnedOn: this call turned it on. */
	bool hold(bool &turnedOn, std::string &why);
	/* Lets go; the last holder puts back what ibemu changed. Returns
	 * true when it turned the switch off. */
	bool release();

private:
	int lockFd_ = -1;
};

} /* namespace ibemu::tools */
