#!/usr/bin/env bash
# A clean fabric reads clean: OpenSM's first sweep sets PortState=Down on
# the CA ports whose NeighborMTU or OperationalVLs it changes, a request
# and no lost link (IBA 14.2.5.6), so right after `up --sm` every
# LinkDownedCounter is 0 and ibqueryerrors exits 0. A pulled cable still
# counts, at both ends.
# usage: clean_counters.sh IBEMU_BINARY
set -u
ibemu=$1
. "$(dirname "$0")/lib.sh"
e2e_setup clean-counters

I=e2e-clean-$$
out=$("$ibemu" up --instance $I --sm 2>&1)
expect_eq "up --sm" 0 $?

out=$(inst $I ibqueryerrors)
expect_eq "ibqueryerrors after the first sweep exits 0" 0 $?
expect_match "no bad nodes" '6 nodes checked, 0 bad nodes found' "$out"
for g in 0x0002c90300000101 0x0002c90300000201 0x0002c90300000301; do
	out=$(inst $I perfquery -G $g 1)
	expect_match "LinkDownedCounter 0 at CA $g" 'LinkDownedCounter:\.+0$' "$out"
done
out=$(inst $I perfquery -G 0x0002c90200000001 1)
expect_match "LinkDownedCounter 0 at its switch end" 'LinkDownedCounter:\.+0$' "$out"

# a cable pulled out and plugged back in is a lost link at both ends
out=$("$ibemu" link down --instance $I ibemu-host1 1 2>&1)
expect_eq "link down" 0 $?
out=$("$ibemu" link up --instance $I ibemu-host1 1 2>&1)
expect_eq "link up" 0 $?
out=$(inst $I perfquery -G 0x0002c90300000101 1)
expect_match "the pulled cable counts at the CA" 'LinkDownedCounter:\.+1$' "$out"
out=$(inst $I perfquery -G 0x0002c90200000001 1)
expect_match "... and at the switch" 'LinkDownedCounter:\.+1$' "$out"
out=$(inst $I ibqueryerrors)
expect_match "ibqueryerrors shows it" 'LinkDownedCounter == 1' "$out"

e2e_done
