#!/bin/sh
# agent-step and the shapes real providers send beyond the plain API:
# refusals, content as parts, fields a provider adds to a tool call,
# several choices, arguments as an object (see ../shared/provider-streams
# for recordings; these are our own cases of each shape).
. "$(dirname "$0")/lib.sh"

AGENT_MODEL=test-model
export AGENT_MODEL
# sse FILE: the JSON lines of FILE as one SSE body, ended by [DONE], in a
# script entry served as text/event-stream.
sse() {
	{ sed 's/^/data: /; s/$/\n/' "$1" && printf 'data: [DONE]\n\n'; } |
		jq -Rsc '{raw: ., ctype: "text/event-stream"}'
}
chunk() { # CHOICES-JSON: one chat.completion.chunk
	jq -nc --argjson c "$1" '{object: "chat.completion.chunk", choices: $c}'
}

# CR LF line ends, as sse-starlette (FastAPI servers) sends them: a line
# that is only CR is the blank line that ends an event
test_expect_success 'an event stream with CR LF line ends' '
	python3 -c "
import json
ev = [{\"id\": \"r\", \"choices\": [{\"index\": 0, \"delta\": {\"role\": \"assistant\", \"content\": \"Hel\"}}]},
      {\"id\": \"r\", \"choices\": [{\"index\": 0, \"delta\": {\"content\": \"lo\"}, \"finish_reason\": \"stop\"}]}]
body = \"\".join(\"data: %s\r\n\r\n\" % json.dumps(e) for e in ev) + \": ping\r\n\r\ndata: [DONE]\r\n\r\n\"
print(json.dumps({\"wire\": \"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Length: %d\r\n\r\n%s\" % (len(body), body), \"close\": True}))
" >script &&
	start_model script &&
	echo "{\"role\":\"user\",\"content\":\"hi\"}" >t.jsonl &&
	agent-step --stream <t.jsonl >out 2>err &&
	jq -e ".content == \"Hello\"" out
'

test_expect_success 'a streamed refusal is kept, said on stderr, and is the answer' '
	{ chunk "[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":null,\"refusal\":\"\"}}]" &&
	  chunk "[{\"index\":0,\"delta\":{\"refusal\":\"I cannot\"}}]" &&
	  chunk "[{\"index\":0,\"delta\":{\"refusal\":\" help.\"}}]" &&
	  chunk "[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]"; } >events &&
	sse events >script &&
	start_model script &&
	user "do harm" | agent-step --stream >out 2>err &&
	jq -e ".refusal == \"I cannot help.\" and .content == \"\"" out &&
	test_grep "agent-step: the model refused: I cannot help." err &&
	cat out >t.jsonl &&
	agent-step --answer <t.jsonl >answer &&
	test "$(cat answer)" = "I cannot help."
'

# some servers send the call's name again in every delta of it
test_expect_success 'a tool call whose name comes again in each delta is named once' '
	{ chunk "[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"tool_calls\":[{\"index\":0,\"id\":\"call_1\",\"type\":\"function\",\"function\":{\"name\":\"bash\",\"arguments\":\"\"}}]}}]" &&
	  chunk "[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"name\":\"bash\",\"arguments\":\"{\\\"command\\\":\"}}]}}]" &&
	  chunk "[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"name\":\"bash\",\"arguments\":\"\\\"ls\\\"}\"}}]}}]" &&
	  chunk "[{\"index\":0,\"delta\":{},\"finish_reason\":\"tool_calls\"}]"; } >events &&
	sse events >script &&
	start_model script &&
	user "list" | agent-step --stream >out 2>err &&
	jq -e ".tool_calls | length == 1 and .[0].function.name == \"bash\" and
		.[0].function.arguments == \"{\\\"command\\\":\\\"ls\\\"}\"" out
'

test_expect_success 'a refusal in a whole answer, sent back with the message' '
	cat >script <<-\EOF &&
	{"raw": "{\"choices\":[{\"index\":0,\"message\":{\"role\":\"assistant\",\"content\":null,\"refusal\":\"No.\"},\"finish_reason\":\"stop\"}]}"}
	{"content": "ok"}
	EOF
	start_model script &&
	user "x" >t.jsonl &&
	agent-step <t.jsonl >>t.jsonl 2>err &&
	jq -s -e ".[1].refusal == \"No.\"" t.jsonl &&
	user "why" >>t.jsonl &&
	agent-step <t.jsonl >out &&
	jq -c "select(.n == 2) | .body.messages[1]" requests.jsonl >sent &&
	echo "{\"role\":\"assistant\",\"content\":\"\",\"refusal\":\"No.\"}" >expect &&
	test_cmp expect sent
'

test_expect_success 'content as parts: the text parts are the answer, thinking the reasoning' '
	cat >script <<-\EOF &&
	{"raw": "{\"choices\":[{\"index\":0,\"message\":{\"role\":\"assistant\",\"tool_calls\":null,\"content\":[{\"type\":\"thinking\",\"thinking\":[{\"type\":\"text\",\"text\":\"17*23\"}]},{\"type\":\"text\",\"text\":\"391\"}]},\"finish_reason\":\"stop\"}]}"}
	EOF
	start_model script &&
	user "17*23?" | agent-step >out &&
	jq -e ".content == \"391\" and .reasoning_content == \"17*23\"" out
'

test_expect_success 'content as parts in a stream, then as strings' '
	{ chunk "[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"}}]" &&
	  chunk "[{\"index\":0,\"delta\":{\"content\":[{\"type\":\"thinking\",\"thinking\":[{\"type\":\"text\",\"text\":\"hmm\"}]}]}}]" &&
	  chunk "[{\"index\":0,\"delta\":{\"content\":[{\"type\":\"text\",\"text\":\"3\"}]}}]" &&
	  chunk "[{\"index\":0,\"delta\":{\"content\":\"91\"}}]" &&
	  chunk "[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]"; } >events &&
	sse events >script &&
	start_model script &&
	user "17*23?" | agent-step --stream >out 2>err &&
	jq -e ".content == \"391\" and .reasoning_content == \"hmm\"" out
'

test_expect_success 'a field a provider adds to a tool call is kept and sent back; permission is not' '
	{ chunk "[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"tool_calls\":[{\"index\":0,\"id\":\"c1\",\"type\":\"function\",\"extra_content\":{\"google\":{\"thought_signature\":\"sig==\"}},\"function\":{\"name\":\"bash\",\"arguments\":\"{\\\"command\\\":\\\"ls\\\"}\"}}]}}]" &&
	  chunk "[{\"index\":0,\"delta\":{},\"finish_reason\":\"tool_calls\"}]"; } >events &&
	sse events >script &&
	echo "{\"content\": \"done\"}" >>script &&
	start_model script &&
	user "list" >t.jsonl &&
	agent-step --stream <t.jsonl >call 2>err &&
	jq -e ".tool_calls[0].extra_content.google.thought_signature == \"sig==\"" call &&
	jq -c ".tool_calls[0].permission = {decision: \"allow\", reason: \"r\", rule: \"x\"}" call >>t.jsonl &&
	echo "{\"role\":\"tool\",\"tool_call_id\":\"c1\",\"content\":\"f\"}" >>t.jsonl &&
	agent-step <t.jsonl >out &&
	jq -c "select(.n == 2) | .body.messages[1].tool_calls[0]" requests.jsonl >sent &&
	echo "{\"id\":\"c1\",\"type\":\"function\",\"function\":{\"name\":\"bash\",\"arguments\":\"{\\\"command\\\":\\\"ls\\\"}\"},\"extra_content\":{\"google\":{\"thought_signature\":\"sig==\"}}}" >expect &&
	test_cmp expect sent
'

test_expect_success 'n=3: the choices interleave, the answer is choice 0' '
	{ chunk "[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"}}]" &&
	  chunk "[{\"index\":0,\"delta\":{\"content\":\"red \"}}]" &&
	  chunk "[{\"index\":1,\"delta\":{\"role\":\"assistant\",\"content\":\"blue \"}}]" &&
	  chunk "[{\"index\":2,\"delta\":{\"content\":\"green \"}}]" &&
	  chunk "[{\"index\":0,\"delta\":{\"content\":\"apple\"}}]" &&
	  chunk "[{\"index\":1,\"delta\":{\"content\":\"sky\"},\"finish_reason\":\"stop\"}]" &&
	  chunk "[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]"; } >events &&
	sse events >script &&
	start_model script &&
	user "a colour" | agent-step --stream --param "{\"n\":3}" >out 2>err &&
	jq -e ".content == \"red apple\"" out
