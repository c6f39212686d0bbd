# shellcheck shell=sh
# tests/lib.sh: a small TAP test library in the style of git's test-lib.
# Sourced by each tests/tNNNN-*.t script, which runs under prove.
#
#   test_expect_success 'what it checks' '
#           cmd1 &&
#           cmd2
#   '
#   test_done
#
# Each test body runs in a subshell, in a fresh directory of its own under
# the script's scratch directory ($SCRATCH, removed at exit), so a failing
# command fails the test and nothing leaks from one test to the next.

LC_ALL=C
export LC_ALL
unset AGENT_TODO_FILE AGENT_WORKDIR AGENT_POLICY AGENT_AUDIT_LOG \
	AGENT_SESSION AGENT_API_KEY OPENAI_API_KEY AGENT_BASE_URL \
	OPENAI_BASE_URL AGENT_MODEL AGENT_HTTP
# AH_HTTP=curl: agent-step speaks through libcurl to the http:// test
# servers too (tNNN1-*-curl.t run the model tests so)
if [ -n "${AH_HTTP:-}" ]; then
	AGENT_HTTP=$AH_HTTP
	export AGENT_HTTP
fi

TEST_DIR=$(cd "$(dirname "$0")" && pwd)
SRC_DIR=$(dirname "$TEST_DIR")
# The programs under test: those of the build (make sets AH_BIN), never
# whatever is installed.
: "${AH_BIN:=$SRC_DIR/build/bin}"
if [ ! -d "$AH_BIN" ]; then
	echo "Bail out! no programs in $AH_BIN (run make first)"
	exit 1
fi

SCRATCH=$(mktemp -d "${TMPDIR:-/tmp}/ah-test.XXXXXX") || exit 1
trap 'stop_models; rm -rf "$SCRATCH"' EXIT
trap 'exit 130' INT TERM HUP

# Under AH_VALGRIND every program is run through valgrind: a leak or an
# invalid access makes it exit 99, which fails the test.
if [ -n "${AH_VALGRIND:-}" ]; then
	mkdir "$SCRATCH/.valgrind-bin"
	for prog in "$AH_BIN"/*; do
		[ -x "$prog" ] || continue
		# the C programs; agent-run is a script, and the leaks of the
		# shell that runs it are not ours (it calls the wrapped ones)
		[ "$(head -c 2 "$prog")" = '#!' ] && continue
		cat >"$SCRATCH/.valgrind-bin/${prog##*/}" <<-WRAP
		#!/bin/sh
		exec valgrind -q --error-exitcode=99 --leak-check=full \
			--errors-for-leak-kinds=definite,indirect "$prog" "\$@"
		WRAP
		chmod +x "$SCRATCH/.valgrind-bin/${prog##*/}"
	done
	PATH=$SCRATCH/.valgrind-bin:$AH_BIN:$PATH
	# valgrind 3.19 does not know the Landlock system calls
	AGENT_SANDBOX=off
	export AGENT_SANDBOX
else
	PATH=$AH_BIN:$PATH
fi
export PATH

# The sandbox is on by default; where this machine cannot have it (no
# Landlock, no mount namespace), the tests of everything else run without
# it, and the sandbox's own tests skip (AH_NO_SANDBOX).
if [ -z "${AGENT_SANDBOX:-}" ]; then
	mkdir -p "$SCRATCH/probe/.agent"
	probe=$(cd "$SCRATCH/probe" && printf '%s\n' '{"role":"assistant","content":null,"tool_calls":[{"id":"p","type":"function","function":{"name":"bash","arguments":"{\"command\":\"true\"}"}}]}' |
		tool-exec --yes 2>&1)
	case $probe in
	*'"content":"(no output)"'*) ;;
	*)
		echo "# no sandbox on this machine, tests run with AGENT_SANDBOX=off: $probe"
		AGENT_SANDBOX=off AH_NO_SANDBOX=1
		export AGENT_SANDBOX AH_NO_SANDBOX ;;
	esac
	rm -rf "$SCRATCH/probe"
fi

mkdir "$SCRATCH/work"
cd "$SCRATCH/work" || exit 1
# agent-run attaches a stdin that is not a terminal to its task: the
# tests give it one only where they mean to
exec </dev/null
HOME=$SCRATCH/work
export HOME

test_count=0
test_failures=0

# The chain lint (git's fail_117): before a body runs, it is run once as
# "(exit 117) && BODY".  With every command chained by && nothing in it
# runs and the status is 117; a body whose status is then something else
# has a command that runs whatever came before it (a ";", a missing "&&",
# "cmd &" on a line of its own), so that a failure there goes unseen.
# Such a body fails the test.  AH_CHAIN_LINT=0 turns the lint off.
: "${AH_CHAIN_LINT:=1}"

