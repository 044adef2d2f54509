// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// An MPI job across cluster hosts (docs/cluster.md, "Jobs across hosts";
// tests/e2e/mpi.sh): every rank says which host it runs on
// (MPI_Get_processor_name), and each rank of the first half of the job
// exchanges BYTES bytes with its partner in the second half
// (MPI_Sendrecv, a pattern of its own checked on arrival), which must run
// on another host.
//
// usage: mpi_hosts BYTES
// Rank 0 prints, on success:
//   hosts: NAME,NAME...          (the distinct processor names, sorted)
//   moved N bytes across hosts   (the bytes every rank sent to its partner)
//   ok
// and the job exits 0; a rank whose partner is on its own host, or whose
// data arrives wrong, makes it fail.
/* the C API only: Open MPI's deprecated C++ bindings do not build warning-free */
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <set>
#include <string>
#include <vector>

namespace {

unsigned char pattern(int rank, size_t i)
{
	return static_cast<unsigned char>((i * 131 + size_t(rank) * 7 + 1) & 0xff);
}

} /* namespace */

int main(int argc, char **argv)
{
	MPI_Init(&argc, &argv);
	int rank = 0, size = 0;
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	size_t bytes = argc > 1 ? strtoull(argv[1], nullptr, 0) : 0;
	if (bytes == 0 || size < 2 || size % 2) {
		if (rank == 0)
			fprintf(stderr, "usage: mpirun -np EVEN mpi_hosts BYTES\n");
		MPI_Abort(MPI_COMM_WORLD, 2);
	}
	char name[MPI_MAX_PROCESSOR_NAME] = {};
	int len = 0;
	MPI_Get_processor_name(name, &len);
	std::vector<char> names(size_t(size) * MPI_MAX_PROCESSOR_NAME);
	MPI_Allgather(name, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, names.data(), MPI_MAX_PROCESSOR_NAME, MPI_CHAR,
		      MPI_COMM_WORLD);
	int partner = (rank + size / 2) % size;
	int bad = 0;
	if (strcmp(name, &names[size_t(partner) * MPI_MAX_PROCESSOR_NAME]) == 0) {
		fprintf(stderr, "rank %d: partner %d is on my host %s too\n", rank, partner, name);
		bad = 1;
	}
	std::vector<unsigned char> out(bytes), in(bytes);
	for (size_t i = 0; i < bytes; i++)
		out[i] = pattern(rank, i);
	/* in pieces: MPI counts are ints */
	constexpr size_t kPiece = 1 << 20;
	for (size_t at = 0; at < bytes; at += kPiece) {
		int n = int(std::min(kPiece, bytes - at));
		MPI_Sendrecv(out.data() + at, n, MPI_BYTE, partner, 0, in.data() + at, n, MPI_BYTE, partner, 0,
			     MPI_COMM_WORLD, MPI_STATUS_IGNORE);
	}
	for (size_t i = 0; i < bytes; i++)
		if (in[i] != pattern(partner, i)) {
			fprintf(stderr, "rank %d: byte %zu from rank %d is %u, not %u\n", rank, i, partner, in[i],
				pattern(partner, i));
			bad = 1;
			break;
		}
	int anyBad = 0;
	MPI_Reduce(&bad, &anyBad, 1, MPI_INT, MPI_MAX, 0, MPI_COMM_WORLD);
	if (rank == 0) {
		std::set<std::string> hosts;
		for (int r = 0; r < size; r++)
			hosts.insert(&names[size_t(r) * MPI_MAX_PROCESSOR_NAME]);
		std::string list;
		for (const auto &h : hosts)
			list += (list.empty() ? "" : ",") + h;
		printf("hosts: %s\n", list.c_str());
		printf("moved %zu bytes across hosts\n", bytes * size_t(size));
		printf("%s\n", anyBad ? "FAILED" : "ok");
	}
	MPI_Finalize();
	return anyBad ? 1 : 0;
}
