// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// The RDMA connection manager of the emulated host (the kernel's
// drivers/infiniband/core/cma.c with the IPoIB address resolution of
// addr.c): IDs bound to addresses and port numbers, address resolution,
// route resolution through the SA (emu/sa_query.h), and connections
// through the IB CM (emu/ib_cm.h).
//
// Addresses: every port of a local HCA has the IPv4 address
// 10.200.N.P (N of its uverbsN, P the port number) on the subnet
// 10.200.0.0/16, and the IPv6 link-local address fe80::/64 with the port
// GUID as interface ID (the universal/local bit set, as IPoIB's). In a
// subnet split across daemons (docs/multihost.md) every CA has them, N
// being its position among the subnet's CAs, so that all daemons number
// it alike and resolve other hosts' addresses. docs/rdma-cm.md has the
// rest.
//
// Lifetime rules: Cma owns every CmaId. An ID's events go to its sink
// (the rdma_cm file, emu/ucma_file.h) from handlers run by the io_context;
// destroy() ends an ID at once and no event for it follows.
//
// Where it is (the kernel's cma.c, by concern):
//   cma.cpp            IDs, their indexes, binding to ports, events
//   cma_addr.cpp       addresses, address and route resolution (addr.c)
//   cma_conn.cpp       connections and SIDR over the IB CM, INIT_QP_ATTR
//   cma_multicast.cpp  multicast joins and leaves
#pragma once

#include "emu/clock.h"
#include "emu/ib_cm.h"
#include "emu/rdma_cm_abi.h"
#include "emu/sa_multicast.h"
#include "emu/sa_query.h"

#include <boost/asio/io_context.hpp>

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>

namespace ibemu::fabric {
struct Node;
}

namespace ibemu::emu {

class Host;
struct Hca;
class MadPort;
struct CmaId;

/* RDMA_UDP_QKEY (include/rdma/rdma_cm.h): the Q_Key of the UDP and IB port
 * spaces' QPs and of their multicast groups */
constexpr uint32_t kUdpQkey = 0x01234567;

/* A socket address of any family rdma_cm takes (AF_INET, AF_INET6, AF_IB). */
struct CmaAddr {
	kernel_sockaddr_storage ss{};

