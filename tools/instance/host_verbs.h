// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// What libibverbs programs started without `ibemu exec` get from a
// --global instance: ibemu's provider, named in the host's
// /etc/libibverbs.d for the instance's life, and whether the kernel's RDMA
// netlink answers them before they read sysfs (docs/verbs.md).
#pragma once

#include <string>
#include <utility>

namespace ibemu::tools {

/* The directory of the running program (ibemu or ibemud). */
std::string programDir();

/* ibemu's libibverbs provider as RDMAV_DRIVERS and a driver line name it
 * (the path without "-rdmav34.so"): in the build tree next to the program,
 * else where meson installs it, relative to the program (a DESTDIR) or
 * under the prefix; "" when there is none. */
std::string providerPath();

/* <dir>/ibemu.driver, a config file of libibverbs naming ibemu's provider,
 * while a --global instance runs. libibverbs reads every file of the
 * directory, so the instance's devices, which then carry no PCI identity
 * for ipathverbs to match (cuse_dev/sysfs.h), are claimed by ibemu's
 * provider whatever the order it reads them in. */
class GlobalVerbsDriver {
public:
	explicit GlobalVerbsDriver(std::string dir = "/etc/libibverbs.d") : dir_(std::move(dir)) {}
	~GlobalVerbsDriver() { remove(); }
	GlobalVerbsDriver(const GlobalVerbsDriver &) = delete;
	GlobalVerbsDriver &operator=(const GlobalVerbsDriver &) = delete;

	/* Writes "driver <provider>" unless a file of that name is there
	 * already, which then stays (one left by a killed ibemud, which says
	 * so on its first line, is replaced): true when the file names ibemu's
	 * provider (one written by hand must name an existing libibemu), else
	 * false with why set. */
	bool install(const std::string &provider, const std::string &instance, std::string &why);
	/* Removes the file if install() wrote it and it still says what it
	 * wrote. */
	void remove();
	std::string path() const { return dir_ + "/ibemu.driver"; }

private:
	std::string dir_;
	std::string wrote_; /* what install() wrote, if it did */
};

/* Removes <dir>/ibemu.driver if ibemud wrote it for this instance, whose
 * daemon is gone (killed: its listing would otherwise stay until the next
 * --global instance, every libibverbs program on the host loading it).
 * true if it removed it. */
bool forgetGlobalListing(const std::string &instance, const std::string &dir = "/etc/libibverbs.d");

/* Whether ib_core is loaded here (/sys/module/ib_core), so that the
 * RDMA netlink socket libibverbs opens before it reads sysfs answers, and
 * programs see the kernel's RDMA devices only. Where ib_core is not loaded
 * but can be, the first libibverbs program's socket loads it. */
bool rdmaNetlinkAnswers();

} /* namespace ibemu::tools */
