// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
#include "emu/cq_ring.h"

#include "emu/ibemu_user_verbs.h"
#include "emu/user_access.h"

#include <atomic>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>

namespace ibemu::emu {

static_assert(sizeof(ib_uverbs_wc) == IBEMU_CQ_RING_WC_SIZE);

int CqRing::adopt(int fd, uint32_t cqe, std::unique_ptr<CqRing> &out)
{
	/* a tmpfs memfd (so fstat() is safe) that cannot shrink under our
	 * mapping: anything else could SIGBUS the daemon */
	struct stat st;
	if (!descriptorIs(fd, FdKind::Memfd) || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))
		return -EINVAL;
	int seals = fcntl(fd, F_GET_SEALS);
	if (seals < 0 || !(seals & F_SEAL_SHRINK))
		return -EINVAL;
	uint64_t len = ibemu_cq_ring_bytes(cqe);
	if (uint64_t(st.st_size) < len)
		return -EINVAL;
	void *map = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (map == MAP_FAILED)
		return -EINVAL;
	out.reset(new CqRing(map, len, ibemu_cq_ring_entries(cqe)));
	/* the program created it zeroed; start from the device's own zero */
	std::atomic_ref<uint32_t>(*out->word(offsetof(ibemu_cq_ring, producer))).store(0, std::memory_order_release);
	return 0;
}

CqRing::~CqRing()
{
	munmap(map_, len_);
}

uint32_t *CqRing::word(size_t offset) const
{
	return reinterpret_cast<uint32_t *>(static_cast<uint8_t *>(map_) + offset);
}

uint32_t CqRing::used() const
{
	uint32_t consumer =
		std::atomic_ref<uint32_t>(*word(offsetof(ibemu_cq_ring, consumer))).load(std::memory_order_acquire);
	uint32_t used = producer_ - consumer;
	return used > entries_ ? entries_ : used;
}

void CqRing::push(const ib_uverbs_wc &wc)
{
	size_t slot = sizeof(ibemu_cq_ring) + size_t(producer_ & (entries_ - 1)) * sizeof wc;
	memcpy(static_cast<uint8_t *>(map_) + slot, &wc, sizeof wc);
	producer_++;
	std::atomic_ref<uint32_t>(*word(offsetof(ibemu_cq_ring, producer))).store(producer_, std::memory_order_release);
}

bool CqRing::pop(ib_uverbs_wc &out)
{
	auto consumer = std::atomic_ref<uint32_t>(*word(offsetof(ibemu_cq_ring, consumer)));
	uint32_t c = consumer.load(std::memory_order_acquire);
	if (uint32_t(producer_ - c) == 0 || uint32_t(producer_ - c) > entries_)
		return false;
	size_t slot = sizeof(ibemu_cq_ring) + size_t(c & (entries_ - 1)) * sizeof out;
	memcpy(&out, static_cast<uint8_t *>(map_) + slot, sizeof out);
	consumer.store(c + 1, std::memory_order_release);
	return true;
}

} /* namespace ibemu::emu */
