// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// A hostile umad client, speaking the ib_umad ABI with raw system calls (no
// libibumad), one attack per mode (issue 9). It prints one line per result,
// with errno names, so that a suite can compare its output exactly:
//   hugeread DEV              reads of absurd counts into a 4 KiB buffer
//   unaligned DEVA DEVB SIZE  an RMPP message of SIZE bytes from unaligned
//                             buffers; reads and writes that fault part way
//   unread DEVA DEVB N SIZE [FILES]  N RMPP messages FILES receivers leave queued
//   regfault DEV              REGISTER_AGENT whose id cannot be copied back
//   flood DEV N               N requests whose answers are never read
//   outstanding DEV           requests that wait for answers, until ENOMEM
//   agents DEV NFILES         NFILES files x 32 agents, held until stdin says
//   rmppflood DEVA DEVB N     N first RMPP segments that never go on
//   badptr DEV                unmapped pointers and absurd sizes
//   tiny DEV                  writes and reads of every size up to hdr + 24
//   pollwait DEV              poll() and ppoll() with and without timeouts
//   block DEV read|poll|issm|ioctl|write   a client to be killed in a call
// Exits 0 when it ran (whatever the results), 2 on usage errors.
//
// The modes are in umad_hostile_memory.cpp, umad_hostile_rmpp.cpp,
// umad_hostile_limits.cpp and umad_hostile_wait.cpp.
#include "tests/tools/umad_hostile.h"

#include <cstdio>
#include <cstdlib>
#include <string>

using namespace ibemu::hostile;

namespace {

long number(const char *s)
{
	char *end;
	long v = strtol(s, &end, 0);
	if (*end || v < 0) {
		fprintf(stderr, "umad_hostile: not a count: %s\n", s);
		exit(2);
	}
	return v;
}

} /* namespace */

int main(int argc, char **argv)
{
	setvbuf(stdout, nullptr, _IOLBF, 0);
	std::string mode = argc > 1 ? argv[1] : "";
	if (mode == "hugeread" && argc == 3)
		return hugeread(argv[2]);
	if (mode == "unaligned" && argc == 5)
		return unaligned(argv[2], argv[3], size_t(number(argv[4])));
	if (mode == "unread" && (argc == 6 || argc == 7))
		return unread(argv[2], argv[3], number(argv[4]), size_t(number(argv[5])),
			      argc == 7 ? int(number(argv[6])) : 1);
	if (mode == "regfault" && argc == 3)
		return regfault(argv[2]);
	if (mode == "flood" && argc == 4)
		return flood(argv[2], number(argv[3]));
	if (mode == "outstanding" && argc == 3)
		return outstanding(argv[2]);
	if (mode == "agents" && argc == 4)
		return agents(argv[2], number(argv[3]));
	if (mode == "rmppflood" && argc == 5)
		return rmppflood(argv[2], argv[3], number(argv[4]));
	if (mode == "badptr" && argc == 3)
		return badptr(argv[2]);
	if (mode == "tiny" && argc == 3)
		return tiny(argv[2]);
	if (mode == "pollwait" && argc == 3)
		return pollwait(argv[2]);
	if (mode == "block" && argc == 4)
		return block(argv[2], argv[3]);
	fprintf(stderr,
		"usage: umad_hostile hugeread|regfault|outstanding|badptr|tiny DEV\n"
		"       umad_hostile unaligned DEVA DEVB SIZE | unread DEVA DEVB N SIZE [FILES] | rmppflood DEVA DEVB "
		"N\n"
		"       umad_hostile flood DEV N | agents DEV NFILES | block DEV read|poll|issm|ioctl|write\n");
	return 2;
}

