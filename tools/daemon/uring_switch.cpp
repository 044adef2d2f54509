// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
#include "tools/daemon/uring_switch.h"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <fstream>
#include <unistd.h>

namespace ibemu::tools {

namespace {

constexpr const char *kParameter = "/sys/module/fuse/parameters/enable_uring";
/* host-wide like the switch; /run is root's */
constexpr const char *kLockFile = "/run/ibemu-fuse-uring.lock";
constexpr char kMark[] = "ibemu"; /* the lock file says: ibemu turned it on */

bool setParameter(const char *v)
{
	std::ofstream f(kParameter);
	f << v << '\n';
	f.flush();
	return static_cast<bool>(f);
}

/* POSIX record locks on one byte of the lock file: byte 0 is held shared
 * by every instance that holds the switch, byte 1 exclusively while one
 * decides (turning the switch on, or off as the last holder), so the two
 * decisions never interleave */
enum : off_t { kHolders = 0, kDeciding = 1 };

bool lockByte(int fd, off_t byte, short type, bool wait)
{
	struct flock l {};
	l.l_type = type;
	l.l_whence = SEEK_SET;
	l.l_start = byte;
	l.l_len = 1;
	return fcntl(fd, wait ? F_SETLKW : F_SETLK, &l) == 0;
}

bool marked(int fd)
{
	char buf[sizeof kMark] = {};
	return pread(fd, buf, sizeof buf - 1, 0) == ssize_t(sizeof kMark - 1) && !memcmp(buf, kMark, sizeof kMark - 1);
}

} /* namespace */

std::string UringSwitch::state()
{
	std::ifstream f(kParameter);
	std::string v;
	f >> v;
	return v;
}

UringSwitch::~UringSwitch()
{
	release();
}

bool UringSwitch::hold(bool &turnedOn, std::string &why)
{
	turnedOn = false;
	int fd = open(kLockFile, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0) {
		why = std::string(kLockFile) + ": " + strerror(errno);
		return false;
	}
	if (!lockByte(fd, kDeciding, F_WRLCK, true)) {
		why = std::string("locking ") + kLockFile + ": " + strerror(errno);
		close(fd);
		return false;
	}
	if (state() != "Y") {
		if (!setParameter("Y")) {
			why = std::string("cannot write ") + kParameter + ": " + strerror(errno);
			close(fd);
			return false;
		}
		turnedOn = true;
		/* without the mark it stays on at the end: better than off too early */
		if (ftruncate(fd, 0) != 0 || pwrite(fd, kMark, sizeof kMark - 1, 0) != ssize_t(sizeof kMark - 1))
			why = std::string("cannot mark ") + kLockFile + ": " + strerror(errno);
	}
	/* never waits: byte 0 is exclusive only while its holder has byte 1 */
	if (!lockByte(fd, kHolders, F_RDLCK, true)) {
		why = std::string("locking ") + kLockFile + ": " + strerror(errno);
		close(fd);
		return false;
	}
	lockByte(fd, kDeciding, F_UNLCK, false);
	lockFd_ = fd;
	return true;
}

bool UringSwitch::release()
{
	if (lockFd_ < 0)
		return false;
	int fd = lockFd_;
	lockFd_ = -1;
	bool off = false;
	/* the last holder: no one else holds byte 0 (ours turns exclusive) */
	if (lockByte(fd, kDeciding, F_WRLCK, true) && lockByte(fd, kHolders, F_WRLCK, false) && marked(fd)) {
		off = setParameter("N");
		/* a mark left behind only makes the next last holder set N again */
		if (off && ftruncate(fd, 0) != 0)
			off = true;
	}
	close(fd);
	return off;
}

} /* namespace ibemu::tools */