# test_run_ BODY: BODY, then the cleanups it registered with
# test_when_finished, last registered first.  A failing cleanup fails
# the test.
test_run_() {
	test_cleanup_=:
	eval "$1"
	test_status_=$?
	eval "$test_cleanup_"
	return "$test_status_"
}

# test_when_finished CMD...: CMD runs when the test ends, passed or failed
# (a kill of the pids the test started, a chmod back, ...).  Call it in
# the && chain, before what it cleans up after.
test_when_finished() {
	test_cleanup_="{ $*
	} || { [ \"\$test_status_\" -ne 0 ] || test_status_=1; }; $test_cleanup_"
}

test_expect_success() {
	test_count=$((test_count + 1))
	mkdir "$SCRATCH/t$test_count"
	if [ "$AH_CHAIN_LINT" = 1 ]; then
		mkdir "$SCRATCH/lint$test_count"
		(cd "$SCRATCH/lint$test_count" && eval "(exit 117) && $2") \
			>/dev/null 2>&1 </dev/null
		lint_status_=$?
		rm -rf "$SCRATCH/lint$test_count"
		if [ "$lint_status_" -ne 117 ]; then
			test_failures=$((test_failures + 1))
			echo "not ok $test_count - $1"
			echo "# broken &&-chain: run after a failing first command, the body's status was $lint_status_, not 117"
			sed 's/^/#	/' <<-EOF
			$2
			EOF
			return
		fi
	fi
	if (cd "$SCRATCH/t$test_count" && test_run_ "$2") >"$SCRATCH/.log" 2>&1 \
		</dev/null; then
		echo "ok $test_count - $1"
	else
		test_failures=$((test_failures + 1))
		echo "not ok $test_count - $1"
		sed 's/^/#	/' <<-EOF
		$2
		EOF
		# awk ends the last line even when the output did not: the
		# next "ok" line must start a line of its own for TAP
		awk '{ print "# > " $0 }' "$SCRATCH/.log"
	fi
}

# test_skip 'what' 'why': a test that cannot run here.
test_skip() {
	test_count=$((test_count + 1))
	echo "ok $test_count # skip $1 ($2)"
}

# test_must_fail [CODE] CMD...: CMD must fail, with exit status CODE when
# given; a crash (a signal, or a sanitizer's 99) is never what we expect.
test_must_fail() {
	want=
	case $1 in
	[0-9]|[0-9][0-9]|[0-9][0-9][0-9]) want=$1; shift ;;
	esac
	"$@"
	got=$?
	if [ "$got" -eq 0 ]; then
		echo "test_must_fail: '$*' succeeded" >&2
		return 1
	elif [ "$got" -gt 125 ] || [ "$got" -eq 99 ]; then
		echo "test_must_fail: '$*' crashed (exit $got)" >&2
		return 1
	elif [ -n "$want" ] && [ "$got" -ne "$want" ]; then
		echo "test_must_fail: '$*' exited $got, expected $want" >&2
		return 1
	fi
	return 0
}

# test_expect_code CODE CMD...: CMD exits with status CODE exactly.
test_expect_code() {
	want=$1
	shift
	"$@"
	got=$?
	[ "$got" -eq "$want" ] && return 0
	echo "test_expect_code: '$*' exited $got, expected $want" >&2
	return 1
}

# test_grep [!] [GREP-OPTIONS] PATTERN FILE: FILE has (with !, has not) a
# line matching PATTERN; when not, says so and shows FILE.
test_grep() {
	neg=
	[ "$1" = ! ] && { neg=1; shift; }
	for file_; do :; done
	if [ -z "$neg" ]; then
		grep "$@" >/dev/null && return 0
		echo "test_grep: no line of '$file_' matches; it holds:" >&2
	else
		grep "$@" >/dev/null || {
			[ $? -eq 1 ] && return 0
			echo "test_grep: grep failed" >&2
			return 1
		}
		echo "test_grep: '$file_' has a line that should not match:" >&2
	fi
	cat "$file_" >&2
	return 1
}

