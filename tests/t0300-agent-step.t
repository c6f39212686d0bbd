#!/bin/sh
# agent-step: one model call, against the scripted server on 127.0.0.1.
. "$(dirname "$0")/lib.sh"

AGENT_MODEL=test-model
export AGENT_MODEL
test_expect_success 'a plain answer: one assistant line, usage and request id' '
	echo "{\"content\": \"Hello there\"}" >script &&
	start_model script &&
	user "hi" | agent-step >out 2>err &&
	test "$(wc -l <out)" -eq 1 &&
	jq -e ".role == \"assistant\" and .content == \"Hello there\" and
		.request_id == \"req_1\" and .usage.prompt_tokens == 10" out &&
	test ! -s err &&
	test "$(req 1 .model)" = "\"test-model\"" &&
	test "$(req 1 .messages)" = "[{\"role\":\"user\",\"content\":\"hi\"}]"
'

test_expect_success 'one and three tool calls' '
	cat >script <<-\EOF &&
	{"tool_calls": [{"name": "bash", "id": "c1", "arguments": {"command": "ls"}}]}
	{"tool_calls": [{"name": "bash", "arguments": "{\"command\":\"a\"}"}, {"name": "read_file", "arguments": {"path": "x"}}, {"name": "list_dir", "arguments": {}}]}
	EOF
	start_model script &&
	user "one" | agent-step >out1 &&
	jq -e ".content == null and (.tool_calls | length) == 1 and
		.tool_calls[0].id == \"c1\" and .tool_calls[0].type == \"function\" and
		.tool_calls[0].function.arguments == \"{\\\"command\\\": \\\"ls\\\"}\"" out1 &&
	user "three" | agent-step >out3 &&
	jq -r ".tool_calls[] | .function.name" out3 >names &&
	printf "bash\nread_file\nlist_dir\n" >expect && test_cmp expect names &&
	jq -e ".tool_calls[0].function.arguments == \"{\\\"command\\\":\\\"a\\\"}\"" out3
'

test_expect_success 'the request: tools, options, and only API fields of messages' '
	echo "{\"content\": \"ok\"}" >script &&
	start_model script &&
	tool-exec --schema >tools.json &&
	cat >t.jsonl <<-\EOF &&
	{"role":"system","content":"be brief"}
	{"role":"user","content":"go"}
	{"role":"assistant","content":null,"reasoning_content":"hmm","usage":{"x":1},"request_id":"r","tool_calls":[{"id":"c1","type":"function","function":{"name":"bash","arguments":"{\"command\": \"ls\" }"},"permission":{"decision":"allow","reason":"r","rule":"x"}}]}
	{"role":"tool","tool_call_id":"c1","content":"a\nb"}
	EOF
	agent-step --tools tools.json --temperature 0.5 --max-tokens 100 \
		--param "{\"top_p\":0.9,\"seed\":7}" <t.jsonl >out &&
	test "$(req 1 ".tools == $(jq -c . tools.json)")" = true &&
	test "$(req 1 "[.temperature, .max_tokens, .top_p, .seed, .stream]")" = "[0.5,100,0.9,7,null]" &&
	req 1 ".messages" >sent &&
	cat >expect <<-\EOF &&
	[{"role":"system","content":"be brief"},{"role":"user","content":"go"},{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"bash","arguments":"{\"command\": \"ls\" }"}}]},{"role":"tool","content":"a\nb","tool_call_id":"c1"}]
	EOF
	test_cmp expect sent &&
	test "$(req 1 "keys")" = "[\"max_tokens\",\"messages\",\"model\",\"seed\",\"temperature\",\"tools\",\"top_p\"]"
'

