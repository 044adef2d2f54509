#!/usr/bin/env bash
# Installs the Debian packages ibemu needs, for one purpose:
#   build   compiling ibemu
#   demo    build + what tools/demo.sh runs (OpenSM, the diags)
#   test    demo + everything tools/test.sh needs (the VM suites' QEMU and
#           kernel tools, libibverbs programs, clang for the fuzzers)
#   package test + what building the Debian package needs
# Idempotent: when everything is present it prints nothing and touches nothing.
# usage: tools/install-deps.sh [build|demo|test|package]   (default: test)
set -euo pipefail

build=(
	g++ meson ninja-build pkg-config
	libboost-dev libspdlog-dev libfmt-dev libfuse3-dev fuse3
	libcli11-dev nlohmann-json3-dev libtomlplusplus-dev libsystemd-dev bash-completion
	libibverbs-dev libibumad-dev libseccomp-dev catch2 libpcap-dev libgraphviz-dev liburing-dev libssl-dev zlib1g-dev
)
demo=(
	infiniband-diags opensm libibumad3 util-linux procps
)
test=(
	python3 python3-yaml strace graphviz iproute2 iputils-ping man-db
	# reading captures (ibemu capture) and the live view as users do (the
	# driver: tests/e2e/web_chromium.sh, through WebDriver)
	tshark chromium chromium-driver
	ibverbs-utils ibverbs-providers rdma-core perftest rdmacm-utils
	ucx-utils libfabric-bin
	# MPI jobs: across cluster hosts (e2e-mpi, tests/tools/mpi_hosts.cpp)
	# and a two-rank job over libfabric and over UCX (e2e-mpi-ofi,
	# tests/tools/mpi_ofi_check.cpp); libopenmpi-dev builds both
	openmpi-bin libopenmpi-dev
	ibsim-utils libumad2sim0
	# the container image of the Kubernetes example, run by podman
	podman runc mmdebstrap
	# the VM suite: a real kernel with CUSE, ib_umad and rdma_rxe under QEMU
	qemu-system-x86 busybox-static cpio kmod
	# libFuzzer targets
	clang libclang-rt-14-dev
)
package=(
	debhelper dpkg-dev lintian fakeroot
)

case "${1:-test}" in
build) packages=("${build[@]}") ;;
demo) packages=("${build[@]}" "${demo[@]}") ;;
test) packages=("${build[@]}" "${demo[@]}" "${test[@]}") ;;
package) packages=("${build[@]}" "${demo[@]}" "${test[@]}" "${package[@]}") ;;
*) echo "usage: tools/install-deps.sh [build|demo|test|package]" >&2; exit 2 ;;
esac

missing=()
for p in "${packages[@]}"; do
	if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
		missing+=("$p")
	fi
done
[ ${#missing[@]} -eq 0 ] && exit 0

if [ "$(id -u)" -ne 0 ]; then
	echo "install-deps: missing packages: ${missing[*]}; run as root to install them" >&2
	exit 1
fi
echo "install-deps: installing ${#missing[@]} Debian packages: ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
# wireshark-common asks whether to install dumpcap setuid: no
echo "wireshark-common wireshark-common/install-setuid boolean false" | debconf-set-selections 2>/dev/null || true
echo "install-deps: updating the package lists" >&2
apt-get update -qq >/dev/null
echo "install-deps: downloading and installing (this can take a few minutes)" >&2
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "install-deps: done" >&2
