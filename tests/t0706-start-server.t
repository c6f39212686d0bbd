#!/bin/sh
# agent-session --start-server: agent-run's policy server and MCP bridge,
# started and recorded (their /proc/PID/stat line) for the reaper.
. "$(dirname "$0")/lib.sh"

# ./server WORDS: prints the pid of a server it leaves running, then WORDS
mkserver() {
	printf '%s\n' '#!/bin/sh' \
		'sleep 100 </dev/null >/dev/null 2>&1 &' 'echo "$! $*"' >server &&
	chmod +x server
}

test_expect_success 'the server'\''s stat line into FILE, what followed its pid on stdout; the reaper knows it by it' '
	mkdir run && mkserver &&
	agent-session --start-server run/pid.mcp -- ./server tok en >out &&
	read -r pid _ <run/pid.mcp &&
	test_when_finished "kill -9 $pid 2>/dev/null || :" &&
	test "$(cat out)" = "tok en" &&
	awk "{ print \$1, \$22 }" "/proc/$pid/stat" >expect &&
	awk "{ print \$1, \$22 }" run/pid.mcp >actual && test_cmp expect actual &&
	agent-session --stop run && wait_until 10 gone $pid && test ! -e run
'

test_expect_success 'a pid alone: nothing on stdout (hook-perm --serve)' '
	mkdir run && mkserver &&
	agent-session --start-server run/pid.policy -- ./server >out &&
	read -r pid _ <run/pid.policy &&
	test_when_finished "kill -9 $pid 2>/dev/null || :" &&
	test ! -s out
'

test_expect_success 'the command'\''s failure is its exit status, and no record; no pid is a failure; usage' '
	mkdir run && mkserver &&
	test_expect_code 5 agent-session --start-server run/pid.mcp -- sh -c "echo 123; exit 5" >out &&
	test ! -e run/pid.mcp && test ! -s out &&
	test_expect_code 3 agent-session --start-server run/pid.mcp -- echo nopid >out 2>err &&
	test_grep "did not say its server" err && test ! -e run/pid.mcp &&
	test_expect_code 3 agent-session --start-server run/pid.mcp -- ./nothing-here 2>err &&
	test_grep "cannot run" err &&
	test_expect_code 2 agent-session --start-server run/pid.mcp ./server 2>err
'

test_done
