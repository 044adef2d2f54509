#!/usr/bin/env bash
# Prepares the VM harness: Debian's generic kernel (the cloud kernel has no
# 9p), whose modules include fuse, cuse, ib_umad, ib_uverbs and rdma_rxe,
# and a busybox initramfs that mounts the host's root read-only over 9p
# with a tmpfs overlay, mounts the working directory read-write, and runs
# one command. Idempotent: does nothing when everything is in place.
# usage: tests/vm/setup.sh [HARNESS_DIR]   (default: build-vm in the repo)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
dir=${1:-${IBEMU_VM_DIR:-$(cd "$here/../.." && pwd)/build-vm}}
mkdir -p "$dir"
cd "$dir"

kver=$(apt-cache depends linux-image-amd64 2>/dev/null |
	awk '/Depends: linux-image-[0-9]/ {sub("linux-image-", "", $2); print $2; exit}')
case "$kver" in
6.1.*-amd64) ;;
*) echo "vm setup: expected a 6.1 generic kernel from linux-image-amd64, found '$kver'" >&2; exit 1 ;;
esac

if [ ! -f "kernel/boot/vmlinuz-$kver" ]; then
	rm -rf kernel ./*.deb
	apt-get download -q "linux-image-$kver-unsigned" >/dev/null 2>&1 ||
		{ apt-get update -qq && apt-get download -q "linux-image-$kver-unsigned" >/dev/null; }
	dpkg-deb -x linux-image-"$kver"-unsigned_*.deb kernel
	rm -f ./*.deb
fi
# a run that stopped before depmod (none installed yet) left no index;
# modprobe reads the .bin, which depmod writes after modules.dep
if [ ! -f "kernel/lib/modules/$kver/modules.dep.bin" ]; then
	depmod -b kernel "$kver"
fi
ln -sfn "kernel/boot/vmlinuz-$kver" vmlinuz

stamp="$kver $(sha256sum "$here/init" | cut -c1-16)"
if [ ! -f initrd.gz ] || [ "$(cat initrd.stamp 2>/dev/null)" != "$stamp" ]; then
	rm -rf initramfs
	mkdir -p initramfs/{bin,dev,proc,sys,mods,mnt/lower,mnt/rw,newroot}
	cp /bin/busybox initramfs/bin/busybox
	m=kernel/lib/modules/$kver/kernel
	: >initramfs/mods/order
	for mod in drivers/virtio/virtio_ring drivers/virtio/virtio drivers/virtio/virtio_pci_modern_dev \
		drivers/virtio/virtio_pci_legacy_dev drivers/virtio/virtio_pci fs/netfs/netfs fs/fscache/fscache \
		net/9p/9pnet net/9p/9pnet_virtio fs/9p/9p fs/overlayfs/overlay fs/fuse/fuse fs/fuse/cuse; do
		cp "$m/$mod.ko" initramfs/mods/
		basename "$mod" >>initramfs/mods/order
	done
	cp "$here/init" initramfs/init
	chmod +x initramfs/init
	(cd initramfs && find . | cpio -o -H newc --quiet | gzip -1) >initrd.gz
	echo "$stamp" >initrd.stamp
fi
