// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// What the uverbs command handlers (uverbs_cmd.cpp, uverbs_cmd_cq.cpp,
// uverbs_cmd_qp.cpp, uverbs_cmd_srq.cpp) share besides UverbsFile itself:
// the device's number of completion vectors and the port number check, as
// the kernel's uverbs.h and rdma_core.h hold what its uverbs_cmd.c and
// uverbs_std_types_*.c share.
#pragma once

#include "emu/verbs_device.h"

#include <cstdint>

namespace ibemu::emu {

inline constexpr uint32_t kNumCompVectors = 1;

inline bool portValid(const VerbsDevice &dev, unsigned num)
{
	return num >= 1 && num <= dev.numPorts();
}

} /* namespace ibemu::emu */
