// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// Fuzz target: the kernel-RMPP engine (emu/mad_rmpp.cpp), receiver and
// sender, behind a umad file.
//
// Each input gets a fresh fuzz::Fixture and one umad file on host2 with an
// RMPP agent (rmpp_version 1) for the SA class or a vendor range-2 class
// with an OUI. MADs "from host1" are injected into the fabric at host1's
// port (fabric::Subnet::send, LRH from host1's LID to host2's, QP1 to
// QP1): RMPP segments with fuzzed headers for the reassembly side, and
// ACKs/STOPs/ABORTs for the file's own RMPP sends. Nothing on host1 answers
// RMPP: every ACK the sender sees comes from the input. The MAD clock moves
// when the input says (ACK timeout 2 s, reassembly 40 s, keep 10 s).
//
// Input: [setup] then up to 128 operations.
//   setup: bits 0-4: 0 SA class (0x03, version 2), otherwise vendor class
//          0x30 + (bits 0-4) - 1 with OUI 0x0002c9; bit 7: register with
//          IB_USER_MAD_USER_RMPP (the agent then sees raw segments)
//   0 inject [method][tid][rmpp version][type][flags][status][seg be32]
//            [paylen/newwin be32][fill]: a segment or control MAD; tid bit 7
//            means "answer the file's last send": its TID, and with method
//            0 its method with the response bit flipped, as an ACK has it
//   1 inject [256 bytes] as they are
//   2 advance [ms le16] of MAD time, then run
//   3 read [count le32] from the file, consume() if it succeeded
//   4 send from the file [method][len le16][timeout le16][retries][flags][tid]:
//            method 0: GetTableResp, 1: GetTable, else as given; len bytes of
//            data (at most 16 KiB); flags bit 0: RMPP active, bit 1: to a
//            LID nobody owns
//   5 drop [mask le32]: a DATA segment leaving host2 whose number modulo 32
//            has its bit set is lost, once per bit
//   6 run the io_context until idle
//   7 close the file and open it again, registering the agent again
#include "tests/fuzz/fuzz_common.h"

#include "emu/mad_rmpp.h"

#include <array>
#include <cerrno>
#include <cstring>

using namespace ibemu;
using namespace ibemu::fabric;

namespace {

constexpr unsigned kMaxOps = 128;
constexpr uint32_t kOui = 0x0002c9;
constexpr size_t kHdr = sizeof(ib_user_mad_hdr); /* the file uses the 64-byte header */

/* the data the file sends: byte i is i * 7 + 3 (filled once, as a byte
 * loop over 16 KiB per send took a sixth of the target's time) */
const std::array<uint8_t, 16 * 1024> &sendPattern()
{
	static const std::array<uint8_t, 16 * 1024> pattern = [] {
		std::array<uint8_t, 16 * 1024> p{};
		for (size_t i = 0; i < p.size(); i++)
			p[i] = static_cast<uint8_t>(i * 7 + 3);
		return p;
	}();
	return pattern;
}

struct Harness {
	fuzz::Fixture fx;
	uint8_t mgmtClass = IB_MGMT_CLASS_SUBN_ADM;
	uint8_t classVersion = 2;
	bool userRmpp = false;
	std::unique_ptr<emu::UmadFile> file;
	uint32_t agent = 0;

	/* what the file sent last (seen on the wire) */
	uint64_t lastTid = 0;
	uint8_t lastMethod = 0;
	uint32_t dropMask = 0;

	bool vendor() const { return mgmtClass != IB_MGMT_CLASS_SUBN_ADM; }
	size_t hdrLen() const { return vendor() ? 40 : 56; }

