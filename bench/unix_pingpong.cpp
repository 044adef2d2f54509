// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// The floor of any device served from another process: a one-byte
// ping-pong over an AF_UNIX socket pair between two processes. Prints the
// median one-way latency (half the round trip) in microseconds, then the
// median round trip.
//
// usage: unix_pingpong [COUNT]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

int main(int argc, char **argv)
{
	int count = argc > 1 ? atoi(argv[1]) : 20000;
	int sv[2];
	if (count < 1 || socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0) {
		perror("unix_pingpong");
		return 1;
	}
	char b = 0;
	pid_t child = fork();
	if (child == 0) {
		close(sv[0]);
		while (read(sv[1], &b, 1) == 1 && write(sv[1], &b, 1) == 1) {
		}
		_exit(0);
	}
	close(sv[1]);
	std::vector<double> rtt;
	rtt.reserve(size_t(count));
	for (int i = 0; i < count; i++) {
		auto t = std::chrono::steady_clock::now();
		if (write(sv[0], &b, 1) != 1 || read(sv[0], &b, 1) != 1)
			return 1;
		rtt.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t).count());
	}
	close(sv[0]);
	waitpid(child, nullptr, 0);
	std::sort(rtt.begin(), rtt.end());
	double median = rtt[rtt.size() / 2];
	printf("%.2f %.2f\n", median / 2, median);
	return 0;
}
