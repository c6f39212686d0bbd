#!/bin/sh
# Hostile model output and a faulty server: the harness keeps working,
# every call gets a result, nothing hangs, and errors say what happened.
. "$(dirname "$0")/lib.sh"

AGENT_MODEL=scripted
export AGENT_MODEL

# session SCRIPT: agent-run -y on it in ./w, the answer in ./answer
# (the whole transcript is sent: these are about sizes the harness must
# bear, not about the context budget, which t0530 tests)
session() {
	start_model "$1" && mkdir -p w &&
	agent-run -y -C w --stop-checks 0 --max-steps 10 --context-window off \
		"go" >answer 2>progress
}
# result N: the content of the N-th tool result of the transcript
result() {
	jq -s -r "map(select(.role == \"tool\"))[$1].content" w/.agent/transcript.jsonl
}

test_expect_success 'arguments that are not JSON, or not an object: an Error: result, then on' '
	cat >script <<-\EOF &&
	{"tool_calls": [{"name": "bash", "arguments": "{\"command\": \"echo hi\""}, {"name": "bash", "arguments": "[1,2]"}, {"name": "read_file", "arguments": "\"x\""}]}
	{"content": "Recovered."}
	EOF
	session script && test "$(cat answer)" = Recovered. && valid w/.agent/transcript.jsonl &&
	result 0 | grep "^Error: " && result 1 | grep "^Error: " && result 2 | grep "^Error: "
'

test_expect_success 'duplicate keys in the arguments: denied, never run' '
	cat >script <<-\EOF &&
	{"tool_calls": [{"name": "bash", "arguments": "{\"command\": \"echo safe\", \"command\": \"touch pwned\"}"}]}
	{"content": "Done."}
	EOF
	session script && valid w/.agent/transcript.jsonl && ! test -e w/pwned &&
	result 0 >r && test_contains r "Error: permission denied" && test_contains r "more than once"
'

test_expect_success 'a NUL (\\u0000) in the arguments: the command runs whole, as the policy saw it, not cut short there' '
	cat >script <<-\EOF &&
	{"tool_calls": [{"name": "bash", "arguments": "{\"command\": \"echo safe\\u0000; touch whole\"}"}]}
	{"content": "Done."}
	EOF
	session script && valid w/.agent/transcript.jsonl && test -e w/whole &&
	result 0 >r && printf "safe\357\277\275\n\n" >expect && test_cmp expect r
'

test_expect_success 'tool names with odd characters: unknown tool, named safely' '
	cat >script <<-\EOF &&
	{"tool_calls": [{"name": "../../bin/sh", "arguments": {}}, {"name": "bash\n", "arguments": {"command": "touch pwned"}}, {"name": "", "arguments": {}}, {"name": "b\u0000sh", "arguments": {}}, {"name": "\u202ebash", "arguments": {}}]}
	{"content": "Done."}
	EOF
	session script && valid w/.agent/transcript.jsonl && ! test -e w/pwned &&
	for i in 0 1 2 3 4; do result $i | grep "^Error: " >/dev/null || return 1; done
'

test_expect_success '10,000 tool calls in one message: each answered, in order' '
	python3 -c "