	void open()
	{
		file = std::make_unique<emu::UmadFile>(fx.umad2());
		file->ioctl(IB_USER_MAD_ENABLE_PKEY, nullptr, 0);
		ib_user_mad_reg_req2 req{};
		req.qpn = 1;
		req.mgmt_class = mgmtClass;
		req.mgmt_class_version = classVersion;
		req.flags = userRmpp ? IB_USER_MAD_USER_RMPP : 0;
		req.oui = vendor() ? kOui : 0;
		req.rmpp_version = 1;
		for (unsigned m :
		     { unsigned(IB_MGMT_METHOD_GET), unsigned(IB_MGMT_METHOD_SET), unsigned(IB_MGMT_METHOD_SEND),
		       unsigned(IB_SA_METHOD_GET_TABLE), 0x13u, 0x14u, unsigned(IB_SA_METHOD_DELETE) })
			reinterpret_cast<uint8_t *>(req.method_mask)[m / 8] |= uint8_t(1u << (m % 8));
		if (file->ioctl(IB_USER_MAD_REGISTER_AGENT2, reinterpret_cast<uint8_t *>(&req), sizeof req) != 0)
			abort(); /* the harness's own setup */
		agent = req.id;
	}

	/* the MAD header a segment or control MAD from host1 carries */
	void header(Mad &m, uint8_t method, uint64_t tid)
	{
		ib_mad_hdr &h = *madHdr(m);
		h.base_version = 1;
		h.mgmt_class = mgmtClass;
		h.class_version = classVersion;
		h.method = method;
		h.tid = tid;
		h.attr_id = 0x11;
		if (vendor()) {
			m[37] = kOui >> 16;
			m[38] = kOui >> 8 & 0xff;
			m[39] = kOui & 0xff;
		}
	}

	void inject(const Mad &m)
	{
		Packet pkt;
		pkt.slid = fx.lid1();
		pkt.dlid = fx.lid2();
		pkt.srcQp = pkt.dstQp = IB_QP1;
		pkt.qkey = IB_QP1_QKEY;
		pkt.mad = m;
		FUZZ_TRACE("inject method 0x%02x tid 0x%llx rmpp v%u type %u flags %u status %u seg %u word %u\n", m[3],
			   (unsigned long long)madHdr(m)->tid.get(), m[24], m[25], m[26], m[27],
			   overlay<be32>(m.data() + 28)->get(), overlay<be32>(m.data() + 32)->get());
		fx.subnet.send(*fx.p1, pkt);
		fx.poll();
	}

	void injectSegment(fuzz::Input &in)
	{
		uint8_t method = in.u8();
		uint8_t tidSel = in.u8();
		Mad m{};
		uint64_t tid = 0x1000 + (tidSel & 0x7f);
		if (tidSel & 0x80) {
			tid = lastTid;
			if (method == 0)
				method = lastMethod ^ IB_MGMT_METHOD_RESP;
		}
		header(m, method, tid);
		m[24] = in.u8();
		m[25] = in.u8();
		m[26] = in.u8();
		m[27] = in.u8();
		for (int i = 0; i < 4; i++)
			m[28 + i] = in.u8();
		for (int i = 0; i < 4; i++)
			m[32 + i] = in.u8();
		uint8_t fill = in.u8();
		for (size_t i = hdrLen(); i < kMadSize; i++)
			m[i] = static_cast<uint8_t>(fill + i);
		inject(m);
	}

