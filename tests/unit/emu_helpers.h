// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// Test helpers for emu/: a default fabric brought up by the MiniSm, two local
// HCAs on it (host1 behind sw1, host2 behind sw2), and umad buffers built
// byte by byte as libibumad would.
#pragma once

#include "tests/unit/fabric_helpers.h"

#include "emu/host.h"
#include "tests/unit/manual_clock.h"
#include "emu/umad_abi.h"
#include "emu/umad_file.h"

#include <boost/asio/io_context.hpp>

#include <cstring>
#include <memory>

namespace ibemu::test {

struct EmuFixture {
	boost::asio::io_context io;
	Subnet subnet;
	std::unique_ptr<MiniSm> sm;
	std::unique_ptr<emu::Host> host;
	emu::Hca *hca1 = nullptr; /* host1, port 1 on sw1 */
	emu::Hca *hca2 = nullptr; /* host2, port 1 on sw2 */
	Port *p1 = nullptr;
	Port *p2 = nullptr;

	/* the subnet brought up by the MiniSm */
	EmuFixture();
	/* the subnet built and brought up by `bringUp` instead (the fuzz
	 * targets' faster equivalent of the MiniSm run) */
	explicit EmuFixture(void (*bringUp)(Subnet &));
	~EmuFixture();
	EmuFixture(const EmuFixture &) = delete;
	EmuFixture &operator=(const EmuFixture &) = delete;

	emu::UmadPort &umad1() { return *hca1->umadPorts[0]; }
	emu::UmadPort &umad2() { return *hca2->umadPorts[0]; }
	uint16_t lid1() const { return p1->lid; }
	uint16_t lid2() const { return p2->lid; }

	/* run what is ready */
	void poll()
	{
		io.restart();
		io.poll();
	}
	/* run until nothing is left to run */
	void drain()
	{
		for (int i = 0; i < 1000; i++) {
			io.restart();
			if (io.poll() == 0)
				return;
		}
	}
	/* let `ms` of MAD-layer time pass */
	void advance(unsigned ms)
	{
		ManualClock::advance(std::chrono::milliseconds(ms));
		poll();
	}
};

/* REGISTER_AGENT (old ioctl): returns the ioctl result, the id in *id. */
int regAgent(emu::UmadFile &f, uint8_t qpn, uint8_t mgmtClass, uint8_t version, std::initializer_list<unsigned> methods,
	     uint8_t rmppVersion = 0, uint32_t *id = nullptr, uint32_t oui = 0);
/* REGISTER_AGENT2 */
int regAgent2(emu::UmadFile &f, uint32_t qpn, uint8_t mgmtClass, uint8_t version,
	      std::initializer_list<unsigned> methods, uint32_t flags = 0, uint8_t rmppVersion = 0,
	      uint32_t *id = nullptr, uint32_t oui = 0, uint32_t *flagsOut = nullptr);

/* A umad write buffer: header of the file's size, then the MAD bytes. */
struct UmadMsg {
	ib_user_mad_hdr hdr{};
	std::vector<uint8_t> mad = std::vector<uint8_t>(kMadSize, 0);

	UmadMsg(uint32_t agentId, uint8_t mgmtClass, uint8_t method, uint16_t attr, uint64_t tid);
	UmadMsg &to(uint16_t lid, uint32_t qpn)
	{
		hdr.lid = lid;
		hdr.qpn = qpn;
		return *this;
	}
	UmadMsg &timeout(uint32_t ms, uint32_t retries)
	{
		hdr.timeout_ms = ms;
		hdr.retries = retries;
		return *this;
	}
	/* the bytes to write for a file with header size hs; madLen bytes of MAD */
	std::vector<uint8_t> bytes(size_t hs, size_t madLen = kMadSize) const;
	ssize_t writeTo(emu::UmadFile &f, size_t madLen = kMadSize) const
	{
		auto b = bytes(f.hdrSize(), madLen);
		return f.write(b.data(), b.size());
	}
};

/* A DR SMP in a UmadMsg (class 0x81, QP0, permissive DR LIDs). */
UmadMsg drSmpMsg(uint32_t agentId, uint16_t attr, const std::vector<uint8_t> &path, uint64_t tid,
		 uint8_t method = IB_MGMT_METHOD_GET);

/* One read with a buffer of `size` bytes; returns the result, data in out. */
ssize_t readMad(emu::UmadFile &f, std::vector<uint8_t> &out, size_t size = 64 + 256);

inline const ib_user_mad_hdr &hdrOf(const std::vector<uint8_t> &buf)
{
	return *reinterpret_cast<const ib_user_mad_hdr *>(buf.data());
}

} /* namespace ibemu::test */
