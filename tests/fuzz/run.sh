#!/usr/bin/env bash
# Runs one libFuzzer target over its seed corpus, from a scratch directory.
#
#   tests/fuzz/run.sh FUZZER SEEDS ARTIFACTS [libFuzzer options...]
#
# The scratch directory is the fuzzer's current directory: fuzz_topology
# resolves `include "FILE"` lines there, so the topology fixtures of
# tests/data/topology are copied into it (IBEMU_TOPOLOGY_DATA overrides
# where they come from). New inputs go to a corpus in the scratch directory,
# never into SEEDS; crash, leak and timeout reproducers go to ARTIFACTS.
# The per-target options (-max_len, -dict) are set here; the meson tests
# fuzz-smoke-* add -runs=N -seed=1, bench/fuzz.sh -max_total_time.
set -euo pipefail
[ $# -ge 3 ] || { echo "usage: $0 FUZZER SEEDS ARTIFACTS [libFuzzer options...]" >&2; exit 2; }
here=$(cd "$(dirname "$0")" && pwd)
fuzzer=$(realpath "$1")
seeds=$(realpath "$2")
mkdir -p "$3"
artifacts=$(realpath "$3")
shift 3
# the fuzzer runs elsewhere: make a relative -dict= absolute
opts=()
for o in "$@"; do
	case $o in
	-dict=/*) opts+=("$o") ;;
	-dict=*) opts+=("-dict=$(realpath "${o#-dict=}")") ;;
	*) opts+=("$o") ;;
	esac
done
set -- "${opts[@]}"

# Per-target defaults; options given on the command line come later and win.
name=$(basename "$fuzzer")
name=${name#fuzz_}
defaults=(-timeout=60 -print_final_stats=1
	# libFuzzer 14's entropic schedule keeps every feature seen fewer than
	# 255 times in a list it searches linearly for every feature of every
	# run; these targets have ~50k features, which made it 10x slower
	-entropic_feature_frequency_threshold=8)
case $name in
topology) defaults+=(-max_len=16384) ;;
mad) defaults+=(-max_len=2200) ;;
umad | uverbs) defaults+=(-max_len=8192) ;;
rmpp | ucma | control) defaults+=(-max_len=4096) ;;
esac
[ -f "$here/$name.dict" ] && defaults+=("-dict=$here/$name.dict")

scratch=$(mktemp -d "${TMPDIR:-/tmp}/ibemu-fuzz.XXXXXX")
trap 'rm -rf "$scratch"' EXIT
cp "${IBEMU_TOPOLOGY_DATA:-$here/../data/topology}"/* "$scratch"/
# IBEMU_FUZZ_CORPUS: keep the new inputs there instead (bench/fuzz.sh)
corpus=${IBEMU_FUZZ_CORPUS:-$scratch/corpus}
mkdir -p "$corpus"
corpus=$(realpath "$corpus")
cd "$scratch"

# UBSan findings are crashes too
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}
set +e
"$fuzzer" "${defaults[@]}" -artifact_prefix="$artifacts/" "$@" "$corpus" "$seeds"
rc=$?
set -e
if [ $rc -ne 0 ]; then
	echo "$(basename "$fuzzer") failed (exit $rc); reproducers in $artifacts:" >&2
	ls -l "$artifacts" >&2
	echo "reproduce from a scratch directory: $fuzzer FILE (IBEMU_FUZZ_TRACE=1 shows each operation)" >&2
fi
exit $rc
