// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// `ibemu capture`: the packets crossing a running instance's cables, as a
// capture file Wireshark reads or as one line per packet for people.
//
// The daemon sends each packet's bytes (tools/observe/packet_capture.h); this
// side writes them as pcap with LINKTYPE_ERF, one ERF record of type 21
// (InfiniBand) per packet, which is what Mellanox's ibdump writes and what
// Debian's Wireshark 4.0 decodes (it rejects LINKTYPE_INFINIBAND). The
// ERF interface number says the direction: 0 sent by the port captured
// at, 1 received by it; the loss counter, packets the daemon dropped for
// this client because it read too slowly.
#include "tools/cli/commands.h"
#include "tools/cli/control_client.h"
#include "tools/control/json_text.h"
#include "tools/instance/instance.h"
#include "tools/observe/packet_capture.h"
#include "tools/observe/packet_text.h"
#include "tools/observe/shared_library.h"
#include "tools/observe/sonames.h"

#include <nlohmann/json.hpp>
#include <pcap/pcap.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <memory>
#include <poll.h>
#include <unistd.h>
#include <vector>

namespace ibemu::tools {

namespace {

using Json = nlohmann::ordered_json;

constexpr uint8_t kErfTypeInfiniband = 21;
constexpr uint8_t kErfFlagVlen = 0x04;
constexpr size_t kErfHeaderBytes = 16;

volatile sig_atomic_t interrupted = 0;

void onSignal(int)
{
	interrupted = 1;
}

/* SIGINT and SIGTERM end the capture cleanly (the file is flushed). They
 * are blocked but while the capture waits for the daemon (ppoll), so one
 * that comes while a packet is written is seen at the next wait. `waiting`
 * gets the mask to wait with. */
void catchSignals(sigset_t &waiting)
{
	struct sigaction sa {};
	sa.sa_handler = onSignal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, nullptr);
	sigaction(SIGTERM, &sa, nullptr);
	signal(SIGPIPE, SIG_IGN); /* a reader that went away is seen at the flush */
	sigset_t block;
	sigemptyset(&block);
	sigaddset(&block, SIGINT);
	sigaddset(&block, SIGTERM);
	sigprocmask(SIG_BLOCK, &block, &waiting);
	sigdelset(&waiting, SIGINT);
	sigdelset(&waiting, SIGTERM);
}

/* The part of libpcap a capture file is written with. libpcap is opened
 * when a capture is written, not linked (tools/observe/shared_library.h). */
struct PcapCalls {
	decltype(&::pcap_open_dead) pcap_open_dead = nullptr;
	decltype(&::pcap_close) pcap_close = nullptr;
	decltype(&::pcap_geterr) pcap_geterr = nullptr;
	decltype(&::pcap_dump_open) pcap_dump_open = nullptr;
	decltype(&::pcap_dump_fopen) pcap_dump_fopen = nullptr;
	decltype(&::pcap_dump) pcap_dump = nullptr;
	decltype(&::pcap_dump_flush) pcap_dump_flush = nullptr;
	decltype(&::pcap_dump_close) pcap_dump_close = nullptr;
};

const PcapCalls *loadPcap(std::string &err)
{
	static SharedLibrary lib(IBEMU_PCAP_SONAME);
	static PcapCalls calls;
	static const bool ok = IBEMU_BIND(lib, calls, pcap_open_dead) && IBEMU_BIND(lib, calls, pcap_close) &&
		IBEMU_BIND(lib, calls, pcap_geterr) && IBEMU_BIND(lib, calls, pcap_dump_open) &&
		IBEMU_BIND(lib, calls, pcap_dump_fopen) && IBEMU_BIND(lib, calls, pcap_dump) &&
		IBEMU_BIND(lib, calls, pcap_dump_flush) && IBEMU_BIND(lib, calls, pcap_dump_close);
	if (!ok) {
		err = "libpcap is needed to write a capture file: " + lib.error();
		return nullptr;
	}
	return &calls;
}

/* pcap with ERF records, through libpcap */
class ErfWriter {
public:
	~ErfWriter()
	{
		if (dumper_)
			pc_->pcap_dump_close(dumper_);
		if (pcap_)
			pc_->pcap_close(pcap_);
	}
	bool open(const PcapCalls &pc, const std::string &path, std::string &err)
	{
		pc_ = &pc;
		pcap_ = pc_->pcap_open_dead(DLT_ERF, 65535);
		if (!pcap_) {
			err = "libpcap cannot make an ERF capture";
			return false;
		}
		dumper_ = path == "-" ? pc_->pcap_dump_fopen(pcap_, stdout) : pc_->pcap_dump_open(pcap_, path.c_str());
		if (!dumper_) {
			err = pc_->pcap_geterr(pcap_);
			return false;
		}
		return true;
	}
	/* false when the file or pipe can take no more */
	bool write(int64_t ns, bool out, uint16_t lost, const std::vector<uint8_t> &pkt)
	{
		std::vector<uint8_t> rec(kErfHeaderBytes + pkt.size());
		const uint64_t sec = uint64_t(ns) / 1000000000u, frac = uint64_t(ns) % 1000000000u;
		/* ERF time: seconds in the high 32 bits, the binary fraction below,
		 * little-endian */
		const uint64_t ts = sec << 32 | ((frac << 32) / 1000000000u);
		for (int i = 0; i < 8; i++)
			rec[i] = static_cast<uint8_t>(ts >> (8 * i));
		rec[8] = kErfTypeInfiniband;
		rec[9] = static_cast<uint8_t>((out ? 0 : 1) | kErfFlagVlen);
		auto be16 = [&](size_t at, size_t v) {
			rec[at] = static_cast<uint8_t>(v >> 8);
			rec[at + 1] = static_cast<uint8_t>(v);
		};
		be16(10, rec.size());
		be16(12, lost);
		be16(14, pkt.size());
		std::copy(pkt.begin(), pkt.end(), rec.begin() + kErfHeaderBytes);
		pcap_pkthdr h{};
		h.ts.tv_sec = static_cast<time_t>(sec);
		h.ts.tv_usec = static_cast<suseconds_t>(frac / 1000);
		h.caplen = h.len = static_cast<bpf_u_int32>(rec.size());
		pc_->pcap_dump(reinterpret_cast<u_char *>(dumper_), &h, rec.data());
		return pc_->pcap_dump_flush(dumper_) == 0;
	}

private:
	const PcapCalls *pc_ = nullptr;
	pcap_t *pcap_ = nullptr;
	pcap_dumper_t *dumper_ = nullptr;
};

struct CaptureOpts {
	std::string instance = defaultInstance();
	std::vector<std::string> ports;
	std::vector<std::string> kinds;
	bool allPorts = false;
	uint64_t count = 0;
	std::string write;
	bool text = false;
};

int runCapture(const CaptureOpts &o)
{
	const char *cmd = "ibemu capture";
	const bool text = o.text || o.write.empty();
	if (text && o.write == "-") {
		fprintf(stderr, "%s: --text and -w - would both write to standard output\n", cmd);
		return kUsage;
	}
	Json req = { { "op", "capture" } };
	if (!o.ports.empty())
		req["ports"] = o.ports;
	if (o.allPorts)
		req["all"] = true;
	if (!o.kinds.empty())
		req["kinds"] = o.kinds;
	if (o.count)
		req["count"] = o.count;

	ControlClient c;
	if (int rc = c.connect(o.instance, cmd))
		return rc;
	ErfWriter file;
	std::string err;
	const PcapCalls *pcap = o.write.empty() ? nullptr : loadPcap(err);
	if (!o.write.empty() && !pcap) {
		fprintf(stderr, "%s: %s\n", cmd, err.c_str());
		return 1;
	}
	if (pcap && !file.open(*pcap, o.write, err)) {
		fprintf(stderr, "%s: %s: %s\n", cmd, o.write.c_str(), err.c_str());
		return kUsage;
	}
	sigset_t waiting;
	catchSignals(waiting);
	Json reply;
	if (!c.call(req, reply, cmd))
		return kNotRunning;
	if (!reply.value("ok", false)) {
		fprintf(stderr, "%s: %s\n", cmd, reply.value("error", std::string("refused")).c_str());
		return kRefused;
	}
	fprintf(stderr, "%s: capturing at %zu ports of instance \"%s\"%s\n", cmd, reply.value("ports", size_t(0)),
		o.instance.c_str(), o.count ? "" : "; ^C to stop");

	PacketText decoder;
	uint64_t packets = 0, lostSeen = 0;
	int64_t first = -1;
	std::vector<uint8_t> pkt;
	Json rec;
	int rc = 0;
	/* Standard output is watched too when the capture goes there: a pipe
	 * whose reader went away reports POLLERR, so `| head` ends the capture
	 * at once, not at a next packet that may never come; so does a
	 * terminal that hung up (POLLHUP). Asked for no events, a file or a
	 * live terminal reports none. Not watched when it is not open (or is
	 * the control socket, standard output having been closed). */
	bool watchStdout = (text || o.write == "-") && c.fd() != STDOUT_FILENO;
	while (!interrupted) {
		if (!c.hasLine()) {
			pollfd pfd[2] = { { c.fd(), POLLIN, 0 }, { STDOUT_FILENO, 0, 0 } };
			if (ppoll(pfd, watchStdout ? 2 : 1, nullptr, &waiting) < 0)
				continue; /* a signal: the loop's test ends it */
			if (pfd[1].revents & POLLNVAL) {
				watchStdout = false;
			} else if (pfd[1].revents & (POLLERR | POLLHUP)) {
				fprintf(stderr, "%s: the reader went away\n", cmd);
				break;
			}
			if (!(pfd[0].revents & (POLLIN | POLLERR | POLLHUP)))
				continue;
		}
		int r = c.next(rec, cmd);
		if (r <= 0) {
			rc = r < 0 ? kRefused : 0;
			break;
		}
		PacketPlace at;
		if (!readRecord(rec, pkt, at)) {
			fprintf(stderr, "%s: a record without a packet from the daemon: %s\n", cmd,
				jsonText(rec).c_str());
			continue;
		}
		const int64_t t = rec.value("t", int64_t(0));
		const bool out = at.out;
		const uint64_t lost = rec.value("lost", uint64_t(0));
		const uint64_t newlyLost = lost - std::min(lost, lostSeen);
		lostSeen = lost;
		if (first < 0)
			first = t;
		packets++;
		if (!o.write.empty() &&
		    !file.write(t, out, static_cast<uint16_t>(std::min<uint64_t>(newlyLost, 0xffff)), pkt)) {
			fprintf(stderr, "%s: %s: %s\n", cmd, o.write.c_str(),
				o.write == "-" ? "the reader went away" : strerror(errno));
			rc = o.write == "-" ? 0 : kRefused;
			break;
		}
		if (text) {
			if (newlyLost)
				printf("(%llu packets lost: this trace was read too slowly)\n",
				       static_cast<unsigned long long>(newlyLost));
			printf("%11.6f %s %s %s  %s\n", double(t - first) / 1e9, at.port.c_str(), out ? "→" : "←",
			       at.peer.empty() ? "-" : at.peer.c_str(), decoder.describe(pkt, at).c_str());
			fflush(stdout);
		}
	}
	fprintf(stderr, "%s: %llu packets captured, %llu lost\n", cmd, static_cast<unsigned long long>(packets),
		static_cast<unsigned long long>(lostSeen));
	return rc;
}

} /* namespace */

void addCaptureCommands(CLI::App &app, int &exitCode)
{
	auto o = std::make_shared<CaptureOpts>();
	CLI::App *c = app.add_subcommand("capture", "Capture the packets on a running instance's cables");
	c->add_option("--instance", o->instance, "Instance name (default: $IBEMU_INSTANCE, else \"default\")");
	c->add_option("--port", o->ports,
		      "Capture at NODE:PORT (or every port of NODE); repeatable. Default: every CA port");
	c->add_flag("--all-ports", o->allPorts, "Capture at every port, switch ports too");
	c->add_option("--filter", o->kinds, "Only these: smp, sa, pma, cm, gmp, mad, data; repeatable")->delimiter(',');
	c->add_option("-c,--count", o->count, "Stop after this many packets")->check(CLI::PositiveNumber);
	c->add_option("-w,--write", o->write, "Write a pcap (ERF) capture to FILE; '-' for standard output");
	c->add_flag("--text", o->text, "Print one decoded line per packet (the default without -w)");
	c->callback([o, &exitCode] { exitCode = runCapture(*o); });
}

} /* namespace ibemu::tools */