test_expect_success 'streaming: text to stderr, arguments split and interleaved' '
	cat >script <<-\EOF &&
	{"content": "Thinking about it", "chunk": 2}
	{"tool_calls": [{"name": "bash", "id": "a", "arguments": {"command": "echo one two three four"}}, {"name": "write_file", "id": "b", "arguments": {"path": "p", "content": "long content here"}}], "chunk": 1, "interleave": true}
	EOF
	start_model script &&
	user "x" | agent-step --stream >out 2>err &&
	jq -e ".content == \"Thinking about it\"" out &&
	test "$(cat err)" = "Thinking about it" &&
	test "$(req 1 ".stream_options")" = "{\"include_usage\":true}" &&
	user "y" | agent-step --stream -q >out 2>err &&
	test ! -s err &&
	jq -c "[.tool_calls[] | [.id, .function.name, (.function.arguments | fromjson)]]" out >actual &&
	echo "[[\"a\",\"bash\",{\"command\":\"echo one two three four\"}],[\"b\",\"write_file\",{\"path\":\"p\",\"content\":\"long content here\"}]]" >expect &&
	test_cmp expect actual &&
	jq -e ".content == null and .usage.total_tokens == 25" out
'

test_expect_success 'streaming: calls that all reuse index 0 are told apart by id' '
	echo "{\"tool_calls\": [{\"name\": \"bash\", \"id\": \"A\", \"arguments\": {\"command\": \"x\"}}, {\"name\": \"list_dir\", \"id\": \"B\", \"arguments\": {\"path\": \"y\"}}], \"reuse_index\": true, \"chunk\": 2}" >script &&
	start_model script &&
	user "x" | agent-step --stream >out &&
	jq -c "[.tool_calls[] | [.id, .function.name, .function.arguments]]" out >actual &&
	echo "[[\"A\",\"bash\",\"{\\\"command\\\": \\\"x\\\"}\"],[\"B\",\"list_dir\",\"{\\\"path\\\": \\\"y\\\"}\"]]" >expect &&
	test_cmp expect actual
'

test_expect_success 'streaming: a stream cut mid tool call writes nothing, exit 7, no retry' '
	echo "{\"tool_calls\": [{\"name\": \"bash\", \"arguments\": {\"command\": \"echo partial\"}}], \"cut\": 4}" >script &&
	start_model script &&
	user "x" | test_must_fail 7 agent-step --stream -q >out 2>err &&
	test ! -s out &&
	test_contains err "agent-step: the stream broke off before the answer was complete" &&
	test "$(wc -l <requests.jsonl)" -eq 1
'

test_expect_success 'streaming: an error event fails, nothing on stdout' '
	echo "{\"sse_error\": {\"message\": \"model overloaded mid-answer\", \"code\": \"server_error\"}}" >script &&
	start_model script &&
	user "x" | test_must_fail 6 agent-step --stream -q >out 2>err &&
	test ! -s out &&
	test_contains err "agent-step: the stream ended with an error: model overloaded mid-answer (server_error) (request req_1)"
'

test_expect_success '503 is retried, then the answer comes' '
	cat >script <<-\EOF &&
	{"status": 503, "error": {"message": "busy"}}
	{"content": "at last"}
	EOF
	start_model script &&
	user "x" | agent-step >out 2>err &&
	jq -e ".content == \"at last\"" out &&
	test_contains err "agent-step: 503: busy; retrying in" &&
	test "$(wc -l <requests.jsonl)" -eq 2
'

test_expect_success '429 with Retry-After is honoured' '
	cat >script <<-\EOF &&
	{"status": 429, "headers": {"retry-after": "1"}, "error": {"message": "slow down", "type": "requests", "code": "rate_limit_exceeded"}}
	{"content": "ok"}
	EOF
	start_model script &&
	user "x" | agent-step >out 2>err &&
	test_contains err "retrying in 1.0 s" &&
	jq -s ".[1].time - .[0].time >= 0.9" requests.jsonl | grep -q true
'

test_expect_success 'retries run out: exit 7 with the status, message and request id' '
	echo "{\"status\": 500, \"error\": {\"message\": \"broken\"}, \"repeat\": true}" >script &&
	start_model script &&
	user "x" | test_must_fail 7 agent-step --retries 1 >out 2>err &&
	test ! -s out &&
	test_contains err "agent-step: 500: broken, after 1 retry (request req_2)" &&
	test "$(wc -l <requests.jsonl)" -eq 2
