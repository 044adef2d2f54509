// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// IPoIB's UD QP (ipoib_verbs.c, ipoib_ib.c): made in the HCA's QPN space,
// sends of a frame (encapsulation header and packet) through the verbs data
// path as any UD SEND, and the datagrams the responder hands it.
#include "emu/ipoib.h"

#include "fabric/node.h"

#include <boost/asio/post.hpp>

#include <cerrno>
#include <cstring>

namespace ibemu::emu {

std::vector<uint8_t> Ipoib::encap(uint16_t type, std::span<const uint8_t> payload)
{
	std::vector<uint8_t> f(kIpoibEncapLen + payload.size(), 0);
	f[0] = static_cast<uint8_t>(type >> 8);
	f[1] = static_cast<uint8_t>(type);
	std::copy(payload.begin(), payload.end(), f.begin() + kIpoibEncapLen);
	return f;
}

/* ipoib_transport_dev_init() and ipoib_init_qp(): a UD QP on the port,
 * in RTS, its Q_Key the broadcast group's once joined */
void Ipoib::createQp()
{
	VerbsDevice &dev = *hca_->verbs;
	cq_ = std::make_unique<Cq>();
	cq_->cqe = 256;
	qp_ = std::make_unique<Qp>(host_.io());
	Qp &qp = *qp_;
	qp.dev = &dev;
	qp.qpType = IB_QPT_UD;
	qp.sendCq = qp.recvCq = cq_.get();
	qp.portNum = static_cast<uint8_t>(portNum_);
	const fabric::Port &p = port();
	for (size_t i = 0; i < p.pkeys.size(); i++)
		if ((p.pkeys[i] & 0x7fff) == (cfg_.pkey & 0x7fff)) {
			qp.pkeyIndex = static_cast<uint16_t>(i);
			break;
		}
	qp.state = IB_QPS_RTS;
	qp.kernelRecv = [this, alive = std::weak_ptr<bool>(alive_)](const KernelDatagram &d) {
		/* ipoib_ib_handle_rx_wc() runs from the poll loop, not in the
		 * sender's send: a copy, in a handler of its own */
		boost::asio::post(host_.io(), [this, alive, slid = d.slid, src = d.srcQp,
					       bytes = std::vector<uint8_t>(d.payload.begin(), d.payload.end())]() mutable {
			if (!alive.expired())
				received(slid, src, std::move(bytes));
		});
	};
	dev.addQp(&qp);
}

void Ipoib::destroyQp()
{
	if (!qp_)
		return;
	VerbsDevice &dev = *qp_->dev;
	dev.detachAllMcast(*qp_);
	dev.forget(*qp_);
	dev.removeQp(qp_.get());
	qp_.reset();
	cq_.reset();
}

/* ipoib_send(): one unsignaled UD SEND of the frame. A send that fails
 * (the port's MTU shrank under it) costs the frame only: the QP is put
 * back in RTS, as ipoib_qp_state_validate_work() does. */
void Ipoib::postSend(const ib_uverbs_ah_attr &ah, uint32_t dqpn, std::vector<uint8_t> frame)
{
	if (!qp_)
		return;
	SendWqe w;
	w.wr.opcode = IB_WR_SEND;
	w.wr.wr.ud.remote_qpn = dqpn;
	w.wr.wr.ud.remote_qkey = bcast_.qkey;
	w.ah = ah;
	w.isInline = true;
	w.inlineData = std::move(frame);
	qp_->sq.push_back(std::move(w));
	qp_->dev->progress(*qp_);
	if (qp_->state != IB_QPS_RTS) {
		qp_->sq.clear();
		qp_->state = IB_QPS_RTS;
	}
	cq_->queue.clear();
	cq_->overflowed = false;
}

/* ipoib_ib_handle_rx_wc(): the header off, then IPv4 up the stack or ARP
 * here; the port's own broadcasts, which the HCA loops back, are dropped */
void Ipoib::received(uint16_t slid, uint32_t srcQp, std::vector<uint8_t> payload)
{
	if (!qp_ || payload.size() < kIpoibEncapLen)
		return;
	if (srcQp == qp_->qpn && slid == port().lid)
		return;
	const uint16_t type = static_cast<uint16_t>(payload[0] << 8 | payload[1]);
	std::span<const uint8_t> body(payload.data() + kIpoibEncapLen, payload.size() - kIpoibEncapLen);
	/* a TUN without packet information takes the protocol from the first
	 * nibble: what is no IPv4 header is not handed up as one */
	if (type == kEtherTypeIpv4 && joined_ && body.size() >= 20 && (body[0] >> 4) == 4)
		deliver_(body);
	else if (type == kEtherTypeArp && joined_)
		arpReceived(body);
}

} /* namespace ibemu::emu */
