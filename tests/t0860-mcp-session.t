#!/bin/sh
# MCP tools in a session: agent-run starts one mcp-bridge, tool-exec
# --schema offers its tools to the model, tool-exec hands it the calls,
# hook-perm judges them (asks by default, a rule can allow a server), the
# results are in the transcript, secrets are not, and nothing is left
# running after agent-run ends, kill -9 included.
. "$(dirname "$0")/lib.sh"

SERVER=$TEST_DIR/mcp-server.py
AGENT_MODEL=scripted
export AGENT_MODEL

# config FILE [ARG...]: one server "t" (sandboxed), mcp-server.py ARGs
config() {
	cf_=$1
	shift
	printf '%s\n' "$SERVER" "$@" | jq -Rsc '{mcpServers: {t: {command:
		"python3", args: (split("\n")[:-1])}}}' >"$cf_"
}

test_expect_success 'tool-exec --schema: the built-in tools, then the bridge'"'"'s' '
	config cfg &&
	mcp-bridge --no-user-config --mcp-config cfg --serve "$PWD/sock" --watch $$ >started &&
	read -r bpid token <started &&
	test_when_finished "kill $bpid 2>/dev/null; true" &&
	AGENT_MCP_SOCKET=$PWD/sock AGENT_MCP_TOKEN=$token tool-exec --schema >schema &&
	AGENT_MCP_SOCKET=$PWD/sock AGENT_MCP_TOKEN=wrong tool-exec --schema >schema2 2>err &&
	test_grep "the MCP tools are left out: mcp-bridge answered: .*refused" err &&
	jq -r ".[].function.name" schema >names &&
	test "$(sed -n 1p names)" = bash &&
	test_grep "^mcp__t__echo\$" names &&
	test "$(jq length schema)" = $(($(tool-exec --schema | jq length) + 11))
'

test_expect_success 'tool-exec --schema with a bridge gone: said, the built-in tools only' '
	AGENT_MCP_SOCKET=$PWD/nosock tool-exec --schema >schema 2>err &&
	test_grep "the MCP tools are left out: cannot reach mcp-bridge" err &&
	tool-exec --schema >expect &&
	test_cmp expect schema
'

test_expect_success 'tool-exec: an MCP call without a bridge is an unknown tool' '
	call_msg mcp__t__echo "{\"text\":\"x\"}" >in &&
	tool-exec <in >out &&
	test_grep "Error: unknown tool .mcp__t__echo." out
'

