// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
#include "emu/shared_mapping.h"

#include "emu/ibemu_user_verbs.h"
#include "emu/user_access.h"

#include <atomic>
#include <cerrno>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>

namespace ibemu::emu {

int SharedMapping::map(int fd, uint64_t len)
{
	/* the seal first, then the size: read before the seal, a size could
	 * still shrink under the mapping, and a touch past the end is SIGBUS */
	if (base_ || len == 0 || !descriptorIs(fd, FdKind::Memfd))
		return -EINVAL;
	int seals = fcntl(fd, F_GET_SEALS);
	struct stat st;
	if (seals < 0 || !(seals & F_SEAL_SHRINK) || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) ||
	    uint64_t(st.st_size) < len)
		return -EINVAL;
	void *p = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED)
		return -EINVAL;
	base_ = static_cast<uint8_t *>(p);
	len_ = len;
	return 0;
}

int SharedMapping::mapAll(int fd, uint64_t maxLen)
{
	/* map() checks the seal, then this size again */
	struct stat st;
	if (fstat(fd, &st) != 0 || st.st_size <= 0 || uint64_t(st.st_size) > maxLen)
		return -EINVAL;
	return map(fd, uint64_t(st.st_size));
}

int SharedMapping::window(std::shared_ptr<const SharedMapping> area, uint64_t offset, uint64_t len)
{
	if (base_ || !area || !area->base_ || len == 0 || offset % IBEMU_RING_ALIGN || offset > area->len_ ||
	    len > area->len_ - offset)
		return -EINVAL;
	base_ = area->base_ + offset;
	len_ = len;
	area_ = std::move(area);
	return 0;
}

int SharedMapping::attach(const RingMemory &m, uint64_t len)
{
	return m.area ? window(m.area, m.offset, len) : map(m.fd, len);
}

SharedMapping::~SharedMapping()
{
	if (base_ && !area_)
		munmap(base_, len_);
}

uint32_t SharedMapping::load(size_t offset) const
{
	return std::atomic_ref<uint32_t>(*reinterpret_cast<uint32_t *>(base_ + offset)).load(std::memory_order_acquire);
}

void SharedMapping::store(size_t offset, uint32_t v) const
{
	std::atomic_ref<uint32_t>(*reinterpret_cast<uint32_t *>(base_ + offset)).store(v, std::memory_order_release);
}

} /* namespace ibemu::emu */
