// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// Cables to the other hosts' daemons (tools/peer/peer_links.h).
//
// A connection's life:  Hello -> Auth -> Up -> Closed
//   Hello  both ends send a hello at once and read the other's: same
//          topology digest, a host that shares cables with us and dials
//          the way the names say; then both derive the session keys and
//          send a sealed AUTH
//   Auth   the first sealed message must be AUTH under the right key
//   Up     attached to its Peer: the cables may train; ENDs and PACKETs
//   Closed the socket is gone; if it was Up, the Peer's cables went down
// A handshake has 5 s. Anything that fails authentication closes the
// connection; a sealed message whose content makes no sense (a port we do
// not share, bytes that are not a MAD packet) is counted and dropped.
#include "tools/peer/peer_links.h"

#include "fabric/packet_format.h"

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/v6_only.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/write.hpp>
#include <spdlog/spdlog.h>

#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <sstream>

namespace ibemu::tools {

using boost::asio::ip::tcp;
using fabric::Port;

namespace {

constexpr auto kHandshakeTime = std::chrono::seconds(5);
constexpr auto kFirstRedial = std::chrono::milliseconds(100);
constexpr auto kLastRedial = std::chrono::seconds(2);
/* bytes queued for a peer that does not read them: past this the peer is
 * taken for dead */
constexpr size_t kMaxQueued = 64u << 20;
/* connections still in their handshake, at most: more are closed at once */
constexpr size_t kMaxHandshakes = 32;
/* a refused handshake is logged at most this often (the rest are counted) */
constexpr auto kRefusedLogInterval = std::chrono::seconds(1);
/* after an accept() error (no descriptors left, say), wait this long */
constexpr auto kAcceptRetry = std::chrono::milliseconds(100);

/* "host:port" or "[v6]:port" */
bool splitAddr(const std::string &addr, std::string &host, std::string &port)
{
	size_t colon = addr.rfind(':');
	if (colon == std::string::npos || colon == 0)
		return false;
	host = addr.substr(0, colon);
	port = addr.substr(colon + 1);
	if (host.size() > 2 && host.front() == '[' && host.back() == ']')
		host = host.substr(1, host.size() - 2);
	return !port.empty();
}

PeerPortId idOf(const Port &p)
{
	return { p.node->nodeGuid, p.num };
}

/* The far end of p's cable, plugged in or pulled out */
Port *cableEnd(Port &p)
{
	return p.peer ? p.peer : p.pulledPeer;
}

/* A dead peer is noticed within seconds even when nothing is sent:
 * keepalives, and a limit on unacknowledged data */
void tuneSocket(tcp::socket &s)
{
	int fd = s.native_handle(), one = 1, idle = 2, intvl = 1, cnt = 3, userTimeout = 5000;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
	setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof one);
	setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof idle);
	setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &intvl, sizeof intvl);
	setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &cnt, sizeof cnt);
	setsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &userTimeout, sizeof userTimeout);
}

std::string canonicalSplit(const fabric::Subnet &subnet, const SubnetSplit &split)
{
	std::ostringstream s;
	for (const fabric::TopoHost &h : split.hosts)
		s << "host " << h.name << ' ' << h.addr << '\n';
	for (const auto &n : subnet.nodes()) {
		s << static_cast<int>(n->type) << ' ' << std::hex << n->nodeGuid << std::dec << ' '
		  << unsigned(n->numPorts) << ' ' << split.ownerOf[n->index] << ' ' << n->desc << '\n';
		for (const Port &p : n->ports)
			if (const Port *far = p.cableEnd())
				s << ' ' << unsigned(p.num) << ' ' << std::hex << far->node->nodeGuid << std::dec << ' '
				  << unsigned(far->num) << '\n';
	}
	return s.str();
}

} /* namespace */

struct PeerLinks::Peer {
	explicit Peer(boost::asio::io_context &io) : retry(io) {}

	int index = -1;
	std::string name, addr;
	bool dialer = false; /* we dial it (our name sorts first) */
	bool dialing = false;
	std::vector<Port *> cables; /* our ports cabled to its nodes when we started */
	std::shared_ptr<Conn> conn; /* the connection that is up */
	boost::asio::steady_timer retry;
	std::unique_ptr<tcp::resolver> resolver; /* while dialling */
	std::unique_ptr<tcp::socket> dialling;
	std::chrono::milliseconds backoff = kFirstRedial;
	uint64_t packetsOut = 0, packetsIn = 0, bad = 0, ups = 0;
	uint64_t dropped = 0; /* packets for it while it was not up */
	std::string lastError;
};

