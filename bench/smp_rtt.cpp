// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// A serial SMP loop through stock libibumad: N directed-route NodeInfo Gets,
// one at a time, timing each round trip. Prints the median, p99, min and max
// in microseconds. Runs the same against ibemu and against ibsim's preload.
//
// usage: smp_rtt CA PORT COUNT [DR path, e.g. 0,1]
#include <infiniband/umad.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <string>
#include <vector>

int main(int argc, char **argv)
{
	if (argc < 4) {
		fprintf(stderr, "usage: %s CA PORT COUNT [DR path, e.g. 0,1]\n", argv[0]);
		return 2;
	}
	int port = atoi(argv[2]), count = atoi(argv[3]);
	std::vector<int> path;
	std::stringstream ss(argc > 4 ? argv[4] : "0");
	for (std::string hop; std::getline(ss, hop, ',');)
		path.push_back(atoi(hop.c_str()));
	if (umad_init() < 0)
		return 1;
	int fd = umad_open_port(argv[1], port);
	if (fd < 0) {
		fprintf(stderr, "umad_open_port(%s, %d): %s\n", argv[1], port, strerror(-fd));
		return 1;
	}
	long mask[16 / sizeof(long)] = {};
	int agent = umad_register(fd, 0x81, 1, 0, mask);
	if (agent < 0) {
		fprintf(stderr, "umad_register failed\n");
		return 1;
	}
	size_t size = umad_size() + 256;
	std::vector<char> send(size), recv(size);
	std::vector<double> us;
	for (int i = 0; i < count; i++) {
		memset(send.data(), 0, size);
		auto *mad = reinterpret_cast<uint8_t *>(umad_get_mad(send.data()));
		mad[0] = 1; /* base version */
		mad[1] = 0x81; /* directed route */
		mad[2] = 1; /* class version */
		mad[3] = 1; /* Get */
		mad[7] = static_cast<uint8_t>(path.size() - 1); /* hop count */
		uint32_t tid = static_cast<uint32_t>(i + 1);
		memcpy(mad + 12, &tid, 4);
		mad[16] = 0x00;
		mad[17] = 0x11; /* NodeInfo */
		mad[32] = mad[33] = mad[34] = mad[35] = 0xff; /* DrSLID, DrDLID permissive */
		for (size_t h = 1; h < path.size(); h++)
			mad[128 + h] = static_cast<uint8_t>(path[h]);
		umad_set_addr(send.data(), 0xffff, 0, 0, 0);
		auto t0 = std::chrono::steady_clock::now();
		if (umad_send(fd, agent, send.data(), 256, 10000, 0) < 0) {
			fprintf(stderr, "umad_send failed\n");
			return 1;
		}
		int len = 256;
		int r = umad_recv(fd, recv.data(), &len, 10000);
		auto t1 = std::chrono::steady_clock::now();
		if (r < 0 || umad_status(recv.data()) != 0) {
			fprintf(stderr, "no answer to SMP %d\n", i);
			return 1;
		}
		us.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
	}
	std::sort(us.begin(), us.end());
	printf("%.1f %.1f %.1f %.1f\n", us[us.size() / 2], us[us.size() * 99 / 100], us.front(), us.back());
	return 0;
}
