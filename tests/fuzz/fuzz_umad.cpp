// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// Fuzz target: emu::UmadFile, the umad file operations a transport calls
// (write, ioctl, read/consume, poll, close), with the MAD layer, RMPP and
// the fabric behind them. Each input gets a fresh fuzz::Fixture (the
// EmuFixture setup: default fabric brought up, host1 and host2 local HCAs)
// and two open files: file 0 on host1's umad port, file 1 on host2's.
//
// Input: up to 64 operations, each [op][len le16][payload: len bytes]
// (a payload cut short by the end of the input is what is left of it).
//   op bit 7: which file; op & 7:
//   0 write(payload)
//   1 ioctl: payload[0] 0 REGISTER_AGENT, 1 REGISTER_AGENT2,
//     2 UNREGISTER_AGENT, 3 ENABLE_PKEY, anything else: the command is
//     payload[1..4] (le32); the argument is the rest of the payload in a
//     zeroed buffer of the size the command's _IOC encoding gives (as
//     cuse_dev/umad_files.cpp passes it)
//   2 read(count = payload[0..3] le32), then consume() if it succeeded,
//     unless payload[4] bit 0 (the copy to the reader failed)
//   3 run the io_context until idle; poll() and nextLength() of the file
//   4 let payload[0..3] le32 & 0x3ffff ms of MAD time pass, then run
//   5 close the file and open it again (ENXIO once its port is dead)
//   6 kill the file's umad port (device removal, daemon shutdown)
//   7 issm: take the port's IsSM claim, or give it back if held
#include "tests/fuzz/fuzz_common.h"

#include "emu/umad_port.h"

#include <cerrno>

using namespace ibemu;

namespace {

constexpr unsigned kMaxOps = 64;

void doIoctl(emu::UmadFile &f, const std::vector<uint8_t> &payload, unsigned n, int file)
{
	uint8_t which = payload.empty() ? 0 : payload[0];
	unsigned cmd;
	size_t argAt = 1;
	switch (which) {
	case 0:
		cmd = IB_USER_MAD_REGISTER_AGENT;
		break;
	case 1:
		cmd = IB_USER_MAD_REGISTER_AGENT2;
		break;
	case 2:
		cmd = IB_USER_MAD_UNREGISTER_AGENT;
		break;
	case 3:
		cmd = IB_USER_MAD_ENABLE_PKEY;
		break;
	default:
		cmd = fuzz::le32(payload, 1);
		argAt = 5;
		break;
	}
	size_t inSize = payload.size() > argAt ? payload.size() - argAt : 0;
	std::vector<uint8_t> arg(std::max<size_t>({ size_t(iocSize(cmd)), inSize, size_t(1) }), 0);
	if (inSize)
		memcpy(arg.data(), payload.data() + argAt, inSize);
	int r = f.ioctl(cmd, arg.data(), iocSize(cmd));
	FUZZ_TRACE("%u: file %d ioctl(0x%08x) = %d, id %u\n", n, file, cmd, r,
		   arg.size() >= 4 ? fuzz::le32(arg, 0) : 0);
	(void)n;
	(void)file;
}

} /* namespace */

extern "C" int LLVMFuzzerInitialize(int *, char ***)
{
	fuzz::initOnce();
	return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fuzz::Input in(data, size);
	fuzz::Fixture fx;
	emu::UmadPort *ports[2] = { &fx.umad1(), &fx.umad2() };
	std::unique_ptr<emu::UmadFile> files[2];
	for (int i = 0; i < 2; i++)
		files[i] = std::make_unique<emu::UmadFile>(*ports[i]);
	bool issm[2] = { false, false };
	std::vector<uint8_t> out;

	for (unsigned n = 0; n < kMaxOps && !in.empty(); n++) {
		uint8_t op = in.u8();
		size_t len = in.u16();
		std::vector<uint8_t> payload = in.bytes(len);
		int i = op >> 7;
		emu::UmadFile *f = files[i].get();
		switch (op & 7) {
		case 0:
			if (f) {
				ssize_t r = f->write(payload.data(), payload.size());
				FUZZ_TRACE("%u: file %d write(%zu) = %zd\n", n, i, payload.size(), r);
			}
			break;
		case 1:
			if (f)
				doIoctl(*f, payload, n, i);
			break;
		case 2:
			if (f) {
				ssize_t r = f->read(fuzz::le32(payload, 0), out);
				bool copyFailed = payload.size() > 4 && (payload[4] & 1);
				FUZZ_TRACE("%u: file %d read(%u) = %zd: status %u, method 0x%02x, %zu bytes\n", n, i,
					   fuzz::le32(payload, 0), r, out.size() >= 8 ? out[4] | out[5] << 8 : 0,
					   out.size() > 64 ? out[f->hdrSize() + 3] : 0, out.size());
				if (r >= 0 && !copyFailed)
					f->consume();
			}
			break;
		case 3:
			fx.drain();
			if (f)
				(void)(f->poll() + f->nextLength() + f->queued() + f->outstanding());
			break;
		case 4:
			fx.advance(fuzz::le32(payload, 0) & 0x3ffff);
			fx.drain();
			break;
		case 5:
			files[i].reset();
			if (ports[i]->openCheck() == 0)
				files[i] = std::make_unique<emu::UmadFile>(*ports[i]);
			FUZZ_TRACE("%u: file %d reopened: %s\n", n, i, files[i] ? "yes" : "ENXIO");
			break;
		case 6:
			ports[i]->kill();
			FUZZ_TRACE("%u: port of file %d killed\n", n, i);
			break;
		case 7:
			if (issm[i]) {
				ports[i]->issmRelease();
				issm[i] = false;
			} else {
				issm[i] = ports[i]->issmOpen() == 0;
			}
			FUZZ_TRACE("%u: issm of file %d: %s\n", n, i, issm[i] ? "held" : "released");
			fx.drain();
			break;
		}
	}
	fx.drain();
	for (auto &f : files) /* the transport closes its files before the HCAs go */
		f.reset();
	for (int i = 0; i < 2; i++)
		if (issm[i])
			ports[i]->issmRelease();
	return 0;
}