struct PeerLinks::Conn : std::enable_shared_from_this<PeerLinks::Conn> {
	enum class State { Hello, Auth, Up, Closed };

	Conn(PeerLinks &l, tcp::socket s, Peer *p) : links(l), sock(std::move(s)), peer(p), deadline(l.io_)
	{
		dialer = p != nullptr;
	}

	PeerLinks &links;
	tcp::socket sock;
	Peer *peer; /* known from the start when we dial, from the hello when we listen */
	bool dialer = false;
	State state = State::Hello;
	PeerHello mine, theirs;
	PeerSealer tx, rx;
	boost::asio::steady_timer deadline;
	std::vector<uint8_t> in;
	size_t inUsed = 0;
	std::vector<uint8_t> pending, writing;
	bool writingNow = false, flushPosted = false, closePosted = false;
	/* told when the bytes queued before them are written (or never are) */
	std::vector<fabric::OnWire> pendingOnWire, writingOnWire;
	std::string remote;
	/* the data message whose packets are arriving (DATA) */
	fabric::DataPackets assembling;
	PeerData assemblingHead;
	size_t assemblingBytes = 0;

	void begin()
	{
		boost::system::error_code ec;
		auto ep = sock.remote_endpoint(ec);
		remote = ec ? "?" : ep.address().to_string() + ":" + std::to_string(ep.port());
		tuneSocket(sock);
		mine.host = links.split_.hosts[size_t(links.me_)].name;
		mine.topology = links.digest_;
		mine.nonce = peerNonce();
		appendMessage(pending, encodeHello(mine));
		schedule();
		deadline.expires_after(kHandshakeTime);
		deadline.async_wait([self = shared_from_this()](const boost::system::error_code &e) {
			if (!e && self->state != State::Up)
				self->close("no handshake within 5 s", true);
		});
		read();
	}

	void read()
	{
		/* a stranger gets room for one message; a peer, for many */
		const size_t room = state == State::Up ? 65536 : kPeerMaxMessage + 4;
		if (in.size() < room)
			in.resize(room);
		sock.async_read_some(boost::asio::buffer(in.data() + inUsed, in.size() - inUsed),
				     [self = shared_from_this()](const boost::system::error_code &ec, size_t n) {
					     if (self->state == State::Closed)
						     return;
					     if (ec) {
						     self->close(ec == boost::asio::error::eof ? "connection closed"
											       : ec.message(),
								 false);
						     return;
					     }
					     self->inUsed += n;
					     self->process();
					     if (self->state != State::Closed)
						     self->read();
				     });
	}

	void process()
	{
		size_t off = 0;
		while (state != State::Closed && inUsed - off >= 4) {
			const uint8_t *p = in.data() + off;
			size_t len = size_t(p[0]) << 24 | size_t(p[1]) << 16 | size_t(p[2]) << 8 | p[3];
			if (len == 0 || len > kPeerMaxMessage) {
				close("a message of " + std::to_string(len) + " bytes (at most " +
					      std::to_string(kPeerMaxMessage) + ")",
				      true);
				return;
			}
			if (inUsed - off < 4 + len)
				break;
			message({ p + 4, len });
			off += 4 + len;
		}
		if (state == State::Closed)
			return;
		memmove(in.data(), in.data() + off, inUsed - off);
		inUsed -= off;
	}

	void message(std::span<const uint8_t> body)
	{
		if (state == State::Hello)
			return hello(body);
		PeerMsg type;
		std::span<const uint8_t> inner;
		if (!rx.open(body, type, inner)) {
			close(state == State::Auth ? "authentication failed (not the same subnet key?)"
						   : "a message failed authentication",
			      true);
			return;
		}
		if (state == State::Auth) {
			if (type != PeerMsg::Auth || !inner.empty())
				return close("no AUTH after the hello", true);
			links.attach(shared_from_this());
			return;
		}
		links.received(*this, type, inner);
	}

