#!/bin/sh
# agent-run's options, read by agent-session --run-options
# (lib/runopts.c) into shell code the driver evals: values of any bytes
# come through exact and nothing in them runs; the parse is getopt_long's;
# a mistake is said in agent-run's words, exit 2.
. "$(dirname "$0")/lib.sh"

# shellcheck disable=SC2034 # used in the test bodies
# where agent-run is, as the driver passes it
BIN=$(dirname "$(command -v agent-session)")
# A value with what a shell would act on: quotes, a newline, $(...),
# backquotes, backslashes, a variable, a ; and an exit.
# shellcheck disable=SC2034 # used in the test bodies
hostile='it'\''s "q" \ \\ $(touch ran) `touch ran2` ${HOME} ;exit 7
line 2 '\'''

# bad_usage MESSAGE ARG...: agent-run ARG... is refused with MESSAGE
bad_usage() {
	msg=$1
	shift
	test_expect_code 2 agent-run "$@" </dev/null >out 2>err &&
	printf '%s\n' "agent-run: $msg" \
		"Try 'agent-run --help' for more information." >expect &&
	test_cmp expect err && test ! -s out
}

test_expect_success 'hostile values come through the eval byte for byte, and nothing in them runs' '
	mkdir "w$hostile" && echo prompt >"$hostile" &&
	param=$(jq -nc --arg v "$hostile" "{k: \$v}") &&
	agent-session --run-options "$BIN" -- -m "$hostile" -C "w$hostile" \
		--param "$param" --system "$hostile" -o "$hostile.out" \
		"$hostile" "x$hostile" </dev/null >opts &&
	start=$PWD && real=$(pwd -P) &&
	eval "$(cat opts)" &&
	test "$AGENT_MODEL" = "$hostile" &&
	test "$task" = "$hostile x$hostile" &&
	test "$system" = "$start/$hostile" &&
	test "$out_file" = "$start/$hostile.out" &&
	test "$dir" = "$real/w$hostile" &&
	test $# = 2 && test "$1" = --param && test "$2" = "$param" &&
	test ! -e ran && test ! -e ran2 && test ! -e "w$hostile/ran"
'

test_expect_success 'hostile values through agent-run: a directory, a system prompt, a task' '
	echo "{\"content\": \"done\"}" >script &&
	start_model script &&
	mkdir "w$hostile" && printf "%s" "$hostile" >"$hostile" &&
	agent-run -m m -C "w$hostile" --system "$hostile" "$hostile" </dev/null >answer 2>progress &&
	test "$(cat answer)" = done &&
	req 1 ".messages[0].content" >sys && test "$(jq -r . sys)" = "$hostile" &&
	req 1 ".messages[1].content" >task && test "$(jq -r . task)" = "$hostile" &&
	test ! -e ran && test ! -e ran2 && test ! -e "w$hostile/ran"
'

test_expect_success 'the parse is getopt_long'\''s: -qy, -Cdir, --opt=value, options after the task, --' '
	mkdir w &&
	agent-session --run-options "$BIN" -- -qy -Cw --max-steps=3 do this \
		-mM --timeout 9 -- -c --x "" </dev/null >opts &&
	eval "$(cat opts)" &&
	test "$quiet" = 1 && test "$yes" = 1 && test "$amode" = auto &&
	test "$dir" = "$(cd w && pwd -P)" && test "$max_steps" = 3 &&
	test "$AGENT_MODEL" = M && test "$flags" = "-q --mode-given" &&
	test "$step_opts" = -q && test -z "$exec_opts" &&
	test "$quiet_opt" = --quiet && test "$answer_opts" = --print &&
	test "$task" = "do this -c --x " &&
	test $# = 2 && test "$1" = --timeout && test "$2" = 9 &&
	agent-session --run-options "$BIN" -- -m m -C "" t </dev/null >opts &&
	(eval "$(cat opts)" && test "$dir" = "$(pwd -P)" && test -z "$flags" &&
	 test "$step_opts" = -v && test "$exec_opts" = -v &&
	 test -z "$quiet_opt" && test "$answer_opts" = --print) &&
	agent-session --run-options "$BIN" -- -m m --json t </dev/null >opts &&
	(eval "$(cat opts)" && test -z "$answer_opts") &&
	agent-session --run-options "$BIN" -- -m m --fork --sandbox off \
		--mode ask t </dev/null >opts &&
	(eval "$(cat opts)" &&
	 test "$flags" = "--fork --mode-given --sandbox-given") &&
	agent-session --run-options "$BIN" -- -m m -c t </dev/null >opts &&
	(eval "$(cat opts)" && test "$flags" = --continue) &&
	agent-session --run-options "$BIN" -- -m m --resume </dev/null >opts &&
	(eval "$(cat opts)" && test "$flags" = --resume)
'

