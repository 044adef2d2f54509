// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// Speaks the rdma_ucm write() ABI to /dev/infiniband/rdma_cm without
// librdmacm, for what stock programs do only when ibacm runs:
//   ucma_probe ib-path SRC DST
//       a route given with SET_OPTION(RDMA_OPTION_IB, RDMA_OPTION_IB_PATH):
//       one ID resolves SRC -> DST and its route the usual way and hands
//       its path, as QUERY_PATH gives it, to a second ID; the errnos of
//       the bad cases, the ROUTE_RESOLVED event the option queues, and the
//       path the second ID then reports
//   ucma_probe bind-port ADDR PORT
//       BIND of a new ID to ADDR:PORT: prints "bind PORT: ok" or the errno
//       (ports below 1024 want CAP_NET_BIND_SERVICE, as cma_use_port())
//   ucma_probe migrate
//       MIGRATE_ID's errnos: a descriptor that is not open, one that is
//       not an rdma_cm file, an ID that is not the named file's (though
//       this process opened both), and the ID of a file a child opened and
//       this process holds (inherited: allowed, as the kernel)
// Prints one "name: result" line per check; exits 0 when every check
// matched the kernel's answer. The VM suite runs it against ibemu and
// against the real kernel's rdma_cm on rdma_rxe and compares.
#include "emu/rdma_cm_abi.h"

#include <arpa/inet.h>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

using namespace ibemu::emu;

