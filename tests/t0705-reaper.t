#!/bin/sh
# agent-run's crash reaper and its stages' records (agent-session --reaper,
# --interrupt, --stop): a stage is known by its pid AND its start time.
. "$(dirname "$0")/lib.sh"

# stat_of PID: the record of PID, as agent-run's record writes it (its
# /proc/PID/stat line)
stat_of() { read -r so_l_ <"/proc/$1/stat" && printf '%s\n' "$so_l_"; }
# stat_before PID: the record of a process that had PID's number before
# it: the same pid, another start time
stat_before() { stat_of "$1" | awk '{ $22 = $22 - 1; print }'; }
# stage: a process that acts on SIGINT (ours ignore it: started with &)
stage() { exec env --default-signal=INT sleep 100; }
# locked FILE: another process holds the lock of FILE
locked() { ! flock -n "$1" true; }

test_expect_success 'agent-session --reaper: once the lock is free, the stages are interrupted, killed after a second; not a process that got a recorded pid; the directory goes (not a draft named after no run), then the lock' '
	mkdir run drafts && : >lock &&
	: >drafts/.transcript-new.abc && : >drafts/keep &&
	{ stage & step=$!; } && { sleep 100 & deaf=$!; } && { stage & other=$!; } &&
	{ { flock 7 && exec sleep 100; } 7>>lock & holder=$!; } &&
	test_when_finished "kill -9 $step $deaf $other $holder 2>/dev/null || :" &&
	wait_until 5 locked lock &&
	stat_of $step >run/pid.step && stat_of $deaf >run/pid.exec &&
	stat_before $other >run/pid.perm && stat_before $other >run/pid.audit1 &&
	agent-session --reaper run --lock lock --drafts drafts </dev/null &&
	read -r w _ <run/pid.watcher &&
	test_when_finished "kill -9 $w 2>/dev/null || :" &&
	sleep 0.3 && ! gone $step && test -d run &&
	kill $holder &&
	wait_until 10 gone $step &&
	flock -w 10 lock sh -c "test ! -e run" &&
	test -e drafts/keep && test -e drafts/.transcript-new.abc &&
	test_expect_code 130 wait $step &&
	test_expect_code 137 wait $deaf &&
	! gone $other
'

test_expect_success 'agent-session --reaper: the checkpoint stage (agent-snap, deaf to SIGINT) is killed too; only the drafts of its own agent-run go' '
	mkdir run drafts && : >lock &&
	{ sleep 100 & snap=$!; } &&
	{ { flock 7 && exec sleep 100; } 7>>lock & holder=$!; } &&
	test_when_finished "kill -9 $snap $holder 2>/dev/null || :" &&
	wait_until 5 locked lock &&
	stat_of $snap >run/pid.snap &&
	sh -c "echo \$\$ >run-pid && agent-session --reaper run --lock lock --drafts drafts </dev/null && :" &&
	read -r run <run-pid &&
	: >drafts/.transcript-new.$run.abc &&
	: >drafts/.transcript-new.$((run + 1)).abc && : >drafts/.transcript-new.${run}0.abc &&
	read -r w _ <run/pid.watcher &&
	test_when_finished "kill -9 $w 2>/dev/null || :" &&
	kill $holder &&
	wait_until 10 gone $snap &&
	flock -w 10 lock sh -c "test ! -e run && test ! -e drafts/.transcript-new.$run.abc" &&
	test -e drafts/.transcript-new.$((run + 1)).abc &&
	test -e drafts/.transcript-new.${run}0.abc &&
	test_expect_code 137 wait $snap
'

test_expect_success 'agent-session --reaper: not a child of its caller; ignores SIGINT and SIGHUP' '
	mkdir run && : >lock &&
	{ { flock 7 && exec sleep 100; } 7>>lock & holder=$!; } &&
	test_when_finished "kill -9 $holder 2>/dev/null || :" &&
	wait_until 5 locked lock &&
	agent-session --reaper run --lock lock </dev/null &&
	read -r w _ <run/pid.watcher &&
	test_when_finished "kill -9 $w 2>/dev/null || :" &&
	test "$(ps -o ppid= -p $w | tr -d " ")" != $$ &&
	kill -INT $w && kill -HUP $w && sleep 0.2 && ! gone $w &&
	kill $holder && wait_until 10 gone $w && test ! -e run
'

test_expect_success 'agent-session --interrupt: SIGINT to the stages that act on it, not to hook-audit, nor to a process that got a recorded pid' '
	mkdir run &&
	{ stage & step=$!; } && { stage & audit=$!; } && { stage & other=$!; } &&
	test_when_finished "kill -9 $step $audit $other 2>/dev/null || :" &&
	stat_of $step >run/pid.step && stat_of $audit >run/pid.audit1 &&
	stat_before $other >run/pid.exec &&
	agent-session --interrupt run &&
	test_expect_code 130 wait $step &&
	sleep 0.2 && ! gone $audit && ! gone $other
'

test_expect_success 'agent-session --interrupt: a torn record names no process' '
	mkdir run && { stage & step=$!; } &&
	test_when_finished "kill -9 $step 2>/dev/null || :" &&
	stat_of $step | tr -d "\n" >run/pid.step &&
	agent-session --interrupt run && sleep 0.2 && ! gone $step
'

test_expect_success 'agent-session --stop: the reaper killed first (it does not reap after), the policy server and the MCP bridge stopped, the directory gone' '
	mkdir run drafts && : >lock && : >drafts/.transcript-new.abc &&
	{ stage & step=$!; } && { sleep 100 & policy=$!; } && { sleep 100 & mcp=$!; } &&
	{ { flock 7 && exec sleep 100; } 7>>lock & holder=$!; } &&
	test_when_finished "kill -9 $step $policy $mcp $holder 2>/dev/null || :" &&
	wait_until 5 locked lock &&
	stat_of $step >run/pid.step && stat_of $policy >run/pid.policy &&
	stat_of $mcp >run/pid.mcp &&
	agent-session --reaper run --lock lock --drafts drafts </dev/null &&
	read -r w _ <run/pid.watcher &&
	test_when_finished "kill -9 $w 2>/dev/null || :" &&
	agent-session --stop run &&
	gone $w && test ! -e run &&
	test_expect_code 143 wait $policy && test_expect_code 143 wait $mcp &&
	kill $holder && sleep 0.3 &&
	! gone $step && test -e drafts/.transcript-new.abc
'

test_expect_success 'agent-session: --lock goes with --reaper, which needs it' '
	test_expect_code 2 agent-session --reaper run 2>err &&
	test_contains err "--lock" &&
	test_expect_code 2 agent-session --stop run --lock x 2>err &&
	test_contains err "--lock goes with --reaper"
'

test_done
