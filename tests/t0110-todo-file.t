#!/bin/sh
# todo-write: storage in todo.json, the other modes, limits, crashes and
# concurrent writers.
. "$(dirname "$0")/lib.sh"

cat >"$SCRATCH/plan.json" <<'JSON'
{"todos":[{"id":"plan","content":"Plan the change","status":"completed"},{"id":"edit","content":"Edit search.js","status":"in_progress","activeForm":"Editing"},{"id":"test","content":"Run the tests","status":"pending"}]}
JSON
PLAN=$SCRATCH/plan.json; export PLAN

test_expect_success 'stores the list in todo.json, in the input shape' '
	todo-write -q <"$PLAN" &&
	jq -c . todo.json >actual &&
	jq -c . "$PLAN" >expect &&
	test_cmp expect actual
'

test_expect_success 'todo.json holds one item a line' '
	todo-write -q <"$PLAN" &&
	cat >expect <<-\JSON &&
	{"todos": [
	  {"id":"plan","content":"Plan the change","status":"completed"},
	  {"id":"edit","content":"Edit search.js","status":"in_progress","activeForm":"Editing"},
	  {"id":"test","content":"Run the tests","status":"pending"}
	]}
	JSON
	test_cmp expect todo.json
'

test_expect_success 'round trip: todo-write <todo.json stores the same bytes' '
	todo-write -q <"$PLAN" &&
	cp todo.json first &&
	todo-write -q <first &&
	cmp first todo.json
'

test_expect_success 'jq selects the unfinished items' '
	todo-write -q <"$PLAN" &&
	jq -r ".todos[] | select(.status != \"completed\") | .id" todo.json >actual &&
	printf "edit\ntest\n" >expect &&
	test_cmp expect actual
'

test_expect_success 'the list replaces the stored one (a snapshot, not a diff)' '
	todo-write -q <"$PLAN" &&
	echo "{\"todos\":[{\"id\":\"only\",\"content\":\"x\"}]}" | todo-write -q &&
	jq -r "[.todos[].id] | join(\",\")" todo.json >actual &&
	echo only >expect &&
	test_cmp expect actual
'

test_expect_success 'a rejected list leaves todo.json byte-identical' '
	todo-write -q <"$PLAN" &&
	cp todo.json before &&
	for bad in "{\"todos\":[{\"id\":\"a\",\"content\":\"\"}]}" \
		"{\"todos\":[{\"content\":\"x\",\"status\":\"done\"}]}" \
		"{\"todos\":5}" "not json"; do
		echo "$bad" | test_must_fail 1 todo-write >out || return 1
		grep "^Error: " out >/dev/null || return 1
	done &&
	cmp before todo.json &&
	test ! -e .todo.json.tmp
'

test_expect_success '-n validates and renders without storing' '
	todo-write -n <"$PLAN" >actual &&
	test_contains actual "[>] edit - Edit search.js" &&
	test ! -e todo.json
'

test_expect_success '-f, AGENT_TODO_FILE and -C choose the file' '
	mkdir -p sub other &&
	todo-write -q -f sub/list.json <"$PLAN" &&
	test -f sub/list.json &&
	AGENT_TODO_FILE=other/env.json todo-write -q <"$PLAN" &&
	test -f other/env.json &&
	todo-write -q -C sub <"$PLAN" &&
	test -f sub/todo.json &&
	test ! -e todo.json &&
	todo-write -C sub --show >actual &&
	test_contains actual "Current todos:"
'

test_expect_success '--show renders the stored list' '
	todo-write -q <"$PLAN" &&
	todo-write --show >actual &&
	cat >expect <<-\EOF &&
	Current todos:
	[x] plan - Plan the change
	[>] edit - Edit search.js
	[ ] test - Run the tests
	EOF
	test_cmp expect actual
'

test_expect_success '--show of a missing file is an empty list' '
	todo-write --show >actual &&
	echo "No active todos." >expect &&
	test_cmp expect actual &&
	test ! -e todo.json
'

test_expect_success '--show of a corrupt file names it and leaves it alone' '
	echo "{\"todos\": [" >todo.json &&
	cp todo.json before &&
	test_must_fail 3 todo-write --show 2>err &&
	test_contains err "todo-write: '\''todo.json'\'' is not valid JSON" &&
	cmp before todo.json
'

test_expect_success '--show of a file that breaks a rule names it' '
	echo "{\"todos\":[{\"id\":\"a\",\"content\":\"x\"},{\"id\":\"a\",\"content\":\"y\"}]}" >todo.json &&
	test_must_fail 3 todo-write --show 2>err &&
	test_contains err "todo-write: '\''todo.json'\'' is not a valid todo list: duplicate todo id - a"
'

test_expect_success '--check: 0 when all is done, 4 listing what is left' '
	todo-write --check >out && test ! -s out &&
	echo "{\"todos\":[{\"id\":\"a\",\"content\":\"x\",\"status\":\"completed\"}]}" |
		todo-write -q &&
	todo-write --check >out && test ! -s out &&
	todo-write -q <"$PLAN" &&
	test_must_fail 4 todo-write --check >actual &&
	cat >expect <<-\EOF &&
	Unfinished todos:
	[>] edit - Edit search.js
	[ ] test - Run the tests
	EOF
	test_cmp expect actual
'