	void hello(std::span<const uint8_t> body)
	{
		try {
			checkHello(body);
		} catch (const std::exception &e) { /* libcrypto failed: no keys, no session */
			close(std::string("cannot key the session: ") + e.what(), true);
		}
	}

	void checkHello(std::span<const uint8_t> body)
	{
		if (!decodeHello(body, theirs))
			return close("not an ibemu peer (bad hello)", true);
		if (dialer && theirs.host != peer->name)
			return close("expected host \"" + peer->name + "\", got \"" + theirs.host + "\"", true);
		if (!dialer) {
			for (const auto &p : links.peers_)
				if (p && p->name == theirs.host)
					peer = p.get();
			if (!peer)
				return close("host \"" + theirs.host + "\" shares no cable with this host", true);
			if (peer->dialer)
				return close("host \"" + theirs.host + "\" dialled, but this host dials it", true);
		}
		if (theirs.topology != links.digest_)
			return close("host \"" + theirs.host +
					     "\" loaded a different topology (every host must load the same file)",
				     true);
		const PeerSessionKeys k = dialer ? deriveSessionKeys(links.key_, mine, theirs)
						 : deriveSessionKeys(links.key_, theirs, mine);
		tx = PeerSealer(dialer ? k.dialerToListener : k.listenerToDialer);
		rx = PeerSealer(dialer ? k.listenerToDialer : k.dialerToListener);
		state = State::Auth;
		sendSealed(PeerMsg::Auth, {});
	}

	void sendSealed(PeerMsg type, std::span<const uint8_t> body)
	{
		if (state == State::Closed || closePosted)
			return;
		try {
			tx.seal(pending, type, body);
		} catch (const std::exception &e) {
			return closeLater(e.what());
		}
		schedule();
	}

	/* Closing takes the cables down: never in the middle of whatever
	 * is sending (a packet being carried, a link training) */
	void closeLater(const std::string &why)
	{
		if (closePosted)
			return;
		closePosted = true;
		boost::asio::post(links.io_, [self = shared_from_this(), why] { self->close(why, false); });
	}

	/* Writes go out from the io thread, after whatever queued them */
	void schedule()
	{
		if (pending.size() > kMaxQueued)
			return closeLater("the peer reads nothing (" + std::to_string(pending.size() >> 20) +
					  " MiB queued)");
		if (writingNow || flushPosted)
			return;
		flushPosted = true;
		boost::asio::post(links.io_, [self = shared_from_this()] {
			self->flushPosted = false;
			self->flush();
		});
	}

	void flush()
	{
		if (state == State::Closed || writingNow || pending.empty())
			return;
		writing.swap(pending);
		pending.clear();
		writingOnWire.swap(pendingOnWire);
		pendingOnWire.clear();
		writingNow = true;
		boost::asio::async_write(sock, boost::asio::buffer(writing),
					 [self = shared_from_this()](const boost::system::error_code &ec, size_t) {
						 self->writingNow = false;
						 self->writing.clear();
						 if (self->state == State::Closed)
							 return;
						 if (ec)
							 return self->close(ec.message(), false);
						 for (auto &fn : std::exchange(self->writingOnWire, {}))
							 fn(true);
						 self->flush();
					 });
	}

	/* refused: the handshake failed on our side (counted) */
	void close(const std::string &why, bool refused)
	{
		if (state == State::Closed)
			return;
		auto self = shared_from_this();
		const bool wasUp = state == State::Up;
		state = State::Closed;
		boost::system::error_code ec;
		sock.shutdown(tcp::socket::shutdown_both, ec);
		sock.close(ec);
		deadline.cancel();
		std::erase(links.handshakes_, self);
		/* what was queued never leaves: told in turns of their own */
		for (auto *list : { &writingOnWire, &pendingOnWire })
			for (auto &fn : std::exchange(*list, {}))
				boost::asio::post(links.io_, [fn = std::move(fn)] { fn(false); });
		const std::string who = peer ? "host \"" + peer->name + "\"" : remote;
		if (refused)
			links.refused(who + " (" + remote + "): " + why);
		if (peer)
			peer->lastError = why;
		if (wasUp)
			links.detach(*this);
		else if (peer && dialer && !links.stopped_)
			links.redial(*peer);
		if (wasUp || !refused)
			spdlog::log(wasUp ? spdlog::level::warn : spdlog::level::debug, "peers: {} ({}): {}", who,
				    remote, why);
	}
};