'

test_expect_success 'n=1 with rising indexes (Foundry Local): one answer, all of it' '
	{ chunk "[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"one \"}}]" &&
	  chunk "[{\"index\":1,\"delta\":{\"content\":\"two \"}}]" &&
	  chunk "[{\"index\":2,\"delta\":{\"content\":\"three\"},\"finish_reason\":\"stop\"}]"; } >events &&
	sse events >script &&
	start_model script &&
	user "count" | agent-step --stream >out 2>err &&
	jq -e ".content == \"one two three\"" out
'

test_expect_success 'arguments sent as an object inside a stream are kept, as text' '
	{ chunk "[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"tool_calls\":[{\"index\":0,\"id\":\"c1\",\"function\":{\"name\":\"read_file\",\"arguments\":{\"path\":\"a b\"}}}]}}]" &&
	  chunk "[{\"index\":0,\"delta\":{},\"finish_reason\":\"tool_calls\"}]"; } >events &&
	sse events >script &&
	start_model script &&
	user "read" | agent-step --stream >out 2>err &&
	jq -e ".tool_calls[0].function.arguments == \"{\\\"path\\\":\\\"a b\\\"}\"" out
'

test_expect_success 'a stream asked for, sent under another Content-Type: parsed as events' '
	{ chunk "[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"plain \"}}]" &&
	  chunk "[{\"index\":0,\"delta\":{\"content\":\"json\"},\"finish_reason\":\"stop\"}]"; } >events &&
	sse events | jq -c ".ctype = \"application/json\"" >script &&
	echo "{\"content\": \"whole\"}" >>script &&
	start_model script &&
	user "x" | agent-step --stream >out 2>err &&
	jq -e ".content == \"plain json\"" out &&
	user "y" | agent-step --stream >out 2>err &&
	jq -e ".content == \"whole\"" out
