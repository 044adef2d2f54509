# shellcheck shell=bash
# Helpers of the bench scripts: medians, wall-clock intervals, ratios, and
# the figure a perftest client prints.

# the median of the numbers on stdin; "-" when there are none
median() { sort -g | awk '{a[NR]=$1} END {if (!NR) print "-"; else print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
now() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$(now)" 'BEGIN {printf "%.3f", b - a}'; }
# A / B to two places; "-" unless both are positive numbers
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { n = "^[0-9]+([.][0-9]+)?$"; if (a ~ n && b ~ n && a > 0 && b > 0) printf "%.2f", a / b; else print "-" }'; }
# perftest_figure TEST FILE: from a perftest client's output, t_typical
# (latency tests) or BW average (the others); nothing when it printed none
perftest_figure() {
	case $1 in
	*_lat) awk '$1 ~ /^[0-9]+$/ && NF >= 6 { print $5 }' "$2" | tail -1 ;;
	*) awk '$1 ~ /^[0-9]+$/ && NF >= 5 { print $4 }' "$2" | tail -1 ;;
	esac
}