	uint16_t family() const;
	/* the port number (AF_IB: the low 16 bits of the service ID) */
	uint16_t port() const;
	void setPort(uint16_t port);
	/* cma_zero_addr(): 0.0.0.0, ::, AF_IB's zero GID (or no family) */
	bool isZero() const;
	/* cma_loopback_addr(): 127.0.0.0/8, ::1, AF_IB's ::1 */
	bool isLoopback() const;
	/* cma_any_addr(): either, which rdma_bind_addr() binds to no device,
	 * as the kernel's */
	bool isAny() const;
	/* cma_set_loopback(): 127.0.0.1, ::1, AF_IB's ::1; the port kept */
	void setLoopback();
	/* 224.0.0.0/4, ff00::/8 */
	bool isMulticast() const;
	/* bytes of the family's sockaddr, 0 for an unknown family */
	size_t size() const;
	static CmaAddr from(const void *p, size_t len);
};

enum class CmaState {
	Idle,
	AddrQuery,
	AddrResolved,
	RouteQuery,
	RouteResolved,
	Connect,
	Disconnect,
	AddrBound,
	Listen,
	Established,
};

/* what a connection's peer said (REQ or REP), for INIT_QP_ATTR */
struct CmaPeer {
	uint32_t qpn = 0;
	uint32_t psn = 0; /* its starting PSN: our send queue's */
	uint8_t responderResources = 0;
	uint8_t initiatorDepth = 0;
	uint8_t retryCount = 0;
	uint8_t rnrRetryCount = 0;
	uint8_t ackTimeout = 0;
};

struct CmaMc;

class CmaSink {
public:
	/* ev.id is the ID's handle unless the event says otherwise;
	 * connReq: the new ID of a CONNECT_REQUEST */
	virtual void cmaEvent(CmaId &id, const rdma_ucm_event_resp &ev, CmaId *connReq) = 0;
	/* MULTICAST_JOIN or MULTICAST_ERROR of one join (ev.id is its handle) */
	virtual void cmaMcEvent(CmaMc &mc, const rdma_ucm_event_resp &ev) = 0;

protected:
	~CmaSink() = default;
};

/* One multicast join of an ID (the kernel's cma_multicast, with the
 * handle and counters of ucma's ucma_multicast). */
struct CmaMc {
	uint32_t handle = 0; /* host-wide, like ucma's multicast_table */
	CmaId *id = nullptr;
	uint64_t uid = 0;
	int64_t member = 0; /* SaMulticast's */
	uint32_t eventsReported = 0;
};

struct CmaId {
	uint32_t handle = 0; /* ucma's context ID, host-wide */
	CmaSink *sink = nullptr;
	void *owner = nullptr; /* the file it belongs to */
	uint64_t uid = 0;
	uint16_t ps = 0;
	uint8_t qpType = 0;
	CmaState state = CmaState::Idle;
	CmaAddr src, dst;
	Hca *hca = nullptr; /* the bound device, and its port */
	uint8_t portNum = 0;
	uint16_t pkey = 0xffff;
	bool havePath = false;
	PathRecord path;
	uint32_t seqNum = 0; /* our starting PSN: the peer's send queue's */
	uint32_t qpNum = 0;
	uint8_t tos = 0;
	bool reuseaddr = false;
	bool afonly = false; /* an IPv6 wildcard bind leaves IPv4 alone */
	uint8_t ackTimeout = 0;
	bool ackTimeoutSet = false;
	uint32_t backlog = 0; /* listen: requests not yet read */
	CmaId *listener = nullptr; /* a passive ID until its request is read */
	bool visible = true; /* false until the CONNECT_REQUEST is read */
	uint32_t eventsReported = 0;
	CmaPeer peer;
	CmId *cm = nullptr;
	int64_t saQuery = 0;
	std::unique_ptr<Timer> addrTimer;
	std::vector<CmaMc *> mcs; /* its joins, in Cma::mcs_ */
	/* the cluster host whose rdma_cm file made it (Hca::hostName): it
	 * binds, listens and leaves through that host's HCAs only; "": any */
	std::string hostScope;
};

class Cma final : public CmHandler {
public:
	Cma(boost::asio::io_context &io, Host &host, IbCm &cm, SaClient &sa, SaMulticast &mcast);
	~Cma();
	Cma(const Cma &) = delete;
	Cma &operator=(const Cma &) = delete;

	/* The IPv4 address of a CA's port (network byte order), 0 if it has
	 * none: a local HCA's, or in a split subnet any CA's among the first
	 * 256 */
	uint32_t ipv4Of(const fabric::Node &ca, unsigned port) const;
	/* The link-local IPv6 address of a port with this GUID */
	static std::array<uint8_t, 16> ipv6Of(uint64_t portGuid);

	/* an HCA is unplugged: its IDs lose it and hear DEVICE_REMOVAL */
	void deviceRemoved(const Hca &hca);

	CmaId *create(CmaSink *sink, void *owner, uint64_t uid, uint16_t ps, uint8_t qpType);
	CmaId *find(uint32_t handle) const;
	/* how many IDs this owner has */
	size_t countOf(const void *owner) const;
	/* an ID of this owner's that no unread request holds, or null */
	CmaId *firstOf(const void *owner) const;
	/* MIGRATE_ID: the ID is another file's from now on */
	void moveTo(CmaId &id, CmaSink *sink, void *owner);
	void destroy(CmaId *id);

	int bind(CmaId &id, const CmaAddr &addr);
	int resolveAddr(CmaId &id, const CmaAddr *src, const CmaAddr &dst, uint32_t timeoutMs);
	int resolveRoute(CmaId &id, uint32_t timeoutMs);
	/* rdma_set_ib_path(): a route the program brings (from ibacm, or its
	 * own SA query) instead of asking the SM; ROUTE_RESOLVED follows */
	int setIbPath(CmaId &id, const PathRecord &path);
	int listen(CmaId &id, uint32_t backlog);
	int connect(CmaId &id, const rdma_ucm_conn_param &p);
	/* p null: the active side's RTU after its REP */
	int accept(CmaId &id, const rdma_ucm_conn_param *p);
	int reject(CmaId &id, uint8_t reason, const uint8_t *priv, size_t len);
	int disconnect(CmaId &id);
	int initQpAttr(const CmaId &id, uint32_t state, ib_uverbs_qp_attr &out) const;
	int notify(CmaId &id, uint32_t event);

