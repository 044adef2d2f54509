# shellcheck shell=bash
# What the CLI suites share: a check and the last line.
pass=0 fail=0
expect() { # name expected actual
	if [ "$2" == "$3" ]; then pass=$((pass + 1)); else
		fail=$((fail + 1)); printf 'FAIL %s\n  expected: %s\n  actual:   %s\n' "$1" "$2" "$3"; fi
}
cli_done() { # suite name: its counts, and its exit status
	echo "$1: $pass passed, $fail failed"
	[ "$fail" -eq 0 ] && [ "$pass" -gt 0 ]
}
