#!/bin/sh
# tests/suite-probe.sh: a script of the suite that looks at how it was
# started, run by t0010 at a terminal, under nohup, with SIGINT ignored
# and from </dev/null: whoever starts it, tests/lib.sh gives its tests
# no controlling terminal and every signal at its default.
. "$(dirname "$0")/lib.sh"

echo "# sandbox: AH_NO_SANDBOX=${AH_NO_SANDBOX:-} AGENT_SANDBOX=${AGENT_SANDBOX:-}"

test_expect_success 'no controlling terminal to open' '
	test_must_fail sh -c ": </dev/tty" 2>err &&
	test_grep "No such device or address\|cannot open" err
'

# Signals 1-31; 32 and 33 are the C library's own, which no program can
# set, and some starters (make) leave ignored.
test_expect_success 'no signal ignored or blocked' '
	for f in SigIgn SigBlk; do
		mask=$(sed -n "s/^$f:[[:space:]]*/0x/p" /proc/self/status) &&
		echo "$f $((mask & 0x7fffffff))" || return 1
	done >actual &&
	printf "SigIgn 0\nSigBlk 0\n" >expect &&
	test_cmp expect actual
'

test_expect_success 'SIGHUP ends a program that does not trap it' '
	test_expect_code 129 sh -c "kill -HUP \$\$; sleep 5"
'

test_done
