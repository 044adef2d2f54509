// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// The context's ring area (emu/ibemu_user_verbs.h): one sealed memfd the
// device maps once, at GET_CONTEXT, from which CQ and QP rings are carved
// in whole pages, first fit. A ring that does not fit gets a memfd of its
// own, as every ring did before (ring(), release()).
#include "tools/provider/provider.h"

#include "emu/ibemu_user_verbs.h"

#include <cstring>
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

namespace ibemu::provider {

namespace {

constexpr size_t kPage = 4096;
/* 1024 pages: tmpfs gives a page when it is first touched, so an area
 * costs what its rings use; 4 MiB is address space, for 1024 small rings */
constexpr size_t kAreaBytes = size_t(4) << 20;
static_assert(kAreaBytes <= IBEMU_AREA_MAX_BYTES && kPage % IBEMU_RING_ALIGN == 0);

} /* namespace */

size_t RingArea::bytes()
{
	return kAreaBytes;
}

RingArea::~RingArea()
{
	drop();
}

int RingArea::create()
{
	int fd = memfd_create("ibemu-rings", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (fd < 0)
		return -1;
	void *map = MAP_FAILED;
	if (ftruncate(fd, off_t(kAreaBytes)) == 0 &&
	    fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) == 0)
		map = mmap(nullptr, kAreaBytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (map == MAP_FAILED) {
		close(fd);
		return -1;
	}
	base_ = static_cast<uint8_t *>(map);
	used_.assign(kAreaBytes / kPage, false);
	return fd;
}

void RingArea::drop()
{
	if (base_)
		munmap(base_, kAreaBytes);
	base_ = nullptr;
	used_.clear();
}

void *RingArea::take(size_t len, uint32_t &offset)
{
	size_t pages = (len + kPage - 1) / kPage;
	std::lock_guard<std::mutex> g(lock_);
	if (!base_ || pages == 0 || pages > used_.size())
		return nullptr;
	for (size_t first = 0; first + pages <= used_.size();) {
		size_t n = 0;
		while (n < pages && !used_[first + n])
			n++;
		if (n < pages) {
			first += n + 1;
			continue;
		}
		for (size_t i = 0; i < pages; i++)
			used_[first + i] = true;
		uint8_t *ring = base_ + first * kPage;
		memset(ring, 0, pages * kPage); /* a ring starts zeroed; these pages may have held one */
		offset = static_cast<uint32_t>(first * kPage);
		return ring;
	}
	return nullptr;
}

bool RingArea::give(void *ring, size_t len)
{
	auto *p = static_cast<uint8_t *>(ring);
	std::lock_guard<std::mutex> g(lock_);
	if (!base_ || p < base_ || p >= base_ + kAreaBytes)
		return false;
	size_t first = size_t(p - base_) / kPage, pages = (len + kPage - 1) / kPage;
	for (size_t i = 0; i < pages && first + i < used_.size(); i++)
		used_[first + i] = false;
	return true;
}

void *RingArea::ring(size_t len, const char *name, int &fd, uint32_t &offset)
{
	if (void *p = take(len, offset)) {
		fd = IBEMU_RING_IN_AREA;
		return p;
	}
	fd = memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (fd < 0)
		return nullptr;
	void *map = MAP_FAILED;
	if (ftruncate(fd, off_t(len)) == 0 && fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) == 0)
		map = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (map == MAP_FAILED) {
		close(fd);
		fd = -1;
		return nullptr;
	}
	offset = 0;
	return map;
}

void RingArea::release(void *ring, size_t len)
{
	if (ring && !give(ring, len))
		munmap(ring, len);
}

} /* namespace ibemu::provider */
