#!/bin/sh
# agent-step --api anthropic: the transcript translated to Anthropic's
# Messages API and back, against the scripted server's Messages answers.
. "$(dirname "$0")/lib.sh"

AGENT_MODEL=claude-test
AGENT_API=anthropic
export AGENT_MODEL AGENT_API
# req N FILTER: jq FILTER over the body of the Nth request the server got.

test_expect_success 'a text answer: /messages, x-api-key, anthropic-version, usage' '
	echo "{\"content\": \"Hello\"}" >script &&
	start_model script &&
	printf "%s\n" "{\"role\":\"system\",\"content\":\"Be brief.\"}" \
		"{\"role\":\"user\",\"content\":\"hi\"}" >t.jsonl &&
	ANTHROPIC_API_KEY=sk-ant-test agent-step <t.jsonl >out &&
	jq -e ".role == \"assistant\" and .content == \"Hello\" and
		.usage.prompt_tokens == 10 and .usage.input_tokens == 10 and
		.usage.cache_read_input_tokens == 0" out &&
	jq -e "select(.n == 1) | (.path | endswith(\"/v1/messages\")) and
		.headers[\"x-api-key\"] == \"sk-ant-test\" and
		.headers[\"anthropic-version\"] == \"2023-06-01\" and
		(.headers | has(\"authorization\") | not)" requests.jsonl &&
	test "$(req 1 .system)" = "[{\"type\":\"text\",\"text\":\"Be brief.\",\"cache_control\":{\"type\":\"ephemeral\"}}]" &&
	test "$(req 1 .max_tokens)" = 8192 &&
	test "$(req 1 .messages)" = "[{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"hi\",\"cache_control\":{\"type\":\"ephemeral\"}}]}]"
'

test_expect_success 'tools, parallel calls and their results, as the API groups them' '
	cat >script <<-\EOF &&
	{"tool_calls": [{"name": "bash", "id": "call_a", "arguments": {"command": "ls"}}, {"name": "read_file", "id": "call_b", "arguments": {"path": "f"}}]}
	{"content": "Two files."}
	EOF
	start_model script &&
	tool-exec --schema >tools.json &&
	echo "{\"role\":\"user\",\"content\":\"look\"}" >t.jsonl &&
	agent-step --tools tools.json <t.jsonl >>t.jsonl &&
	jq -s -e ".[1].tool_calls | map(.id) == [\"toolu_a\", \"toolu_b\"] and
		.[0].function.arguments == \"{\\\"command\\\":\\\"ls\\\"}\"" t.jsonl &&
	printf "%s\n" "{\"role\":\"tool\",\"tool_call_id\":\"toolu_a\",\"content\":\"f\"}" \
		"{\"role\":\"tool\",\"tool_call_id\":\"toolu_b\",\"content\":\"Error: no f\"}" >>t.jsonl &&
	agent-step --tools tools.json <t.jsonl >out &&
	jq -e ".content == \"Two files.\"" out &&
	test "$(req 1 ".tools | map(.name) | join(\",\")")" = "\"bash,list_dir,read_file,write_file,edit_file,run_todo_write,grep,glob,task\"" &&
	test "$(req 1 ".tools[-1].cache_control.type")" = "\"ephemeral\"" &&
	test "$(req 1 ".tools[0] | has(\"input_schema\")")" = true &&
	req 2 ".messages" >sent &&
	jq -e "length == 3 and .[1].role == \"assistant\" and
		(.[1].content | map(.type)) == [\"tool_use\", \"tool_use\"] and
		.[1].content[0].input == {command: \"ls\"} and
		.[2].role == \"user\" and
		(.[2].content | map(.type)) == [\"tool_result\", \"tool_result\"] and
		.[2].content[1].is_error == true and
		.[2].content[1].cache_control.type == \"ephemeral\"" sent
'

test_expect_success 'streamed: text to stderr, tool input from its pieces, thinking kept and sent back' '
	cat >script <<-\EOF &&
	{"thinking": "Let me list.", "signature": "c2lnbmF0dXJl", "tool_calls": [{"name": "bash", "id": "call_s", "arguments": {"command": "ls -l"}}], "chunk": 2}
	{"content": "Listed.", "chunk": 2}
	EOF
	start_model script &&
	echo "{\"role\":\"user\",\"content\":\"list\"}" >t.jsonl &&
	agent-step --stream <t.jsonl >>t.jsonl 2>err &&
	jq -s -e ".[1].tool_calls[0].function.arguments == \"{\\\"command\\\": \\\"ls -l\\\"}\" and
		.[1].thinking_blocks == [{type: \"thinking\", thinking: \"Let me list.\", signature: \"c2lnbmF0dXJl\"}] and
		.[1].reasoning_content == \"Let me list.\"" t.jsonl &&
	echo "{\"role\":\"tool\",\"tool_call_id\":\"toolu_s\",\"content\":\"x\"}" >>t.jsonl &&
	agent-step --stream <t.jsonl >out 2>err &&
	jq -e ".content == \"Listed.\"" out &&
	test_grep "Listed." err &&
	test "$(req 2 ".messages[1].content[0]")" = "{\"type\":\"thinking\",\"thinking\":\"Let me list.\",\"signature\":\"c2lnbmF0dXJl\"}" &&
	test "$(req 2 .stream)" = true
'

# wire_events: the JSON events on stdin (one a line) as an SSE answer of
# the Messages API, in a script line
wire_events() {
	python3 -c '
import json, sys
body = "".join("event: %s\ndata: %s\n\n" % (json.loads(l)["type"], l.strip())
               for l in sys.stdin if l.strip())
print(json.dumps({"wire": "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
                  "Content-Length: %d\r\n\r\n%s" % (len(body), body), "close": True}))'
}
start_event() {
	echo '{"type":"message_start","message":{"id":"m","type":"message","role":"assistant","content":[],"usage":{"input_tokens":3,"output_tokens":1}}}'
}
end_events() {
	echo '{"type":"message_delta","delta":{"stop_reason":"tool_use"},"usage":{"output_tokens":5}}'
	echo '{"type":"message_stop"}'
}

test_expect_success 'streamed: a stream of only ping events ends the attempt after --timeout (a ping is a keep-alive, no progress)' '
	echo "{\"pings\": 0.2}" >script &&
	start_model script &&
	echo "{\"role\":\"user\",\"content\":\"hi\"}" >t.jsonl &&
	test_must_fail 7 timeout -s KILL 60 agent-step --stream --timeout 2 <t.jsonl >out 2>err &&
	test ! -s out &&
	test_grep "the stream sent no data for 2 s" err
'

# a tool_use whose input streams no input_json_delta at all (a tool
# without parameters): its arguments are "{}", which tool-exec reads, not ""
test_expect_success 'streamed: a tool_use with no input_json_delta has the arguments {}' '
	printf "%s\n" "$(start_event)" \
		"{\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"tool_use\",\"id\":\"toolu_1\",\"name\":\"list_dir\",\"input\":{}}}" \
		"{\"type\":\"content_block_stop\",\"index\":0}" "$(end_events)" | wire_events >script &&
	start_model script &&
	echo "{\"role\":\"user\",\"content\":\"hi\"}" >t.jsonl &&
	agent-step --stream <t.jsonl >out 2>err &&
	jq -e ".tool_calls[0].id == \"toolu_1\" and
		.tool_calls[0].function.name == \"list_dir\" and
		.tool_calls[0].function.arguments == \"{}\"" out
'

# input_json_delta belongs to the tool_use block open: one in a text block
# after it does not reach the call before
test_expect_success 'streamed: input_json_delta outside a tool_use block is not the call'"'"'s' '
	printf "%s\n" "$(start_event)" \
		"{\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"tool_use\",\"id\":\"toolu_1\",\"name\":\"read_file\",\"input\":{}}}" \
		"{\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{\\\"path\\\":\\\"a\\\"}\"}}" \
		"{\"type\":\"content_block_stop\",\"index\":0}" \
		"{\"type\":\"content_block_start\",\"index\":1,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}" \
		"{\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{\\\"x\\\"\"}}" \
		"{\"type\":\"content_block_stop\",\"index\":1}" "$(end_events)" | wire_events >script &&
	start_model script &&
	echo "{\"role\":\"user\",\"content\":\"hi\"}" >t.jsonl &&
	agent-step --stream <t.jsonl >out 2>err &&
	jq -e ".tool_calls[0].function.arguments == \"{\\\"path\\\":\\\"a\\\"}\"" out
'

test_expect_success 'thinking blocks never go to a Chat Completions server' '
	echo "{\"content\": \"ok\"}" >script &&
	start_model script &&
	printf "%s\n" "{\"role\":\"user\",\"content\":\"a\"}" \
		"{\"role\":\"assistant\",\"content\":\"b\",\"thinking_blocks\":[{\"type\":\"thinking\",\"thinking\":\"t\",\"signature\":\"s\"}]}" \
		"{\"role\":\"user\",\"content\":\"c\"}" >t.jsonl &&
	AGENT_API=chat agent-step <t.jsonl >out &&
	test "$(req 1 ".messages[1]")" = "{\"role\":\"assistant\",\"content\":\"b\"}"
'

test_expect_success 'stop reasons: max_tokens is a cut answer (exit 8), a refusal too' '
	printf "%s\n" "{\"content\": \"Half\", \"stop_reason\": \"max_tokens\"}" \
		"{\"content\": \"\", \"stop_reason\": \"refusal\"}" >script &&
	start_model script &&
	echo "{\"role\":\"user\",\"content\":\"x\"}" >t.jsonl &&
	test_expect_code 8 agent-step <t.jsonl >out 2>err &&
	test_grep "was cut short (stop_reason max_tokens" err &&
	test_expect_code 8 agent-step <t.jsonl >out 2>err &&
	test_grep "the model refused to answer (stop_reason refusal" err
'

test_expect_success 'errors: 529 overloaded is retried, 401 refused with the message' '
	cat >script <<-\EOF &&
	{"status": 529, "error": {"type": "overloaded_error", "message": "Overloaded"}}
	{"content": "Back."}
	{"status": 401, "error": {"type": "authentication_error", "message": "invalid x-api-key"}}
	EOF
	start_model script &&
	echo "{\"role\":\"user\",\"content\":\"x\"}" >t.jsonl &&
	agent-step <t.jsonl >out 2>err &&
	jq -e ".content == \"Back.\"" out &&
	test_grep "529: Overloaded (overloaded_error); retrying" err &&
	test_expect_code 6 agent-step <t.jsonl >out 2>err &&
	test_grep "401: invalid x-api-key (authentication_error)" err
'

test_expect_success 'an error event in the stream' '
	echo "{\"content\": \"x\", \"sse_error\": {\"type\": \"overloaded_error\", \"message\": \"Overloaded\"}}" >script &&
	start_model script &&
	echo "{\"role\":\"user\",\"content\":\"x\"}" >t.jsonl &&
	test_expect_code 6 agent-step --stream <t.jsonl >out 2>err &&
	test_grep "the stream ended with an error: Overloaded (overloaded_error)" err
'

test_expect_success 'cache usage is recorded with each answer' '
	echo "{\"content\": \"ok\", \"usage\": {\"input_tokens\": 5, \"output_tokens\": 2, \"cache_creation_input_tokens\": 100, \"cache_read_input_tokens\": 900}}" >script &&
	start_model script &&
	echo "{\"role\":\"user\",\"content\":\"x\"}" | agent-step >out &&
	jq -e ".usage == {input_tokens: 5, output_tokens: 2,
		cache_creation_input_tokens: 100, cache_read_input_tokens: 900,
		prompt_tokens: 1005, completion_tokens: 2, total_tokens: 1007}" out
'

test_expect_success 'a five-step agent-run session over --api anthropic' '
	cat >script <<-\EOF &&
	{"tool_calls": [{"name": "run_todo_write", "arguments": {"todos": [{"id": "w", "content": "Write hello", "status": "in_progress"}]}}]}
	{"tool_calls": [{"name": "write_file", "arguments": {"path": "hello.txt", "content": "hello\n"}}]}
	{"tool_calls": [{"name": "bash", "arguments": {"command": "cat hello.txt"}}]}
	{"tool_calls": [{"name": "run_todo_write", "arguments": {"todos": [{"id": "w", "content": "Write hello", "status": "completed"}]}}]}
	{"content": "Wrote hello.txt."}
	EOF
	start_model script && mkdir w &&
	agent-run -y -C w "write hello.txt" >answer 2>progress &&
	test "$(cat answer)" = "Wrote hello.txt." &&
	test "$(cat w/hello.txt)" = hello &&
	valid w/.agent/transcript.jsonl &&
	test "$(jq -s "map(select(.path | endswith(\"/messages\"))) | length" requests.jsonl)" = 5 &&
	req 5 "[.system[-1].cache_control.type, .tools[-1].cache_control.type,
		([.messages[].content[] | select(.cache_control)] | length)]" >marks &&
	echo "[\"ephemeral\",\"ephemeral\",2]" >expect &&
	test_cmp expect marks &&
	req 5 ".messages[-1].content[0]" >last &&
	jq -e ".type == \"tool_result\" and (.content | startswith(\"Current todos:\"))" last
'

test_expect_success 'the request byte for byte: turns merged, a user turn first, system apart, cache points' '
	cat >t.jsonl <<-\EOF &&
	{"role":"assistant","content":"earlier"}
	{"role":"system","content":"sys"}
	{"role":"user","content":"a"}
	{"role":"system","content":"late"}
	{"role":"user","content":[{"type":"text","text":"b"}]}
	{"role":"assistant","content":"","thinking_blocks":[{"type":"thinking","thinking":"t","signature":"s"}],"tool_calls":[{"id":"c1","type":"function","function":{"name":"bash","arguments":"{\"command\":\"ls\"}"}},{"id":"c2","type":"function","function":{"name":"read_file","arguments":"oops"}}]}
	{"role":"tool","tool_call_id":"c1","content":"Error: no"}
	{"role":"tool","tool_call_id":"c2","content":""}
	EOF
	agent-step --dry-run <t.jsonl >body &&
	cat >expect <<-\EOF &&
	{"model":"claude-test","max_tokens":8192,"messages":[{"role":"user","content":[{"type":"text","text":"(continue)"}]},{"role":"assistant","content":[{"type":"text","text":"earlier"}]},{"role":"user","content":[{"type":"text","text":"a"},{"type":"text","text":"b","cache_control":{"type":"ephemeral"}}]},{"role":"assistant","content":[{"type":"thinking","thinking":"t","signature":"s"},{"type":"tool_use","id":"c1","name":"bash","input":{"command":"ls"}},{"type":"tool_use","id":"c2","name":"read_file","input":{}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"c1","content":"Error: no","is_error":true},{"type":"tool_result","tool_use_id":"c2","content":"(empty)","cache_control":{"type":"ephemeral"}}]}],"system":[{"type":"text","text":"sys"},{"type":"text","text":"late","cache_control":{"type":"ephemeral"}}]}
	EOF
	test_cmp expect body &&
	printf "%s\n" "{\"role\":\"assistant\",\"content\":\"earlier\"}" \
		"{\"role\":\"user\",\"content\":\"u\"}" >t.jsonl &&
	agent-step --dry-run <t.jsonl >body &&
	cat >expect <<-\EOF &&
	{"model":"claude-test","max_tokens":8192,"messages":[{"role":"user","content":[{"type":"text","text":"(continue)","cache_control":{"type":"ephemeral"}}]},{"role":"assistant","content":[{"type":"text","text":"earlier"}]},{"role":"user","content":[{"type":"text","text":"u","cache_control":{"type":"ephemeral"}}]}]}
	EOF
	test_cmp expect body
'

test_expect_success 'a request over 64 KB is sent in parts, the bytes of --dry-run, whole again on a retry' '
	cat >script <<-\EOF &&
	{"status": 529, "error": {"type": "overloaded_error", "message": "Overloaded"}}
	{"content": "ok"}
	EOF
	mkdir bodies &&
	start_model script --bodies "$PWD/bodies" &&
	tool-exec --schema >tools.json &&
	long_session 5 30000 >t.jsonl &&
	agent-step -q --tools tools.json <t.jsonl >out &&
	jq -e ".content == \"ok\"" out &&
	agent-step --tools tools.json --dry-run <t.jsonl >expect &&
	test "$(wc -c <bodies/1)" -gt 65536 &&
	for n in 1 2; do
		{ cat bodies/$n && echo; } >actual &&
		test_cmp expect actual || return 1
	done &&
	size=$(wc -c <bodies/2) &&
	jq -e --arg size "$size" "select(.n == 2) |
		.headers[\"content-length\"] == \$size and
		(.headers | has(\"transfer-encoding\") | not)" requests.jsonl
'

if memory_measurable; then
	test_expect_success 'memory: the transcript is held once, not again converted' '
		echo "{\"content\": \"ok\", \"repeat\": true}" >script &&
		start_model script &&
		peak_grows_once
	'
else
	test_skip 'memory: the transcript is held once, not again converted' \
		'under valgrind or a sanitizer'
fi

test_expect_success '--api: an unknown one is a usage error' '
	test_must_fail 2 agent-step --api bedrock </dev/null 2>err &&
	test_grep "unknown API .bedrock. (use chat, anthropic or responses)" err
'

test_done
