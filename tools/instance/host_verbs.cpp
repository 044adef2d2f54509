// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
#include "tools/instance/host_verbs.h"

#include <cerrno>
#include <climits>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace ibemu::tools {

namespace {

/* the first line of a file ibemud wrote */
constexpr const char *kMark = "# written by ibemud";

/* the start of a file (a driver file is a few lines) */
std::string head(const std::string &path)
{
	int fd = open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return "";
	char buf[8192];
	ssize_t n = read(fd, buf, sizeof buf);
	close(fd);
	return std::string(buf, n > 0 ? size_t(n) : 0);
}

/* whether a driver file has a line "driver /PATH/libibemu" whose
 * provider library is there */
bool namesProvider(const std::string &text)
{
	size_t at = 0;
	while (at < text.size()) {
		size_t end = text.find('\n', at);
		std::string line = text.substr(at, end == std::string::npos ? std::string::npos : end - at);
		at = end == std::string::npos ? text.size() : end + 1;
		const std::string key = "driver ";
		if (line.rfind(key, 0) != 0)
			continue;
		std::string name = line.substr(key.size());
		name.erase(name.find_last_not_of(" \t\r") + 1);
		const std::string tail = "/libibemu";
		if (name.size() > tail.size() && name[0] == '/' &&
		    name.compare(name.size() - tail.size(), tail.size(), tail) == 0 &&
		    access((name + "-rdmav34.so").c_str(), R_OK) == 0)
			return true;
	}
	return false;
}

} /* namespace */

std::string programDir()
{
	char buf[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
	if (n <= 0)
		return ".";
	buf[n] = 0;
	std::string p(buf);
	return p.substr(0, p.rfind('/'));
}

std::string providerPath()
{
	for (const std::string &p :
	     { programDir() + "/provider/libibemu", programDir() + "/../" IBEMU_LIBDIR "/libibverbs/libibemu",
	       std::string(IBEMU_PROVIDER_DIR) + "/libibemu" })
		if (access((p + "-rdmav34.so").c_str(), R_OK) == 0)
			return p;
	return "";
}

bool GlobalVerbsDriver::install(const std::string &provider, const std::string &instance, std::string &why)
{
	struct stat st;
	if (stat(dir_.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
		why = "there is no " + dir_ + " (libibverbs reads its providers there)";
		return false;
	}
	if (provider.find_first_of(" \t\n") != std::string::npos) { /* a driver line ends at a blank */
		why = "the provider's path has a blank in it: " + provider;
		return false;
	}
	std::string p = path();
	if (lstat(p.c_str(), &st) == 0) {
		std::string theirs = head(p);
		if (theirs.rfind(kMark, 0) != 0) {
			/* written by hand: it stays, and it serves only if it names
			 * a provider that is there (a link, a directory or another
			 * driver would leave the devices to nobody) */
			if (S_ISREG(st.st_mode) && namesProvider(theirs)) {
				why = p + " was there already, and stays";
				return true;
			}
			why = p + " is there already and names no ibemu provider";
			return false;
		}
		unlink(p.c_str()); /* left by a killed ibemud: one --global instance at a time */
	}
	std::string text = std::string(kMark) + " for the --global instance \"" + instance +
		"\" and removed when it stops:\n# ibemu's provider claims its devices (ibemu's "
		"docs/verbs.md)\ndriver " +
		provider + "\n";
	int fd = open(p.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (fd < 0) {
		why = "cannot create " + p + ": " + strerror(errno);
		return false;
	}
	bool ok = fchmod(fd, 0644) == 0 && /* whatever the umask */
		write(fd, text.data(), text.size()) == ssize_t(text.size());
	int e = errno;
	close(fd);
	if (!ok) {
		unlink(p.c_str());
		why = "cannot write " + p + ": " + strerror(e);
		return false;
	}
	wrote_ = text;
	return true;
}

void GlobalVerbsDriver::remove()
{
	/* what someone else put there meanwhile stays */
	if (!wrote_.empty() && head(path()) == wrote_)
		unlink(path().c_str());
	wrote_.clear();
}

bool forgetGlobalListing(const std::string &instance, const std::string &dir)
{
	const std::string p = dir + "/ibemu.driver";
	if (head(p).rfind(std::string(kMark) + " for the --global instance \"" + instance + "\" ", 0) != 0)
		return false;
	return unlink(p.c_str()) == 0;
}

bool rdmaNetlinkAnswers()
{
	/* asked of sysfs, not by opening the socket: that would make the
	 * kernel load ib_core, the very thing this warns of */
	struct stat st;
	return stat("/sys/module/ib_core", &st) == 0;
}

} /* namespace ibemu::tools */