import json
calls = [{\"name\": \"read_file\", \"arguments\": {\"path\": \"missing-%d\" % i}} for i in range(10000)]
print(json.dumps({\"tool_calls\": calls}))
print(json.dumps({\"content\": \"Done.\"}))" >script &&
	session script && test "$(cat answer)" = Done. && valid w/.agent/transcript.jsonl &&
	test "$(jq -s "map(select(.role == \"tool\")) | length" w/.agent/transcript.jsonl)" = 10000 &&
	result 9999 | grep -F "missing-9999"
'

test_expect_success 'deeply nested JSON: in arguments an Error:, as the answer exit 8' '
	python3 -c "
import json
deep = \"[\" * 100000 + \"]\" * 100000
print(json.dumps({\"tool_calls\": [{\"name\": \"bash\", \"arguments\": \"{\\\"command\\\": \" + deep + \"}\"}]}))
print(json.dumps({\"content\": \"Done.\"}))" >script &&
	session script && valid w/.agent/transcript.jsonl && result 0 | grep "^Error: " &&
	stop_models && rm -rf w &&
	python3 -c "
import json
print(json.dumps({\"raw\": \"{\\\"choices\\\": \" + \"[\" * 100000 + \"]\" * 100000 + \"}\"}))" >deep &&
	start_model deep && mkdir w && echo "{\"role\":\"user\",\"content\":\"x\"}" >t &&
	test_must_fail 8 agent-step --retries 0 <t >out 2>err && ! test -s out &&
	test_contains err "agent-step: "
'

test_expect_success 'lone surrogates and invalid UTF-8 in content: valid UTF-8 after' '
	python3 -c "
import json
body = {\"id\": \"x\", \"choices\": [{\"index\": 0, \"finish_reason\": \"stop\",
	\"message\": {\"role\": \"assistant\", \"content\": \"SUR\"}}]}
print(json.dumps({\"raw\": json.dumps(body).replace(\"SUR\", \"lone \\\\ud800 and \\\\udc00 end\")}))
bad = json.dumps(body).replace(\"SUR\", \"bad \\udcff\\udcfe bytes\")
print(json.dumps({\"raw\": bad.encode(\"utf-8\", \"surrogateescape\").decode(\"latin-1\"), \"latin1\": True}))" >script &&
	start_model script && echo "{\"role\":\"user\",\"content\":\"x\"}" >t &&
	agent-step --retries 0 <t >out 2>err &&
	jq -e ".content == \"lone \\ufffd and \\ufffd end\"" out &&
	agent-step --retries 0 <t >out 2>err &&
	jq -e ".content == \"bad \ufffd\ufffd bytes\"" out
'

test_expect_success 'a path of 100 KB: an error, bounded' '
	python3 -c "
import json
print(json.dumps({\"tool_calls\": [{\"name\": \"read_file\", \"arguments\": {\"path\": \"a/\" * 50000}}, {\"name\": \"write_file\", \"arguments\": {\"path\": \"b\" * 100000, \"content\": \"x\"}}]}))
print(json.dumps({\"content\": \"Done.\"}))" >script &&
	session script && valid w/.agent/transcript.jsonl &&
	result 0 | grep "^Error: " && result 1 | grep "^Error: " &&
	test "$(result 0 | wc -c)" -lt 40000 && test "$(result 1 | wc -c)" -lt 40000
'

test_expect_success 'a command that prints 1 GB: cut, in bounded memory' '
	cat >script <<-\EOF &&
	{"tool_calls": [{"name": "bash", "arguments": {"command": "head -c 1000000000 /dev/zero | tr \"\\0\" x; echo; echo end"}}]}
	{"content": "Done."}
	EOF
	session script && valid w/.agent/transcript.jsonl &&
	result 0 >r && test "$(wc -c <r)" -lt 31000 && test_contains r "bytes cut" && test_contains r "end"
'

test_expect_success 'a command that closes its output and keeps running: the timeout ends it' '
	cat >script <<-EOF &&
	{"tool_calls": [{"name": "bash", "arguments": {"command": "echo before; exec >/dev/null 2>&1; sleep 38.5$$", "timeout": 1}}, {"name": "bash", "arguments": {"command": "(sleep 38.6$$ &) ; setsid sleep 38.7$$ & echo started"}}]}
	{"content": "Done."}
	EOF
	session script && valid w/.agent/transcript.jsonl &&
	result 0 >r && test_contains r "before" && test_contains r "[timed out after 1 s: killed]" &&
	result 1 | grep started && ! pgrep -f "sleep 38[.][567]$$\$"
'

test_expect_success 'server: connection reset mid-stream, exit 7, nothing written' '
	echo "{\"content\": \"a long answer cut short\", \"chunk\": 2, \"reset\": 3}" >script &&
	start_model script && echo "{\"role\":\"user\",\"content\":\"x\"}" >t &&
	test_must_fail 7 agent-step --stream --retries 0 <t >out 2>err &&
	! test -s out && test_contains err "agent-step: "
'

test_expect_success 'server: accepts and never answers, the idle timeout fires' '
	echo "{\"hang\": true}" >script &&
	start_model script && echo "{\"role\":\"user\",\"content\":\"x\"}" >t &&
	test_must_fail 7 agent-step --timeout 1 --retries 0 <t >out 2>err &&
	! test -s out && test_contains err "agent-step: "
'

test_expect_success 'server: a slow drip of SSE bytes is still one answer' '
	echo "{\"content\": \"drip drip drip\", \"chunk\": 1, \"drip\": 0.02}" >script &&
	start_model script && echo "{\"role\":\"user\",\"content\":\"x\"}" >t &&
	agent-step --stream --timeout 5 <t >out 2>err &&
	jq -e ".content == \"drip drip drip\"" out
'

test_expect_success 'server: a storm of 5xx, retried, then it gives up with the status' '
	printf "%s\n" "{\"status\": 500}" "{\"status\": 502}" "{\"status\": 503}" "{\"status\": 500}" "{\"status\": 503}" >script &&
	start_model script && echo "{\"role\":\"user\",\"content\":\"x\"}" >t &&
	test_must_fail 7 agent-step --retries 3 <t >out 2>err &&
	test "$(wc -l <requests.jsonl)" = 4 && test_contains err "500"
'

test_expect_success 'server: a gigantic answer is refused with a clear error, memory bounded' '
	python3 -c "
import json
print(json.dumps({\"content\": \"x\" * (80 << 20)}))" >script &&
	start_model script && echo "{\"role\":\"user\",\"content\":\"x\"}" >t &&
	test_must_fail 8 agent-step --retries 0 <t >out 2>err &&
	! test -s out && test_contains err "agent-step: the answer is larger than 67108864 bytes"
'

test_expect_success 'server: invalid JSON, and answers that are not Chat Completions' '
	printf "%s\n" "{\"raw\": \"{not json\"}" "{\"raw\": \"<html>502 Bad Gateway</html>\"}" \
		"{\"raw\": \"{\\\"object\\\": \\\"list\\\", \\\"data\\\": []}\"}" "{\"raw\": \"\"}" >script &&
	start_model script && echo "{\"role\":\"user\",\"content\":\"x\"}" >t &&
	for i in 1 2 3 4; do
		test_must_fail 8 agent-step --retries 0 <t >out 2>err || return 1
		! test -s out || return 1
	done
'

test_done
