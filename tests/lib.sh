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

# Whoever started the suite (a terminal, nohup, a job in the background,
# CI), every script runs in a session of its own, without a controlling
# terminal, with every signal at its default and none blocked
# (tests/detach.py): no program under test can ask a person on
# /dev/tty, and each can trap what it traps in real use.  A test that
# needs a terminal makes its own (tests/pty-run.py).
if [ -z "${AH_DETACHED:-}" ]; then
	AH_DETACHED=1
	export AH_DETACHED
	exec python3 "$(dirname "$0")/detach.py" /bin/sh "$0" "$@"
fi
unset AH_DETACHED

LC_ALL=C
export LC_ALL
unset AGENT_TODO_FILE AGENT_WORKDIR AGENT_POLICY AGENT_AUDIT_LOG AGENT_PROFILE XDG_CONFIG_HOME \
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
trap 'stop_models "$SCRATCH"/.servers*; rm -rf "$SCRATCH"' EXIT
trap 'exit 130' INT TERM HUP
# What the programs make in $TMPDIR (agent-run's run directory, left
# behind by the tests that kill it with -9) goes with the scratch, which
# only its owner can enter; a test that needs a directory another user
# can reach makes it in $AH_TMPDIR, the machine's own.
# shellcheck disable=SC2034 # used by the tests
AH_TMPDIR=${TMPDIR:-/tmp}
mkdir "$SCRATCH/tmp" || exit 1
TMPDIR=$SCRATCH/tmp
export TMPDIR

