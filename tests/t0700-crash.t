#!/bin/sh
# Crash safety: SIGKILL at random points, many times over, and what is left
# afterwards is whole (RELIABILITY.md).
. "$(dirname "$0")/lib.sh"

AGENT_MODEL=scripted
export AGENT_MODEL
# How many kills each test makes (AH_CRASH_ROUNDS to torture longer).
ROUNDS=${AH_CRASH_ROUNDS:-12}
export ROUNDS

# pause: a random time between 0 and 60 ms.
pause() { sleep "$(od -An -N2 -tu2 /dev/urandom | awk '{ printf "%.3f", $1 % 60 / 1000 }')"; }
# lines_valid FILE: every line of FILE is a whole JSON object.
lines_valid() {
	[ ! -s "$1" ] && return 0
	[ "$(tail -c 1 "$1" | od -An -tx1 | tr -d ' ')" = 0a ] || {
		echo "$1: the last line is torn" >&2; return 1; }
	jq -c 'if type == "object" then . else error("not an object") end' "$1" >/dev/null
}

test_expect_success 'todo-write: killed while storing, todo.json always holds one whole list' '
	jq -nc "{todos: [range(400) | {id: \"\(.)\", content: (\"step \(.) \" * 20),
		status: (if . == 0 then \"in_progress\" else \"pending\" end)}]}" >big &&
	jq -nc "{todos: [{id: \"1\", content: \"small\", status: \"pending\"}]}" >small &&
	todo-write -q <small &&
	r=0 && while [ $r -lt $ROUNDS ]; do
		{ todo-write -q <big & pid=$!; } && pause && kill -9 $pid 2>/dev/null
		wait $pid 2>/dev/null
		jq -e ".todos | type == \"array\" and (length == 1 or length == 400)" todo.json >/dev/null ||
			{ echo "round $r: todo.json is not whole" >&2; return 1; }
		todo-write -q <small || return 1
		r=$((r + 1))
	done
'

test_expect_success 'todo-write: 8 writers at once, 20 lists each: always one whole list, no temp file left' '
	pids= && w=1 && while [ $w -le 8 ]; do
		jq -nc --arg w "$w" "{todos: [range(50) | {id: \"\(.)\", content: \"writer \(\$w) item \(.)\", status: \"pending\"}]}" >list$w &&
		{ i=0; while [ $i -lt 20 ]; do todo-write -q <list$w || exit 1; i=$((i + 1)); done & pids="$pids $!"; } &&
		w=$((w + 1)) || return 1
	done &&
	r=0 && while [ $r -lt 100 ]; do
		! test -e todo.json || jq -e ".todos | length == 50" todo.json >/dev/null ||
			{ echo "a reader saw a list that is not whole" >&2; return 1; }
		r=$((r + 1))
	done &&
	wait_all $pids &&
	jq -e ".todos | length == 50 and (map(.content | split(\" \")[1]) | unique | length == 1)" todo.json &&
	test -z "$(ls -A | grep tmp)"
'

test_expect_success 'hook-audit: killed while appending, the next run cuts the torn tail' '
	jq -nc "{role: \"tool\", tool_call_id: \"c\", content: (\"x\" * 300000)}" >one &&
	r=0 && while [ $r -lt $ROUNDS ]; do
		{ while cat one; do :; done 2>/dev/null |
			hook-audit --log audit.jsonl --tee t.jsonl >/dev/null & pid=$!; } &&
		pause && kill -9 $pid
		wait $pid 2>/dev/null
		echo "{\"role\":\"user\",\"content\":\"after $r\"}" |
			hook-audit --log audit.jsonl --tee t.jsonl >/dev/null 2>err || return 1
		lines_valid audit.jsonl && lines_valid t.jsonl || return 1
		test "$(tail -n 1 t.jsonl | jq -r .content)" = "after $r" || return 1
		r=$((r + 1))
	done
'

test_expect_success 'hook-audit: a torn tail is cut, and says so' '
	printf "{\"a\":1}\n{\"b\":" >audit.jsonl && printf "{\"c\":1}\n{\"d" >t.jsonl &&
	echo "{\"role\":\"user\",\"content\":\"x\"}" | hook-audit --log audit.jsonl --tee t.jsonl >/dev/null 2>err &&
	test_contains err "hook-audit: '\''audit.jsonl'\'': cut a torn last line (5 bytes) that a crashed writer left" &&
	test_contains err "hook-audit: '\''t.jsonl'\'': cut a torn last line (3 bytes)" &&
	lines_valid audit.jsonl && lines_valid t.jsonl &&
	test "$(wc -l <t.jsonl)" = 2 && test "$(head -n 1 t.jsonl)" = "{\"c\":1}"
'

test_expect_success 'agent-run: killed at random points, --resume finishes with every call answered' '
	{
		k=1; while [ $k -le 12 ]; do
			if [ $((k % 4)) = 0 ]; then
				echo "{\"tool_calls\": [{\"name\": \"run_todo_write\", \"arguments\": {\"todos\": [{\"id\": \"1\", \"content\": \"step $k\", \"status\": \"in_progress\"}]}}]}"
			else
				echo "{\"tool_calls\": [{\"name\": \"bash\", \"arguments\": {\"command\": \"echo step-$k >>log; sleep 0.0$k\"}}]}"
			fi
			k=$((k + 1))
		done
		echo "{\"content\": \"All done.\", \"repeat\": true}"
	} >script &&
	start_model script && mkdir w &&
	{ setsid agent-run -y -C w --stop-checks 0 "work" >answer 2>progress & pid=$!; } &&
	r=0 st=1 && while [ $r -lt $ROUNDS ]; do
		pause; pause
		sid=$(new_session_of $pid 2>/dev/null)
		[ -n "$sid" ] && kill_session "$sid"
		wait $pid; st=$?
		[ $st = 0 ] && break
		lines_valid w/.agent/audit.jsonl || return 1
		! test -e w/todo.json || jq -e ".todos | type == \"array\"" w/todo.json >/dev/null || return 1
		# killed before the transcript began: there is nothing to resume
		again=--resume; test -s w/.agent/transcript.jsonl || again=work
		{ setsid agent-run -y -C w --stop-checks 0 $again >answer 2>>progress & pid=$!; }
		r=$((r + 1))
	done &&
	again=--resume && { test -s w/.agent/transcript.jsonl || again=work; } &&
	{ [ $st = 0 ] || wait $pid || agent-run -y -C w --stop-checks 0 $again >answer 2>>progress; } &&
	test "$(cat answer)" = "All done." &&
	lines_valid w/.agent/transcript.jsonl && valid w/.agent/transcript.jsonl &&
	lines_valid w/.agent/audit.jsonl &&
	echo "kills: $r" >&2
'

test_done
