// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
#include "tools/instance/instance.h"

#include "fabric/types.h"

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <sys/stat.h>
#include <unistd.h>

namespace ibemu::tools {

namespace {

std::string parentOf(const std::string &path)
{
	return path.substr(0, path.rfind('/'));
}

/* The parent must not let anyone else replace our directory: neither
 * through its permissions nor by being someone else's symbolic link (they
 * could point it elsewhere at any time). */
bool parentSafe(const std::string &dir, std::string &err)
{
	struct stat st;
	if (lstat(dir.c_str(), &st) != 0) {
		err = dir + ": " + strerror(errno);
		return false;
	}
	if (S_ISLNK(st.st_mode) && st.st_uid != 0 && st.st_uid != geteuid()) {
		err = dir + " is a symbolic link of another user (uid " + std::to_string(st.st_uid) +
			"): refusing to run there";
		return false;
	}
	if (stat(dir.c_str(), &st) != 0) {
		err = dir + ": " + strerror(errno);
		return false;
	}
	if (!S_ISDIR(st.st_mode)) {
		err = dir + " is not a directory";
		return false;
	}
	bool othersWrite = (st.st_mode & S_IWOTH) || ((st.st_mode & S_IWGRP) && st.st_gid != getegid());
	if (st.st_uid != 0 && st.st_uid != geteuid()) {
		err = dir + " belongs to another user (uid " + std::to_string(st.st_uid) + "): refusing to run there";
		return false;
	}
	if (othersWrite && !(st.st_mode & S_ISVTX)) {
		err = dir + " is writable by other users and not sticky: refusing to run there";
		return false;
	}
	return true;
}

bool dirSafe(const std::string &dir, std::string &err)
{
	struct stat st;
	if (lstat(dir.c_str(), &st) != 0) {
		err = dir + ": " + strerror(errno);
		return false;
	}
	if (S_ISLNK(st.st_mode)) {
		err = dir + " is a symbolic link: refusing it (remove it, or choose another IBEMU_RUN_DIR)";
		return false;
	}
	if (!S_ISDIR(st.st_mode)) {
		err = dir + " is not a directory";
		return false;
	}
	if (st.st_uid != geteuid()) {
		err = dir + " belongs to uid " + std::to_string(st.st_uid) + ", not to us: refusing it";
		return false;
	}
	if (st.st_mode & (S_IWGRP | S_IWOTH)) {
		err = dir + " is writable by other users: refusing it";
		return false;
	}
	return true;
}

} /* namespace */

std::string defaultInstance()
{
	const char *e = getenv("IBEMU_INSTANCE");
	return e && *e ? e : "default";
}

bool makeInstance(const std::string &name, Instance &out, std::string &err)
{
	if (!fabric::isPathName(name)) {
		err = "instance names use letters, digits, '.', '_' and '-', start with a letter or digit, and have "
		      "at most 64 characters: \"" +
			name + "\"";
		return false;
	}
	const char *env = getenv("IBEMU_RUN_DIR");
	std::string base = env && *env ? env : "/run/ibemu";
	if (base.front() != '/') { /* the daemon and its links need an absolute path */
		char cwd[PATH_MAX];
		if (!getcwd(cwd, sizeof cwd)) {
			err = std::string("IBEMU_RUN_DIR is relative and the current directory is unknown: ") +
				strerror(errno);
			return false;
		}
		base = std::string(cwd) + "/" + base;
	}
	while (base.size() > 1 && base.back() == '/')
		base.pop_back();
	out.name = name;
	out.runDir = base + "/" + name;
	return true;
}

bool prepareRunDir(const Instance &inst, std::string &err)
{
	std::string base = parentOf(inst.runDir);
	if (mkdir(base.c_str(), 0755) != 0 && errno != EEXIST) {
		err = "cannot create " + base + ": " + strerror(errno);
		return false;
	}
	if (!parentSafe(base, err))
		return false;
	if (mkdir(inst.runDir.c_str(), 0755) != 0 && errno != EEXIST) {
		err = "cannot create " + inst.runDir + ": " + strerror(errno);
		return false;
	}
	return dirSafe(inst.runDir, err);
}

bool trustedRunDir(const Instance &inst, std::string &err)
{
	return parentSafe(parentOf(inst.runDir), err) && dirSafe(inst.runDir, err);
}

bool removeRunDir(const Instance &inst, std::string &err)
{
	if (!trustedRunDir(inst, err))
		return false;
	/* never descend into a mount (a killed --global daemon leaves its
	 * FUSE mount and bind mounts of host directories behind) */
	std::ifstream mounts("/proc/self/mountinfo");
	std::string line;
	while (std::getline(mounts, line)) {
		std::istringstream f(line);
		std::string id, parent, dev, root, point;
		f >> id >> parent >> dev >> root >> point;
		if (point == inst.runDir || point.compare(0, inst.runDir.size() + 1, inst.runDir + "/") == 0) {
			err = "not removing " + inst.runDir + ": " + point + " is still mounted (umount it first)";
			return false;
		}
	}
	/* remove_all removes symbolic links, never what they point to */
	std::error_code ec;
	std::filesystem::remove_all(inst.runDir, ec);
	if (ec) {
		err = "cannot remove " + inst.runDir + ": " + ec.message();
		return false;
	}
	return true;
}

int runningPid(const Instance &inst, std::string *err)
{
	int fd = open(inst.pidFile().c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		if (err && errno == EACCES)
			*err = "instance \"" + inst.name + "\" is root's: " + inst.pidFile() +
				" is readable by root only, so only root can see or control it (sudo ibemu ...)";
		return 0;
	}
	/* who holds the daemon's lock? (F_GETLK reports a conflicting holder) */
	struct flock fl {};
	fl.l_type = F_WRLCK;
	fl.l_whence = SEEK_SET;
	int holder = fcntl(fd, F_GETLK, &fl) == 0 && fl.l_type != F_UNLCK ? fl.l_pid : 0;
	char buf[32] = {};
	ssize_t n = read(fd, buf, sizeof buf - 1);
	close(fd);
	int pid = n > 0 ? atoi(buf) : 0;
	if (pid <= 0 || pid != holder)
		return 0;
	std::string trustErr;
	if (!trustedRunDir(inst, trustErr)) {
		if (err)
			*err = trustErr;
		return 0;
	}
	std::ifstream comm("/proc/" + std::to_string(pid) + "/comm");
	std::string c;
	comm >> c;
	return c == "ibemud" ? pid : 0;
}

int lockPidFile(const Instance &inst, int &holder, std::string &err)
{
	holder = 0;
	int fd = open(inst.pidFile().c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0) {
		err = "cannot create " + inst.pidFile() + ": " + strerror(errno);
		return -1;
	}
	struct flock fl {};
	fl.l_type = F_WRLCK;
	fl.l_whence = SEEK_SET;
	if (fcntl(fd, F_SETLK, &fl) != 0) {
		int e = errno;
		struct flock q {};
		q.l_type = F_WRLCK;
		q.l_whence = SEEK_SET;
		if (fcntl(fd, F_GETLK, &q) == 0 && q.l_type != F_UNLCK)
			holder = q.l_pid;
		err = "cannot lock " + inst.pidFile() + ": " + strerror(e);
		close(fd);
		return -1;
	}
	std::string pid = std::to_string(getpid()) + "\n";
	if (ftruncate(fd, 0) != 0 || pwrite(fd, pid.data(), pid.size(), 0) != ssize_t(pid.size())) {
		err = "cannot write " + inst.pidFile() + ": " + strerror(errno);
		close(fd);
		return -1;
	}
	return fd;
}

} /* namespace ibemu::tools */
