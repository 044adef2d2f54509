// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// Mount namespace set-up. /sys/class takes no new directories (mkdir there
// is EPERM, even for root) and a bind mount needs an existing target, so
// /sys/class becomes a tmpfs holding bind mounts of the host's classes next
// to the instance's own; /dev/infiniband becomes a tmpfs with links, and
// /etc/libibverbs.d one with the only provider file that applies. All of
// it in a private mount namespace (unshare(CLONE_NEWNS), / made
// recursively private), so the rest of the machine sees none of it.
#include "tools/instance/namespace.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <csignal>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <thread>
#include <unistd.h>

namespace ibemu::tools {

namespace {

int fail(std::string &err, const std::string &what)
{
	int e = errno;
	err = what + ": " + strerror(e);
	return -e;
}

int mkdirs(const std::string &path)
{
	for (size_t pos = 1; pos != std::string::npos;) {
		pos = path.find('/', pos + 1);
		std::string part = path.substr(0, pos);
		if (mkdir(part.c_str(), 0755) != 0 && errno != EEXIST)
			return -errno;
	}
	return 0;
}

int bind(const std::string &from, const std::string &to, std::string &err)
{
	if (mount(from.c_str(), to.c_str(), nullptr, MS_BIND | MS_REC, nullptr) != 0)
		return fail(err, "bind " + from + " on " + to);
	return 0;
}

/* Keeps `from` reachable at `to` (created with its parents) before
 * something is mounted over it. */
int bindAside(const std::string &from, const std::string &to, std::string &err)
{
	if (int rc = mkdirs(to)) {
		errno = -rc;
		return fail(err, "mkdir " + to);
	}
	return bind(from, to, err);
}

} /* namespace */

int enterPrivateMountNamespace(std::string &err)
{
	if (unshare(CLONE_NEWNS) != 0) {
		int rc = fail(err, "unshare(CLONE_NEWNS)");
		if (rc == -EPERM)
			err += " (a mount namespace needs CAP_SYS_ADMIN: in a container, --cap-add SYS_ADMIN)";
		return rc;
	}
	if (mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) {
		if (errno != EINVAL)
			return fail(err, "making / private");
		/* a chroot whose root is a plain directory: nothing can be made
		 * private here without a mount event reaching the host first */
		err = "the root directory is not a mount point (a chroot?), so the instance's mounts cannot be kept "
		      "private: make it one before chrooting (mount --bind DIR DIR), or use a container";
		return -EINVAL;
	}
	return 0;
}

int mountSysClass(const std::string &fsRoot, const std::vector<std::string> &names,
		  const std::vector<std::string> &merged, const std::string &scratch, std::string &err)
{
	std::string orig = scratch + "/orig-class";
	if (int rc = bindAside("/sys/class", orig, err))
		return rc;
	if (mount("tmpfs", "/sys/class", "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, "mode=0755") != 0)
		return fail(err, "tmpfs on /sys/class");
	auto listed = [](const std::vector<std::string> &v, const std::string &n) {
		return std::find(v.begin(), v.end(), n) != v.end();
	};
	DIR *d = opendir(orig.c_str());
	if (!d)
		return fail(err, "opendir " + orig);
	while (dirent *e = readdir(d)) {
		std::string n = e->d_name;
		if (n == "." || n == ".." || listed(names, n) || listed(merged, n))
			continue;
		std::string to = "/sys/class/" + n;
		if (mkdir(to.c_str(), 0755) != 0 || bind(orig + "/" + n, to, err) != 0) {
			closedir(d);
			return err.empty() ? fail(err, "mkdir " + to) : -EIO;
		}
	}
	closedir(d);
	for (const auto &n : names) {
		std::string to = "/sys/class/" + n;
		if (mkdir(to.c_str(), 0755) != 0)
			return fail(err, "mkdir " + to);
		if (int rc = bind(fsRoot + "/class/" + n, to, err))
			return rc;
	}
	for (const auto &n : merged) {
		std::string to = "/sys/class/" + n, ours = fsRoot + "/class/" + n;
		if (mkdir(to.c_str(), 0755) != 0)
			return fail(err, "mkdir " + to);
		std::vector<std::string> mine;
		if (DIR *od = opendir(ours.c_str())) {
			while (dirent *e = readdir(od))
				if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0)
					mine.push_back(e->d_name);
			closedir(od);
		}
		if (DIR *hd = opendir((orig + "/" + n).c_str())) { /* the host's, as links */
			while (dirent *e = readdir(hd)) {
				std::string en = e->d_name;
				char target[4096];
				ssize_t len = readlinkat(dirfd(hd), e->d_name, target, sizeof target - 1);
				if (en == "." || en == ".." || listed(mine, en) || len <= 0)
					continue;
				target[len] = 0;
				if (symlink(target, (to + "/" + en).c_str()) != 0) {
					closedir(hd);
					return fail(err, "symlink " + to + "/" + en);
				}
			}
			closedir(hd);
		}
		for (const auto &en : mine) {
			std::string at = to + "/" + en;
			if (mkdir(at.c_str(), 0755) != 0)
				return fail(err, "mkdir " + at);
			if (int rc = bind(ours + "/" + en, at, err))
				return rc;
		}
	}
	return 0;
}

int mountDevInfiniband(const std::vector<std::pair<std::string, std::string>> &links, const std::string &scratch,
		       std::string &err)
{
	/* A host with IB has this directory; one without gets an empty one,
	 * which it keeps: only this namespace sees what is mounted on it. */
	if (mkdir("/dev/infiniband", 0755) != 0 && errno != EEXIST)
		return fail(err, "mkdir /dev/infiniband");
	if (int rc = bindAside("/dev/infiniband", scratch + "/dev-infiniband", err))
		return rc;
	if (mount("tmpfs", "/dev/infiniband", "tmpfs", MS_NOSUID | MS_NOEXEC, "mode=0755") != 0)
		return fail(err, "tmpfs on /dev/infiniband");
	for (const auto &[name, target] : links) {
		std::string to = "/dev/infiniband/" + name;
		if (symlink(target.c_str(), to.c_str()) != 0)
			return fail(err, "symlink " + to);
	}
	return 0;
}

int mountVerbsDrivers(std::string &err)
{
	const std::string dir = "/etc/libibverbs.d", kept = "ipathverbs.driver";
	struct stat st;
	if (stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
		return 0; /* no rdma-core here: nothing to load, nothing to hide */
	std::string text; /* the file as the host has it, if it has it */
	if (FILE *f = fopen((dir + "/" + kept).c_str(), "re")) {
		char buf[512];
		for (size_t n; (n = fread(buf, 1, sizeof buf, f)) > 0;)
			text.append(buf, n);
		fclose(f);
	}
	if (mount("tmpfs", dir.c_str(), "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, "mode=0755") != 0)
		return fail(err, "tmpfs on " + dir);
	if (!text.empty()) {
		errno = 0;
		FILE *f = fopen((dir + "/" + kept).c_str(), "we");
		bool ok = f && fwrite(text.data(), 1, text.size(), f) == text.size();
		if (f)
			ok = fclose(f) == 0 && ok;
		if (!ok) {
			int e = errno ? errno : EIO;
			umount2(dir.c_str(), MNT_DETACH); /* the host's list again */
			errno = e;
			return fail(err, "writing " + dir + "/" + kept);
		}
	}
	/* read-only, so that installing a provider in the namespace fails
	 * rather than vanishing with it */
	if (mount(nullptr, dir.c_str(), nullptr, MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, nullptr) !=
	    0) {
		int e = errno;
		umount2(dir.c_str(), MNT_DETACH);
		errno = e;
		return fail(err, "remounting " + dir + " read-only");
	}
	return 0;
}

void unmountSysClass(const std::string &scratch)
{
	/* a lazy unmount takes the tmpfs and every bind mount on it */
	umount2("/sys/class", MNT_DETACH);
	umount2((scratch + "/orig-class").c_str(), MNT_DETACH);
}

namespace {

/* The daemon is not dumpable for the instant it takes a caller's
 * filesystem ids (cuse_dev/caller_ids.h), and a root without
 * CAP_SYS_PTRACE (a container's) is refused its /proc files then: such a
 * refusal is tried again, for up to 100 ms. */
int openOfDaemon(const std::string &path, int flags)
{
	int fd = open(path.c_str(), flags);
	for (int i = 0; fd < 0 && errno == EACCES && i < 50; i++) {
		std::this_thread::sleep_for(std::chrono::milliseconds(2));
		fd = open(path.c_str(), flags);
	}
	return fd;
}

} /* namespace */

int joinMountNamespace(int pid, std::string &err)
{
	/* setns() puts us at the namespace's root; the daemon may live in a
	 * chroot inside it (the VM harness does that), so take its root too */
	std::string proc = "/proc/" + std::to_string(pid);
	int rootFd = openOfDaemon(proc + "/root", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (rootFd < 0)
		return fail(err, "open " + proc + "/root");
	int fd = openOfDaemon(proc + "/ns/mnt", O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		close(rootFd);
		return fail(err, "open " + proc + "/ns/mnt");
	}
	int rc = setns(fd, CLONE_NEWNS);
	int e = errno;
	close(fd);
	if (rc != 0) {
		close(rootFd);
		errno = e;
		return fail(err, "setns " + proc + "/ns/mnt");
	}
	rc = fchdir(rootFd) == 0 && chroot(".") == 0 ? 0 : -1;
	e = errno;
	close(rootFd);
	if (rc != 0) {
		errno = e;
		return fail(err, "chroot to the daemon's root");
	}
	return 0;
}

namespace {

/* The parent of process pid, as /proc says, or 0. */
int parentOf(int pid)
{
	int ppid = 0;
	if (FILE *f = fopen(("/proc/" + std::to_string(pid) + "/status").c_str(), "re")) {
		char line[256];
		while (fgets(line, sizeof line, f))
			if (strncmp(line, "PPid:", 5) == 0)
				ppid = atoi(line + 5);
		fclose(f);
	}
	return ppid;
}

} /* namespace */

int joinHostNamespaces(int daemonPid, int holder, std::string &err)
{
	/* one process throughout: the pidfd names it, and it is checked to be
	 * alive after the last look at it by pid, so no pid reused meanwhile
	 * could be another's */
	int pidfd = static_cast<int>(syscall(SYS_pidfd_open, holder, 0));
	if (pidfd < 0 && errno != ESRCH)
		return fail(err, "pidfd_open of the holder " + std::to_string(holder));
	if (pidfd < 0 || parentOf(holder) != daemonPid) {
		if (pidfd >= 0)
			close(pidfd);
		err = "no holder";
		return -ESRCH;
	}
	/* setns() puts us at the namespace's root; the daemon may live in a
	 * chroot inside it (the VM harness does), and its holder with it */
	std::string proc = "/proc/" + std::to_string(holder);
	int rootFd = openOfDaemon(proc + "/root", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	int rc = rootFd < 0 ? fail(err, "open " + proc + "/root") : 0;
	if (rc == 0 && setns(pidfd, CLONE_NEWNET | CLONE_NEWNS | CLONE_NEWUTS) != 0)
		rc = fail(err, "setns to the namespaces of the holder " + std::to_string(holder));
	if (rc == 0 && syscall(SYS_pidfd_send_signal, pidfd, 0, nullptr, 0u) != 0) {
		err = "no holder";
		rc = -ESRCH;
	}
	if (rc == 0 && (fchdir(rootFd) != 0 || chroot(".") != 0))
		rc = fail(err, "chroot to the holder's root");
	if (rootFd >= 0)
		close(rootFd);
	close(pidfd);
	return rc;
}

} /* namespace ibemu::tools */
