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

test_expect_success 'no signal ignored or blocked' '
	grep -E "^Sig(Ign|Blk):" /proc/self/status >actual &&
	printf "SigBlk:\t0000000000000000\nSigIgn:\t0000000000000000\n" >expect &&
	test_cmp expect actual
'

test_expect_success 'SIGHUP ends a program that does not trap it' '
	test_expect_code 129 sh -c "kill -HUP \$\$; sleep 5"
'

test_done