'

for case in "429 insufficient_quota You exceeded your current quota" \
	"400 invalid_request_error Invalid value for messages" \
	"401 invalid_api_key Incorrect API key provided" \
	"403 forbidden Not allowed" "404 model_not_found The model does not exist" \
	"422 unprocessable Bad schema"; do
	# shellcheck disable=SC2086 # split into status, code and message
	set -- $case
	status=$1 code=$2
	shift 2
	test_expect_success "$status $code is not retried; its message is shown" "
		echo '{\"status\": $status, \"error\": {\"message\": \"$*\", \"code\": \"$code\"}}' >script &&
		start_model script &&
		user x | test_must_fail 6 agent-step >out 2>err &&
		test ! -s out &&
		test_contains err 'agent-step: $status: $* ($code) (request req_1)' &&
		test \"\$(wc -l <requests.jsonl)\" -eq 1
	"
done

test_expect_success 'finish_reason length and content_filter: exit 8, nothing written' '
	cat >script <<-\EOF &&
	{"content": "cut", "finish_reason": "length"}
	{"tool_calls": [{"name": "bash", "arguments": "{\"comm"}], "finish_reason": "length"}
	{"content": "", "finish_reason": "content_filter"}
	EOF
	start_model script &&
	user x | test_must_fail 8 agent-step >out 2>err &&
	test_contains err "the answer was cut short (finish_reason length, request req_1); raise --max-tokens" &&
	user x | test_must_fail 8 agent-step --stream -q >>out 2>err &&
	user x | test_must_fail 8 agent-step >>out 2>err &&
	test_contains err "withheld by a content filter (finish_reason content_filter" &&
	test ! -s out
'

test_expect_success 'an answer that is not Chat Completions: exit 8' '
	cat >script <<-\EOF &&
	{"raw": "<html>gateway</html>"}
	{"raw": "{\"object\": \"list\"}"}
	EOF
	start_model script &&
	user x | test_must_fail 8 agent-step >out 2>err &&
	test_contains err "agent-step: the answer is not a JSON object (not valid JSON)" &&
	user x | test_must_fail 8 agent-step >out 2>err &&
	test_contains err "no choices[0].message: not a Chat Completions answer" &&
	test ! -s out
'

test_expect_success 'connection refused: exit 7, naming the URL' '
	user x | AGENT_BASE_URL=http://127.0.0.1:9/v1 test_must_fail 7 agent-step --retries 0 >out 2>err &&
	test_contains err "agent-step: cannot reach http://127.0.0.1:9/v1/chat/completions"
'

test_expect_success 'the key is sent, and never written anywhere' '
	key=sk-test-0123456789abcdefSECRET &&
	echo "{\"status\": 401, \"error\": {\"message\": \"Incorrect API key provided: $key\"}}" >script &&
	echo "{\"content\": \"ok\"}" >>script &&
	start_model script &&
	user x | AGENT_API_KEY=$key test_must_fail 6 agent-step -v >out 2>err &&
	user x | OPENAI_API_KEY=$key agent-step -v >>out 2>>err &&
	test "$(jq -r "select(.n == 1) | .headers.authorization" requests.jsonl)" = "Bearer $key" &&
	test "$(jq -r "select(.n == 2) | .headers.authorization" requests.jsonl)" = "Bearer $key" &&
	test_contains err "Incorrect API key provided: [REDACTED]" &&
	! grep -F "$key" out err &&
	printf "%s\n" "$key" >keyfile &&
	user x | agent-step --dry-run --api-key-file keyfile >dry &&
	! grep -F "$key" dry
'