	/* rdma_join_multicast(): an MCMemberRecord join at the SM for the
	 * group of addr; MULTICAST_JOIN or MULTICAST_ERROR follows. -EINVAL
	 * for an ID without a device, not bound or resolved, or not UD */
	int join(CmaId &id, const CmaAddr &addr, uint8_t joinState, uint64_t uid, CmaMc *&out);
	CmaMc *findMc(uint32_t handle) const;
	/* how many joins this owner's IDs hold */
	size_t mcCountOf(const void *owner) const;
	/* rdma_leave_multicast(): the join goes, and the port leaves the
	 * group at the SM when it was the port's last */
	void leave(CmaMc *mc);
	/* the MGID of a multicast address (cma_set_mgid()) */
	static fabric::Gid mgidOf(const CmaAddr &addr, uint16_t ps, uint16_t pkey);

	/* the bound port's GID and the destination's (zero when unknown) */
	void gids(const CmaId &id, fabric::Gid &sgid, fabric::Gid &dgid) const;
	uint64_t nodeGuid(const CmaId &id) const;
	/* the service ID of an address (rdma_get_service_id) */
	uint64_t serviceId(const CmaId &id, const CmaAddr &addr) const;
	/* the ID's devices index as the kernel's ib_device index (its uverbsN + 1) */
	uint32_t deviceIndex(const CmaId &id) const;

	/* IbCm events */
	void cmEvent(CmId &cm, const CmEvent &ev) override;

private:
	MadPort *madPort(const CmaId &id) const;
	/* the local port with this address (of host `scope`'s HCAs, "": any):
	 * true and the port, or false */
	bool localPort(const CmaAddr &addr, Hca *&hca, uint8_t &port, const std::string &scope = {}) const;
	/* in a split subnet, the port of another host's CA with this address */
	const fabric::Port *farPort(const CmaAddr &addr) const;
	/* a local HCA port that is Active, for a destination with no port
	 * of its own here: false if none */
	bool activePort(Hca *&hca, uint8_t &port, const std::string &scope = {}) const;
	/* addr_resolve() writing the route's source back: a zero source
	 * address (not a loopback one) becomes that of port p of h in its
	 * family, its port number kept */
	void fillSource(CmaAddr &src, Hca &h, uint8_t p) const;
	/* IDs of two cluster hosts: two port spaces, as on two nodes */
	static bool apart(const CmaId &a, const CmaId &b)
	{
		return !a.hostScope.empty() && !b.hostScope.empty() && a.hostScope != b.hostScope;
	}
	int bindPort(CmaId &id);
	/* 0, or why id cannot have port: -EADDRNOTAVAIL with a wildcard on
	 * either side, -EADDRINUSE for equal addresses (cma_check_port()) */
	int portConflict(const CmaId &id, uint16_t port) const;
	void post(CmaId &id, uint32_t event, int status);
	void send(CmaId &id, rdma_ucm_event_resp ev, CmaId *connReq = nullptr);
	void onRequest(const CmEvent &ev);
	CmaId *byCm(const CmId &cm) const;
	void stopListen(CmaId &id);

	boost::asio::io_context &io_;
	Host &host_;
	IbCm &cm_;
	SaClient &sa_;
	SaMulticast &mcast_;
	std::map<uint32_t, std::unique_ptr<CmaId>> ids_;
	std::map<uint32_t, std::unique_ptr<CmaMc>> mcs_;
	std::map<const void *, size_t> mcsOf_; /* joins by owner */
	uint32_t nextMc_ = 0;
	uint32_t nextHandle_ = 0;
	std::set<uint32_t> freeHandles_; /* below nextHandle_ */
	/* indexes, so that no command scans every ID of the host */
	std::map<const void *, std::set<CmaId *>> byOwner_;
	std::map<const CmId *, CmaId *> byCm_;
	std::multimap<uint32_t, CmaId *> byPort_; /* bound IDs by port space << 16 | port */
	void setCm(CmaId &id, CmId *cm);
	static uint32_t portKey(uint16_t ps, uint16_t port) { return uint32_t(ps) << 16 | port; }
	/* one IB CM listener per service ID, shared by the IDs listening on it */
	std::map<uint64_t, std::pair<CmId *, unsigned>> cmListens_;
	std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
};

} /* namespace ibemu::emu */
