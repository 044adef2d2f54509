// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
#include "tools/observe/shared_library.h"

#include <dlfcn.h>

namespace ibemu::tools {

SharedLibrary::SharedLibrary(const char *soname)
{
	/* RTLD_LOCAL: its symbols are ours to look up, not the program's */
	handle_ = dlopen(soname, RTLD_NOW | RTLD_LOCAL);
	if (!handle_)
		error_ = dlerror();
}

void *SharedLibrary::lookup(const char *name)
{
	if (!handle_)
		return nullptr;
	dlerror();
	void *fn = dlsym(handle_, name);
	if (!fn) {
		const char *why = dlerror();
		error_ = why ? why : std::string(name) + ": no such function";
	}
	return fn;
}

} /* namespace ibemu::tools */