test_expect_success 'a second result for a call already answered is refused with its line number' '
	cat >t.jsonl <<-\EOF &&
	{"role":"user","content":"go"}
	{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"bash","arguments":"{}"}},{"id":"c2","type":"function","function":{"name":"bash","arguments":"{}"}}]}
	{"role":"tool","tool_call_id":"c1","content":"x"}
	{"role":"tool","tool_call_id":"c1","content":"y"}
	{"role":"tool","tool_call_id":"c2","content":"z"}
	EOF
	test_must_fail 5 agent-step --dry-run <t.jsonl >out 2>err &&
	test_contains err "agent-step: stdin: line 4: a tool result for '\''c1'\'', which no tool call of the last assistant message waits for" &&
	! test -s out
'

test_expect_success 'an unanswered tool call is refused with its line number' '
	cat >t.jsonl <<-\EOF &&
	{"role":"user","content":"go"}
	{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"bash","arguments":"{}"}},{"id":"c2","type":"function","function":{"name":"bash","arguments":"{}"}}]}
	{"role":"tool","tool_call_id":"c1","content":"x"}
	{"role":"user","content":"and?"}
	EOF
	test_must_fail 5 agent-step --dry-run <t.jsonl >out 2>err &&
	test_contains err "agent-step: stdin: line 4: the tool call '\''c2'\'' of line 2 has no result before this message" &&
	printf "%s\n" "{\"role\":\"user\",\"content\":\"go\"}" "{\"role\":\"tool\",\"tool_call_id\":\"zz\",\"content\":\"x\"}" >t2.jsonl &&
	test_must_fail 5 agent-step --dry-run <t2.jsonl 2>err &&
	test_contains err "line 2: a tool result for '\''zz'\'', which no tool call" &&
	echo "{\"role\":\"robot\"}" | test_must_fail 5 agent-step --dry-run 2>err &&
	test_contains err "line 1: a message needs a role" &&
	echo "[]" | test_must_fail 5 agent-step --dry-run 2>err &&
	test_contains err "stdin: line 1: not a JSON object"
'

test_expect_success 'nothing to answer: exit 5' '
	: | test_must_fail 5 agent-step --dry-run 2>err &&
	test_contains err "nothing to answer: no messages" &&
	echo "{\"role\":\"assistant\",\"content\":\"done\"}" | test_must_fail 5 agent-step --dry-run 2>err &&
	test_contains err "the last message is the assistant'\''s"
'

test_expect_success '--dry-run prints a request body the API accepts' '
	cat >tools <<-\EOF &&
	[{"type":"function","function":{"name":"f","parameters":{"type":"object"}}}]
	EOF
	user "hi" | agent-step --dry-run --tools tools >body &&
	jq -e ".model == \"test-model\" and .messages == [{role:\"user\",content:\"hi\"}] and
		(.tools | length) == 1" body
'

test_expect_success 'a long-lived run: three turns over one connection' '
	cat >script <<-\EOF &&
	{"tool_calls": [{"name": "bash", "id": "t1", "arguments": {"command": "echo 1"}}]}
	{"tool_calls": [{"name": "bash", "id": "t2", "arguments": {"command": "echo 2"}}]}
	{"content": "all done"}
	EOF
	start_model script &&
	mkfifo in &&
	{ agent-step --until-done <in >out & pid=$!; } &&
	exec 3>in &&
	user "go" >&3 &&
	wait_for out 1 &&
	echo "{\"role\":\"tool\",\"tool_call_id\":\"t1\",\"content\":\"1\"}" >&3 &&
	wait_for out 2 &&
	echo "{\"role\":\"tool\",\"tool_call_id\":\"t2\",\"content\":\"2\"}" >&3 &&
	wait_all $pid &&
	exec 3>&- &&
	jq -s -e "length == 3 and .[2].content == \"all done\"" out &&
	test "$(jq -s "map(.conn) | unique | length" requests.jsonl)" = 1 &&
	test "$(jq -s "length" requests.jsonl)" = 3 &&
	test "$(req 3 ".messages | length")" = 5
'

