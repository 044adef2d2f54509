#!/usr/bin/env bash
# ibemu's bash completion (tools/cli/ibemu.bash-completion) as bash runs
# it on TAB: the command after `exec --`, a subcommand once, the running
# instance's node names where a NODE goes.
# usage: completion.sh IBEMU_BINARY COMPLETION_FILE
set -u
ibemu=$1
. "$(dirname "$0")/lib.sh"
if [ ! -f /usr/share/bash-completion/bash_completion ]; then
	echo "completion: needs bash-completion; skipped"
	exit 77
fi
# bash_completion wants an interactive-like shell; its functions are enough
. /usr/share/bash-completion/bash_completion
. "$2"
PATH=$(dirname "$ibemu"):$PATH
# complete LINE: what TAB offers at its end, sorted, one line
complete_line() {
	COMP_LINE=$1
	COMP_POINT=${#COMP_LINE}
	read -ra COMP_WORDS <<<"$COMP_LINE"
	[[ $COMP_LINE == *" " ]] && COMP_WORDS+=("")
	COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
	COMPREPLY=()
	# (compopt complains outside a real TAB; what it sets does not matter)
	_ibemu ibemu "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD - 1]}" 2>/dev/null
	[ ${#COMPREPLY[@]} -gt 0 ] && printf '%s\n' "${COMPREPLY[@]}" | sort -u | tr '\n' ' '
}

export IBEMU_RUN_DIR=$(mktemp -d /tmp/ibemu-completion.XXXXXX)
I=completion-$$
trap '"$ibemu" down --instance $I >/dev/null 2>&1; rm -rf "$IBEMU_RUN_DIR"' EXIT

expect "exec -- offers commands" 1 "$(complete_line "ibemu exec -- ibsta" | grep -c 'ibstat ')"
expect "exec --instance X -- too" 1 "$(complete_line "ibemu exec --instance $I -- ibsta" | grep -c 'ibstat ')"
expect "link's subcommands" "connect degrade down flap up " "$(complete_line "ibemu link ")"
expect "once" 0 "$(complete_line "ibemu link down --" | grep -c 'flap')"
expect "--instance takes instance names" "" "$(complete_line "ibemu status --instance ")"
"$ibemu" up --instance $I >/dev/null
expect "--instance takes instance names" "$I " "$(complete_line "ibemu status --instance ")"
expect "link down NODE: the running instance's nodes" "ibemu-sw1 ibemu-sw2 " \
	"$(complete_line "ibemu link down --instance $I ibemu-sw")"
expect "CAs by host name" "ibemu-host1 ibemu-host2 ibemu-host3 ibemu-host4 " \
	"$(complete_line "ibemu link down --instance $I ibemu-h")"
expect "exec --host: the instance's hosts" "ibemu-host1 ibemu-host2 " \
	"$(complete_line "ibemu exec --instance $I --host ibemu-h")"
expect "exec --host H -- offers commands" 1 "$(complete_line "ibemu exec --instance $I --host ibemu-host1 -- ibsta" | grep -c 'ibstat ')"
expect "errors NODE" "ibemu-sw1 ibemu-sw2 " "$(complete_line "ibemu errors --instance $I ibemu-s")"
expect "after NODE, options" 1 "$(complete_line "ibemu link flap --instance $I ibemu-sw1 --" | grep -c -- '--count')"

cli_done completion
