#!/bin/sh
# agent-step --api responses: the transcript translated to OpenAI's
# Responses API and back, against the scripted server's Responses answers
# and answers recorded from the live API (tests/data/responses).
. "$(dirname "$0")/lib.sh"

AGENT_MODEL=gpt-5-codex
AGENT_API=responses
export AGENT_MODEL AGENT_API
DATA=$SRC_DIR/tests/data/responses
export DATA
# req N FILTER: jq FILTER over the body of the Nth request the server got.
req() { jq -c --argjson n "$1" "select(.n == \$n) | .body | $2" requests.jsonl; }
user() { jq -nc --arg c "$1" '{role: "user", content: $c}'; }
# raw FILE [CTYPE]: a script entry sending FILE as it is.
raw() { jq -Rsc --arg t "${2:-application/json}" '{raw: ., ctype: $t}' "$1"; }

test_expect_success 'a text answer: /responses, the request in its shape, usage in both' '
	echo "{\"content\": \"Hello\"}" >script &&
	start_model script &&
	printf "%s\n" "{\"role\":\"system\",\"content\":\"Be brief.\"}" \
		"{\"role\":\"user\",\"content\":\"hi\"}" >t.jsonl &&
	tool-exec --schema >tools.json &&
	OPENAI_API_KEY=sk-test AGENT_SESSION=sess-1 agent-step --tools tools.json \
		--max-tokens 500 <t.jsonl >out &&
	jq -e ".role == \"assistant\" and .content == \"Hello\" and
		.usage.prompt_tokens == 10 and .usage.input_tokens == 10 and
		.usage.completion_tokens == 5 and
		.usage.prompt_tokens_details.cached_tokens == 0 and
		.usage.completion_tokens_details.reasoning_tokens == 0" out &&
	jq -e "select(.n == 1) | (.path | endswith(\"/v1/responses\")) and
		.headers.authorization == \"Bearer sk-test\"" requests.jsonl &&
	test "$(req 1 .input)" = "[{\"type\":\"message\",\"role\":\"system\",\"content\":\"Be brief.\"},{\"type\":\"message\",\"role\":\"user\",\"content\":\"hi\"}]" &&
	test "$(req 1 "[.store, .include, .max_output_tokens, .prompt_cache_key, has(\"max_tokens\"), has(\"messages\"), has(\"previous_response_id\")]")" = "[false,[\"reasoning.encrypted_content\"],500,\"sess-1\",false,false,false]" &&
	test "$(req 1 ".tools[0] | [.type, .name, has(\"parameters\"), has(\"function\")]")" = "[\"function\",\"bash\",true,false]"
'

test_expect_success 'parallel calls, their results as function_call_output items' '
	cat >script <<-\EOF &&
	{"tool_calls": [{"name": "bash", "id": "call_a", "arguments": {"command": "ls"}}, {"name": "read_file", "id": "call_b", "arguments": {"path": "f"}}]}
	{"content": "Two files."}
	EOF
	start_model script &&
	user look >t.jsonl &&
	agent-step <t.jsonl >>t.jsonl &&
	jq -s -e ".[1].tool_calls | map(.id) == [\"call_a\", \"call_b\"] and
		.[1].function.arguments == \"{\\\"path\\\": \\\"f\\\"}\"" t.jsonl &&
	printf "%s\n" "{\"role\":\"tool\",\"tool_call_id\":\"call_a\",\"content\":\"f\"}" \
		"{\"role\":\"tool\",\"tool_call_id\":\"call_b\",\"content\":\"x\"}" >>t.jsonl &&
	agent-step <t.jsonl >out &&
	jq -e ".content == \"Two files.\"" out &&
	req 2 ".input[1:]" >sent &&
	jq -e "map(.type) == [\"function_call\", \"function_call\", \"function_call_output\", \"function_call_output\"] and
		.[0].call_id == \"call_a\" and .[0].name == \"bash\" and
		.[0].arguments == \"{\\\"command\\\": \\\"ls\\\"}\" and
		.[3] == {type: \"function_call_output\", call_id: \"call_b\", output: \"x\"}" sent
'

test_expect_success 'streamed: text to stderr, arguments from deltas, reasoning kept and sent back' '
	cat >script <<-\EOF &&
	{"thinking": "List first.", "signature": "ZW5jcnlwdGVk", "content": "Listing.", "tool_calls": [{"name": "bash", "id": "call_s", "arguments": {"command": "ls -l"}}], "chunk": 2}
	{"content": "Listed.", "chunk": 2}
	EOF
	start_model script &&
	user list >t.jsonl &&
	agent-step --stream <t.jsonl >>t.jsonl 2>err &&
	test_grep "Listing." err &&
	jq -s -e ".[1].tool_calls[0].function.arguments == \"{\\\"command\\\": \\\"ls -l\\\"}\" and
		.[1].content == \"Listing.\" and
		.[1].reasoning_content == \"List first.\" and
		.[1].reasoning_items == [{type: \"reasoning\", id: \"rs_1\", summary: [{type: \"summary_text\", text: \"List first.\"}], encrypted_content: \"ZW5jcnlwdGVk\"}]" t.jsonl &&
	echo "{\"role\":\"tool\",\"tool_call_id\":\"call_s\",\"content\":\"x\"}" >>t.jsonl &&
	agent-step --stream <t.jsonl >out 2>err &&
	jq -e ".content == \"Listed.\"" out &&
	test "$(req 2 "[.input[1:4][] | .type]")" = "[\"reasoning\",\"message\",\"function_call\"]" &&
	test "$(req 2 ".input[1].encrypted_content")" = "\"ZW5jcnlwdGVk\"" &&
	test "$(req 2 .stream)" = true
'

test_expect_success 'reasoning items go to the Responses API alone' '
	echo "{\"content\": \"ok\"}" >script &&
	start_model script &&
	printf "%s\n" "{\"role\":\"user\",\"content\":\"a\"}" \
		"{\"role\":\"assistant\",\"content\":\"b\",\"reasoning_items\":[{\"type\":\"reasoning\",\"id\":\"rs_x\",\"summary\":[],\"encrypted_content\":\"e\"}]}" \
		"{\"role\":\"user\",\"content\":\"c\"}" >t.jsonl &&
	AGENT_API=chat agent-step <t.jsonl >out &&
	test "$(req 1 ".messages[1]")" = "{\"role\":\"assistant\",\"content\":\"b\"}"
'

test_expect_success 'a built-in tool the server ran is not a call of ours; a client call of another kind is refused' '
	cat >script <<-\EOF &&
	{"web_search": "news", "content": "The news."}
	{"web_search": "news", "content": "The news.", "stream": true}
	{"items": [{"type": "computer_call", "id": "cu_1", "call_id": "c1", "action": {"type": "screenshot"}, "status": "completed", "pending_safety_checks": []}]}
	EOF
	start_model script &&
	user news >t.jsonl &&
	agent-step <t.jsonl >out &&
	jq -e ".content == \"The news.\" and (has(\"tool_calls\") | not)" out &&
	agent-step --stream <t.jsonl >out 2>err &&
	jq -e ".content == \"The news.\" and (has(\"tool_calls\") | not)" out &&
	test_expect_code 8 agent-step <t.jsonl >out 2>err &&
	test ! -s out &&
	test_grep "an output item of a kind the harness does not take.*item computer_call" err
'

test_expect_success 'incomplete answers: max_output_tokens and content_filter exit 8; an unknown status names it' '
	cat >script <<-\EOF &&
	{"content": "Half", "finish_reason": "length"}
	{"content": "Half", "finish_reason": "length"}
	{"content": "", "finish_reason": "content_filter"}
	{"content": "x", "response_status": "brand_new_status"}
	EOF
	start_model script &&
	user x >t.jsonl &&
	test_expect_code 8 agent-step <t.jsonl >out 2>err &&
	test ! -s out &&
	test_grep "cut short (status max_output_tokens" err &&
	test_expect_code 8 agent-step --stream <t.jsonl >out 2>err &&
	test_grep "cut short (status max_output_tokens" err &&
	test_expect_code 8 agent-step <t.jsonl >out 2>err &&
	test_grep "withheld by a content filter (status content_filter" err &&
	test_expect_code 8 agent-step <t.jsonl >out 2>err &&
	test_grep "a reason agent-step does not know (status brand_new_status" err
'

test_expect_success 'errors: 429 retried after Retry-After, 400 context_length_exceeded is exit 10 with a window, stream errors' '
	cat >script <<-\EOF &&
	{"status": 429, "headers": {"retry-after": "0"}, "error": {"message": "Rate limit", "type": "requests", "code": "rate_limit_exceeded"}}
	{"content": "Back."}
	{"status": 400, "error": {"message": "Your input exceeds the context window of this model.", "type": "invalid_request_error", "code": "context_length_exceeded"}}
	{"content": "x", "sse_error": {"type": "server_error", "code": "server_error", "message": "Boom"}}
	{"content": "x", "failed": {"code": "server_error", "message": "The model failed"}}
	EOF
	start_model script &&
	user x >t.jsonl &&
	agent-step <t.jsonl >out 2>err &&
	jq -e ".content == \"Back.\"" out &&
	test_grep "429: Rate limit (rate_limit_exceeded); retrying" err &&
	test_expect_code 10 agent-step --context-window 100000 <t.jsonl >out 2>err &&
	test_grep "context_length_exceeded" err &&
	test_expect_code 6 agent-step --stream <t.jsonl >out 2>err &&
	test_grep "the stream ended with an error: Boom (server_error)" err &&
	test_expect_code 6 agent-step --stream <t.jsonl >out 2>err &&
	test_grep "the stream ended with an error: The model failed (server_error)" err
'

test_expect_success 'recorded: a function call, then the text after its result (gpt-4o, whole)' '
	{ raw "$DATA/gpt4o-function-call.json" && raw "$DATA/gpt4o-text-after-call.json"; } >script &&
	start_model script &&
	user "What is the capital of PotatoLand?" >t.jsonl &&
	agent-step <t.jsonl >>t.jsonl &&
	jq -s -e ".[1] | .content == null and .tool_calls == [{id: \"call_61cRAI5gleGxCN89umufHn2a\", type: \"function\", function: {name: \"get_capital\", arguments: \"{\\\"country\\\":\\\"PotatoLand\\\"}\"}}] and
		.usage.prompt_tokens == 256 and .usage.total_tokens == 274" t.jsonl &&
	echo "{\"role\":\"tool\",\"tool_call_id\":\"call_61cRAI5gleGxCN89umufHn2a\",\"content\":\"Potato City\"}" >>t.jsonl &&
	agent-step <t.jsonl >out &&
	jq -e ".content == \"The capital of PotatoLand is Potato City.\" and
		.usage.completion_tokens == 11" out
'

test_expect_success 'recorded: a stream with a web search the server ran (gpt-4o)' '
	raw "$DATA/gpt4o-web-search.sse" text/event-stream >script &&
	start_model script &&
	user "Give me the top 3 news in the world today." >t.jsonl &&
	agent-step --stream <t.jsonl >out 2>err &&
	jq -e ".content == \"Here are the top three news stories from around the world as of July 16, 2025:\" and
		(has(\"tool_calls\") | not) and .usage.prompt_tokens == 323 and
		.usage.completion_tokens == 419" out &&
	test_grep "Here are the top three" err
'

test_expect_success 'agent-run --api responses: 5 steps, parallel calls and reasoning, every prefix kept, usage recorded' '
	cat >script <<-\EOF &&
	{"thinking": "Look around.", "tool_calls": [{"name": "bash", "arguments": {"command": "echo a"}}, {"name": "bash", "arguments": {"command": "echo b"}}]}
	{"thinking": "Now the file.", "tool_calls": [{"name": "write_file", "arguments": {"path": "f.txt", "content": "hi\n"}}]}
	{"tool_calls": [{"name": "read_file", "arguments": {"path": "f.txt"}}, {"name": "list_dir", "arguments": {"path": "."}}]}
	{"thinking": "Check.", "tool_calls": [{"name": "bash", "arguments": {"command": "cat f.txt"}}]}
	{"content": "Done: f.txt says hi."}
	EOF
	start_model script --sizes "$PWD/sizes.jsonl" &&
	mkdir w &&
	AGENT_API=chat agent-run --api responses -y -C w "make f.txt" >answer 2>progress &&
	test "$(cat answer)" = "Done: f.txt says hi." &&
	test "$(cat w/f.txt)" = hi &&
	test_line_count = 5 sizes.jsonl &&
	jq -s -e "all(.[1:][]; .prefix > 0) and
		(. as \$s | [range(1; length)] | all(\$s[.].prefix == \$s[. - 1].bytes - 2))" sizes.jsonl &&
	jq -s -e "map(select(.path | endswith(\"/responses\"))) | length == 5" requests.jsonl &&
	req 5 "[.input[] | select(.type == \"reasoning\") | .encrypted_content]" >enc &&
	test "$(cat enc)" = "[\"enc-1\",\"enc-2\",\"enc-4\"]" &&
	jq -s -e "map(select(.role == \"assistant\")) | length == 5 and
		all(.[]; .usage.prompt_tokens > 0 and .usage.input_tokens > 0)" w/.agent/transcript.jsonl
'

test_expect_success 'examples/three-apis.sh: one question, the three APIs side by side' '
	printf "%s\n" "{\"content\": \"Four.\", \"repeat\": true}" >script &&
	start_model script &&
	"$SRC_DIR/examples/three-apis.sh" "What is 2+2?" >out &&
	printf "%s\n" "chat (gpt-4o-mini): Four." "anthropic (claude-sonnet-4-5): Four." \
		"responses (gpt-5-codex): Four." >expect &&
	test_cmp expect out &&
	jq -r .path requests.jsonl >paths &&
	printf "%s\n" /v1/chat/completions /v1/messages /v1/responses >expect &&
	test_cmp expect paths
'

test_done