	void send(fuzz::Input &in)
	{
		uint8_t method = in.u8();
		size_t len = in.u16() % (16 * 1024 + 1);
		uint16_t timeout = in.u16();
		uint8_t retries = in.u8();
		uint8_t flags = in.u8();
		uint8_t tid = in.u8();
		if (!file)
			return;
		method = method == 0 ? IB_SA_METHOD_GET_TABLE_RESP : method == 1 ? IB_SA_METHOD_GET_TABLE : method;
		std::vector<uint8_t> buf(kHdr + hdrLen() + len, 0);
		ib_user_mad_hdr &h = *reinterpret_cast<ib_user_mad_hdr *>(buf.data());
		h.id = agent;
		h.qpn = 1;
		h.qkey = IB_QP1_QKEY;
		h.lid = (flags & 2) ? 0xbfff : fx.lid1();
		h.timeout_ms = timeout;
		h.retries = retries;
		Mad m{};
		header(m, method, 0x2000 + tid);
		memcpy(buf.data() + kHdr, m.data(), hdrLen());
		buf[kHdr + 24] = emu::IB_MGMT_RMPP_VERSION;
		buf[kHdr + 25] = emu::IB_MGMT_RMPP_TYPE_DATA;
		if (flags & 1)
			buf[kHdr + 26] = emu::IB_MGMT_RMPP_FLAG_ACTIVE;
		memcpy(buf.data() + kHdr + hdrLen(), sendPattern().data(), len);
		ssize_t r = file->write(buf.data(), buf.size());
		FUZZ_TRACE("send method 0x%02x, %zu bytes, timeout %u, retries %u, flags %u: %zd\n", method, len,
			   timeout, retries, flags, r);
		(void)r;
		fx.poll();
	}

	/* on every packet leaving a port: note the file's sends, lose some */
	bool watch(const Port &out, const Packet &pkt)
	{
		if (&out != fx.p2 || pkt.mad[1] != mgmtClass)
			return false;
		if (pkt.mad[25] != emu::IB_MGMT_RMPP_TYPE_DATA)
			return false;
		lastTid = madHdr(pkt.mad)->tid.get();
		lastMethod = pkt.mad[3];
		uint32_t seg = overlay<be32>(pkt.mad.data() + 28)->get();
		uint32_t bit = 1u << (seg % 32);
		bool lose = dropMask & bit;
		dropMask &= ~bit;
		FUZZ_TRACE("  out: DATA seg %u tid 0x%llx method 0x%02x%s\n", seg, (unsigned long long)lastTid,
			   lastMethod, lose ? " (lost)" : "");
		return lose;
	}
};

} /* namespace */

extern "C" int LLVMFuzzerInitialize(int *, char ***)
{
	fuzz::initOnce();
	return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fuzz::Input in(data, size);
	Harness h;
	uint8_t setup = in.u8();
	if (setup & 0x1f) {
		h.mgmtClass = static_cast<uint8_t>(IB_MGMT_CLASS_VENDOR_RANGE2_START + (setup & 0x1f) - 1);
		h.classVersion = 1;
	}
	h.userRmpp = setup & 0x80;
	h.fx.subnet.setDropFilter([&h](const Port &out, const Packet &pkt) { return h.watch(out, pkt); });
	h.open();
	std::vector<uint8_t> out;

	for (unsigned n = 0; n < kMaxOps && !in.empty(); n++) {
		switch (in.u8() & 7) {
		case 0:
			h.injectSegment(in);
			break;
		case 1: {
			Mad m;
			in.fill(m.data(), kMadSize);
			h.inject(m);
			break;
		}
		case 2:
			h.fx.advance(in.u16());
			h.fx.drain();
			break;
		case 3: {
			uint32_t count = in.u32();
			ssize_t r = h.file ? h.file->read(count, out) : -EBADF;
			FUZZ_TRACE("read(%u) = %zd: status %u, method 0x%02x, rmpp type %u status %u\n", count, r,
				   out.size() >= 8 ? out[4] | out[5] << 8 : 0,
				   out.size() > kHdr + 3 ? out[kHdr + 3] : 0,
				   out.size() > kHdr + 25 ? out[kHdr + 25] : 0,
				   out.size() > kHdr + 27 ? out[kHdr + 27] : 0);
			if (r >= 0)
				h.file->consume();
			break;
		}
		case 4:
			h.send(in);
			break;
		case 5:
			h.dropMask = in.u32();
			break;
		case 6:
			h.fx.drain();
			break;
		case 7:
			h.file.reset();
			h.open();
			break;
		}
	}
	h.fx.drain();
	h.file.reset();
	h.fx.subnet.setDropFilter(nullptr);
	return 0;
}