# Under AH_VALGRIND every program is run through valgrind: a leak or an
# invalid access makes it exit 99, which fails the test.
if [ -n "${AH_VALGRIND:-}" ]; then
	mkdir "$SCRATCH/.valgrind-bin"
	for prog in "$AH_BIN"/*; do
		[ -x "$prog" ] || continue
		# the C programs; agent-run is a script, and the leaks of the
		# shell that runs it are not ours: it is copied beside the
		# wrapped ones, which it runs (those installed beside it)
		if [ "$(head -c 2 "$prog")" = '#!' ]; then
			cp "$prog" "$SCRATCH/.valgrind-bin/" || exit 1
			continue
		fi
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

# The sandbox is on by default.  Whether this machine can have one is
# asked of the kernel (tests/sandbox-probe.py: Landlock, seccomp, the
# namespaces), never read off a failure of tool-exec: where the kernel
# can confine commands, a sandbox that fails to set up fails the tests.
# AH_NO_SANDBOX=1 (or AGENT_SANDBOX=off from outside) runs everything
# without it, and the sandbox's own tests skip (need_sandbox).
[ "${AGENT_SANDBOX:-}" = off ] && AH_NO_SANDBOX=1
if [ -n "${AH_NO_SANDBOX:-}" ]; then
	AGENT_SANDBOX=off AH_NO_SANDBOX=1
	export AGENT_SANDBOX AH_NO_SANDBOX
else
	unset AGENT_SANDBOX
	ah_kernel_=$(python3 "$TEST_DIR/sandbox-probe.py") || {
		echo "Bail out! tests/sandbox-probe.py failed"
		exit 1
	}
	case $ah_kernel_ in
	yes) ;;
	*)
		echo "# this kernel cannot confine commands ($ah_kernel_): tests run with AGENT_SANDBOX=off"
		AGENT_SANDBOX=off AH_NO_SANDBOX=1
		export AGENT_SANDBOX AH_NO_SANDBOX ;;
	esac
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
	# shellcheck disable=SC2030 # the test's own list, in its subshell only
	if (ah_servers_=$SCRATCH/.servers.t$test_count &&
	    cd "$SCRATCH/t$test_count" && test_run_ "$2") >"$SCRATCH/.log" 2>&1 \
		</dev/null; then
		stop_models "$SCRATCH/.servers.t$test_count"
		echo "ok $test_count - $1"
	else
		stop_models "$SCRATCH/.servers.t$test_count"
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

# script_call NAME ARGS: a model script entry (tests/model-server.py) of
# one call of NAME with ARGS (JSON)
script_call() {
	jq -nc --arg n "$1" --argjson a "$2" '{tool_calls: [{name: $n, arguments: $a}]}'
}

# script_said TEXT: a model script entry that answers TEXT
script_said() { jq -nc --arg c "$1" '{content: $c}'; }

# small_workspace: a workspace w with a.txt ("alpha", "needle here") and
# src/m.c
small_workspace() {
	mkdir w && printf "alpha\nneedle here\n" >w/a.txt && mkdir w/src &&
	printf "int x;\n" >w/src/m.c
}

# user TEXT: a user message, as one line
user() { jq -nc --arg c "$1" '{role: "user", content: $c}'; }

# req N FILTER: jq FILTER over the body of the Nth request the model
# server got (requests.jsonl)
req() { jq -c --argjson n "$1" "select(.n == \$n) | .body | $2" requests.jsonl; }

# bash_args COMMAND: the arguments of a bash call of COMMAND
bash_args() { jq -nc --arg c "$1" '{command: $c}'; }

# decide TOOL ARGS [OPTION...]: the permission hook-perm [OPTION...]
# writes for one call of TOOL, as "decision rule: reason" in file "got"
decide() {
	t=$1 a=$2
	shift 2
	call_msg "$t" "$a" none >in &&
	hook-perm "$@" <in >out 2>err &&
	jq -r '.tool_calls[0].permission | "\(.decision) \(.rule): \(.reason)"' out >got
}

# gone PID: no such process, or a zombie
gone() {
	! read -r gone_l_ 2>/dev/null <"/proc/$1/stat" || {
		# shellcheck disable=SC2086 # the fields after the command's name
		set -- ${gone_l_##*) }
		test "$1" = Z
	}
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

# read_only DIR CMD...: CMD with DIR read-only, as a read-only checkout
# is.  For root, whom a chmod does not stop: in a user and mount
# namespace of its own (unshare -rm), in which DIR is a read-only mount.
# For another user, whose unshare -r would show the directories of root
# (/tmp) as nobody's: DIR and all in it made unwritable (chmod -R a-w)
# while CMD runs.  can_read_only: whether this machine lets one be made.
read_only() {
	ro_dir_=$1 && shift &&
	if [ "$(id -u)" = 0 ]; then
		unshare -rm sh -c 'mount --bind "$1" "$1" &&
			mount -o remount,bind,ro "$1" && shift && exec "$@"' sh "$ro_dir_" "$@"
	else
		chmod -R a-w "$ro_dir_" && {
			ro_rc_=0 && "$@" || ro_rc_=$?
			chmod -R u+w "$ro_dir_" && return "$ro_rc_"
		}
	fi
}
can_read_only() { [ "$(id -u)" != 0 ] || unshare -rm true 2>/dev/null; }

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

# new_session_of PID: the session of PID, a child started with setsid,
# once it is its own: ps right after the & can still see it in ours (and
# kill_session would then stop this very script).  Fails, printing
# nothing, when PID is gone, or still in our session after 5 s.
new_session_of() {
	ns_own_=$(ps -o sid= -p $$ | tr -d ' ')
	ns_left_=250
	while ns_sid_=$(ps -o sid= -p "$1" | tr -d ' ') && [ -n "$ns_sid_" ]; do
		[ "$ns_sid_" != "$ns_own_" ] && { echo "$ns_sid_"; return 0; }
		[ "$ns_left_" -gt 0 ] || break
		ns_left_=$((ns_left_ - 1))
		sleep 0.02
	done
	echo "new_session_of: process $1 is gone, or in our session still" >&2
	return 1
}

# kill_session SID: SIGKILL to every process of session SID, as a power
# cut would.  The processes are stopped first: killed one after the
# other, those still running could see the others die and act on it
# (agent-run's reaper interrupting the stages, which then answer the
# calls), which a power cut never lets them do.  One pkill is not
# enough: a process forked after it read /proc escapes it, and can then
# hold the session's lock for good (a stage blocked opening the ring's
# FIFO).  Passes until none is left (zombies still match, hence the
# bound).  An empty SID (ps found no process) is refused: to pkill it
# means the caller's own session, the test script's and prove's.
kill_session() {
	case $1 in
	''|*[!0-9]*|0)
		echo "kill_session: '$1' is not a session id" >&2
		return 1 ;;
	esac
	if [ "$1" = "$(ps -o sid= -p $$ | tr -d ' ')" ]; then
		echo "kill_session: $1 is this script's own session" >&2
		return 1
	fi
	for _ in 1 2 3; do
		pkill -STOP -s "$1" || return 0
	done
	for _ in 1 2 3 4 5 6; do
		pkill -9 -s "$1" || return 0
		sleep 0.01
	done
}

# wait_all PID...: waits for each of the processes the test started in
# the background (never a bare wait, which waits for the model server
# too, and loses their statuses); fails, saying which, when one failed.
wait_all() {
	wa_rc_=0
	for wa_pid_; do
		wait "$wa_pid_" || {
			echo "wait_all: process $wa_pid_ exited $?" >&2
			wa_rc_=1
		}
	done
	return "$wa_rc_"
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
# saying so, after SECONDS * 50 tries that failed: at least SECONDS, longer
# when CMD itself is slow (a loaded machine stretches it, never cuts it).
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
	echo $! >>"$(servers_file)"
	i=0
	while [ ! -s port ]; do
		i=$((i + 1))
		[ $i -gt 500 ] && { echo "model server did not start" >&2; return 1; }
		sleep 0.01
	done
	AGENT_BASE_URL=http://127.0.0.1:$(cat port)/v1
	export AGENT_BASE_URL
}

# servers_file: where the pids of the model servers started here are
# kept: the test's own list in a test body, the script's outside one.
servers_file() {
	# shellcheck disable=SC2031 # set in the test's subshell, on purpose
	echo "${ah_servers_:-$SCRATCH/.servers}"
}

# stop_models [LIST...]: stops the model servers of the lists (default:
# those started in this test, or at the script's top level).  Each test's
# servers are stopped when it ends, the script's when it exits.
stop_models() {
	[ $# -gt 0 ] || set -- "$(servers_file)"
	for sm_list_; do
		[ -f "$sm_list_" ] || continue
		while read -r pid; do kill "$pid" 2>/dev/null; done <"$sm_list_"
		rm -f "$sm_list_"
	done
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
