// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// Asio's "custom handler tracking" hooks, used for one thing: every handler
// any io_context runs, runs under the state lock (state_lock.h). meson.build
// names this header in BOOST_ASIO_CUSTOM_HANDLER_TRACKING for every target,
// so all of Asio (and Beast) in the process sees the same definitions.
//
// Asio brackets each handler call with INVOCATION_BEGIN and
// INVOCATION_END in one block; the guard declared by BEGIN ends with that
// block, exceptions included. The other hooks track nothing.
#pragma once

#include "state_lock.h" /* this header is included by path, from anywhere */

#define BOOST_ASIO_INHERIT_TRACKED_HANDLER
#define BOOST_ASIO_ALSO_INHERIT_TRACKED_HANDLER
#define BOOST_ASIO_HANDLER_TRACKING_INIT (void)0
#define BOOST_ASIO_HANDLER_LOCATION(args) (void)0
#define BOOST_ASIO_HANDLER_CREATION(args) (void)0
#define BOOST_ASIO_HANDLER_COMPLETION(args) (void)0
#define BOOST_ASIO_HANDLER_INVOCATION_BEGIN(args) ::ibemu::fabric::StateGuard ibemu_state_guard_
#define BOOST_ASIO_HANDLER_INVOCATION_END (void)0
#define BOOST_ASIO_HANDLER_OPERATION(args) (void)0
#define BOOST_ASIO_HANDLER_REACTOR_REGISTRATION(args) (void)0
#define BOOST_ASIO_HANDLER_REACTOR_DEREGISTRATION(args) (void)0
#define BOOST_ASIO_HANDLER_REACTOR_READ_EVENT 1
#define BOOST_ASIO_HANDLER_REACTOR_WRITE_EVENT 2
#define BOOST_ASIO_HANDLER_REACTOR_ERROR_EVENT 4
#define BOOST_ASIO_HANDLER_REACTOR_EVENTS(args) (void)0
#define BOOST_ASIO_HANDLER_REACTOR_OPERATION(args) (void)0
