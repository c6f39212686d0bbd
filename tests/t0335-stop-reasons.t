#!/bin/sh
# agent-step and the stop (finish) reasons of each API: a table per API
# maps each reason to an answer, tool calls or a failure; a reason not in
# it is a failure that names it (agent-step(1), STOP REASONS).  And what
# a whole or streamed answer must keep: call ids, content that comes in
# message_start, tool input byte for byte, a refusal's details.
. "$(dirname "$0")/lib.sh"

AGENT_MODEL=test-model
export AGENT_MODEL
T=$PWD/t.jsonl
echo '{"role":"user","content":"go"}' >"$T"
# sse FILE: the lines of FILE ("NAME DATA" each) as one SSE body of named
# events, in a script entry served as text/event-stream.
sse() {
	while read -r name data; do
		printf 'event: %s\ndata: %s\n\n' "$name" "$data"
	done <"$1" | jq -Rsc '{raw: ., ctype: "text/event-stream"}'
}
# raw JSON: a script entry sending the JSON text as it is, whole.
raw() { jq -nc --arg r "$1" '{raw: $r}'; }

test_expect_success 'model_context_window_exceeded with no content: exit 10 with a window, else 8, naming it' '
	cat >script <<-\EOF &&
	{"stop_reason": "model_context_window_exceeded", "repeat": true}
	EOF
	start_model script &&
	test_expect_code 8 env AGENT_API=anthropic agent-step <"$T" >out 2>err &&
	test ! -s out &&
	test_grep "stop_reason model_context_window_exceeded" err &&
	test_expect_code 10 env AGENT_API=anthropic agent-step --context-window 200000 <"$T" >out 2>err &&
	test ! -s out &&
	test_grep "the context is full.*model_context_window_exceeded" err &&
	test_expect_code 10 env AGENT_API=anthropic agent-step --stream --context-window 200000 <"$T" >out 2>err &&
	test ! -s out
'

test_expect_success 'a finish or stop reason no table has is a failure naming it, streamed or whole' '
	cat >script <<-\EOF &&
	{"content": "Half of it", "finish_reason": "brand_new_reason", "stop_reason": "brand_new_reason", "repeat": true}
	EOF
	start_model script &&
	for api in chat anthropic; do
		for s in "" --stream; do
			test_expect_code 8 env AGENT_API=$api agent-step $s <"$T" >out 2>err &&
			test ! -s out &&
			test_grep "a reason agent-step does not know (.*_reason brand_new_reason" err ||
			return 1
		done
	done
'

test_expect_success 'pause_turn is reported, not taken as done (exit 8)' '
	echo "{\"content\": \"Searching\", \"stop_reason\": \"pause_turn\", \"repeat\": true}" >script &&
	start_model script &&
	test_expect_code 8 env AGENT_API=anthropic agent-step <"$T" >out 2>err &&
	test ! -s out &&
	test_grep "paused a long turn.*(stop_reason pause_turn" err &&
	test_expect_code 8 env AGENT_API=anthropic agent-step --stream <"$T" >out 2>err &&
	test ! -s out
'

test_expect_success 'MALFORMED_FUNCTION_CALL and content_filter: exit 8, said' '
	cat >script <<-\EOF &&
	{"content": "", "finish_reason": "MALFORMED_FUNCTION_CALL"}
	{"content": "", "finish_reason": "content_filter"}
	{"content": "Done.", "finish_reason": "eos"}
	EOF
	start_model script &&
	test_expect_code 8 agent-step <"$T" >out 2>err &&
	test ! -s out &&
	test_grep "a tool call the API could not read.*finish_reason MALFORMED_FUNCTION_CALL" err &&
	test_expect_code 8 agent-step <"$T" >out 2>err &&
	test_grep "withheld by a content filter (finish_reason content_filter" err &&
	agent-step <"$T" >out &&
	jq -e ".content == \"Done.\"" out
'

test_expect_success 'a whole answer whose calls have "id": "" gets call_N ids' '
	echo "{\"tool_calls\": [{\"id\": \"\", \"name\": \"bash\", \"arguments\": {\"command\": \"ls\"}}, {\"id\": \"\", \"name\": \"bash\", \"arguments\": {\"command\": \"pwd\"}}]}" >script &&
	start_model script &&
	agent-step <"$T" >out &&
	jq -e "[.tool_calls[].id] == [\"call_1\", \"call_2\"]" out
'

test_expect_success 'a stream whose content comes whole in message_start keeps its call' '
	cat >events <<-\EOF &&
	message_start {"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"m","content":[{"type":"text","text":"Looking."},{"type":"tool_use","id":"toolu_w","name":"bash","input":{"command":"ls"}}],"stop_reason":"tool_use","usage":{"input_tokens":7,"output_tokens":3}}}
	message_stop {"type":"message_stop"}
	EOF
	sse events >script &&
	start_model script &&
	AGENT_API=anthropic agent-step --stream <"$T" >out 2>err &&
	jq -e ".content == \"Looking.\" and .tool_calls[0].id == \"toolu_w\" and
		.tool_calls[0].function.arguments == \"{\\\"command\\\":\\\"ls\\\"}\" and
		.usage.input_tokens == 7" out
'

test_expect_success 'integers past 2^53 in a whole Anthropic tool input reach the call byte for byte' '
	raw "{\"type\":\"message\",\"role\":\"assistant\",\"content\":[{\"type\":\"tool_use\",\"id\":\"toolu_n\",\"name\":\"bash\",\"input\":{\"n\":12345678901234567890,\"m\":[-9007199254740993,1.5e400,0.1]}}],\"stop_reason\":\"tool_use\",\"usage\":{\"input_tokens\":5,\"output_tokens\":1}}" >script &&
	start_model script &&
	AGENT_API=anthropic agent-step <"$T" >out &&
	jq -r ".tool_calls[0].function.arguments" out >actual &&
	echo "{\"n\":12345678901234567890,\"m\":[-9007199254740993,1.5e400,0.1]}" >expect &&
	test_cmp expect actual
'

test_expect_success 'a refusal quotes the category and explanation the API gave' '
	raw "{\"type\":\"message\",\"role\":\"assistant\",\"content\":[],\"stop_reason\":\"refusal\",\"stop_details\":{\"type\":\"refusal\",\"category\":\"cyber\",\"explanation\":\"This looks like malware.\"},\"usage\":{\"input_tokens\":5,\"output_tokens\":0}}" >script &&
	cat >events <<-\EOF &&
	message_start {"type":"message_start","message":{"id":"msg_2","type":"message","role":"assistant","model":"m","content":[],"stop_reason":null,"usage":{"input_tokens":5,"output_tokens":0}}}
	message_delta {"type":"message_delta","delta":{"stop_reason":"refusal","stop_details":{"type":"refusal","category":"bio","explanation":"Not this."}},"usage":{"output_tokens":0}}
	message_stop {"type":"message_stop"}
	EOF
	sse events >>script &&
	start_model script &&
	test_expect_code 8 env AGENT_API=anthropic agent-step <"$T" >out 2>err &&
	test ! -s out &&
	test_grep "refused to answer (stop_reason refusal.*): category cyber: This looks like malware." err &&
	test_expect_code 8 env AGENT_API=anthropic agent-step --stream <"$T" >out 2>err &&
	test_grep "refused to answer (stop_reason refusal.*): category bio: Not this." err
'

test_done