test_expect_success 'a whole transcript is one call, at its end' '
	echo "{\"content\": \"once\"}" >script &&
	start_model script &&
	{ user a; echo "{\"role\":\"assistant\",\"content\":\"b\"}"; user c; } >t.jsonl &&
	agent-step <t.jsonl >out &&
	test "$(wc -l <requests.jsonl)" -eq 1 &&
	test "$(req 1 ".messages | length")" = 3
'

test_expect_success 'usage errors exit 2' '
	user x | AGENT_MODEL= test_must_fail 2 agent-step 2>err &&
	test_contains err "no model: give --model or set AGENT_MODEL" &&
	test_must_fail 2 agent-step --bogus 2>err &&
	test_must_fail 2 agent-step --param "[1]" </dev/null 2>err &&
	test_contains err "--param: '\''[1]'\'' is not a JSON object" &&
	test_must_fail 2 agent-step --temperature 9 </dev/null 2>err &&
	echo "{}" >notarray && test_must_fail 2 agent-step --tools notarray </dev/null 2>err &&
	test_must_fail 3 agent-step --tools missing </dev/null 2>err &&
	test_contains err "cannot open '\''missing'\''"
'

test_expect_success 'a large request is sent at once, without Expect: 100-continue' '
	echo "{\"content\": \"big\"}" >script &&
	start_model script &&
	jq -nc "{role: \"user\", content: (\"x\" * 2000000)}" >t.jsonl &&
	agent-step <t.jsonl >out &&
	jq -e ".content == \"big\"" out &&
	test "$(jq -r ".headers.expect // \"none\"" requests.jsonl)" = none
'

