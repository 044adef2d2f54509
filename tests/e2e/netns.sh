# shellcheck shell=bash
# "Hosts" on one machine for the suites of a subnet split across hosts:
# network namespaces on a bridge (itself in a namespace), with
# documentation addresses that exist only inside namespaces made here.
#
# netns_hosts TAG NAME...: makes them; NS[NAME] is a host's namespace,
# ADDR[NAME] its address (192.0.2.1, .2, ... in order). Returns 1 when the
# kernel cannot. netns_cleanup removes them. TAG keeps parallel runs apart.
declare -A NS ADDR
netns_names=()
netns_tag=
netns_hosts() {
	netns_tag=$1
	shift
	netns_names=("$@")
	local sw=ibemu-$netns_tag-sw i=0 h
	modprobe -q bridge 2>/dev/null # a guest kernel loads them on demand only here
	modprobe -q veth 2>/dev/null
	ip netns add "$sw" 2>/dev/null && ip -n "$sw" link add br0 type bridge && ip -n "$sw" link set br0 up ||
		return 1
	for h in "$@"; do
		i=$((i + 1))
		NS[$h]=ibemu-$netns_tag-$h
		ADDR[$h]=192.0.2.$i
		ip netns add "${NS[$h]}" || return 1
		ip link add "v$netns_tag$h" netns "${NS[$h]}" type veth peer name "b$netns_tag$h" netns "$sw" || return 1
		ip -n "${NS[$h]}" link set lo up
		ip -n "${NS[$h]}" link set "v$netns_tag$h" up
		ip -n "${NS[$h]}" addr add "${ADDR[$h]}/24" dev "v$netns_tag$h"
		ip -n "$sw" link set "b$netns_tag$h" master br0 up
	done
}
netns_cleanup() {
	local h
	for h in "${netns_names[@]}"; do [ -n "${NS[$h]:-}" ] && ip netns del "${NS[$h]}" 2>/dev/null; done
	[ -n "$netns_tag" ] && ip netns del "ibemu-$netns_tag-sw" 2>/dev/null
	return 0
}
