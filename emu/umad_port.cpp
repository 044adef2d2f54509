// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// umad/issm device state of one port: the issm claim and device removal.
#include "emu/umad_port.h"

#include "emu/mad_port.h"
#include "emu/umad_file.h"
#include "fabric/capability.h"
#include "fabric/subnet.h"

#include <cerrno>
#include <poll.h>

namespace ibemu::emu {

UmadPort::UmadPort(MadPort &mad, unsigned devNum, std::string ibdev)
	: mad_(mad), devNum_(devNum), ibdev_(std::move(ibdev))
{}

UmadPort::~UmadPort()
{
	kill();
}

unsigned UmadPort::portNum() const
{
	return mad_.port().num;
}

int UmadPort::issmOpen()
{
	if (dead_)
		return -ENXIO;
	if (issmHeld_)
		return -EAGAIN;
	issmHeld_ = true;
	fabric::Port &p = mad_.port();
	mad_.subnet().setCapMask(p, p.capMask | fabric::IB_PORT_SM);
	return 0;
}

void UmadPort::issmRelease()
{
	if (!issmHeld_)
		return;
	issmHeld_ = false;
	if (!dead_) {
		fabric::Port &p = mad_.port();
		mad_.subnet().setCapMask(p, p.capMask & ~fabric::IB_PORT_SM);
	}
	issmReleased();
}

void UmadPort::kill()
{
	if (dead_)
		return;
	dead_ = true;
	for (UmadFile *f : files_)
		f->killed();
	if (issmHeld_) {
		fabric::Port &p = mad_.port();
		mad_.subnet().setCapMask(p, p.capMask & ~fabric::IB_PORT_SM);
	}
	issmReleased();
}

namespace issm {
unsigned poll()
{
	return POLLIN | POLLOUT | POLLRDNORM | POLLWRNORM;
}
} /* namespace issm */

} /* namespace ibemu::emu */
