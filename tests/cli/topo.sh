#!/usr/bin/env bash
# End-to-end checks of `ibemu topo`: counts on the upstream examples, exit
# codes and messages on bad input, generator output that loads again.
set -u
ibemu=$1
data=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
. "$(dirname "$0")/lib.sh"

for spec in "net 2 2 0 4" "net.1 1 2 0 2" "net.2sw2path 2 2 0 4" "net.2sw2path4hca 2 4 0 6" \
	    "net.2sw2path4hca2port 2 2 0 6" "ibnetdiscover-manpage.topo 2 4 0 7"; do
	set -- $spec
	expect "check $1" "{\"switches\":$2,\"cas\":$3,\"routers\":$4,\"links\":$5}" \
		"$("$ibemu" topo check "$data/topology/$1")"
done

printf 'Switch 8 "a"\n[1] "nosuch"[1]\n' > "$tmp/bad.topo"
out=$("$ibemu" topo check "$tmp/bad.topo" 2>&1); rc=$?
expect "bad file exit code" 1 "$rc"
expect "bad file message" "ibemu: $tmp/bad.topo:2: port 1 of \"a\" names an unknown node \"nosuch\"" "$out"

out=$("$ibemu" topo check "$tmp/missing.topo" 2>&1); rc=$?
expect "missing file exit code" 1 "$rc"
expect "missing file message" "ibemu: $tmp/missing.topo: cannot open: No such file or directory" "$out"

"$ibemu" topo gen fat-tree --levels 3 --hosts 200 --radix 10 -o "$tmp/ft.topo"
expect "gen exit code" 0 "$?"
expect "gen fat-tree 3" '{"switches":105,"cas":200,"routers":0,"links":600}' "$("$ibemu" topo check "$tmp/ft.topo")"
expect "gen ring" '{"switches":4,"cas":8,"routers":0,"links":12}' \
	"$("$ibemu" topo gen ring --switches 4 --hosts-per-switch 2 -o - | "$ibemu" topo check /dev/stdin)"
out=$("$ibemu" topo gen fat-tree --levels 2 --hosts 100 --radix 8 -o "$tmp/x" 2>&1); rc=$?
expect "gen too big exit code" 1 "$rc"
expect "gen too big message" "ibemu: a 2-level fat tree of radix 8 holds at most 32 hosts" "$out"

out=$("$ibemu" topo show)
expect "show default header" "Fabric (built-in default): 2 switches, 4 CAs, 0 routers, 8 links" "$(head -1 <<<"$out")"
expect "show default lists host1" 1 "$(grep -c '^CA "ibemu-host1 HCA-1"  node GUID 0x0002c90300000100  1 ports$' <<<"$out")"
dot=$("$ibemu" topo show --dot "$data/topology/net.1")
expect "dot edges" 2 "$(grep -c -- ' -- ' <<<"$dot")"
# graphviz is a dependency (tools/install-deps.sh): its absence is a failure
svg=$(dot -Tsvg <<<"$dot" 2>&1)
expect "graphviz accepts the dot" 0 "$?"
expect "and draws both links" 2 "$(grep -c 'class="edge"' <<<"$svg")"

# pictures: svg and png drawn by Graphviz's library, laid out by kind
svg=$("$ibemu" topo show --format svg)
expect "svg of the default fabric" 1 "$(grep -c '^<svg' <<<"$svg")"
expect "its 8 cables, by id" 8 "$(grep -c 'id="l[0-9]*p[0-9]*"' <<<"$svg")"
"$ibemu" topo show --format png -o "$tmp/f.png"
expect "png" "PNG image data" "$(file -b "$tmp/f.png" | cut -d, -f1)"
"$ibemu" topo gen fat-tree --levels 2 --hosts 16 --radix 8 -o "$tmp/ft.topo"
out=$("$ibemu" topo show --format dot "$tmp/ft.topo")
expect "a fat tree in ranks" 1 "$(grep -c 'layout=dot' <<<"$out")"
expect "leaves on one rank, spines on another" 2 "$(grep -Ec '^	\{ rank=same;( n[0-9]+;){4} \}$' <<<"$out")"
"$ibemu" topo gen torus --dims 4x4 --hosts-per-switch 1 -o "$tmp/t.topo"
out=$("$ibemu" topo show --format dot "$tmp/t.topo")
expect "a torus by springs" 1 "$(grep -c 'layout=neato' <<<"$out")"
"$ibemu" topo gen fat-tree --levels 3 --hosts 2000 --radix 36 -o "$tmp/big.topo"
out=$("$ibemu" topo show --format dot "$tmp/big.topo")
expect "2000 CAs summarized by level" 3 "$(grep -c 'shape=box3d' <<<"$out")"
expect "with their CAs" 1 "$(grep -c 'level 1\\n[0-9]* switches\\n2000 CAs' <<<"$out")"
out=$("$ibemu" topo show --format svg "$tmp/big.topo" | grep -c '<svg')
expect "and drawn" 1 "$out"
out=$("$ibemu" topo show --format gif 2>&1)
expect "an unknown format" 1 "$(grep -c 'format: gif not in {dot,svg,png}' <<<"$out")"
out=$("$ibemu" topo show --instance nosuch-$$ 2>&1)
expect "a stopped instance" 'ibemu topo show: instance "nosuch-'$$'" is not running' "$out"

cli_done cli-topo