PeerLinks::PeerLinks(boost::asio::io_context &io, fabric::Subnet &subnet, const SubnetSplit &split, int me,
		     std::vector<uint8_t> subnetKey)
	: io_(io), subnet_(subnet), split_(split), me_(me), key_(std::move(subnetKey)), acceptor_(io), acceptRetry_(io)
{
	peers_.resize(split_.hosts.size());
	for (const auto &n : subnet_.nodes())
		if (split_.ownerOf[n->index] != me_)
			subnet_.setForeign(*n);
	for (const auto &n : subnet_.nodes()) {
		if (n->foreign)
			continue;
		for (Port &p : n->ports) {
			const Port *far = p.cableEnd();
			if (!far || !far->node->foreign)
				continue;
			int owner = split_.ownerOf[far->node->index];
			auto &peer = peers_[size_t(owner)];
			if (!peer) {
				peer = std::make_unique<Peer>(io_);
				peer->index = owner;
				peer->name = split_.hosts[size_t(owner)].name;
				peer->addr = split_.hosts[size_t(owner)].addr;
				peer->dialer = split_.hosts[size_t(me_)].name < peer->name;
			}
			peer->cables.push_back(&p);
		}
	}
	digest_ = sha256(canonicalSplit(subnet_, split_));
	subnet_.setRemoteCables(this);
}

PeerLinks::~PeerLinks()
{
	stop();
}

bool PeerLinks::start(const std::string &listenAddr, std::string &err)
{
	/* by default every address of this host, on the file's port: the
	 * addr= itself may be a name that resolves here to a loopback */
	std::string addr = listenAddr.empty() ? split_.hosts[size_t(me_)].addr : listenAddr;
	std::string host, port;
	if (!splitAddr(addr, host, port)) {
		err = "--listen \"" + addr + "\" is not ADDR:PORT";
		return false;
	}
	boost::system::error_code ec;
	tcp::endpoint ep;
	if (listenAddr.empty()) {
		unsigned long num = strtoul(port.c_str(), nullptr, 10);
		ep = tcp::endpoint(tcp::v6(), static_cast<uint16_t>(num));
		acceptor_.open(ep.protocol(), ec);
		if (!ec)
			acceptor_.set_option(boost::asio::ip::v6_only(false), ec);
		if (ec) { /* no IPv6 here */
			ec.clear();
			acceptor_.close(ec);
			ep = tcp::endpoint(tcp::v4(), static_cast<uint16_t>(num));
			acceptor_.open(ep.protocol(), ec);
		}
		addr = "*:" + port;
	} else {
		tcp::resolver resolver(io_);
		auto found = resolver.resolve(host, port, boost::asio::ip::resolver_base::numeric_service, ec);
		if (ec || found.empty()) {
			err = "--listen: cannot resolve \"" + addr + "\": " + ec.message();
			return false;
		}
		ep = found.begin()->endpoint();
		acceptor_.open(ep.protocol(), ec);
	}
	if (!ec)
		acceptor_.set_option(tcp::acceptor::reuse_address(true), ec);
	if (!ec)
		acceptor_.bind(ep, ec);
	if (!ec)
		acceptor_.listen(boost::asio::socket_base::max_listen_connections, ec);
	if (ec) {
		err = "cannot listen on " + addr + ": " + ec.message();
		return false;
	}
	size_t cables = 0;
	for (const auto &p : peers_)
		cables += p ? p->cables.size() : 0;
	spdlog::info("peers: host \"{}\", listening on {}; {} cables to {} hosts", split_.hosts[size_t(me_)].name, addr,
		     cables, std::count_if(peers_.begin(), peers_.end(), [](const auto &p) { return !!p; }));
	listen();
	for (const auto &p : peers_)
		if (p && p->dialer)
			dial(*p);
	return true;
}

void PeerLinks::stop()
{
	if (stopped_)
		return;
	stopped_ = true;
	boost::system::error_code ec;
	acceptor_.close(ec);
	acceptRetry_.cancel();
	for (auto &p : peers_) {
		if (!p)
			continue;
		p->retry.cancel();
		if (p->resolver)
			p->resolver->cancel();
		if (p->dialling)
			p->dialling->close(ec);
		if (auto c = p->conn)
			c->close("this daemon stops", false);
	}
	for (auto c : std::vector(handshakes_))
		c->close("this daemon stops", false);
	subnet_.setRemoteCables(nullptr);
}

