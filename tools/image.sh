#!/usr/bin/env bash
# Builds the container image that the Kubernetes example runs
# (docs/examples/kubernetes/ibemu-daemonset.yaml): a root of this
# machine's Debian release made by mmdebstrap from its apt sources, with
# the packages of the libraries ibemu's binaries link or open, and ibemu installed
# from a build directory (`meson install`, under /usr/local). It is imported into
# podman as TAG and, with --archive, also saved as an OCI archive, which
# each node of a cluster loads with `ctr -n k8s.io images import FILE`.
# --include adds Debian packages (comma-separated: the stock tools a test
# runs in the image, say). Needs root, mmdebstrap and podman
# (tools/install-deps.sh test).
# usage: tools/image.sh [BUILD_DIR] [--tag TAG] [--archive FILE] [--include PKG,...]
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
build=$here/build tag=localhost/ibemu:latest archive= extra=
while [ $# -gt 0 ]; do
	case $1 in
	--tag) tag=$2 && shift ;;
	--archive) archive=$2 && shift ;;
	--include) extra=$2 && shift ;;
	-*) echo "usage: tools/image.sh [BUILD_DIR] [--tag TAG] [--archive FILE] [--include PKG,...]" >&2 && exit 2 ;;
	*) build=$1 ;;
	esac
	shift
done
for tool in mmdebstrap podman; do
	command -v $tool >/dev/null || { echo "image: needs $tool (tools/install-deps.sh test)" >&2; exit 1; }
done
[ -x "$build/tools/ibemud" ] || { echo "image: no ibemud in $build: build first (tools/build.sh $build)" >&2; exit 1; }

work=$(mktemp -d /tmp/ibemu-image.XXXXXX)
trap 'rm -rf "$work"' EXIT
meson install -C "$build" --no-rebuild --quiet --strip --destdir "$work/dest" >/dev/null

# The packages of every library the installed binaries link or open when
# needed (libpcap, Graphviz: tools/observe/sonames.h), as this machine resolves
# them (the image is the same Debian release); and fuse3, whose
# fusermount3 libfuse falls back to where mount(2) is refused.
# (ldd fails on the installed scripts, ibemu-rsh: not dynamic executables,
# which the image's shell runs; the binaries' lines are what counts)
libs=$({ find "$work/dest" -type f -perm -u+x -exec ldd {} + 2>/dev/null || true; } |
	awk '$2 == "=>" && $3 ~ /^\// {print $3}')
opened=$(sed -n 's/^#define IBEMU_[A-Z]*_SONAME "\(.*\)"$/\1/p' "$build/tools/observe/sonames.h")
[ -n "$opened" ] || { echo "image: no sonames in $build/tools/observe/sonames.h" >&2; exit 1; }
cache=$(ldconfig -p)
for soname in $opened; do
	lib=$(awk -v s="$soname" '$1 == s && !found {print $NF; found = 1} END {exit !found}' <<<"$cache") ||
		{ echo "image: $soname is not installed" >&2; exit 1; }
	libs+=$'\n'$lib
done
packages=(fuse3)
[ -n "$extra" ] && IFS=, read -ra more <<<"$extra" && packages+=("${more[@]}")
while read -r lib; do
	pkg=$(dpkg -S "$lib" 2>/dev/null || dpkg -S "$(realpath "$lib")" 2>/dev/null || dpkg -S "/usr$lib" 2>/dev/null) ||
		{ echo "image: no Debian package has $lib" >&2; exit 1; }
	pkg=${pkg%%:*} # "a, b: PATH" when two packages ship it: the first
	packages+=("${pkg%%,*}")
done < <(sort -u <<<"$libs")
include=$(printf '%s\n' "${packages[@]}" | sort -u | paste -sd,)

# this machine's release and apt sources (a mirror or proxy it uses)
release=$(. /etc/os-release && echo "$VERSION_CODENAME")
sources=()
for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources; do
	[ -s "$f" ] && sources+=("$f")
done
echo "image: a $release root with $include" >&2
# mmdebstrap mounts /proc, /sys and /dev files in its root: in a mount
# namespace of its own, they go with it however it ends
TMPDIR=$work unshare --mount --propagation private \
	mmdebstrap --quiet --variant=essential --include="$include" \
	--customize-hook="sync-in '$work/dest' /" "$release" "$work/root.tar" "${sources[@]}"
podman import --quiet \
	--change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
	--change 'CMD ["ibemud", "--help"]' \
	--message "ibemu $(git -C "$here" describe --always --dirty 2>/dev/null || echo unknown)" \
	"$work/root.tar" "$tag" >/dev/null
echo "image: $tag" >&2
if [ -n "$archive" ]; then
	podman save --quiet --format oci-archive -o "$archive" "$tag"
	echo "image: saved as $archive" >&2
fi
