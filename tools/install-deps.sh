#!/usr/bin/env bash
# Installs every Debian package ibemu needs to build, test and run its demo.
# Idempotent: when everything is present it prints nothing and touches nothing.
set -euo pipefail

packages=(
  # build
  g++ meson ninja-build pkg-config
  libboost-dev libspdlog-dev libfmt-dev catch2 libfuse3-dev fuse3
  libcli11-dev nlohmann-json3-dev
  # stock tools the emulator is tested against
  infiniband-diags opensm ibverbs-utils ibverbs-providers libibverbs-dev rdma-core libibumad3 libibumad-dev
  ibsim-utils libumad2sim0
  # test and benchmark helpers
  util-linux procps graphviz python3 strace
  # the VM suite: a real kernel with CUSE, ib_umad and rdma_rxe under QEMU
  qemu-system-x86 busybox-static cpio kmod iproute2
)

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
echo "install-deps: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq >/dev/null
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
