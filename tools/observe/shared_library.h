// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
#pragma once

// A library opened with dlopen() by the code that needs it, instead of
// being linked. ibemu's CLI starts for every `ibemu exec`, and linking
// libpcap (for `capture`) and Graphviz (for pictures) made every start
// load them and the dozen libraries they need (D-Bus, libsystemd,
// libgcrypt, Expat...): in the QEMU guest of the VM suite that was about a
// fifth of what starting a program under `ibemu exec` costs
// (docs/performance.md, "Starting a program under ibemu exec").
//
// The library is named by its soname, which meson reads from the library
// it compiled against (tools/meson.build); dlopen() finds that name where
// the dynamic loader would have found the linked library. Each function is
// looked up by name into a pointer typed from its declaration in the
// library's header:
//
//   struct Calls { decltype(&::pcap_close) pcap_close = nullptr; };
//   SharedLibrary lib("libpcap.so.0.8");
//   Calls c;
//   bool ok = IBEMU_BIND(lib, c, pcap_close);
//
// Once loaded, the library stays for the life of the process, as a linked
// one would: what it made (Graphviz's context, its plugins' caches) may
// outlive the SharedLibrary, so it is never dlclose()d.

#include <string>

namespace ibemu::tools {

class SharedLibrary {
public:
	explicit SharedLibrary(const char *soname);
	SharedLibrary(const SharedLibrary &) = delete;
	SharedLibrary &operator=(const SharedLibrary &) = delete;

	/* Sets fn to the library's function `name` (looked up in the library
	 * and the libraries it needs); false, with error(), if it has none or
	 * the library did not load. */
	template <typename Fn> bool bind(Fn *&fn, const char *name)
	{
		fn = reinterpret_cast<Fn *>(lookup(name));
		return fn != nullptr;
	}
	/* why the library or a function is missing: dlerror()'s words */
	const std::string &error() const { return error_; }

private:
	void *lookup(const char *name);

	void *handle_ = nullptr;
	std::string error_;
};

/* binds table.fn to the library's function of the same name */
#define IBEMU_BIND(lib, table, fn) (lib).bind((table).fn, #fn)

} /* namespace ibemu::tools */
