#!/bin/sh
# The test suite itself: its scripts pass however the suite is started
# (at a terminal, under nohup, with signals ignored, from </dev/null),
# because tests/lib.sh detaches them from the terminal and restores the
# signals' defaults (tests/detach.py), and whether the sandbox's tests
# run is asked of the kernel, never of tool-exec.
. "$(dirname "$0")/lib.sh"

# shellcheck disable=SC2034 # used in the test bodies
probe=$TEST_DIR/suite-probe.sh

# passes OUT: OUT is the TAP of suite-probe.sh with its three tests passed
passes() {
	test_grep -c "^ok [123] - " "$1" >/dev/null &&
	test "$(grep -c "^ok [123] - " "$1")" -eq 3 &&
	test_grep ! "^not ok" "$1" &&
	test_grep "^1\.\.3" "$1"
}

test_expect_success 'at a terminal: no test can open it' '
	python3 "$TEST_DIR/pty-run.py" --timeout 60 "sh \"$probe\"; echo \"exit \$?\"" >out &&
	tr -d "\r" <out >tap &&
	passes tap &&
	test_grep "^exit 0" tap
'

test_expect_success 'under nohup: SIGHUP is at its default again' '
	nohup sh "$probe" >tap 2>err </dev/null &&
	passes tap
'

test_expect_success 'started in the background of a script: SIGINT and SIGQUIT at their defaults' '
	{ sh "$probe" >tap 2>err & pid=$!; } &&
	wait $pid &&
	passes tap
'

test_expect_success 'from a process group leader: detached all the same' '
	python3 -c "import os, sys
os.setpgid(0, 0)
os.execvp(\"sh\", [\"sh\", sys.argv[1]])" "$probe" >tap 2>err </dev/null &&
	passes tap
'

test_expect_success 'the probe of the sandbox asks the kernel' '
	python3 "$TEST_DIR/sandbox-probe.py" >out &&
	test_line_count = 1 out &&
	test_grep -E "^(yes|no: .+)$" out &&
	if test -z "${AH_NO_SANDBOX:-}"; then test_grep "^yes$" out; fi
'

if [ -n "${AH_NO_SANDBOX:-}" ] || [ -n "${AH_VALGRIND:-}" ]; then
	test_skip 'a sandbox that fails to set up fails the tests' 'no sandbox here'
else
	# Every write of a sandboxed command refused, as a sandbox broken
	# at its set-up would: the suite must not read that as "no sandbox".
	test_expect_success 'a broken sandbox is not taken for a machine without one' '
		mkdir bin &&
		for p in "$AH_BIN"/*; do ln -s "$p" bin/; done &&
		rm bin/tool-exec &&
		printf "#!/bin/sh\necho \"tool-exec: cannot set up the sandbox: broken\" >&2\nexit 1\n" >bin/tool-exec &&
		chmod +x bin/tool-exec &&
		AH_BIN=$PWD/bin sh "$probe" >tap 2>err </dev/null &&
		passes tap &&
		test_grep "^# sandbox: AH_NO_SANDBOX= AGENT_SANDBOX=$" tap
	'
fi

test_done