void PeerLinks::refused(const std::string &what)
{
	refusedHandshakes_++;
	const auto now = std::chrono::steady_clock::now();
	if (now - lastRefusedLog_ < kRefusedLogInterval) {
		unloggedRefusals_++;
		return;
	}
	lastRefusedLog_ = now;
	if (unloggedRefusals_)
		spdlog::warn("peers: {} (and {} more refused since the last such line)", what, unloggedRefusals_);
	else
		spdlog::warn("peers: {}", what);
	unloggedRefusals_ = 0;
}

void PeerLinks::listen()
{
	acceptor_.async_accept([this](const boost::system::error_code &ec, tcp::socket s) {
		if (stopped_ || ec == boost::asio::error::operation_aborted)
			return;
		if (ec) { /* out of descriptors or buffers: try again later, not at once */
			acceptRetry_.expires_after(kAcceptRetry);
			acceptRetry_.async_wait([this](const boost::system::error_code &e) {
				if (!e)
					listen();
			});
			return;
		}
		if (handshakes_.size() >= kMaxHandshakes) {
			boost::system::error_code ignored;
			auto ep = s.remote_endpoint(ignored);
			s.close(ignored);
			refused(ep.address().to_string() + ": " + std::to_string(kMaxHandshakes) +
				" handshakes already under way");
		} else {
			auto c = std::make_shared<Conn>(*this, std::move(s), nullptr);
			handshakes_.push_back(c);
			c->begin();
		}
		listen();
	});
}

/* Peers live as long as this object, which stop() outlives: the handlers
 * below find stopped_ set when they are cancelled. */
void PeerLinks::dial(Peer &peer)
{
	if (stopped_ || peer.conn || peer.dialing)
		return;
	std::string host, port;
	if (!splitAddr(peer.addr, host, port))
		return;
	peer.dialing = true;
	peer.resolver = std::make_unique<tcp::resolver>(io_);
	peer.resolver->async_resolve(
		host, port, [this, &peer](const boost::system::error_code &ec, tcp::resolver::results_type found) {
			if (stopped_)
				return;
			if (ec) {
				peer.dialing = false;
				peer.lastError = "cannot resolve " + peer.addr + ": " + ec.message();
				return redial(peer);
			}
			peer.dialling = std::make_unique<tcp::socket>(io_);
			boost::asio::async_connect(
				*peer.dialling, found,
				[this, &peer](const boost::system::error_code &e, const tcp::endpoint &) {
					if (stopped_)
						return;
					peer.dialing = false;
					auto sock = std::move(peer.dialling);
					if (e) {
						peer.lastError = e.message();
						return redial(peer);
					}
					auto c = std::make_shared<Conn>(*this, std::move(*sock), &peer);
					handshakes_.push_back(c);
					c->begin();
				});
		});
}

void PeerLinks::redial(Peer &peer)
{
	if (stopped_ || !peer.dialer)
		return;
	peer.retry.expires_after(peer.backoff);
	peer.backoff = std::min<std::chrono::milliseconds>(peer.backoff * 2, kLastRedial);
	peer.retry.async_wait([this, &peer](const boost::system::error_code &ec) {
		if (!ec)
			dial(peer);
	});
}

/* The cables to peer now: the local ports it started with whose cable
 * (plugged in or pulled out) still ends at one of its nodes; a cable
 * recabled since (`ibemu link connect`) is no longer one of them */
void PeerLinks::forEachCable(Peer &peer, const std::function<void(Port &local, Port &far)> &fn)
{
	for (Port *local : peer.cables) {
		Port *far = cableEnd(*local);
		if (far && far->node->foreign && ownerOf(*far->node) == &peer)
			fn(*local, *far);
	}
}

