// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// Cables to the other hosts' daemons (tools/peer/peer_links.h): the peers
// this host shares cables with, listening for them and dialling them, a
// connection attached once it has authenticated and detached when it goes,
// and what `ibemu status` shows of them; the subnet key file.
// One connection's handshake is tools/peer/peer_conn.cpp, what it carries
// tools/peer/peer_traffic.cpp.
#include "tools/peer/peer_conn.h"

#include "tools/peer/handshake_slots.h"

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/v6_only.hpp>
#include <spdlog/spdlog.h>

#include <fcntl.h>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <sstream>

namespace ibemu::tools {

using boost::asio::ip::tcp;
using fabric::Port;

namespace {

constexpr auto kLastRedial = std::chrono::seconds(2);
/* connections we accepted that are still in their handshake, at most,
 * in all and from one address: a new one displaces one of them */
constexpr HandshakeLimits kHandshakeLimits{ 32, 4 };
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

/* An address as the source of connections: IPv4 also when it comes
 * IPv4-mapped, through a socket listening on IPv6 */
std::string sourceOf(const tcp::endpoint &ep)
{
	auto a = ep.address();
	if (a.is_v6() && a.to_v6().is_v4_mapped())
		a = boost::asio::ip::make_address_v4(boost::asio::ip::v4_mapped, a.to_v6());
	return a.to_string();
}

/* "192.0.2.1:7700", "[2001:db8::1]:7700" */
std::string endpointText(const tcp::endpoint &ep)
{
	const std::string a = ep.address().to_string();
	return (ep.address().is_v6() ? "[" + a + "]" : a) + ":" + std::to_string(ep.port());
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
	/* by default the addr= of this host in the file, its first address
	 * when it is a name; every address only when asked (0.0.0.0, [::]) */
	const bool fromFile = listenAddr.empty();
	const std::string addr = fromFile ? split_.hosts[size_t(me_)].addr : listenAddr;
	const std::string what = (fromFile ? "this host's addr= \"" : "--listen \"") + addr + "\"";
	std::string host, port;
	if (!splitAddr(addr, host, port)) {
		err = what + " is not ADDR:PORT";
		return false;
	}
	boost::system::error_code ec;
	tcp::resolver resolver(io_);
	auto found = resolver.resolve(host, port, boost::asio::ip::resolver_base::numeric_service, ec);
	if (ec || found.empty()) {
		err = what + ": cannot resolve it: " + ec.message();
		return false;
	}
	const tcp::endpoint ep = found.begin()->endpoint();
	boost::system::error_code notNumeric;
	boost::asio::ip::make_address(host, notNumeric);
	if (fromFile && notNumeric && ep.address().is_loopback()) { /* a name in /etc/hosts, say */
		err = what + " resolves here to " + ep.address().to_string() +
		      ", a loopback address no other host reaches: put this host's address in the file, or give "
		      "--listen ADDR:PORT (0.0.0.0:PORT for every address)";
		return false;
	}
	listening_ = endpointText(ep);
	acceptor_.open(ep.protocol(), ec);
	if (!ec && ep.address().is_v6() && ep.address().is_unspecified())
		acceptor_.set_option(boost::asio::ip::v6_only(false), ec);
	if (!ec)
		acceptor_.set_option(tcp::acceptor::reuse_address(true), ec);
	if (!ec)
		acceptor_.bind(ep, ec);
	if (!ec)
		acceptor_.listen(boost::asio::socket_base::max_listen_connections, ec);
	if (ec) {
		err = "cannot listen on " + listening_ + " (" + what + "): " + ec.message();
		if (fromFile && ec == boost::system::errc::address_not_available)
			err += " (not an address of this host: behind NAT, give --listen ADDR:PORT)";
		return false;
	}
	size_t cables = 0;
	for (const auto &p : peers_)
		cables += p ? p->cables.size() : 0;
	spdlog::info("peers: host \"{}\", listening on {}; {} cables to {} hosts", split_.hosts[size_t(me_)].name, listening_,
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
		if (!ec) /* not inherited by what the daemon runs */
			fcntl(s.native_handle(), F_SETFD, FD_CLOEXEC);
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
		boost::system::error_code gone;
		const tcp::endpoint from = s.remote_endpoint(gone);
		if (!gone) /* else reset before we saw it */
			admit(std::move(s), sourceOf(from));
		listen();
	});
}

/* A connection accepted from `source` takes its place in the handshake
 * table, displacing one that waits there if the table or the source's
 * share of it is full (tools/peer/handshake_slots.h) */
void PeerLinks::admit(tcp::socket s, std::string source)
{
	std::vector<HandshakeSlot> slots;
	std::vector<Conn *> accepted;
	for (const auto &c : handshakes_)
		if (!c->dialer) {
			slots.push_back({ c->source, c->state == Conn::State::Auth });
			accepted.push_back(c.get());
		}
	const size_t victim = handshakeToDisplace(slots, source, kHandshakeLimits);
	if (victim != kNoDisplacement) {
		const auto fromSource = std::count_if(slots.begin(), slots.end(),
						      [&](const HandshakeSlot &h) { return h.source == source; });
		accepted[victim]->close(size_t(fromSource) >= kHandshakeLimits.perSource
						? "displaced by a newer connection from " + source + " (" +
							  std::to_string(kHandshakeLimits.perSource) +
							  " handshakes from one address at most)"
						: "displaced by a newer connection (" +
							  std::to_string(kHandshakeLimits.total) +
							  " handshakes at most)",
					true);
	}
	auto c = std::make_shared<Conn>(*this, std::move(s), nullptr, std::move(source));
	handshakes_.push_back(c);
	c->begin();
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
		 { "listen", listening_ },
		 { "refused_handshakes", refusedHandshakes_ },
		 { "peers", std::move(peers) } };
}

namespace {

/* "root", or "uid 1234" for a user without a name */
std::string userName(uid_t uid)
{
	struct passwd pw {}, *found = nullptr;
	char buf[1024];
	if (getpwuid_r(uid, &pw, buf, sizeof buf, &found) == 0 && found)
		return found->pw_name;
	return std::to_string(uid);
}

/* "nobody (uid 65534)" */
std::string userText(uid_t uid)
{
	const std::string name = userName(uid);
	return name == std::to_string(uid) ? "uid " + name : name + " (uid " + std::to_string(uid) + ")";
}

} /* namespace */

bool readSubnetKey(const std::string &path, std::vector<uint8_t> &key, std::string &err)
{
	int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		err = path + ": " + strerror(errno);
		return false;
	}
	struct stat st {};
	if (fstat(fd, &st) != 0) {
		err = path + ": " + strerror(errno);
		close(fd);
		return false;
	}
	/* as ssh with its keys: whoever owns the file may change the key */
	const uid_t me = geteuid();
	if (st.st_uid != me && st.st_uid != 0) {
		close(fd);
		const std::string user = userName(me);
		err = path + ": owned by " + userText(st.st_uid) + ", who could change the key: " +
		      (me ? user + " (this daemon's user) or root" : user) + " must own it (chown " + user + " " +
		      path + ")";
		return false;
	}
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
