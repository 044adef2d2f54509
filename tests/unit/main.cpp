// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>