test_expect_success 'invalid UTF-8 is stored as U+FFFD, never as bad bytes' '
	printf "{\"todos\":[{\"id\":\"a\",\"content\":\"caf\\351 \\377ok\"}]}" |
		todo-write >actual &&
	printf "Current todos:\n[ ] a - caf\357\277\275 \357\277\275ok\n" >expect &&
	test_cmp expect actual &&
	jq -e ".todos[0].content == \"caf\\ufffd \\ufffdok\"" todo.json
'

test_expect_success 'limits: items, id and content length, argument size' '
	jq -nc "{todos: [range(501) | {content: \"x\"}]}" >many &&
	test_must_fail 1 todo-write <many >out &&
	echo "Error: too many todos - 501 (at most 500)." >expect &&
	test_cmp expect out &&
	jq -nc "{todos: [range(500) | {content: \"x\"}]}" | todo-write -q &&
	jq -nc "{todos: [{content: (\"y\" * 4001)}]}" >long &&
	test_must_fail 1 todo-write <long >out &&
	echo "Error: todo #1 content is too long - 4001 bytes (at most 4000)." >expect &&
	test_cmp expect out &&
	jq -nc "{todos: [{id: (\"i\" * 201), content: \"x\"}]}" >longid &&
	test_must_fail 1 todo-write <longid >out &&
	echo "Error: todo #1 id is too long - 201 bytes (at most 200)." >expect &&
	test_cmp expect out &&
	jq -nc "{todos: [], pad: (\"z\" * 1048576)}" >huge &&
	test_must_fail 1 todo-write <huge >out &&
	echo "Error: arguments are too large (at most 1048576 bytes)." >expect &&
	test_cmp expect out
'

test_expect_success 'a write error on stdout is an error (exit 3)' '
	todo-write -q <"$PLAN" &&
	test_must_fail 3 todo-write --show >/dev/full 2>err &&
	test_contains err "todo-write: cannot write stdout" &&
	test_must_fail 3 todo-write <"$PLAN" >/dev/full
'

test_expect_success 'an unwritable directory is an I/O error, nothing stored' '
	mkdir ro && chmod 555 ro &&
	if touch ro/probe 2>/dev/null; then
		rm -f ro/probe  # root ignores the mode: use a missing directory
		test_must_fail 3 todo-write -f missing/todo.json <"$PLAN" 2>err
	else
		test_must_fail 3 todo-write -C ro <"$PLAN" 2>err
	fi &&
	test_contains err "todo-write: cannot"
'

test_expect_success 'usage: --help on stdout, bad options exit 2' '
	todo-write --help >out &&
	test_contains out "usage: todo-write" &&
	test_must_fail 2 todo-write --bogus 2>err &&
	test_contains err "todo-write: unknown option '\''--bogus'\''" &&
	test_must_fail 2 todo-write extra 2>err &&
	test_must_fail 2 todo-write --show --check 2>err &&
	test_must_fail 2 todo-write --show -n 2>err &&
	test_must_fail 2 todo-write -f 2>err &&
	test_contains err "needs an argument"
'

# Eight writers, each storing its own list over and over, and a reader that
# checks every snapshot it sees is one of the eight, complete.
test_expect_success '8 concurrent writers: todo.json is always one whole list' '
	for w in 1 2 3 4 5 6 7 8; do
		jq -nc --arg w "$w" \
			"{todos: [range(40) | {id: \"w\(\$w)-\(.)\", content: (\"writer \(\$w) item \(.) \" * 3)}]}" \
			>"list$w" &&
		todo-write -q -f "expect$w.json" <"list$w" || return 1
	done &&
	todo-write -q <list1 &&
	pids= &&
	for w in 1 2 3 4 5 6 7 8; do
		(
			k=0
			while [ $k -lt 40 ]; do
				todo-write -q <"list$w" || exit 1
				k=$((k + 1))
			done
		) &
		pids="$pids $!"
	done &&
	alive() { for p in $pids; do kill -0 "$p" 2>/dev/null && return 0; done; return 1; } &&
	bad=0 && seen=0 &&
	while alive && [ $seen -lt 3000 ]; do
		cp todo.json snap 2>/dev/null || continue
		seen=$((seen + 1))
		match=0
		for w in 1 2 3 4 5 6 7 8; do
			cmp -s snap "expect$w.json" && match=1 && break
		done
		[ $match -eq 1 ] || { bad=1; cp snap badsnap; }
	done &&
	wait_all $pids &&
	echo "reader saw $seen snapshots" &&
	test $seen -gt 20 &&
	test $bad -eq 0 &&
	test ! -e .todo.json.tmp &&
	todo-write --show >/dev/null
'

# SIGKILL at random moments: every time, the file is the old list or the new.
test_expect_success 'a writer killed with SIGKILL leaves a valid file' '
	jq -nc "{todos: [range(250) | {id: \"big-\(.)\", content: (\"payload \" * 400)}]}" >big &&
	jq -nc "{todos: [{id: \"small\", content: \"x\"}]}" >small &&
	todo-write -q -f big.json <big && todo-write -q -f small.json <small &&
	todo-write -q <small &&
	i=0 &&
	while [ $i -lt 30 ]; do
		todo-write -q <big & pid=$!
		sleep "0.00$((i % 10))"
		kill -9 $pid 2>/dev/null
		wait $pid 2>/dev/null
		cmp -s todo.json big.json || cmp -s todo.json small.json || {
			echo "iteration $i: todo.json is neither list" >&2
			exit 1
		}
		todo-write --show >/dev/null || exit 1
		todo-write -q <small || exit 1
		i=$((i + 1))
	done
'

test_done
