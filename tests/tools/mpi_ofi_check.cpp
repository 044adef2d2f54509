// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// Two MPI ranks exchange messages and check every byte: rank 0 sends
// ROUNDS messages of each size to rank 1, which checks the pattern and
// sends back its complement, which rank 0 checks. Then a reduction over
// both ranks. Prints one summary line on rank 0 and exits 0 only when
// every byte arrived as sent (tests/e2e/mpi_ofi.sh runs it over Open MPI's
// ofi MTL on ibemu's ports).
// usage: mpirun -np 2 mpi_ofi_check
/* the C API only: Open MPI's C++ bindings do not build with -Werror */
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>

#include <cstdint>
#include <cstdio>
#include <vector>

namespace {

constexpr int kRounds = 20;
/* eager and rendezvous sizes of ofi_rxm (its rendezvous starts at 16 KiB) */
constexpr int kSizes[] = { 1, 64, 4096, 65536, 1 << 20 };

uint8_t pattern(int size, int round, int i)
{
	return uint8_t(i * 7 + round * 13 + size);
}

} /* namespace */

int main(int argc, char **argv)
{
	MPI_Init(&argc, &argv);
	int rank = 0, ranks = 0;
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &ranks);
	if (ranks != 2) {
		if (rank == 0)
			fprintf(stderr, "mpi_ofi_check: needs 2 ranks, has %d\n", ranks);
		MPI_Finalize();
		return 2;
	}
	int bad = 0;
	long bytes = 0;
	std::vector<uint8_t> buf;
	for (int size : kSizes) {
		buf.resize(size_t(size));
		for (int round = 0; round < kRounds; round++) {
			if (rank == 0) {
				for (int i = 0; i < size; i++)
					buf[size_t(i)] = pattern(size, round, i);
				MPI_Send(buf.data(), size, MPI_BYTE, 1, round, MPI_COMM_WORLD);
				MPI_Recv(buf.data(), size, MPI_BYTE, 1, round, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
				for (int i = 0; i < size; i++)
					bad += buf[size_t(i)] != uint8_t(~pattern(size, round, i));
			} else {
				MPI_Recv(buf.data(), size, MPI_BYTE, 0, round, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
				for (int i = 0; i < size; i++) {
					bad += buf[size_t(i)] != pattern(size, round, i);
					buf[size_t(i)] = uint8_t(~buf[size_t(i)]);
				}
				MPI_Send(buf.data(), size, MPI_BYTE, 0, round, MPI_COMM_WORLD);
			}
			bytes += size;
		}
	}
	int sum = 0, one = rank + 1;
	MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
	int badAll = 0;
	MPI_Reduce(&bad, &badAll, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
	if (rank == 0)
		printf("mpi_ofi_check: 2 ranks, %ld bytes each way, %d bad bytes, allreduce %d\n", bytes, badAll, sum);
	MPI_Finalize();
	return badAll == 0 && sum == 3 ? 0 : 1;
}