namespace {

int failures = 0;
int fd = -1;

void check(const char *name, int got, int want)
{
	printf("%s: %s%s\n", name, got == 0 ? "ok" : strerror(got), got == want ? "" : "  (UNEXPECTED)");
	if (got != want)
		failures++;
}

/* one command; 0 or errno */
template <typename Cmd> int cmd(uint32_t command, const Cmd &c, uint16_t out = 0)
{
	std::vector<uint8_t> b(sizeof(rdma_ucm_cmd_hdr) + sizeof c);
	rdma_ucm_cmd_hdr h{ command, uint16_t(sizeof c), out };
	memcpy(b.data(), &h, sizeof h);
	memcpy(b.data() + sizeof h, &c, sizeof c);
	return write(fd, b.data(), b.size()) == ssize_t(b.size()) ? 0 : errno;
}

uint32_t createId(uint64_t uid)
{
	rdma_ucm_create_id_resp resp{ ~0u };
	rdma_ucm_create_id c{};
	c.uid = uid;
	c.response = uintptr_t(&resp);
	c.ps = RDMA_PS_TCP;
	c.qp_type = 2; /* IBV_QPT_RC */
	return cmd(RDMA_USER_CM_CMD_CREATE_ID, c, sizeof resp) ? ~0u : resp.id;
}

int resolveAddr(uint32_t id, const char *src, const char *dst)
{
	rdma_ucm_resolve_addr c{};
	c.id = id;
	c.timeout_ms = 2000;
	sockaddr_in s{}, d{};
	s.sin_family = d.sin_family = AF_INET;
	d.sin_port = htons(7471);
	if (inet_pton(AF_INET, src, &s.sin_addr) != 1 || inet_pton(AF_INET, dst, &d.sin_addr) != 1)
		return EINVAL;
	c.src_size = c.dst_size = sizeof(sockaddr_in);
	memcpy(c.src_addr.data, &s, sizeof s);
	memcpy(c.dst_addr.data, &d, sizeof d);
	return cmd(RDMA_USER_CM_CMD_RESOLVE_ADDR, c);
}

/* the next event (within 10 s), or event ~0 */
rdma_ucm_event_resp nextEvent()
{
	rdma_ucm_event_resp ev{};
	ev.event = ~0u;
	pollfd p{ fd, POLLIN, 0 };
	if (poll(&p, 1, 10000) != 1)
		return ev;
	rdma_ucm_get_event c{ uintptr_t(&ev) };
	if (cmd(RDMA_USER_CM_CMD_GET_EVENT, c, sizeof ev))
		ev.event = ~0u;
	return ev;
}

void expectEvent(const char *name, uint32_t id, uint32_t type)
{
	rdma_ucm_event_resp ev = nextEvent();
	bool ok = ev.event == type && ev.id == id && ev.status == 0;
	printf("%s: event %d status %d%s\n", name, int(ev.event), int(ev.status), ok ? "" : "  (UNEXPECTED)");
	if (!ok)
		failures++;
}

/* QUERY_PATH: the records the ID has */
std::vector<ib_path_rec_data> queryPath(uint32_t id)
{
	uint8_t buf[sizeof(rdma_ucm_query_path_resp) + 4 * sizeof(ib_path_rec_data)]{};
	rdma_ucm_query q{ uintptr_t(buf), id, RDMA_USER_CM_QUERY_PATH };
	if (cmd(RDMA_USER_CM_CMD_QUERY, q, sizeof buf))
		return {};
	rdma_ucm_query_path_resp head;
	memcpy(&head, buf, sizeof head);
	std::vector<ib_path_rec_data> out(std::min<uint32_t>(head.num_paths, 4));
	memcpy(out.data(), buf + sizeof head, out.size() * sizeof out[0]);
	return out;
}

int setPath(uint32_t id, const void *val, size_t len, uint32_t name = RDMA_OPTION_IB_PATH)
{
	rdma_ucm_set_option o{ uintptr_t(val), id, RDMA_OPTION_IB, name, uint32_t(len) };
	return cmd(RDMA_USER_CM_CMD_SET_OPTION, o);
}

int ibPath(const char *src, const char *dst)
{
	uint32_t a = createId(1);
	check("create", a == ~0u ? EIO : 0, 0);
	check("resolve the address", resolveAddr(a, src, dst), 0);
	expectEvent("address resolved", a, RDMA_CM_EVENT_ADDR_RESOLVED);
	check("resolve the route", cmd(RDMA_USER_CM_CMD_RESOLVE_ROUTE, rdma_ucm_resolve_route{ a, 5000 }), 0);
	expectEvent("route resolved", a, RDMA_CM_EVENT_ROUTE_RESOLVED);
	std::vector<ib_path_rec_data> path = queryPath(a);
	const uint32_t primary = IB_PATH_GMP | IB_PATH_PRIMARY | IB_PATH_BIDIRECTIONAL;
	bool one = path.size() == 1 && path[0].flags == primary;
	printf("query path: %zu record(s)%s\n", path.size(), one ? ", primary, both ways, for GMPs" : "  (UNEXPECTED)");
	if (!one)
		return 1;

	/* the records as ibacm hands them: first one that is not for GMPs */
	ib_path_rec_data recs[2] = { path[0], path[0] };
	recs[0].flags = IB_PATH_PRIMARY | IB_PATH_OUTBOUND;
	uint32_t b = createId(2);
	check("IB_PATH before the address", setPath(b, recs, sizeof recs), EINVAL);
	check("resolve the second ID's address", resolveAddr(b, src, dst), 0);
	expectEvent("its address resolved", b, RDMA_CM_EVENT_ADDR_RESOLVED);
	check("IB_PATH, not whole records", setPath(b, recs, sizeof recs - 1), EINVAL);
	check("IB_PATH, no record for GMPs", setPath(b, recs, sizeof recs[0]), EINVAL);
	check("IB_PATH from a bad pointer", setPath(b, reinterpret_cast<void *>(8), sizeof recs), EFAULT);
	check("level IB, another option", setPath(b, recs, sizeof recs, 2), ENOSYS);
	check("IB_PATH", setPath(b, recs, sizeof recs), 0);
	expectEvent("the option's event", b, RDMA_CM_EVENT_ROUTE_RESOLVED);
	check("IB_PATH once routed", setPath(b, recs, sizeof recs), EINVAL);
	check("RESOLVE_ROUTE once routed", cmd(RDMA_USER_CM_CMD_RESOLVE_ROUTE, rdma_ucm_resolve_route{ b, 5000 }),
	      EINVAL);
	std::vector<ib_path_rec_data> now = queryPath(b);
	bool same = now.size() == 1 && memcmp(&now[0], &path[0], sizeof now[0]) == 0;
	printf("the second ID's path: %s\n", same ? "the record given" : "another  (UNEXPECTED)");
	if (!same)
		failures++;
	return failures ? 1 : 0;
}

int bindPort(const char *addr, const char *port)
{
	uint32_t id = createId(1);
	check("create", id == ~0u ? EIO : 0, 0);
	rdma_ucm_bind c{};
	c.id = id;
	sockaddr_in s{};
	s.sin_family = AF_INET;
	s.sin_port = htons(uint16_t(atoi(port)));
	if (inet_pton(AF_INET, addr, &s.sin_addr) != 1)
		return 2;
	c.addr_size = sizeof s;
	memcpy(c.addr.data, &s, sizeof s);
	int rc = cmd(RDMA_USER_CM_CMD_BIND, c);
	printf("bind %s: %s\n", port, rc ? strerror(rc) : "ok");
	return failures ? 1 : 0;
}

/* MIGRATE_ID of `id` named through descriptor `from` into the file `to`:
 * 0 or errno */
int migrate(int to, int from, uint32_t id)
{
	rdma_ucm_migrate_resp resp{};
	rdma_ucm_migrate_id c{ uintptr_t(&resp), id, uint32_t(from) };
	int keep = fd;
	fd = to;
	int rc = cmd(RDMA_USER_CM_CMD_MIGRATE_ID, c, sizeof resp);
	fd = keep;
	return rc;
}

int openCm()
{
	return open("/dev/infiniband/rdma_cm", O_RDWR | O_CLOEXEC);
}

int migrateChecks()
{
	int a = fd, b = openCm(), c = openCm();
	if (b < 0 || c < 0)
		return 2;
	uint32_t id = createId(1); /* on a */
	check("create on the first file", id == ~0u ? EIO : 0, 0);
	int null = open("/dev/null", O_RDONLY | O_CLOEXEC);
	check("migrate through a descriptor not open", migrate(b, 1000, id), ENOENT);
	check("migrate through a file not rdma_cm", migrate(b, null, id), EINVAL);
	check("migrate an ID that is not the named file's", migrate(b, c, id), EINVAL);
	check("migrate an ID that is not there", migrate(b, a, id + 1000), ENOENT);
	check("migrate from the file that has it", migrate(b, a, id), 0);
	check("the ID is the second file's now", migrate(c, a, id), EINVAL);

	/* a child opens a file and makes an ID on it; its own child, which
	 * inherits that file and did not open it, takes the ID into a file of
	 * its own */
	pid_t child = fork();
	if (child == 0) {
		fd = openCm();
		uint32_t cid = createId(2);
		pid_t g = fork();
		if (g == 0) {
			int own = openCm();
			int rc = migrate(own, fd, cid);
			_exit(rc);
		}
		int st = 0;
		waitpid(g, &st, 0);
		_exit(WIFEXITED(st) ? WEXITSTATUS(st) : 99);
	}
	int st = 0;
	waitpid(child, &st, 0);
	check("migrate from a file inherited, not opened", WIFEXITED(st) ? WEXITSTATUS(st) : 99,
	      0);
	close(null);
	close(b);
	close(c);
	return failures ? 1 : 0;
}

} /* namespace */

int main(int argc, char **argv)
{
	bool ok = (argc == 4 && !strcmp(argv[1], "ib-path")) || (argc == 4 && !strcmp(argv[1], "bind-port")) ||
		  (argc == 2 && !strcmp(argv[1], "migrate"));
	if (!ok) {
		fprintf(stderr, "usage: ucma_probe ib-path SRC DST | bind-port ADDR PORT | migrate\n");
		return 2;
	}
	fd = openCm();
	if (fd < 0) {
		perror("/dev/infiniband/rdma_cm");
		return 2;
	}
	if (!strcmp(argv[1], "bind-port"))
		return bindPort(argv[2], argv[3]);
	if (!strcmp(argv[1], "migrate"))
		return migrateChecks();
	return ibPath(argv[2], argv[3]);
}
