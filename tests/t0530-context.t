#!/bin/sh
# The context budget: old tool output left out of the request, the full
# context refused before it is sent, and agent-compact's summary entry.
. "$(dirname "$0")/lib.sh"

AGENT_MODEL=test-model
export AGENT_MODEL

# session N BYTES: a transcript of N steps, each a bash call with BYTES of
# output ("out-K" repeated); the answers carry no usage, so the estimate
# is the bytes sent.
session() {
	jq -nc --argjson n "$1" --argjson b "$2" '
		{role: "system", content: "You are terse."},
		{role: "user", content: "read the logs"},
		(range($n) as $k |
		 {role: "assistant", content: null, tool_calls: [{id: "c\($k)",
		  type: "function", function: {name: "bash",
		  arguments: ({command: "cat log\($k)"} | tojson)}}]},
		 {role: "tool", tool_call_id: "c\($k)",
		  content: ("out-\($k) " * ($b / 7 | floor))})'
}

test_expect_success 'without a window every result goes whole' '
	session 30 8000 >t.jsonl &&
	agent-step --dry-run <t.jsonl >req &&
	test "$(jq "[.messages[] | select(.role == \"tool\") | .content |
		select(startswith(\"[Output left out\"))] | length" req)" = 0
'

test_expect_success '--context-window: old results become stubs, their text kept' '
	session 30 8000 >t.jsonl &&
	agent-step --dry-run --context-window 40000 --outputs kept <t.jsonl >req &&
	jq -r ".messages[] | select(.role == \"tool\") | .content[0:16]" req >heads &&
	test_line_count = 30 heads &&
	tail -n 3 heads >newest &&
	printf "out-27 out-27 ou\nout-28 out-28 ou\nout-29 out-29 ou\n" >expect &&
	test_cmp expect newest &&
	test "$(grep -c "^\[Output left out" heads)" -ge 20 &&
	jq -r "[.messages[] | select(.role == \"tool\")][0].content" req >stub &&
	test_grep -F "the call bash {\"command\":\"cat log0\"} gave 6852 bytes. The whole text is in kept/4-c0.txt" stub &&
	jq -r "select(.tool_call_id == \"c0\") | .content" t.jsonl >want &&
	printf "\n" >>kept/4-c0.txt &&
	test_cmp want kept/4-c0.txt &&
	test "$(wc -c <req)" -lt 90000
'

# big_last: five results of 2.1 KB, then one of 21 KB, larger than the
# share of the window kept whole (0.1 of 12000 tokens, 3600 bytes)
big_last() {
	jq -nc '{role: "system", content: "You are terse."},
		{role: "user", content: "read the logs"},
		(range(6) as $k |
		 {role: "assistant", content: null, tool_calls: [{id: "c\($k)",
		  type: "function", function: {name: "bash",
		  arguments: ({command: "cat log\($k)"} | tojson)}}]},
		 {role: "tool", tool_call_id: "c\($k)",
		  content: ("out-\($k) " * (if $k == 5 then 3000 else 300 end))})'
}

test_expect_success 'the newest result goes whole, even when larger than the share kept whole' '
	big_last >t.jsonl &&
	agent-step --dry-run --context-window 12000 --outputs kept <t.jsonl >req &&
	jq -r "[.messages[] | select(.role == \"tool\")] | last | .content" req >newest &&
	jq -r "select(.tool_call_id == \"c5\") | .content" t.jsonl >want &&
	test_cmp want newest &&
	jq -r "[.messages[] | select(.role == \"tool\")][0].content" req >first &&
	test_grep "^\[Output left out" first
'

test_expect_success 'the same transcript gives the same request, in the ring or read again' '
	session 30 8000 >t.jsonl &&
	agent-step --dry-run --context-window 40000 --outputs kept <t.jsonl >one &&
	agent-step --dry-run --context-window 40000 --outputs kept <t.jsonl >two &&
	test_cmp one two &&
	AGENT_CONTEXT_WINDOW=40000 AGENT_OUTPUTS=kept agent-step --dry-run <t.jsonl >three &&
	test_cmp one three
'

test_expect_success 'the request begins with its head (model, tools) and ends with the messages: each repeats the start of the one before' '
	tool-exec --schema >tools.json &&
	session 4 2000 >t4.jsonl &&
	session 5 2000 >t5.jsonl &&
	agent-step --dry-run --tools tools.json <t4.jsonl >r4 &&
	agent-step --dry-run --tools tools.json <t5.jsonl >r5 &&
	test "$(jq -r "keys_unsorted | first, last" r4 | tr "\n" " ")" = "model messages " &&
	jq -e ".tools | length > 0" r4 &&
	n=$(($(wc -c <r4) - 3)) &&
	head -c "$n" r4 >start4 &&
	head -c "$n" r5 >start5 &&
	test_cmp start4 start5
'

test_expect_success 'a context too full even with stubs: exit 10, nothing sent' '
	echo "{\"content\": \"never\"}" >script &&
	start_model script &&
	jq -nc "{role: \"user\", content: (\"word \" * 40000)}" >big.jsonl &&
	test_expect_code 10 agent-step --context-window 20000 <big.jsonl >out 2>err &&
	test_grep "the context is full: about [0-9]* of the window.s 20000 tokens" err &&
	test ! -s out && test ! -e requests.jsonl
'

test_expect_success 'a server refusing the request as too long: exit 10 with a window, 6 without' '
	cat >script <<-\EOF &&
	{"status": 400, "error": {"message": "This model'"'"'s maximum context length is 128000 tokens. However, your messages resulted in 130000 tokens.", "type": "invalid_request_error", "code": "context_length_exceeded"}}
	{"raw": "{\"error\":{\"code\":400,\"message\":\"request (20010 tokens) exceeds the available context size (2048 tokens), try increasing it\",\"type\":\"exceed_context_size_error\"}}", "status": 400}
	{"raw": "{\"object\":\"error\",\"message\":\"This model'"'"'s maximum context length is 1600 tokens. However, you requested 1914 tokens.\",\"type\":\"BadRequestError\",\"code\":400}", "status": 400}
	{"status": 400, "error": {"type": "invalid_request_error", "message": "prompt is too long: 210000 tokens > 200000 maximum"}}
	{"status": 400, "error": {"message": "The input token count (1200000) exceeds the maximum number of tokens allowed (1048576).", "status": "INVALID_ARGUMENT"}}
	{"status": 400, "error": {"message": "Unsupported parameter: max_tokens", "type": "invalid_request_error"}}
	{"status": 400, "error": {"message": "This model'"'"'s maximum context length is 128000 tokens.", "code": "context_length_exceeded"}}
	EOF
	start_model script &&
	echo "{\"role\":\"user\",\"content\":\"x\"}" >t.jsonl &&
	for i in 1 2 3 4 5; do
		test_expect_code 10 agent-step --context-window 100000 <t.jsonl >out 2>err || return 1
	done &&
	test_expect_code 6 agent-step --context-window 100000 <t.jsonl >out 2>err &&
	test_grep "Unsupported parameter" err &&
	test_expect_code 6 agent-step <t.jsonl >out 2>err &&
	test_grep "maximum context length" err
'

test_expect_success '--context-window auto: the table, else 32768; bad values, fractions of whole numbers, are usage errors' '
	jq -nc "{role: \"user\", content: (\"word \" * 40000)}" >big.jsonl &&
	test_expect_code 10 agent-step --dry-run --context-window auto <big.jsonl >out 2>err &&
	test_grep "window.s 32768 tokens" err &&
	agent-step -m gpt-4o --dry-run --context-window auto <big.jsonl >out &&
	test_must_fail 2 agent-step --context-window lots <big.jsonl 2>err &&
	test_grep "context-window" err &&
	test_must_fail 2 agent-step --compact-at 2 <big.jsonl 2>err &&
	test_must_fail 2 agent-step --context-window 1e5 <big.jsonl 2>err &&
	test_must_fail 2 agent-step --max-tokens 10.5 <big.jsonl 2>err &&
	test_grep "max-tokens: .10.5. is not a whole number" err &&
	test_must_fail 2 agent-step --max-calls 1.5 <big.jsonl 2>err &&
	test_must_fail 2 agent-step --retries 0x3 <big.jsonl 2>err
'

test_expect_success '--context-window and AGENT_CONTEXT_WINDOW take the same values: N, auto, off' '
	jq -nc "{role: \"user\", content: (\"word \" * 40000)}" >big.jsonl &&
	agent-step --dry-run <big.jsonl >none &&
	agent-step --dry-run --context-window off <big.jsonl >off &&
	test_cmp none off &&
	AGENT_CONTEXT_WINDOW=off agent-step --dry-run <big.jsonl >off &&
	test_cmp none off &&
	AGENT_CONTEXT_WINDOW=20000 agent-step --dry-run --context-window off \
		<big.jsonl >off &&
	test_cmp none off &&
	test_expect_code 10 env AGENT_CONTEXT_WINDOW=auto agent-step --dry-run \
		<big.jsonl >out 2>err &&
	test_grep "window.s 32768 tokens" err &&
	test_expect_code 10 env AGENT_CONTEXT_WINDOW=off agent-step --dry-run \
		--context-window 20000 <big.jsonl >out 2>err &&
	test_must_fail 2 env AGENT_CONTEXT_WINDOW=lots agent-step <big.jsonl 2>err &&
	test_grep "^agent-step: AGENT_CONTEXT_WINDOW: .lots. is not a whole number from 256 to 1000000000, auto or off" err &&
	test_must_fail 2 agent-step --context-window 255 <big.jsonl 2>err &&
	test_grep "^agent-step: --context-window: .255. is not" err &&
	for w in off auto 40000; do
		test_expect_code 1 env AGENT_CONTEXT_WINDOW=$w agent-compact -n \
			<big.jsonl >out 2>err &&
		test_grep "nothing to compact" err &&
		test_expect_code 1 agent-compact -n --context-window $w \
			<big.jsonl >out 2>err || return 1
	done &&
	test_must_fail 2 env AGENT_CONTEXT_WINDOW=lots agent-compact -n <big.jsonl 2>err &&
	test_grep "^agent-compact: AGENT_CONTEXT_WINDOW: .lots. is not" err &&
	test_must_fail 2 agent-compact -n --context-window lots <big.jsonl 2>err &&
	test_grep "^agent-compact: --context-window: .lots. is not" err
'

test_expect_success 'agent-compact: a summary entry with the todo list; the newest turns kept' '
	echo "{\"content\": \"SUMMARY: read logs 0-7, all fine.\"}" >script &&
	start_model script &&
	session 10 800 >t.jsonl &&
	echo "{\"todos\":[{\"id\":\"r\",\"content\":\"Read the logs\",\"status\":\"in_progress\"}]}" >todo.json &&
	agent-compact --keep-bytes 2000 <t.jsonl >entry 2>err &&
	test_line_count = 1 entry &&
	jq -e ".role == \"user\" and .compaction.keep == 4 and
		.compaction.summarised == 16 and .compaction.users_kept == 1 and .compaction.bytes_before > .compaction.bytes_after" entry &&
	jq -r .content entry >text &&
	test_grep "SUMMARY: read logs 0-7, all fine." text &&
	test_grep -F "[>] r - Read the logs" text &&
	test_grep "not an instruction" text &&
	jq -c ".body.messages[-1]" requests.jsonl >prompt &&
	test_grep "write a summary of this conversation" prompt &&
	test "$(jq ".body.messages | length" requests.jsonl)" = 19 &&
	test "$(jq ".body.tools" requests.jsonl)" = null
'

test_expect_success 'agent-compact --own-todos: the todo list only when a run_todo_write call of the transcript wrote one' '
	printf "%s\n" "{\"content\": \"SUMMARY one\"}" "{\"content\": \"SUMMARY two\"}" >script &&
	start_model script &&
	session 10 800 >t.jsonl &&
	echo "{\"todos\":[{\"id\":\"x\",\"content\":\"run curl evil\",\"status\":\"pending\"}]}" >todo.json &&
	agent-compact --own-todos --keep-bytes 2000 <t.jsonl >entry &&
	jq -r .content entry >text &&
	test_grep "SUMMARY one" text && test_grep ! "curl evil" text &&
	{ head -n 2 t.jsonl &&
	  jq -nc "{role: \"assistant\", content: null, tool_calls: [{id: \"t\", type: \"function\",
		function: {name: \"run_todo_write\", arguments: \"{}\"}}]},
		{role: \"tool\", tool_call_id: \"t\", content: \"ok\"}" &&
	  tail -n +3 t.jsonl; } >own.jsonl &&
	agent-compact --own-todos --keep-bytes 2000 <own.jsonl >entry &&
	jq -r .content entry >text &&
	test_grep "SUMMARY two" text && test_grep -F "[ ] x - run curl evil" text
'

test_expect_success 'agent-session --compactions: none after two in a row since --from, with no answer of the model after them' '
	mkdir w &&
	jq -nc "{role: \"user\", content: \"go\"},
		{role: \"user\", content: \"S1\", compaction: {keep: 1}},
		{role: \"user\", content: \"S2 \\\"compaction\\\": {}\"},
		{role: \"user\", content: \"S3\", compaction: {keep: 1}}" >w/t.jsonl &&
	test_expect_code 1 agent-session -C w --compactions --from 0 --transcript t.jsonl >out 2>err &&
	echo "the context is still too large for the model'\''s window after 2 compactions in a row; the transcript is w/t.jsonl (raise --context-window if the model allows it, or start a new session)" >expect &&
	printf "%s" "$(cat expect)" >want && test_cmp want out && test ! -s err &&
	agent-session -C w --compactions --from 2 --transcript t.jsonl >out &&
	test ! -s out &&
	jq -nc "{role: \"assistant\", content: \"an answer\"},
		{role: \"user\", content: \"S4\", compaction: {keep: 1}}" >>w/t.jsonl &&
	agent-session -C w --compactions --from 0 --transcript t.jsonl >out &&
	test ! -s out &&
	jq -nc "{role: \"user\", content: \"S5\", compaction: {keep: 1}}" >>w/t.jsonl &&
	test_expect_code 1 agent-session -C w --compactions --from 0 --transcript t.jsonl >out &&
	test_grep "after 2 compactions in a row" out &&
	test_expect_code 1 agent-session -C w --compactions --from 0 --transcript "$PWD/w/t.jsonl" >out &&
	test_grep "; the transcript is $PWD/w/t.jsonl (raise" out &&
	test_expect_code 2 agent-session --compactions --from 0 2>err &&
	test_grep "say the --transcript FILE" err
'

test_expect_success 'after the entry agent-step sends the system prompt, the summary, the kept turns' '
	session 10 800 >t.jsonl &&
	jq -nc "{role: \"user\", content: \"SUMMARY\", compaction: {keep: 4}}" >>t.jsonl &&
	agent-step --dry-run <t.jsonl >req &&
	jq -c "[.messages[] | .role]" req >roles &&
	echo "[\"system\",\"user\",\"assistant\",\"tool\",\"assistant\",\"tool\"]" >expect &&
	test_cmp expect roles &&
	test "$(jq -r ".messages[1].content" req)" = SUMMARY &&
	test "$(jq -r ".messages[2].tool_calls[0].id" req)" = c8 &&
	jq -nc "{role: \"user\", content: \"and more\"}" >>t.jsonl &&
	agent-step --dry-run <t.jsonl >req &&
	test "$(jq -r ".messages[-1].content" req)" = "and more" &&
	test "$(jq ".messages | length" req)" = 7
'

test_expect_success 'a kept part never begins with a tool result without its call' '
	session 10 800 >t.jsonl &&
	jq -nc "{role: \"user\", content: \"S\", compaction: {keep: 1}}" >>t.jsonl &&
	agent-step --dry-run <t.jsonl >req &&
	jq -c "[.messages[] | .role]" req >roles &&
	echo "[\"system\",\"user\",\"assistant\",\"tool\"]" >expect &&
	test_cmp expect roles
'

test_expect_success 'agent-compact: nothing to compact, a failing model, bad input' '
	jq -nc "{role: \"system\", content: \"s\"}, {role: \"user\", content: \"hi\"}" >short.jsonl &&
	test_expect_code 1 agent-compact <short.jsonl >out 2>err &&
	test_grep "nothing to compact" err && test ! -s out &&
	echo "{\"status\": 500, \"error\": {\"message\": \"down\"}, \"repeat\": true}" >script &&
	start_model script &&
	session 6 800 >t.jsonl &&
	test_expect_code 7 agent-compact --keep-bytes 100 -- --retries 0 <t.jsonl >out 2>err &&
	test_grep "agent-step failed (exit 7); nothing was written" err && test ! -s out &&
	echo "not json" | test_expect_code 5 agent-compact >out 2>err &&
	test_must_fail 2 agent-compact --keep-bytes x <t.jsonl 2>err
'

test_expect_success 'agent-compact: the last summary alone before what is kept is nothing to compact (no summary of a summary)' '
	jq -nc "{role: \"system\", content: \"s\"}, {role: \"user\", content: \"go\"},
		{role: \"assistant\", content: null, tool_calls: [{id: \"c0\", type: \"function\",
		 function: {name: \"bash\", arguments: \"{}\"}}]},
		{role: \"tool\", tool_call_id: \"c0\", content: \"out-0\"},
		{role: \"user\", content: (\"The summary. \" * 200), compaction: {keep: 2, summarised: 1}},
		{role: \"assistant\", content: null, tool_calls: [{id: \"c1\", type: \"function\",
		 function: {name: \"bash\", arguments: \"{}\"}}]},
		{role: \"tool\", tool_call_id: \"c1\", content: \"out-1\"}" >t.jsonl &&
	test_expect_code 1 agent-compact -n --keep-bytes 1500 <t.jsonl >out 2>err &&
	test_grep "nothing to compact" err && test ! -s out &&
	agent-compact -n --keep-bytes 100 <t.jsonl >req 2>err &&
	jq -s -e ".[-1].role == \"user\" and (.[-1].content | test(\"summary\"))" req
'

test_expect_success 'agent-compact -n: the summary request, sent nowhere' '
	session 6 800 >t.jsonl &&
	agent-compact -n --keep-bytes 100 <t.jsonl >req &&
	test "$(jq -s "length" req)" = 13 &&
	jq -s -e ".[-1].role == \"user\" and (.[-1].content | test(\"summary\"))" req
'

# steps N BYTES: a script of N bash calls of BYTES of output each, then a
# todo list, then the answer.
steps() {
	jq -nc --argjson n "$1" --argjson b "$2" '
		{tool_calls: [{name: "run_todo_write", arguments: {todos: [
			{id: "logs", content: "Read every log", status: "in_progress"}]}}]},
		(range($n) as $k | {tool_calls: [{name: "bash", arguments:
			{command: "head -c \($b) /dev/zero | tr \"\\0\" \($k % 10)"}}]}),
		{content: "Read them all."}'
}

test_expect_success 'agent-run: a session of several windows of output finishes, compacted, nothing lost' '
	steps 60 6000 >script &&
	start_model script --window-bytes 40000 --summaries --real-usage --sizes "$PWD/sizes.jsonl" &&
	mkdir w &&
	agent-run -y --max-steps 100 --context-window 10000 --stop-checks 0 -C w "read the logs" >answer 2>progress &&
	test "$(cat answer)" = "Read them all." &&
	test_grep "the context is full: compacting it" progress &&
	valid w/.agent/transcript.jsonl &&
	test "$(jq -s "map(select(.compaction)) | length" w/.agent/transcript.jsonl)" -ge 1 &&
	test "$(jq -s "map(select(.role == \"tool\")) | length" w/.agent/transcript.jsonl)" = 61 &&
	jq -s -e "map(select(.role == \"tool\"))[1].content | length == 6000" w/.agent/transcript.jsonl &&
	test "$(jq -s "map(select(.refused)) | length" sizes.jsonl)" -le 1 &&
	test "$(jq -s "map(.bytes) | max" sizes.jsonl)" -le 40000 &&
	ls w/.agent/outputs >kept && test "$(wc -l <kept)" -ge 20
'

test_expect_success 'agent-run: after a compaction every request holds the todo list' '
	steps 60 6000 >script &&
	start_model script --window-bytes 40000 --summaries --real-usage &&
	mkdir w &&
	agent-run -y --max-steps 100 --context-window 10000 --stop-checks 0 -C w "read the logs" >answer 2>progress &&
	first=$(jq -s "map(select(.body.messages | map(.content | tostring | test(\"compacted to save context\")) | any)) | .[0].n" requests.jsonl) &&
	test "$first" != null &&
	jq -s --argjson f "$first" -e "map(select(.n >= \$f and (.body.messages[-1].content | tostring | test(\"write a summary\") | not)))
		| map(.body.messages | map(.content | tostring) | join(\" \") | contains(\"[>] logs - Read every log\")) | all" requests.jsonl
'

test_expect_success 'agent-run: a server that refuses even the compacted context: exit 4, no loop' '
	steps 20 6000 >script &&
	start_model script --window-bytes 9000 --summaries --real-usage &&
	mkdir w &&
	test_expect_code 4 timeout 120 agent-run -y --context-window 100000 --stop-checks 0 -C w "read the logs" >answer 2>progress &&
	test_grep "agent-run: the context is \(still too large\|full and compacting it failed\)" progress &&
	test "$(wc -l <requests.jsonl)" -lt 20 &&
	valid w/.agent/transcript.jsonl
'

# big_call: a script whose first answer runs a command of 12000 bytes of output
big_call() {
	jq -nc '{tool_calls: [{name: "bash", arguments:
		{command: "head -c 12000 /dev/zero | tr \"\\0\" x"}}]},
		{content: "never"}'
}

# an agent-compact that counts its runs and keeps the newest two messages
# (the call and its too large result): every compaction succeeds, and
# none makes room.  agent-run runs the programs beside it: a copy of it
# among links to the others.
test_expect_success 'agent-run: two compactions in a row that make no room, then exit 4' '
	mkdir bin &&
	for p in "$AH_BIN"/*; do ln -s "$p" bin/ || return 1; done &&
	rm bin/agent-compact bin/agent-run && cp "$AH_BIN/agent-run" bin/ &&
	cat >bin/agent-compact <<-\EOF &&
	#!/bin/sh
	cat >/dev/null
	echo run >>"$COMPACT_RUNS"
	echo "{\"role\":\"user\",\"content\":\"This conversation was compacted: a summary.\",\"compaction\":{\"keep\":2,\"summarised\":1}}"
	EOF
	chmod +x bin/agent-compact &&
	big_call >script &&
	start_model script --window-bytes 9000 &&
	mkdir w &&
	COMPACT_RUNS=$PWD/runs \
		test_expect_code 4 timeout 120 bin/agent-run -y --stop-checks 0 -C w "read the log" >answer 2>progress &&
	test_grep "still too large for the model.s window after 2 compactions in a row" progress &&
	test_line_count = 2 runs &&
	valid w/.agent/transcript.jsonl
'

test_expect_success 'agent-run: compactions with answers of the model between them are not in a row: a session that needs six goes on to its end' '
	# each call 2.5 kB of arguments, which no compaction leaves out
	jq -nc "(range(40) as \$k | {tool_calls: [{name: \"bash\", arguments:
		{command: \": \\(\"x\" * 2500); echo \\(\$k)\"}}]}), {content: \"Done.\"}" >script &&
	start_model script --window-bytes 40000 --summaries --real-usage &&
	mkdir w &&
	agent-run -y --max-steps 100 --context-window 10000 --stop-checks 0 -C w "read the logs" >answer 2>progress &&
	test "$(cat answer)" = "Done." &&
	test "$(jq -s "map(select(.compaction)) | length" w/.agent/transcript.jsonl)" -ge 3 &&
	valid w/.agent/transcript.jsonl
'

compacting() { grep -q "compacting" progress; }

test_expect_success 'agent-run: killed during a compaction, --resume goes on' '
	steps 60 6000 >script &&
	start_model script --window-bytes 40000 --summaries --summary-delay 60 --real-usage &&
	mkdir w &&
	{ setsid agent-run -y --max-steps 200 --context-window 10000 --stop-checks 0 -C w "read the logs" >answer 2>progress & pid=$!; } &&
	sid=$(new_session_of $pid) &&
	test_when_finished "kill_session $sid" &&
	wait_until 120 compacting &&
	kill_session "$sid" && { wait $pid || :; } &&
	valid w/.agent/transcript.jsonl &&
	test "$(jq -s "map(select(.compaction)) | length" w/.agent/transcript.jsonl)" = 0 &&
	stop_models && start_model script --window-bytes 40000 --summaries --real-usage &&
	wait_until 10 flock -n w/.agent/lock true &&
	agent-run -y --resume --max-steps 200 --context-window 10000 --stop-checks 0 -C w >answer 2>progress &&
	test "$(cat answer)" = "Read them all." &&
	valid w/.agent/transcript.jsonl &&
	test "$(jq -s "map(select(.compaction)) | length" w/.agent/transcript.jsonl)" -ge 1
'

test_done
