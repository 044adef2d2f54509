#!/usr/bin/env bash
# The ibemu demo: builds ibemu and shows the built-in default fabric.
set -euo pipefail
cd "$(dirname "$0")/.."
tools/install-deps.sh
tools/build.sh build -Dwerror=true
echo "== the built-in default fabric (ibemu topo show)"
build/tools/ibemu topo show