void PeerLinks::attach(const std::shared_ptr<Conn> &c)
{
	Peer &peer = *c->peer;
	if (peer.conn)
		peer.conn->close("replaced by a new connection", false);
	std::erase(handshakes_, c);
	c->state = Conn::State::Up;
	c->deadline.cancel();
	peer.conn = c;
	peer.ups++;
	peer.backoff = kFirstRedial;
	peer.lastError.clear();
	spdlog::info("peers: host \"{}\" ({}) is up: {} cables", peer.name, c->remote, peer.cables.size());
	subnet_.forgetRelayed();
	forEachCable(peer, [&](Port &local, Port &far) { sendEnd(peer, local, far); });
}

void PeerLinks::detach(Conn &c)
{
	Peer &peer = *c.peer;
	if (peer.conn.get() != &c)
		return;
	auto keep = peer.conn; /* c lives to the end of this call */
	peer.conn.reset();
	forEachCable(peer, [&](Port &, Port &far) { subnet_.farEndLost(far); });
	spdlog::warn("peers: host \"{}\" is down: its {} cables went down", peer.name, peer.cables.size());
	redial(peer);
}

PeerLinks::Peer *PeerLinks::ownerOf(const fabric::Node &n)
{
	int owner = n.index < split_.ownerOf.size() ? split_.ownerOf[n.index] : -1;
	return owner >= 0 ? peers_[size_t(owner)].get() : nullptr;
}

void PeerLinks::received(Conn &c, PeerMsg type, std::span<const uint8_t> body)
{
	Peer &peer = *c.peer;
	switch (type) {
	case PeerMsg::End: {
		PeerEnd e;
		if (!decodeEnd(body, e))
			break;
		gotEnd(peer, e);
		return;
	}
	case PeerMsg::Packet: {
		PeerPacket p;
		if (!decodePacket(body, p))
			break;
		gotPacket(peer, p);
		return;
	}
	case PeerMsg::Data: {
		PeerData d;
		if (!decodeData(body, d))
			break;
		gotData(c, d);
		return;
	}
	case PeerMsg::Auth:
		break;
	}
	peer.bad++;
}

void PeerLinks::gotData(Conn &c, const PeerData &d)
{
	Peer &peer = *c.peer;
	const PeerData &h = c.assemblingHead;
	const bool next = d.index == 0 ||
		(d.index == c.assembling.size() && d.from == h.from && d.to == h.to && d.hops == h.hops &&
		 d.count == h.count);
	if (!next || !fabric::packetIntact(d.bytes) || c.assemblingBytes + d.bytes.size() > kMaxQueued) {
		peer.bad++;
		c.assembling.clear();
		c.assemblingBytes = 0;
		return;
	}
	if (d.index == 0) {
		c.assembling.clear();
		c.assemblingBytes = 0;
		c.assemblingHead = d;
	}
	c.assembling.emplace_back(d.bytes.begin(), d.bytes.end());
	c.assemblingBytes += d.bytes.size();
	if (c.assembling.size() < d.count)
		return;
	fabric::DataPackets packets = std::move(c.assembling);
	c.assembling.clear();
	c.assemblingBytes = 0;
	Port *far = crossing(peer, d.to, d.from);
	if (!far) {
		peer.bad++;
		return;
	}
	peer.packetsIn += packets.size();
	subnet_.arriveDataFromFar(*far, std::move(packets), d.hops);
}

Port *PeerLinks::crossing(Peer &peer, const PeerPortId &to, const PeerPortId &from)
{
	fabric::Node *n = subnet_.findNodeByGuid(to.node);
	if (!n || n->foreign || !n->hasPort(to.port))
		return nullptr;
	Port *far = cableEnd(n->port(to.port));
	if (!far || !far->node->foreign || ownerOf(*far->node) != &peer || idOf(*far) != from)
		return nullptr;
	return far;
}

void PeerLinks::gotEnd(Peer &peer, const PeerEnd &e)
{
	Port *far = crossing(peer, e.to, e.from);
	if (!far) {
		peer.bad++;
		return;
	}
	subnet_.farEndReported(*far, e.end);
}

void PeerLinks::gotPacket(Peer &peer, const PeerPacket &p)
{
	Port *far = crossing(peer, p.to, p.from);
	fabric::Packet pkt;
	if (!far || !fabric::decodeMadPacket(p.bytes, pkt)) {
		peer.bad++;
		return;
	}
	peer.packetsIn++;
	subnet_.arriveFromFar(*far, std::move(pkt), p.hops);
}

