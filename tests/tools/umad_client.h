// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// A raw ib_umad client for the hostile-client tools (umad_hostile*.cpp): the
// ABI with plain system calls (no libibumad), MADs built by hand, and
// memory laid out to fault where a test wants it.
#pragma once

#include "emu/umad_abi.h"

#include <cstddef>
#include <cstdint>
#include <fcntl.h>
#include <string>
#include <sys/types.h>
#include <vector>

namespace ibemu::hostile {

constexpr size_t kMad = 256;
constexpr size_t kPage = 4096;
constexpr uint8_t kVendorClass = 0x30; /* vendor range 2: RMPP, with an OUI */
constexpr uint32_t kOui = 0x001405;
constexpr uint16_t kNobodyLid = 0x1234; /* no port of the default fabric has it */

const char *ename(int e);
/* "N" for a byte count, the errno name for a failure */
std::string result(ssize_t n);
void put16(uint8_t *p, uint16_t v);
void put32(uint8_t *p, uint32_t v);
void put64(uint8_t *p, uint64_t v);
uint32_t get32(const uint8_t *p);
int openDev(const char *dev, int flags = O_RDWR | O_NONBLOCK);
/* REGISTER_AGENT (56-byte header until ENABLE_PKEY): the id, or -errno */
int regAgent(int fd, uint8_t qpn, uint8_t cls, uint8_t method = 0, uint8_t rmpp = 0);
/* REGISTER_AGENT2 (64-byte header from then on) */
int regAgent2(int fd, uint8_t qpn, uint8_t cls, uint8_t method, uint8_t rmpp, uint32_t flags);
int needAgent(int id, const char *what);
/* a 64-byte header for agent `id`, to `lid` on QP `qpn` */
ib_user_mad_hdr header(uint32_t id, uint16_t lid, uint32_t qpn, uint32_t timeoutMs = 0);
/* A directed-route NodeInfo Get with hop count 0: the local HCA answers it. */
std::vector<uint8_t> nodeInfoGet(uint32_t id, uint32_t tid, size_t hs = sizeof(ib_user_mad_hdr));
/* The vendor range-2 MAD header (class 0x30, Set) with its RMPP header. */
void vendorHeader(uint8_t *mad, uint32_t tid, uint8_t rmppType, uint8_t rmppFlags);
/* one MAD arrives: poll with a guard against a hang; false when none came */
bool waitIn(int fd, int ms = 60000);
/* Memory low in the address space: the kernel refuses a read() or write()
 * whose buffer plus count passes the end of user space before anything
 * else, so a count of 2^40 reaches the daemon only from a low buffer.
 * Below 2 GiB, where ASan keeps user memory too. */
uint8_t *lowMap(size_t len);
/* a PROT_NONE page after `len` mapped bytes (rounded up to a page) */
uint8_t *guarded(size_t len);
/* len bytes with an unmapped page at offset holeAt (a page multiple) */
uint8_t *holed(size_t len, size_t holeAt);
/* an address with nothing mapped at it */
uint8_t *unmapped();
/* The LID of the port behind /dev/infiniband/umadN, from sysfs. */
uint16_t lidOf(const char *dev);

} /* namespace ibemu::hostile */