# test_line_count OP N FILE: the number of lines of FILE compares to N as
# test(1)'s OP (=, -gt, -le, ...); shows FILE when not.
test_line_count() {
	[ $# -eq 3 ] || { echo "test_line_count: want OP N FILE" >&2; return 1; }
	lines_=$(wc -l <"$3") || return 1
	op_=$1
	[ "$op_" = = ] && op_=-eq
	if ! test "$lines_" "$op_" "$2"; then
		echo "test_line_count: '$3' has $lines_ lines, wanted $1 $2:" >&2
		cat "$3" >&2
		return 1
	fi
}

# test_cmp EXPECT ACTUAL: the files are identical; shows a diff otherwise.
test_cmp() {
	diff -u "$1" "$2"
}

# test_contains FILE TEXT: FILE has a line containing TEXT (fixed string).
test_contains() {
	grep -F -e "$2" "$1" >/dev/null || {
		echo "'$1' lacks '$2'; it holds:" >&2
		cat "$1" >&2
		return 1
	}
}

test_done() {
	echo "1..$test_count"
	[ "$test_failures" -eq 0 ]
}

# call_msg NAME ARGS [DECISION [ID]]: an assistant message with one tool
# call, as one line; DECISION (allow, deny, none) goes into "permission".
call_msg() {
	jq -nc --arg n "$1" --arg a "$2" --arg d "${3:-allow}" \
		--arg id "${4:-call_1}" '
		{role: "assistant", content: null, tool_calls: [{id: $id,
		 type: "function", function: {name: $n, arguments: $a}}
		 + (if $d == "none" then {} else {permission: {decision: $d,
		    reason: "test says \($d)", rule: "test"}} end)]}'
}

# valid TRANSCRIPT: every line a JSON object, every call answered once,
# before the next message
valid() {
	jq -c 'if type == "object" then . else error("not an object") end' "$1" >/dev/null &&
	jq -s -e '
		reduce .[] as $m ({pending: [], ok: true};
			if $m.role == "tool" then
				if (.pending | index($m.tool_call_id)) then .pending -= [$m.tool_call_id]
				else .ok = false end
			elif (.pending | length) > 0 then .ok = false
			else .pending = [($m.tool_calls // [])[].id] end)
		| .ok and (.pending | length) == 0' "$1" >/dev/null
}

# need_sandbox: the script tests the sandbox; where there is none (or
# under valgrind, which does not know the Landlock system calls), it
# skips whole.
need_sandbox() {
	if [ -n "${AH_VALGRIND:-}" ]; then
		echo "1..0 # skip valgrind 3.19 does not know the Landlock system calls"
		exit 0
	fi
	if [ -n "${AH_NO_SANDBOX:-}" ]; then
		echo "1..0 # skip this machine cannot confine commands (see above)"
		exit 0
	fi
}

# left MARK: the processes whose command line holds MARK, one a line
# (a process that has no line, or is gone meanwhile, holds nothing).
left() {
	for f in /proc/[0-9]*/cmdline; do
		{ tr '\0' ' ' <"$f"; } 2>/dev/null | grep -e "$1" || :
	done
}
# none_left MARK / some_left MARK N: no process, or at least N, holds MARK.
none_left() {
	test -z "$(left "$1")"
}
some_left() {
	test "$(left "$1" | wc -l)" -ge "$2"
}

# kill_session SID: SIGKILL to every process of session SID, as a power
# cut would.  One pkill is not enough: a process forked after it read
# /proc escapes it, and can then hold the session's lock for good (a
# stage blocked opening the ring's FIFO).  Passes until none is left
# (zombies still match, hence the bound).  An empty SID (ps found no
# process) is refused: to pkill it means the caller's own session, the
# test script's and prove's.
kill_session() {
	case $1 in
	''|*[!0-9]*|0)
		echo "kill_session: '$1' is not a session id" >&2
		return 1 ;;
	esac
	for _ in 1 2 3 4 5 6; do
		pkill -9 -s "$1" || return 0
		sleep 0.01
	done
}

# wait_for FILE LINES [SECONDS]: waits until FILE has LINES lines.
wait_for() {
	i=0
	while [ "$(wc -l <"$1" 2>/dev/null || echo 0)" -lt "$2" ]; do
		i=$((i + 1))
		[ $i -gt $((${3:-10} * 50)) ] && {
			echo "wait_for: $1 has fewer than $2 lines" >&2
			return 1
		}
		sleep 0.02
	done
}

# wait_until SECONDS CMD...: runs CMD every 20 ms until it succeeds; fails,
# saying so, when it has not within SECONDS.
wait_until() {
	wu_left_=$(($1 * 50))
	shift
	until "$@"; do
		[ "$wu_left_" -gt 0 ] || {
			echo "wait_until: '$*' still fails" >&2
			return 1
		}
		wu_left_=$((wu_left_ - 1))
		sleep 0.02
	done
}

# start_model SCRIPT [OPTION...]: starts tests/model-server.py on 127.0.0.1
# with the script (JSON Lines) and the options (--window-bytes N, ...), and
# sets AGENT_BASE_URL to it; requests are logged to $PWD/requests.jsonl.
# The server is stopped when the script exits.
start_model() {
	rm -f port
	sm_script_=$1
	shift
	python3 "$TEST_DIR/model-server.py" --script "$sm_script_" \
		--port-file "$PWD/port" --log "$PWD/requests.jsonl" --idle 120 "$@" &
	echo $! >>"$SCRATCH/.servers"
	i=0
	while [ ! -s port ]; do
		i=$((i + 1))
		[ $i -gt 500 ] && { echo "model server did not start" >&2; return 1; }
		sleep 0.01
	done
	AGENT_BASE_URL=http://127.0.0.1:$(cat port)/v1
	export AGENT_BASE_URL
}

stop_models() {
	[ -f "$SCRATCH/.servers" ] || return 0
	while read -r pid; do kill "$pid" 2>/dev/null; done <"$SCRATCH/.servers"
	rm -f "$SCRATCH/.servers"
}

# fg_signals CMD... &: runs CMD in the background with SIGINT and SIGQUIT
# at their defaults, as for a command in the foreground of a terminal (a
# command started with & by a non-interactive shell has them ignored, and
# cannot trap them).  It execs: use it only with &, so that $! is CMD.
fg_signals() {
	exec python3 -c 'import os, signal, sys
signal.signal(signal.SIGINT, signal.SIG_DFL)
signal.signal(signal.SIGQUIT, signal.SIG_DFL)
os.execvp(sys.argv[1], sys.argv[1:])' "$@"
}

# long_session N BYTES: a transcript of N tool calls, each with a result
# of about BYTES bytes of text that needs escaping.
long_session() {
	jq -nc --argjson n "$1" --argjson b "$2" '
		{role: "system", content: "be brief"},
		{role: "user", content: "go \u00e9"},
		(range($n) | "c\(.)" as $id |
		 {role: "assistant", content: null, tool_calls: [{id: $id,
		  type: "function", function: {name: "bash",
		  arguments: "{\"command\":\"cat f\(.)\"}"}}]},
		 {role: "tool", tool_call_id: $id,
		  content: ("line \(.) \"q\"\t\u00e9\n" * ($b / 16 | floor))})'
}

# step_peak_kb TRANSCRIPT KBFILE [OPTION...]: agent-step [OPTION...]
# reads TRANSCRIPT from a FIFO held open; once it has answered (a line in
# step.out) and waits for more, its peak memory so far (VmHWM, in kB) is
# written to KBFILE.  Then its input ends; agent-step's exit status.
step_peak_kb() {
	spk_in_=$1 spk_kb_=$2
	shift 2
	rm -f step.fifo step.out
	mkfifo step.fifo || return 1
	agent-step "$@" <step.fifo >step.out &
	spk_pid_=$!
	exec 4>step.fifo
	cat "$spk_in_" >&4 && wait_for step.out 1 60 &&
		awk '/^VmHWM:/ { print $2 }' "/proc/$spk_pid_/status" >"$spk_kb_"
	spk_rc_=$?
	exec 4>&-
	wait "$spk_pid_" && return "$spk_rc_"
}

# peak_grows_once: with the model server started (answering
# "ok"), agent-step's peak memory (step_peak_kb) grows from a session of
# one call to one of 40 calls of 100 KB each by less than 1.5 times that
# session's size: the transcript is held once, the request body not
# besides.
peak_grows_once() {
	long_session 1 100 >small.jsonl &&
	long_session 40 100000 >t.jsonl &&
	step_peak_kb small.jsonl small.kb &&
	step_peak_kb t.jsonl big.kb &&
	jq -e ".content == \"ok\"" step.out &&
	pgo_size_=$(wc -c <t.jsonl) &&
	pgo_grew_=$(($(cat big.kb) - $(cat small.kb))) &&
	echo "transcript $pgo_size_ bytes: peak $(cat small.kb) kB, then $(cat big.kb) kB" &&
	test $((pgo_grew_ * 1024)) -lt $((pgo_size_ * 3 / 2))
}

# memory_measurable: the programs' memory is their own (not valgrind's,
# not a sanitizer's, which keeps what is freed in quarantine).
memory_measurable() {
	[ -z "${AH_VALGRIND:-}" ] || return 1
	case $(ldd "$AH_BIN/agent-step" 2>/dev/null) in
	*libasan*|*libtsan*|*libmsan*) return 1 ;;
	esac
}