void PeerLinks::sendEnd(Peer &peer, const Port &local, const Port &far)
{
	if (!peer.conn)
		return; /* it gets all of them when it comes up */
	fabric::CableEnd end = fabric::cableEndOf(local);
	peer.conn->sendSealed(PeerMsg::End, encodeEnd({ idOf(local), idOf(far), end }));
}

void PeerLinks::endChanged(const Port &local, const Port &far)
{
	if (Peer *peer = ownerOf(*far.node))
		sendEnd(*peer, local, far);
}

void PeerLinks::transmitData(const Port &far, fabric::DataPackets packets, unsigned hops, fabric::OnWire onWire)
{
	Peer *peer = ownerOf(*far.node);
	if (!peer || !peer->conn || !far.peer || packets.size() > kPeerMaxDataPackets) {
		if (peer)
			peer->dropped += packets.size();
		if (onWire)
			boost::asio::post(io_, [fn = std::move(onWire)] { fn(false); });
		return;
	}
	Conn &c = *peer->conn;
	const auto count = static_cast<uint32_t>(packets.size());
	for (uint32_t i = 0; i < count; i++)
		c.sendSealed(
			PeerMsg::Data,
			encodeData({ idOf(*far.peer), idOf(far), static_cast<uint8_t>(hops), i, count, packets[i] }));
	if (onWire)
		c.pendingOnWire.push_back(std::move(onWire));
	peer->packetsOut += count;
}

void PeerLinks::transmit(const Port &far, const fabric::Packet &pkt, unsigned hops)
{
	Peer *peer = ownerOf(*far.node);
	if (!peer)
		return;
	if (!peer->conn || !far.peer) {
		peer->dropped++; /* the connection went under it: the cable is going down */
		return;
	}
	std::vector<uint8_t> bytes = fabric::encodeMadPacket(pkt);
	peer->conn->sendSealed(PeerMsg::Packet,
			       encodePacket({ idOf(*far.peer), idOf(far), static_cast<uint8_t>(hops), bytes }));
	peer->packetsOut++;
}

nlohmann::ordered_json PeerLinks::status() const
{
	nlohmann::ordered_json peers = nlohmann::ordered_json::array();
	for (const auto &p : peers_) {
		if (!p)
			continue;
		size_t up = 0;
		for (const Port *local : p->cables)
			up += local->linkUp();
		nlohmann::ordered_json j = { { "host", p->name },
					     { "addr", p->addr },
					     { "state",
					       p->conn             ? "up"
						       : p->dialer ? "dialling"
								   : "waiting" },
					     { "cables", p->cables.size() },
					     { "cables_up", up },
					     { "packets_out", p->packetsOut },
					     { "packets_in", p->packetsIn },
					     { "bad_messages", p->bad },
					     { "packets_dropped", p->dropped },
					     { "connections", p->ups } };
		if (!p->conn && !p->lastError.empty())
			j["last_error"] = p->lastError;
		peers.push_back(std::move(j));
	}
	return { { "host", split_.hosts[size_t(me_)].name },
		 { "refused_handshakes", refusedHandshakes_ },
		 { "peers", std::move(peers) } };
}

bool readSubnetKey(const std::string &path, std::vector<uint8_t> &key, std::string &err)
{
	int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		err = path + ": " + strerror(errno);
		return false;
	}
	struct stat st {};
	fstat(fd, &st);
	if (st.st_mode & (S_IRWXG | S_IRWXO)) {
		close(fd);
		err = path + ": others than its owner may read it (chmod 600 it; the key admits hosts to the subnet)";
		return false;
	}
	key.clear();
	uint8_t buf[4096];
	ssize_t n;
	while ((n = read(fd, buf, sizeof buf)) > 0 && key.size() < 65536)
		key.insert(key.end(), buf, buf + n);
	close(fd);
	if (n < 0) {
		err = path + ": " + strerror(errno);
		return false;
	}
	while (!key.empty() && (key.back() == '\n' || key.back() == '\r'))
		key.pop_back();
	if (key.size() < 16) {
		err = path + ": a subnet key needs at least 16 bytes (e.g. head -c 32 /dev/urandom | base64 > FILE)";
		return false;
	}
	return true;
}

} /* namespace ibemu::tools */