'

test_expect_success 'x-should-retry: false stops a retry of a 5xx, true retries a 4xx' '
	cat >script <<-\EOF &&
	{"status": 503, "headers": {"x-should-retry": "false"}, "error": {"message": "busy"}}
	{"status": 400, "headers": {"x-should-retry": "true"}, "error": {"message": "try again"}}
	{"content": "second time"}
	EOF
	start_model script &&
	user "x" >t.jsonl &&
	test_expect_code 7 agent-step --retries 2 <t.jsonl >out 2>err &&
	test_grep "503: busy" err && test_grep ! "retrying" err &&
	test "$(wc -l <requests.jsonl)" = 1 &&
	agent-step --retries 2 <t.jsonl >out 2>err &&
	jq -e ".content == \"second time\"" out &&
	test_grep "400: try again; retrying" err
'

test_expect_success 'a stream whose last line has no line end: its event still counts' '
	chunk "[{\"index\":0,\"delta\":{\"content\":\"Hi\"},\"finish_reason\":\"stop\"}]" >events &&
	{ printf "data: " && tr -d "\n" <events; } |
		jq -Rsc "{raw: ., ctype: \"text/event-stream\"}" >script &&
	start_model script &&
	user "x" | agent-step --stream >out 2>err &&
	jq -e ".content == \"Hi\"" out
'

test_done