for mode in ring step; do
	flag=
	[ $mode = step ] && flag=--step
	test_expect_success "$mode: a session calls MCP tools; the results are in the transcript; one server for the session" "
		cat >script <<-\EOF &&
		{\"tool_calls\": [{\"name\": \"mcp__t__echo\", \"arguments\": {\"text\": \"hello from mcp\"}}]}
		{\"tool_calls\": [{\"name\": \"mcp__t__add\", \"arguments\": {\"a\": 2, \"b\": 40}}, {\"name\": \"mcp__t__fail\", \"arguments\": {}}]}
		{\"content\": \"done\"}
		EOF
		start_model script && mkdir w &&
		config cfg --pidfile \"\$PWD/w/pids\" &&
		agent-run $flag -y --mcp-config cfg -C w 'use the tools' >answer 2>progress &&
		echo done >expect && test_cmp expect answer &&
		jq -r 'select(.role == \"tool\") | .content' w/.agent/transcript.jsonl >results &&
		printf '%s\n' 'hello from mcp' 42 'Error: it broke' >expect &&
		test_cmp expect results &&
		valid w/.agent/transcript.jsonl &&
		test_grep 'allow mcp__t__add' progress &&
		head -n 1 requests.jsonl | jq -e '.body.tools | map(.function.name) | index(\"mcp__t__echo\")' &&
		test_line_count = 1 w/pids &&
		wait_until 5 none_left \"\$PWD/w/pids\"
	"
done

test_expect_success 'hook-perm asks for MCP tools by default (no terminal: denied); a rule allows a server' '
	cat >script <<-\EOF &&
	{"tool_calls": [{"name": "mcp__t__echo", "arguments": {"text": "one"}}]}
	{"content": "done"}
	EOF
	start_model script && mkdir w &&
	config cfg &&
	agent-run --mcp-config cfg -C w "go" >answer 2>progress &&
	jq -r "select(.role == \"tool\") | .content" w/.agent/transcript.jsonl >results &&
	test_grep "^Error: permission denied" results &&
	cat >policy.json <<-\EOF &&
	{"default": "ask", "rules": [
	  {"name": "mcp-t", "if": ".tool | startswith(\"mcp__t__\")",
	   "decision": "allow", "reason": "the t server only echoes"}]}
	EOF
	start_model script && rm -rf w && mkdir w &&
	agent-run --policy policy.json --mcp-config cfg -C w "go" >answer 2>progress &&
	jq -r "select(.role == \"tool\") | .content" w/.agent/transcript.jsonl >results &&
	echo one >expect &&
	test_cmp expect results
'

test_expect_success 'the env of the configuration never reaches the transcript or the audit log' '
	cat >script <<-\EOF &&
	{"tool_calls": [{"name": "mcp__t__env", "arguments": {"name": "MY_DB_PASSWORD"}}]}
	{"content": "done"}
	EOF
	start_model script && mkdir w &&
	jq -nc --arg s "$SERVER" "{mcpServers: {t: {command: \"python3\", args: [\$s],
		env: {MY_DB_PASSWORD: \"hunter2-secret-value\"}, sandbox: false}}}" >cfg &&
	agent-run -y --mcp-config cfg -C w "go" >answer 2>progress &&
	test_grep "MY_DB_PASSWORD=\[REDACTED\]" w/.agent/transcript.jsonl &&
	test_grep ! hunter2 w/.agent/transcript.jsonl &&
	test_grep ! hunter2 w/.agent/audit.jsonl &&
	test_grep ! hunter2 requests.jsonl &&
	test_grep ! hunter2 progress
'

test_expect_success 'a command the model runs cannot call the bridge past hook-perm: the socket is out of its view, or it has no token' '
	printf "%s\n" "{\"tool_calls\": [{\"name\": \"bash\", \"arguments\": {\"command\": \"python3 -c \\\"import json, os, socket; s = socket.socket(socket.AF_UNIX); s.connect(os.environ[\\u0027AGENT_MCP_SOCKET\\u0027]); s.sendall(json.dumps({\\u0027op\\u0027: \\u0027call\\u0027, \\u0027name\\u0027: \\u0027mcp__t__echo\\u0027, \\u0027arguments\\u0027: \\u0027{}\\u0027, \\u0027token\\u0027: os.environ.get(\\u0027AGENT_MCP_TOKEN\\u0027, \\u0027\\u0027)}).encode() + b\\u0027\\\\\\\\n\\u0027); print(s.recv(1000))\\\"\"}}]}" "{\"content\": \"done\"}" >script &&
	start_model script && mkdir w &&
	config cfg &&
	AGENT_PASS_ENV=AGENT_MCP_SOCKET agent-run -y --mcp-config cfg -C w "go" >answer 2>progress &&
	jq -r "select(.role == \"tool\") | .content" w/.agent/transcript.jsonl >results &&
	test_grep ! "status.: .ok" results &&
	test_grep -E "refused: the request does not carry this session|No such file or directory|Permission denied" results
'

test_expect_success 'a workspace .mcp.json is not used until trusted' '
	cat >script <<-\EOF &&
	{"content": "done"}
	EOF
	start_model script && mkdir w &&
	config w/.mcp.json &&
	agent-run -y -C w "go" >answer 2>progress &&
	test_grep "ignoring .*\.mcp\.json.: it is not trusted" progress &&
	head -n 1 requests.jsonl | jq -e "(.body.tools | map(.function.name) | index(\"mcp__t__echo\")) == null"
'

test_expect_success 'a call that never ends: SIGTERM cancels it, the session is resumable, nothing left' '
	cat >script <<-\EOF &&
	{"tool_calls": [{"name": "mcp__t__echo", "arguments": {"text": "x"}}]}
	{"content": "done"}
	EOF
	start_model script && mkdir w &&
	config cfg --mode silent --pidfile "$PWD/w/pids" --cancelfile "$PWD/w/cancelled" &&
	{ agent-run -y --mcp-config cfg -C w "go" >answer 2>progress & } &&
	apid=$! &&
	test_when_finished "kill -9 $apid 2>/dev/null; true" &&
	wait_until 20 grep -q "\"tool_calls\"" w/.agent/transcript.jsonl &&
	sleep 0.5 &&
	kill -TERM $apid &&
	{ wait $apid; st=$?; } &&
	test "$st" = 130 &&
	valid w/.agent/transcript.jsonl &&
	test_grep "interrupted" w/.agent/transcript.jsonl &&
	test -s w/cancelled &&
	wait_until 5 none_left "$PWD/w/pids"
'

test_expect_success 'kill -9 of agent-run in the middle of an MCP call: the bridge and the server go' '
	cat >script <<-\EOF &&
	{"tool_calls": [{"name": "mcp__t__echo", "arguments": {"text": "x"}}]}
	{"content": "done"}
	EOF
	start_model script && mkdir w &&
	config cfg --mode silent --pidfile "$PWD/w/pids" &&
	{ agent-run -y --mcp-config cfg -C w "go" >answer 2>progress & } &&
	apid=$! &&
	test_when_finished "kill -9 $apid 2>/dev/null; true" &&
	wait_until 20 grep -q "\"tool_calls\"" w/.agent/transcript.jsonl &&
	sleep 0.3 &&
	bridge=$(left "mcp-bridge.*--serve" | grep -c "$PWD/" || :) &&
	kill -9 $apid &&
	wait_until 10 none_left "$PWD/w/pids" &&
	wait_until 10 none_left "mcp-bridge --mcp-config $PWD/cfg"
'

test_done