test_expect_success 'a missing value, an unknown option, a value where none goes: exit 2, in agent-run'\''s words' '
	bad_usage "option '\''--model'\'' needs a value" -q --model &&
	bad_usage "option '\''-C'\'' needs a value" -qC &&
	bad_usage "option '\''-m'\'' needs a value" task -m &&
	bad_usage "unknown option '\''--bogus'\''" --bogus task &&
	bad_usage "unknown option '\''-z'\''" -qz task &&
	bad_usage "option '\''--quiet'\'' takes no value" --quiet=1 task &&
	bad_usage "option '\''--bogus'\'' takes no value" --bogus=1 task &&
	bad_usage "--max-steps: '\''x3'\'' is not a whole number" -m m --max-steps=x3 t &&
	bad_usage "no model: give -m MODEL or set AGENT_MODEL" -- -m m &&
	bad_usage "unknown option '\''--bogus'\''" --bogus --help &&
	agent-run --help --bogus >out 2>err && test ! -s err &&
	test_grep "^usage: agent-run" out
'

test_expect_success 'a program of the harness missing beside agent-run (hook-cc, agent-snap): said before anything runs' '
	for p in hook-cc agent-snap; do
		rm -rf bin w && mkdir bin w &&
		for f in "$AH_BIN"/*; do cp "$f" bin/ || return 1; done &&
		rm "bin/$p" &&
		AGENT_BASE_URL=http://127.0.0.1:9/v1 test_expect_code 1 bin/agent-run -m m -C w "task" </dev/null >out 2>err &&
		test_grep "agent-run: '\''.*/bin/$p'\'' is missing: the harness is not installed whole" err &&
		test ! -e w/.agent || return 1
	done
'

test_expect_success '--state-dir and AGENT_STATE_DIR: from where agent-run started, exported; an empty one refused' '
	mkdir w &&
	agent-session --run-options "$BIN" -- -m m -C w --state-dir st t </dev/null >opts &&
	(eval "$(cat opts)" && test "$AGENT_STATE_DIR" = "$PWD/st" &&
	 env >env && grep -qx "AGENT_STATE_DIR=$PWD/st" env) &&
	AGENT_STATE_DIR=rel agent-session --run-options "$BIN" -- -m m -C w t </dev/null >opts &&
	(eval "$(cat opts)" && test "$AGENT_STATE_DIR" = "$PWD/rel") &&
	bad_usage "--state-dir: the directory is empty" -m m --state-dir "" t &&
	bad_usage "--state-dir: the directory is empty" -m m --state-dir= t
'

# what agent-run says reaches the terminal as every diagnostic does: a
# control character in a value or a path shown as \xNN, never sent
test_expect_success 'a message with control characters in a value is made safe for the terminal' '
	esc=$(printf "\033") && bel=$(printf "\007") &&
	test_expect_code 1 agent-run -m m -C "x${esc}]0;t${bel}" t </dev/null >out 2>err &&
	test_grep "^agent-run: cannot change to directory '\''x\\\\x1b\]0;t\\\\x07'\''$" err &&
	! grep -q "$esc" err && ! grep -q "$bel" err
'

test_expect_success 'the stages'\''s environment: exported with the values in force; a child has its parent'\''s -y and project files only' '
	mkdir w &&
	agent-session --run-options "$BIN" -- -m m -C w --base-url http://x \
		--max-depth 2 --context-window 4096 --no-project-files t </dev/null >opts &&
	(unset AGENT_TIMEOUT && eval "$(cat opts)" && env >env) &&
	grep -qx AGENT_MODEL=m env && grep -qx AGENT_API=chat env &&
	grep -qx "AGENT_WORKDIR=$(cd w && pwd -P)" env &&
	grep -qx AGENT_BASE_URL=http://x env && grep -qx AGENT_MAX_DEPTH=2 env &&
	grep -qx AGENT_CONTEXT_WINDOW=4096 env && grep -qx AGENT_YES=0 env &&
	grep -qx AGENT_PROJECT_FILES=0 env && grep -qx AGENT_MAX_STEPS=50 env &&
	grep -qx AGENT_SANDBOX=workspace-write env && ! grep -q ^AGENT_TIMEOUT= env &&
	agent-session --run-options "$BIN" -- \
		-m m -C w --context-window off -y t </dev/null >opts &&
	(export AGENT_OUTPUTS=stale AGENT_CONTEXT_WINDOW=9999 && eval "$(cat opts)" &&
	 env >env && test "$yes" = 1 && test "$project" = 1) &&
	grep -qx AGENT_YES=1 env && grep -qx AGENT_PROJECT_FILES=1 env &&
	! grep -q "^AGENT_CONTEXT_WINDOW=\|^AGENT_OUTPUTS=" env &&
	AGENT_SESSION=p1 AGENT_YES=0 AGENT_PROJECT_FILES=0 agent-session --run-options \
		"$BIN" -- --child c1 -y -m m -C w t </dev/null >opts &&
	(eval "$(cat opts)" && env >env && test "$yes" = 0 && test "$project" = 0) &&
	grep -qx AGENT_YES=0 env && grep -qx AGENT_PROJECT_FILES=0 env &&
	AGENT_SESSION=p1 AGENT_YES=1 agent-session --run-options "$BIN" -- \
		--child c1 -m m -C w t </dev/null >opts &&
	(eval "$(cat opts)" && env >env && test "$yes" = 1 && test "$project" = 1) &&
	grep -qx AGENT_YES=1 env && grep -qx AGENT_PROJECT_FILES=1 env
'

test_done