test_expect_success 'a request over 64 KB is read out in parts: the bytes of --dry-run, with its length' '
	echo "{\"content\": \"ok\", \"repeat\": true}" >script &&
	mkdir bodies &&
	start_model script --bodies "$PWD/bodies" &&
	tool-exec --schema >tools.json &&
	long_session 6 30000 >t.jsonl &&
	agent-step --tools tools.json --temperature 0.5 <t.jsonl >out &&
	jq -e ".content == \"ok\"" out &&
	agent-step --tools tools.json --temperature 0.5 --dry-run <t.jsonl >expect &&
	{ cat bodies/1 && echo; } >actual &&
	test_cmp expect actual &&
	size=$(wc -c <bodies/1) &&
	test "$size" -gt 65536 &&
	jq -e --arg size "$size" "select(.n == 1) |
		.headers[\"content-length\"] == \$size and
		(.headers | has(\"transfer-encoding\") | not)" requests.jsonl &&
	long_session 1 1000 >short.jsonl &&
	agent-step <short.jsonl >out &&
	agent-step --dry-run <short.jsonl >expect &&
	{ cat bodies/2 && echo; } >actual &&
	test_cmp expect actual
'

test_expect_success 'a request over 64 KB is sent whole again on each retry' '
	cat >script <<-\EOF &&
	{"status": 500}
	{"status": 429, "headers": {"retry-after": "0"}}
	{"content": "ok"}
	EOF
	mkdir bodies &&
	start_model script --bodies "$PWD/bodies" &&
	long_session 4 40000 >t.jsonl &&
	agent-step -q --retries 2 <t.jsonl >out &&
	jq -e ".content == \"ok\"" out &&
	agent-step --dry-run <t.jsonl >expect &&
	for n in 1 2 3; do
		{ cat bodies/$n && echo; } >actual &&
		test_cmp expect actual || return 1
	done
'

if memory_measurable; then
	test_expect_success 'memory: the transcript is held once, the request body not besides' '
		echo "{\"content\": \"ok\", \"repeat\": true}" >script &&
		start_model script &&
		peak_grows_once
	'
else
	test_skip 'memory: the transcript is held once, the request body not besides' \
		'under valgrind or a sanitizer'
fi

test_expect_success 'a write error on stdout: exit 3' '
	echo "{\"content\": \"x\"}" >script &&
	start_model script &&
	user x | test_must_fail 3 agent-step >/dev/full 2>err &&
	test_contains err "agent-step: cannot write stdout"
'

test_expect_success '--answer: the text of the answer a transcript ends with, no model needed' '
	{ user "do it" && printf "%s\n" "{\"role\":\"assistant\",\"content\":\"first\\nline \\u00e9\"}"; } >t.jsonl &&
	env -u AGENT_MODEL agent-step --answer <t.jsonl >out &&
	printf "first\nline \303\251\n" >expect && test_cmp expect out &&
	echo "{\"role\":\"assistant\",\"content\":[{\"type\":\"text\",\"text\":\"a\"},{\"type\":\"refusal\",\"refusal\":\"r\"},{\"type\":\"text\",\"text\":\"b\"}]}" |
		agent-step --answer >out && test "$(cat out)" = ab &&
	echo "{\"role\":\"assistant\",\"content\":null,\"tool_calls\":[]}" | agent-step --answer >out &&
	test ! -s out
'

test_expect_success '--answer: exit 1 without an answer, 5 for a bad last line, 3 on a write error' '
	call_msg bash "{\"command\":\"ls\"}" allow c1 >t.jsonl &&
	test_must_fail 1 agent-step --answer <t.jsonl >out 2>err && test ! -s out &&
	test_contains err "agent-step: stdin: line 1: the last message is not an answer (the assistant'\''s, without tool calls)" &&
	user x | test_must_fail 1 agent-step --answer 2>err &&
	test_must_fail 1 agent-step --answer </dev/null 2>err &&
	test_contains err "agent-step: stdin: no messages, so no answer" &&
	{ echo "{\"role\":\"assistant\",\"content\":\"x\"}" && echo "{torn"; } | test_must_fail 5 agent-step --answer 2>err &&
	test_contains err "agent-step: stdin: line 2: not a JSON object" &&
	echo "{\"role\":\"assistant\",\"content\":\"x\"}" | test_must_fail 3 agent-step --answer >/dev/full 2>err &&
	test_contains err "agent-step: cannot write stdout"
'

test_expect_success 'streaming: the model'\''s escape sequences reach stderr shown, not done; stdout keeps them' '
	cat >script <<-\EOF &&
	{"content": "set \u001b]52;c;cm0gLXJmIH4=\u0007clip\u001b[2J\r\nnext \u009b1m", "chunk": 3}
	EOF
	start_model script &&
	user "x" | agent-step --stream >out 2>err &&
	printf "set \\\\x1b]52;c;cm0gLXJmIH4=\\\\x07clip\\\\x1b[2J\\\\x0d\nnext \\\\u{009B}1m\n" >expect &&
	test_cmp expect err &&
	jq -e ".content == \"set \u001b]52;c;cm0gLXJmIH4=\u0007clip\u001b[2J\r\nnext \u009b1m\"" out
'

test_expect_success 'a server'\''s error text reaches stderr on one line, its controls shown' '
	cat >script <<-\EOF &&
	{"status": 400, "error": {"message": "bad\u001b[31m red\nforged: line", "type": "invalid_request_error"}}
	EOF
	start_model script &&
	user x | test_must_fail 6 agent-step >out 2>err &&
	test "$(wc -l <err)" -eq 1 &&
	test_contains err "bad\\x1b[31m red\\x0aforged: line"
'

if command -v script >/dev/null 2>&1; then
	test_expect_success '--answer: on a terminal, escape sequences shown; into a pipe, as sent' '
		printf "%s\n" "{\"role\":\"assistant\",\"content\":\"done \\u001b]52;c;eA==\\u0007\\n\\tok\"}" >t.jsonl &&
		script -qec "agent-step --answer <t.jsonl" /dev/null >tty &&
		test_contains tty "done \\x1b]52;c;eA==\\x07" &&
		! grep -q "$(printf "\033")" tty &&
		agent-step --answer <t.jsonl >out &&
		printf "done \033]52;c;eA==\007\n\tok\n" >expect && test_cmp expect out
	'
else
	test_skip '--answer on a terminal' 'script(1) is not installed'
fi

test_done
