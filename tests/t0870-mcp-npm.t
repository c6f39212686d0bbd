#!/bin/sh
# mcp-bridge against real MCP servers from npm, over stdio (and
# server-everything over Streamable HTTP too, on 127.0.0.1):
# @modelcontextprotocol/server-everything, server-filesystem and
# server-memory, installed by `make deps` (tools/mcp-servers.sh) into a
# cache outside the tree.  Without them the tests skip, saying so; the
# tests never reach the network themselves.
MCP_CACHE=${AH_MCP_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/agent-harness-mcp}
. "$(dirname "$0")/lib.sh"

BIN=$MCP_CACHE/node_modules/.bin
if [ ! -x "$BIN/mcp-server-everything" ] || [ ! -x "$BIN/mcp-server-filesystem" ] ||
	[ ! -x "$BIN/mcp-server-memory" ] || ! command -v node >/dev/null 2>&1; then
	echo "1..0 # skip the MCP servers from npm are not in $MCP_CACHE (make deps installs them; npm unreachable?)"
	exit 0
fi
AGENT_MODEL=scripted
export AGENT_MODEL

# config FILE: the three servers, in the sandbox of the workspace ws (each
# mcp-bridge here runs with -C ws), installed beforehand (see
# mcp-bridge(1), "npx"): the filesystem one rooted at ws/root, and another
# at / ("wide"), the memory one keeping its graph in ws/memory.jsonl
config() {
	mkdir -p ws/root &&
	jq -n --arg b "$BIN" --arg d "$PWD" '{mcpServers: {
		every: {command: "\($b)/mcp-server-everything"},
		fs: {command: "\($b)/mcp-server-filesystem", args: ["\($d)/ws/root"]},
		wide: {command: "\($b)/mcp-server-filesystem", args: ["/"]},
		mem: {command: "\($b)/mcp-server-memory",
		      env: {MEMORY_FILE_PATH: "\($d)/ws/memory.jsonl"}}}}' >"$1"
}

bridge() {
	mcp-bridge --no-user-config -C ws "$@"
}

# call ID TOOL ARGS
call() {
	jq -nc --arg id "$1" --arg n "$2" --arg a "$3" \
		'{id: $id, type: "function", function: {name: $n, arguments: $a}}'
}

test_expect_success 'the three servers start, in the protocol of 2025-06-18, their tools listed' '
	config cfg &&
	bridge -v --mcp-config cfg --schema >schema 2>err &&
	test_grep "every: ready (protocol 2025-06-18" err &&
	test_grep "fs: ready (protocol 2025-06-18" err &&
	test_grep "mem: ready (protocol 2025-06-18" err &&
	jq -r ".[].function.name" schema >names &&
	test_grep "^mcp__every__echo\$" names &&
	test_grep "^mcp__every__get-sum\$" names &&
	test_grep "^mcp__fs__write_file\$" names &&
	test_grep "^mcp__mem__read_graph\$" names &&
	jq -e "map(select(.function.name == \"mcp__every__get-sum\"))[0].function.parameters.properties.a.type == \"number\"" schema
'

test_expect_success 'server-everything: tools with and without arguments, an image, structured content, an error' '
	config cfg &&
	{ call 1 mcp__every__echo "{\"message\":\"hi there\"}" &&
	  call 2 mcp__every__get-sum "{\"a\":2,\"b\":3}" &&
	  call 3 mcp__every__get-tiny-image "{}" &&
	  call 4 mcp__every__get-structured-content "{\"location\":\"Chicago\"}" &&
	  call 5 mcp__every__get-sum "{\"a\":\"x\"}" &&
	  call 6 mcp__every__get-resource-reference "{}"; } >calls &&
	bridge --mcp-config cfg <calls >out &&
	jq -r ".content" out >text &&
	test "$(jq -r "select(.tool_call_id == \"1\") | .content" out)" = "Echo: hi there" &&
	test_grep "^The sum of 2 and 3 is 5" text &&
	test_grep "^\[image: image/png, [0-9]* bytes of base64, not shown\]\$" text &&
	jq -s -e "map(select(.tool_call_id == \"4\"))[0].content | fromjson | .temperature" out &&
	test "$(jq -r "select(.tool_call_id == \"5\") | .status" out)" = error &&
	test_grep "^Error: .*expected number" text &&
	test_grep "^\[resource: demo://resource/" text
'

test_expect_success 'server-everything: progress of a long call, and a longer one cancelled at its timeout' '
	config cfg &&
	{ call 1 mcp__every__trigger-long-running-operation "{\"duration\":1,\"steps\":3}" &&
	  call 2 mcp__every__trigger-long-running-operation "{\"duration\":30,\"steps\":1}" &&
	  call 3 mcp__every__echo "{\"message\":\"still here\"}"; } >calls &&
	start=$(date +%s) &&
	bridge -v --mcp-config cfg --timeout 2 --max-timeout 3 <calls >out 2>err &&
	test $(($(date +%s) - start)) -lt 20 &&
	test_grep "every: progress 3/3" err &&
	jq -r .content out >text &&
	test_grep "^Long running operation completed" text &&
	test_grep "timed out after 2 s and was cancelled" text &&
	test_grep "^Echo: still here\$" text
'

test_expect_success 'server-everything: its environment has no API key, and what the configuration sets' '
	config cfg &&
	call 1 mcp__every__get-env "{}" >calls &&
	AGENT_API_KEY=sk-test-not-for-servers OPENAI_API_KEY=sk-test-neither \
		bridge --mcp-config cfg <calls >out &&
	jq -r .content out >env &&
	test_grep "\"PATH\"" env &&
	test_grep ! "sk-test" env &&
	test_grep ! "API_KEY" env
