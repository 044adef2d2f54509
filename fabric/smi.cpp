// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// Directed-route SMP hop processing, IBA vol. 1 section 14.2.2.
#include "fabric/smi.h"

namespace ibemu::fabric::smi {

namespace {

bool validPort(uint8_t port, uint8_t numPorts)
{
	return port >= 1 && port <= numPorts;
}

Decision drop()
{
	return {};
}
Decision local()
{
	return { Action::Local, 0, 0 };
}
Decision viaPort(uint8_t port, uint8_t numPorts)
{
	if (!validPort(port, numPorts))
		return drop();
	return { Action::SendPort, port, 0 };
}
Decision viaLid(uint16_t lid)
{
	return { Action::SendLid, 0, lid };
}

} /* namespace */

bool prepareSend(ib_smp &smp, bool isSwitch, uint8_t portNum)
{
	uint8_t hop = smp.hop_ptr;
	uint8_t cnt = smp.hop_cnt;

	if (cnt >= IB_SMP_MAX_PATH_HOPS)
		return false;
	if (!smpIsResponse(smp)) {
		if (cnt && hop == 0) { /* C14-9:1: leave the source */
			smp.hop_ptr++;
			return smp.initial_path[smp.hop_ptr] == portNum;
		}
		if (hop && hop < cnt) { /* C14-9:2: intermediate hop */
			if (!isSwitch)
				return false;
			smp.hop_ptr++;
			return smp.initial_path[smp.hop_ptr] == portNum;
		}
		if (hop == cnt) { /* C14-9:3: end of the directed segment */
			smp.hop_ptr++;
			return isSwitch || smp.dr_dlid.get() == IB_LID_PERMISSIVE;
		}
		return hop == cnt + 1; /* C14-9:4, C14-9:5 */
	}
	if (cnt && hop == cnt + 1) { /* C14-13:1 */
		smp.hop_ptr--;
		return smp.return_path[smp.hop_ptr] == portNum;
	}
	if (hop >= 2 && hop <= cnt) { /* C14-13:2 */
		if (!isSwitch)
			return false;
		smp.hop_ptr--;
		return smp.return_path[smp.hop_ptr] == portNum;
	}
	if (hop == 1) { /* C14-13:3 */
		smp.hop_ptr--;
		return isSwitch || smp.dr_slid.get() == IB_LID_PERMISSIVE;
	}
	return hop == 0; /* C14-13:4, C14-13:5 */
}

Decision send(ib_smp &smp, uint8_t numPorts, uint16_t replyLid)
{
	uint8_t hop = smp.hop_ptr;
	uint8_t cnt = smp.hop_cnt;

	if (cnt >= IB_SMP_MAX_PATH_HOPS)
		return drop();
	if (!smpIsResponse(smp)) {
		if (cnt == 0)
			return hop <= 1 ? local() : drop();
		if (hop != 0)
			return drop();
		smp.hop_ptr = 1;
		return viaPort(smp.initial_path[1], numPorts);
	}
	/* A response retraces the request. If the request's last segment was
	 * LID-routed, the response first goes back to the end of the directed
	 * segment by LID. */
	if (smp.dr_dlid.get() != IB_LID_PERMISSIVE && cnt && hop == cnt + 1)
		return replyLid ? viaLid(replyLid) : drop();
	if (cnt && hop == cnt + 1) {
		smp.hop_ptr--;
		return viaPort(smp.return_path[smp.hop_ptr], numPorts);
	}
	if (cnt == 0 || hop == 0)
		return local();
	return drop();
}

Decision receive(ib_smp &smp, bool isSwitch, uint8_t inPort, uint8_t numPorts)
{
	uint8_t hop = smp.hop_ptr;
	uint8_t cnt = smp.hop_cnt;

	if (cnt >= IB_SMP_MAX_PATH_HOPS)
		return drop();
	if (!smpIsResponse(smp)) {
		if (cnt && hop == 0) /* C14-9:1: the sender should have advanced it */
			return drop();
		if (hop && hop < cnt) { /* C14-9:2: intermediate hop */
			if (!isSwitch)
				return drop();
			smp.return_path[hop] = inPort;
			smp.hop_ptr++;
			return viaPort(smp.initial_path[smp.hop_ptr], numPorts);
		}
		if (hop == cnt) { /* C14-9:3: end of the directed segment */
			if (cnt)
				smp.return_path[hop] = inPort;
			smp.hop_ptr++;
			if (smp.dr_dlid.get() == IB_LID_PERMISSIVE)
				return local();
			return isSwitch ? viaLid(smp.dr_dlid.get()) : drop();
		}
		if (hop == cnt + 1) /* C14-9:4 */
			return local();
		return drop(); /* C14-9:5 */
	}
	/* A response in its directed segment was already stepped back by the
	 * node that sent it, so hop_ptr == hop_cnt + 1 (C14-13:1) only happens
	 * on LID-routed arrival, which lidArrival() handles. */
	if (hop >= 2 && hop <= cnt) { /* C14-13:2: intermediate hop */
		if (!isSwitch)
			return drop();
		smp.hop_ptr--;
		return viaPort(smp.return_path[smp.hop_ptr], numPorts);
	}
	if (hop == 1) { /* C14-13:3: end of the directed segment */
		smp.hop_ptr = 0;
		if (smp.dr_slid.get() == IB_LID_PERMISSIVE)
			return local();
		return isSwitch ? viaLid(smp.dr_slid.get()) : drop();
	}
	if (hop == 0) /* C14-13:4 */
		return local();
	return drop(); /* C14-13:5 */
}

Decision lidArrival(ib_smp &smp, bool isSwitch, uint8_t inPort, uint8_t numPorts)
{
	uint8_t hop = smp.hop_ptr;
	uint8_t cnt = smp.hop_cnt;

	if (cnt >= IB_SMP_MAX_PATH_HOPS)
		return drop();
	if (!smpIsResponse(smp)) {
		if (hop == 0 && cnt) { /* start of the directed segment */
			smp.hop_ptr = 1;
			if (!isSwitch && smp.initial_path[1] != inPort)
				return drop();
			return viaPort(smp.initial_path[1], numPorts);
		}
		if (hop == cnt + 1 || cnt == 0) /* end of the final LID-routed segment */
			return local();
		return drop();
	}
	if (cnt && hop == cnt + 1) { /* response back at the end of the directed segment */
		if (!isSwitch)
			return drop();
		smp.hop_ptr--;
		return viaPort(smp.return_path[smp.hop_ptr], numPorts);
	}
	if (hop == 0) /* response back at DrSLID */
		return local();
	return drop();
}

} /* namespace ibemu::fabric::smi */
