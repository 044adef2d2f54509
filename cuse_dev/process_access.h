// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// emu::UserAccess for real processes: their memory through
// process_vm_readv/writev (the daemon runs as root), their credentials and
// mappings from /proc, and the descriptor under which a process holds one
// of our uverbs files (the async event "file", see docs/verbs.md).
#pragma once

#include "emu/user_access.h"

#include <functional>
#include <map>
#include <sys/types.h>
#include <utility>

namespace ibemu::emu {
class VerbsDevice;
}

namespace ibemu::cuse_dev {

class ProcessAccess final : public emu::UserAccess {
public:
	/* devOf: the character device number of a device's uverbs node */
	explicit ProcessAccess(std::function<dev_t(const emu::VerbsDevice &)> devOf) : devOf_(std::move(devOf)) {}

	int read(pid_t tid, uint64_t addr, void *buf, size_t len) override;
	int write(pid_t tid, uint64_t addr, const void *buf, size_t len) override;
	int pinnable(pid_t tid, uint64_t addr, uint64_t len, bool write) override;
	int credentials(pid_t tid, emu::ProcessCreds &out) override;
	int descriptorOf(pid_t tid, const emu::UverbsFile &file) override;

	/* The file is closed: its descriptor may be reused. */
	void forget(const emu::UverbsFile &file);

private:
	std::function<dev_t(const emu::VerbsDevice &)> devOf_;
	std::map<std::pair<pid_t, int>, const emu::UverbsFile *> claimed_; /* (tgid, fd) */
};

} /* namespace ibemu::cuse_dev */