'

test_expect_success 'server-filesystem: writes in its root, refuses outside it (its own check)' '
	config cfg &&
	{ call 1 mcp__fs__write_file "{\"path\":\"$PWD/ws/root/a.txt\",\"content\":\"written\"}" &&
	  call 2 mcp__fs__write_file "{\"path\":\"$PWD/outside.txt\",\"content\":\"x\"}" &&
	  call 3 mcp__fs__read_text_file "{\"path\":\"$PWD/ws/root/a.txt\"}"; } >calls &&
	bridge --mcp-config cfg <calls >out &&
	test "$(cat ws/root/a.txt)" = written &&
	test ! -e outside.txt &&
	test "$(jq -r "select(.tool_call_id == \"2\") | .status" out)" = error &&
	test "$(jq -r "select(.tool_call_id == \"3\") | .content" out | head -n 1)" = written
'

if [ -n "${AH_NO_SANDBOX:-}" ]; then
	test_skip 'server-filesystem rooted at /: a write outside the workspace fails because of the sandbox' 'no sandbox on this machine'
else
	test_expect_success 'server-filesystem rooted at /: a write outside the workspace fails because of the sandbox' '
		config cfg &&
		{ call 1 mcp__wide__write_file "{\"path\":\"$PWD/ws/in.txt\",\"content\":\"in\"}" &&
		  call 2 mcp__wide__write_file "{\"path\":\"$PWD/outside.txt\",\"content\":\"x\"}"; } >calls &&
		bridge --mcp-config cfg <calls >out &&
		test "$(cat ws/in.txt)" = in &&
		test ! -e outside.txt &&
		test_grep "Error: EROFS: read-only file system" out
	'
fi

test_expect_success 'server-memory: what one call stores, the next reads' '
	config cfg &&
	{ call 1 mcp__mem__create_entities "{\"entities\":[{\"name\":\"harness\",\"entityType\":\"project\",\"observations\":[\"written in C\"]}]}" &&
	  call 2 mcp__mem__search_nodes "{\"query\":\"harness\"}"; } >calls &&
	bridge --mcp-config cfg <calls >out &&
	test "$(jq -r "select(.tool_call_id == \"2\") | .status" out)" = ok &&
	test_grep "written in C" out &&
	test_grep "written in C" ws/memory.jsonl
'

test_expect_success 'Streamable HTTP: server-everything over HTTP (JSON and SSE answers, progress, a timeout), its headers kept out of results' '
	port=$(python3 -c "import socket; s = socket.socket(); s.bind((\"127.0.0.1\", 0)); print(s.getsockname()[1])") &&
	{ PORT=$port "$BIN/mcp-server-everything" streamableHttp >http.log 2>&1 & hpid=$!; } &&
	test_when_finished "kill $hpid" &&
	wait_until 20 grep -q "listening on port $port" http.log &&
	jq -n --arg u "http://127.0.0.1:$port/mcp" "{mcpServers: {h: {type: \"http\", url: \$u,
		headers: {\"X-Api-Token\": \"tok-kept-secret-42\"}}}}" >cfg &&
	{ call 1 mcp__h__echo "{\"message\":\"over http tok-kept-secret-42\"}" &&
	  call 2 mcp__h__get-sum "{\"a\":2,\"b\":3}" &&
	  call 3 mcp__h__trigger-long-running-operation "{\"duration\":1,\"steps\":3}" &&
	  call 4 mcp__h__trigger-long-running-operation "{\"duration\":30,\"steps\":1}" &&
	  call 5 mcp__h__echo "{\"message\":\"after\"}"; } >calls &&
	mkdir -p ws &&
	bridge -v --mcp-config cfg --timeout 2 --max-timeout 3 <calls >out 2>err &&
	test_grep "h: ready (protocol 2025-06-18" err &&
	test_grep "h: progress 3/3" err &&
	jq -r .content out >text &&
	test_grep "^Echo: over http \[REDACTED\]\$" text &&
	test_grep "^The sum of 2 and 3 is 5" text &&
	test_grep "^Long running operation completed" text &&
	test_grep "timed out after 2 s and was cancelled" text &&
	test_grep "^Echo: after\$" text &&
	test_grep ! tok-kept out
'

test_expect_success 'a scripted agent-run session calls the real servers; the results are in the transcript; nothing is left' '
	cat >script <<-\EOF &&
	{"tool_calls": [{"name": "mcp__every__get-sum", "arguments": {"a": 20, "b": 22}}, {"name": "mcp__mem__create_entities", "arguments": {"entities": [{"name": "answer", "entityType": "fact", "observations": ["is 42"]}]}}]}
	{"tool_calls": [{"name": "mcp__mem__read_graph", "arguments": {}}]}
	{"content": "done"}
	EOF
	start_model script && config cfg &&
	agent-run -y --mcp-config cfg -C ws "use the tools" >answer 2>progress &&
	echo done >expect && test_cmp expect answer &&
	valid ws/.agent/transcript.jsonl &&
	jq -r "select(.role == \"tool\") | .content" ws/.agent/transcript.jsonl >results &&
	test_grep "The sum of 20 and 22 is 42" results &&
	test_grep "is 42" results &&
	wait_until 10 none_left "$BIN/mcp-server-"
'

test_done
