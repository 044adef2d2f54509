#!/usr/bin/env bash
# Builds the libFuzzer targets (tests/fuzz/) in build-fuzz and runs each
# for SECONDS over its seed corpus, then prints, per target, the
# executions, executions per second, coverage (libFuzzer's cov: on its last
# status line: instrumented edges reached), the corpus it grew and the
# crashes it found.
#
#   bench/fuzz.sh SECONDS [TARGET...]      TARGET: topology mad umad rmpp uverbs
#
# FUZZ_RUNS=N stops a target after N executions instead, if that comes
# first; FUZZ_SEED=S fixes libFuzzer's seed (default: a new one per run);
# FUZZ_ARGS adds libFuzzer options (e.g. -entropic=0: with tens of
# thousands of features, as fuzz_rmpp has, the entropic scheduler's
# bookkeeping takes over half the time).
# A target runs on one core at nice 10; they run one after the other.
# New inputs are kept in build-fuzz/fuzz-bench/corpus-TARGET (the next run
# starts from them too; delete the directory to start from the seeds
# alone), logs in build-fuzz/fuzz-bench/TARGET.log, crash reproducers in
# build-fuzz/fuzz-bench/artifacts-TARGET/.
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -ge 1 ] && [[ $1 =~ ^[0-9]+$ ]] || {
	echo "usage: $0 SECONDS [TARGET...]" >&2
	exit 2
}
secs=$1
shift
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(topology mad umad rmpp uverbs)

# the machine is shared: do not build while another build runs
while pgrep -x ninja >/dev/null; do
	echo "fuzz: waiting for another build to finish" >&2
	sleep 20
done
CXX=clang++ tools/build.sh build-fuzz -Dfuzz=true -Db_sanitize=address,undefined -Db_lundef=false -Dbuildtype=debugoptimized

out=build-fuzz/fuzz-bench
mkdir -p "$out"
rows=()
notes=()
for t in "${targets[@]}"; do
	exe=build-fuzz/tests/fuzz/fuzz_$t
	[ -x "$exe" ] || { echo "fuzz: no target $t" >&2; exit 2; }
	art=$out/artifacts-$t
	mkdir -p "$art"
	before=$(find "$art" -type f | wc -l)
	opts=(-max_total_time="$secs")
	[ -n "${FUZZ_RUNS:-}" ] && opts+=(-runs="$FUZZ_RUNS")
	[ -n "${FUZZ_SEED:-}" ] && opts+=(-seed="$FUZZ_SEED")
	# shellcheck disable=SC2206 # FUZZ_ARGS: words
	[ -n "${FUZZ_ARGS:-}" ] && opts+=($FUZZ_ARGS)
	echo "fuzz: $t for ${secs}s${FUZZ_RUNS:+ or $FUZZ_RUNS runs} (log: $out/$t.log)" >&2
	start=$(date +%s)
	set +e
	IBEMU_FUZZ_CORPUS=$out/corpus-$t nice -n 10 tests/fuzz/run.sh "$exe" "tests/fuzz/seeds/$t" "$art" "${opts[@]}" \
		>"$out/$t.log" 2>&1
	rc=$?
	set -e
	took=$(($(date +%s) - start))
	execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$out/$t.log" | tail -1)
	rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$out/$t.log" | tail -1)
	# the last status line: "#N DONE cov: C ft: F corp: U/Sb ..." (or the
	# last progress line when the run ended in a crash)
	last=$(grep -E '^#[0-9]+.*cov: ' "$out/$t.log" | tail -1 || true)
	cov=$(sed -n 's/.* cov: \([0-9]*\).*/\1/p' <<<"$last")
	ft=$(sed -n 's/.* ft: \([0-9]*\).*/\1/p' <<<"$last")
	corp=$(sed -n 's/.* corp: \([0-9]*\)\/.*/\1/p' <<<"$last")
	crashes=$(($(find "$art" -type f | wc -l) - before))
	[ $rc -ne 0 ] && [ "$crashes" -eq 0 ] && crashes="exit $rc"
	[ "$crashes" != 0 ] && notes+=("$t: $(grep -m1 -E '^SUMMARY:|^==[0-9]+==ERROR' "$out/$t.log" || echo "exit $rc"); see $out/$t.log and $art/")
	rows+=("$t	${execs:-?}	${rate:-?}	${cov:-?}	${ft:-?}	${corp:-?}	${took}s	$crashes")
done

printf '%s\n' "target	execs	exec/s	cov	ft	corpus	time	crashes" "${rows[@]}" | column -t -s $'\t'
for note in "${notes[@]}"; do
	echo "$note"
done
