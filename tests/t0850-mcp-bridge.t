#!/bin/sh
# mcp-bridge over stdio against tests/mcp-server.py, a small MCP server of
# our own, and its hostile modes: the lifecycle, tools/list pages and
# list_changed, results (text, isError, structuredContent, images,
# bounds), secrets, the configuration and its trust; a server that sends
# garbage, a 100 MB line, never answers, answers another id, asks the
# client, or exits mid-call: a clear error, no hang past the timeout, no
# process left.
. "$(dirname "$0")/lib.sh"

SERVER=$TEST_DIR/mcp-server.py

# config FILE [ARG...]: a configuration of one server "t", unsandboxed,
# running mcp-server.py with ARGs
config() {
	cf_=$1
	shift
	printf '%s\n' "$SERVER" "$@" | jq -Rsc '{mcpServers: {t: {command:
		"python3", args: (split("\n")[:-1]), sandbox: false}}}' >"$cf_"
}

# call ID TOOL ARGS: a tool call line
call() {
	jq -nc --arg id "$1" --arg n "mcp__t__$2" --arg a "$3" \
		'{id: $id, type: "function", function: {name: $n, arguments: $a}}'
}

bridge() {
	mcp-bridge --no-user-config "$@"
}

test_expect_success 'no configuration: no tools, no server' '
	bridge --schema >out &&
	echo "[]" >expect &&
	test_cmp expect out
'

test_expect_success 'the tools of every page, named mcp__SERVER__TOOL; a name no API takes is left out, said' '
	config cfg --page 3 &&
	bridge --mcp-config cfg --schema >schema 2>err &&
	jq -r ".[].function.name" schema >names &&
	test_line_count = 11 names &&
	test_grep "^mcp__t__echo\$" names &&
	test_grep "^mcp__t__grow\$" names &&
	jq -e ".[0].function.parameters.required == [\"text\"]" schema &&
	test_grep "tool .bad name!. left out" err
'

test_expect_success 'calls: text, arguments as a string or an object, the id kept' '
	config cfg &&
	{ call 1 echo "{\"text\":\"hello\"}" &&
	  jq -nc "{id: \"2\", function: {name: \"mcp__t__add\", arguments: {a: 1, b: 2}}}"; } >calls &&
	bridge --mcp-config cfg <calls >out &&
	jq -c "[.tool_call_id, .content, .status]" out >got &&
	printf "%s\n" "[\"1\",\"hello\",\"ok\"]" "[\"2\",\"3\",\"ok\"]" >expect &&
	test_cmp expect got
'

test_expect_success 'isError: an error the model sees; images and resources described; structuredContent kept' '
	config cfg &&
	{ call 1 fail "{}" && call 2 image "{}" && call 3 structured "{}"; } >calls &&
	bridge --mcp-config cfg <calls >out &&
	jq -r ".content" out >text &&
	test "$(jq -r "select(.tool_call_id == \"1\") | .status" out)" = error &&
	test_grep "^Error: it broke\$" text &&
	test_grep "^\[image: image/png, 8 bytes of base64, not shown\]\$" text &&
	test_grep "^\[resource: file:///r.txt (text/plain)\]\$" text &&
	test_grep "^resource text\$" text &&
	test_grep "^\[resource link: file:///x x\]\$" text &&
	test_grep "^structuredContent: {\"n\":42}\$" text
'

test_expect_success 'a large result keeps its head and tail within --max-output' '
	config cfg &&
	call 1 big "{\"n\":100000}" >calls &&
	bridge --mcp-config cfg --max-output 1000 <calls >out &&
	jq -r .content out >text &&
	test "$(wc -c <text)" -lt 1200 &&
	test_grep "bytes cut" text
'

test_expect_success 'progress: shown with -v, and it keeps a call past --timeout going' '
	config cfg &&
	call 1 slow "{\"seconds\":1.6}" >calls &&
	bridge -v --mcp-config cfg --timeout 0.9 <calls >out 2>err &&
	test "$(jq -r .content out)" = "slept 1.6" &&
	test_grep "t: progress 4/4 step 4" err
'

test_expect_success 'list_changed: the new tool is listed, and can be called' '
	config cfg &&
	{ call 1 grow "{}" && echo "{\"op\":\"schema\"}" && call 2 grown "{}"; } >calls &&
	bridge --mcp-config cfg <calls >out &&
	sed -n 2p out | jq -e "map(.function.name) | index(\"mcp__t__grown\")" &&
	test "$(sed -n 3p out | jq -r .content)" = "I am new"
'

test_expect_success 'an unknown tool or server, arguments that are not an object: errors' '
	config cfg &&
	{ call 1 nosuch "{}" && call 2 echo "[1]" &&
	  jq -nc "{id: \"3\", function: {name: \"mcp__zz__x\", arguments: \"{}\"}}"; } >calls &&
	bridge --mcp-config cfg <calls >out &&
	jq -r .content out >text &&
	test_grep "^Error: MCP server .t. has no tool .nosuch." text &&
	test_grep "^Error: arguments for mcp__t__echo must be a JSON object" text &&
	test_grep "^Error: no MCP server .zz." text
'

test_expect_success 'the env of the configuration reaches the server, and never a result; no API key does' '
	jq -nc --arg s "$SERVER" "{mcpServers: {t: {command: \"python3\", args: [\$s],
		env: {MY_DB_PASSWORD: \"hunter2-secret-value\"}, sandbox: false}}}" >cfg &&
	{ call 1 env "{\"name\":\"MY_DB_PASSWORD\"}" &&
	  call 2 env "{\"name\":\"AGENT_API_KEY\"}" &&
	  call 3 echo "{\"text\":\"say hunter2-secret-value\"}"; } >calls &&
	AGENT_API_KEY=sk-should-not-pass bridge --mcp-config cfg <calls >out &&
	jq -r .content out >text &&
	test_grep "^MY_DB_PASSWORD=\[REDACTED\]\$" text &&
	test_grep "^AGENT_API_KEY=(unset)\$" text &&
	test_grep "^say \[REDACTED\]\$" text &&
	test_grep ! hunter2 out
'

test_expect_success 'an HTTP server out of reach: said, its calls get errors' '
	echo "{\"mcpServers\": {\"h\": {\"type\": \"http\", \"url\": \"http://127.0.0.1:1/mcp\"}}}" >cfg &&
	jq -nc "{id: \"1\", function: {name: \"mcp__h__x\", arguments: \"{}\"}}" >calls &&
	bridge --mcp-config cfg --max-restarts 0 <calls >out 2>err &&
	test_grep "server .h. could not start: .*127.0.0.1" err &&
	test_grep "Error: MCP server .h. is down" out
'

test_expect_success 'a server that cannot be run: said, its calls get errors, the session goes on' '
	echo "{\"mcpServers\": {\"gone\": {\"command\": \"/nonexistent/server\", \"sandbox\": false}}}" >cfg &&
	jq -nc "{id: \"1\", function: {name: \"mcp__gone__x\", arguments: \"{}\"}}" >calls &&
	bridge --mcp-config cfg --max-restarts 1 <calls >out 2>err &&
	test_grep "server .gone. could not start: cannot run ./nonexistent/server.: No such file" err &&
	test_grep "Error: MCP server .gone. is down" out
'

# sandboxed FILE [KEY=JSON]: one server "t" in the sandbox (the default)
sandboxed() {
	jq -nc --arg s "$SERVER" --argjson more "${2:-{\}}" \
		'{mcpServers: {t: ({command: "python3", args: [$s]} + $more)}}' >"$1"
}

# listener: listens on 127.0.0.1 for 30 s, its port on stdout
listener() {
	python3 -c "import socket, time
s = socket.socket()
s.bind((\"127.0.0.1\", 0))
s.listen()
print(s.getsockname()[1], flush=True)
time.sleep(30)"
}

if [ -n "${AH_NO_SANDBOX:-}" ]; then
	test_skip 'a sandboxed server writes the workspace, not outside it, and has no network' 'no sandbox on this machine'
	test_skip 'a server with "network": true has the network' 'no sandbox on this machine'
else
	test_expect_success 'a sandboxed server writes the workspace, not outside it, and has no network' '
		mkdir ws &&
		sandboxed cfg &&
		{ listener >port & lpid=$!; } &&
		test_when_finished "kill $lpid" &&
		wait_until 10 test -s port &&
		{ call 1 write "{\"path\":\"$PWD/ws/in.txt\",\"text\":\"x\"}" &&
		  call 2 write "{\"path\":\"$PWD/out.txt\",\"text\":\"x\"}" &&
		  call 3 connect "{\"port\":$(cat port)}" &&
		  call 4 env "{\"name\":\"TMPDIR\"}"; } >calls &&
		bridge -C ws --mcp-config cfg <calls >out &&
		jq -r .content out >text &&
		test -f ws/in.txt &&
		test ! -e out.txt &&
		test_grep "^Error: cannot write: .*Read-only file system" text &&
		test_grep "^Error: cannot connect: .*Permission denied" text &&
		test_grep "^TMPDIR=/.*/tool-exec\." text
	'
	test_expect_success 'a server with "network": true has the network' '
		mkdir ws &&
		sandboxed cfg "{\"network\": true}" &&
		{ listener >port & lpid=$!; } &&
		test_when_finished "kill $lpid" &&
		wait_until 10 test -s port &&
		call 1 connect "{\"port\":$(cat port)}" >calls &&
		bridge -C ws --mcp-config cfg <calls >out &&
		test "$(jq -r .content out)" = connected
	'
fi

test_expect_success '--sandbox off (the session'"'"'s commands unconfined): servers too; a bad mode is refused' '
	mkdir ws &&
	sandboxed cfg &&
	call 1 write "{\"path\":\"$PWD/out.txt\",\"text\":\"x\"}" >calls &&
	bridge -C ws --sandbox off --mcp-config cfg <calls >out &&
	test -f out.txt &&
	test_expect_code 2 bridge --sandbox nonsense --schema 2>err &&
	test_grep "unknown sandbox mode" err
'

test_expect_success 'an env or headers member that is not a name with a string (headers: of one line): exit 1, named' '
	echo "{\"mcpServers\": {\"t\": {\"command\": \"x\", \"env\": {\"A=B\": \"x\"}}}}" >bad1 &&
	echo "{\"mcpServers\": {\"t\": {\"command\": \"x\", \"env\": {\"OK\": 1}}}}" >bad2 &&
	echo "{\"mcpServers\": {\"h\": {\"type\": \"http\", \"url\": \"http://127.0.0.1:1/\", \"headers\": {\"X Bad\": \"v\"}}}}" >bad3 &&
	echo "{\"mcpServers\": {\"h\": {\"type\": \"http\", \"url\": \"http://127.0.0.1:1/\", \"headers\": {\"X-T\": \"a\\nb\"}}}}" >bad4 &&
	test_expect_code 1 bridge --mcp-config bad1 --schema 2>err1 &&
	test_grep "bad1.: server .t.: \"env\": .A=B. must be a name of letters, digits, _ and - with a string" err1 &&
	test_expect_code 1 bridge --mcp-config bad2 --schema 2>err2 &&
	test_grep "bad2.: server .t.: \"env\": .OK. must be a name of letters, digits, _ and - with a string" err2 &&
	test_expect_code 1 bridge --mcp-config bad3 --schema 2>err3 &&
	test_grep "bad3.: server .h.: header .X Bad. must be a name with a one-line string" err3 &&
	test_expect_code 1 bridge --mcp-config bad4 --schema 2>err4 &&
	test_grep "bad4.: server .h.: header .X-T. must be a name with a one-line string" err4
'

test_expect_success 'a configuration with an unknown key, a bad name, or no mcpServers: exit 1, named' '
	echo "{\"mcpServers\": {\"t\": {\"command\": \"x\", \"cwd\": \"/\"}}}" >bad1 &&
	echo "{\"mcpServers\": {\"a__b\": {\"command\": \"x\"}}}" >bad2 &&
	echo "{\"servers\": {}}" >bad3 &&
	test_expect_code 1 bridge --mcp-config bad1 --schema 2>err1 &&
	test_grep "bad1.: server .t.: unknown key .cwd." err1 &&
	test_expect_code 1 bridge --mcp-config bad2 --schema 2>err2 &&
	test_grep "server name .a__b." err2 &&
	test_expect_code 1 bridge --mcp-config bad3 --schema 2>err3 &&
	test_grep "no \"mcpServers\" object" err3 &&
	echo "{\"mcpServers\": {\"h\": {\"type\": \"http\", \"url\": \"ftp://example.invalid/mcp\"}}}" >bad4 &&
	test_expect_code 1 bridge --mcp-config bad4 --schema 2>err4 &&
	test_grep "not an http:// or https:// URL without a user name" err4 &&
	echo "{\"mcpServers\": {\"h\": {\"type\": \"http\", \"url\": \"http://127.0.0.1:1/\", \"command\": \"x\"}}}" >bad5 &&
	test_expect_code 1 bridge --mcp-config bad5 --schema 2>err5 &&
	test_grep "unknown key .command. (known for http: type, url, headers)" err5
'

test_expect_success 'a project .mcp.json is ignored until trusted, and again once changed' '
	mkdir p &&
	config p/.mcp.json &&
	bridge -C p --schema >out 2>err &&
	echo "[]" >expect &&
	test_cmp expect out &&
	test_grep "ignoring .*\.mcp\.json.: it is not trusted" err &&
	bridge -C p --trust >trusted &&
	test_grep "^trusted " trusted &&
	test_grep "^t: runs python3 .* NOT sandboxed" trusted &&
	bridge -C p --schema >out &&
	test "$(jq length out)" = 11 &&
	config p/.mcp.json --page 2 &&
	bridge -C p --schema >out 2>err &&
	test_cmp expect out &&
	test_grep "not trusted" err
'

test_expect_success 'the user config is read; --mcp-config replaces a server of the same name' '
	mkdir -p "$HOME/.config/agent-harness" &&
	test_when_finished "rm -rf \"\$HOME/.config/agent-harness/mcp.json\"" &&
	echo "{\"mcpServers\": {\"t\": {\"command\": \"/nonexistent\", \"sandbox\": false}}}" >"$HOME/.config/agent-harness/mcp.json" &&
	mcp-bridge --schema >out 2>err &&
	test_grep "cannot run ./nonexistent." err &&
	config cfg &&
	mcp-bridge --mcp-config cfg --schema >out 2>err &&
	test "$(jq length out)" = 11 &&
	test_grep "replaces the one of" err
'

# hostile MODE TIMEOUT: two calls to a server in MODE, one restart
# allowed; elapsed: the seconds it took (read by the bodies)
# shellcheck disable=SC2034
hostile() {
	config cfg --mode "$1" &&
	{ call 1 echo "{\"text\":\"a\"}" && call 2 echo "{\"text\":\"b\"}"; } >calls &&
	start=$(date +%s) &&
	bridge --mcp-config cfg --timeout "$2" --start-timeout "$2" \
		--max-restarts 1 <calls >out 2>err &&
	elapsed=$(($(date +%s) - start)) &&
	test_line_count -eq 2 out &&
	jq -r .content out >text
}

test_expect_success 'hostile: garbage on stdout fails the call at once, clearly' '
	hostile garbage 20 &&
	test "$elapsed" -lt 10 &&
	test_grep "^Error: MCP server .t. failed during the call: it sent a line that is not a JSON-RPC message: this is not json" text
'

test_expect_success 'hostile: a 100 MB line is cut off at the bound of a message' '
	hostile huge 20 &&
	test "$elapsed" -lt 15 &&
	test_grep "it sent a message over 16777216 bytes" text
'

test_expect_success 'hostile: a server that never answers: timed out and cancelled' '
	config cfg --mode silent --cancelfile "$PWD/cancelled" &&
	call 7 echo "{\"text\":\"a\"}" >calls &&
	bridge --mcp-config cfg --timeout 1 <calls >out &&
	test_grep "timed out after 1 s and was cancelled" out &&
	wait_until 5 test -s cancelled &&
	echo 3 >expect &&
	test_cmp expect cancelled
'

test_expect_success 'hostile: an answer to another id is not taken for the call; the error says so' '
	hostile wrongid 1 &&
	test_grep "timed out after 1 s and was cancelled; it answered id 1003, not the 3 asked" text
'

test_expect_success 'hostile: a request from the server (sampling) is refused, the call goes on' '
	hostile request 5 &&
	test_grep "^client said: .*-32601" text &&
	test_grep "refused its request .sampling/createMessage." err
'

test_expect_success 'hostile: a server that exits mid-call: its status and last words; started again once' '
	hostile exit 5 &&
	test_grep "failed during the call: it exited with status 3; it said: mcp-server.py: exiting mid-call" text &&
	test_grep "starting it again (1 of 1)" err &&
	test "$(grep -c "failed during the call" text)" = 2
'

test_expect_success 'hostile: no answer to initialize: given up after --start-timeout' '
	hostile noinit 1 &&
	test "$elapsed" -lt 8 &&
	test_grep "no answer to initialize within 1 s" text &&
	test_grep "restarted the most times allowed" text
'

test_expect_success 'a protocol version not spoken: the server is not used' '
	config cfg --version 2099-01-01 &&
	bridge --mcp-config cfg --schema >out 2>err &&
	test_grep "speaks protocol version .2099-01-01.; this client speaks 2025-06-18, 2025-03-26 and 2024-11-05" err
'

test_expect_success 'an older protocol version the server answers with is taken' '
	config cfg --version 2024-11-05 &&
	bridge -v --mcp-config cfg --schema >out 2>err &&
	test_grep "t: ready (protocol 2024-11-05, 12 tools)" err
'

test_expect_success 'no server is left running, also after SIGTERM in the middle of a call' '
	config cfg --mode silent --pidfile "$PWD/server.pid" &&
	call 1 echo "{}" >calls &&
	{ mcp-bridge --no-user-config -v --mcp-config cfg --timeout 60 <calls >out 2>err & } &&
	bpid=$! &&
	test_when_finished "kill $bpid 2>/dev/null; true" &&
	wait_until 10 test -s server.pid &&
	wait_until 10 grep -q "t: ready" err &&
	sleep 0.3 &&
	kill -TERM $bpid &&
	{ wait $bpid; st=$?; } &&
	test "$st" = 143 &&
	test_grep "interrupted and cancelled" out &&
	wait_until 5 none_left "$PWD/server.pid"
'

test_expect_success 'the socket: --serve prints its pid and token, answers schema and calls with the token only, ends with the watched process' '
	config cfg &&
	{ sleep 60 & watched=$!; } &&
	test_when_finished "kill $watched 2>/dev/null; true" &&
	bridge --mcp-config cfg --serve "$PWD/sock" --watch $watched >started &&
	read -r bpid token <started &&
	echo "$bpid" >pid &&
	test_when_finished "kill $(cat pid) 2>/dev/null; true" &&
	python3 -c "
import socket, sys, json
def ask(line, token=sys.argv[2]):
    line = json.dumps(dict(json.loads(line), token=token))
    s = socket.socket(socket.AF_UNIX)
    s.connect(sys.argv[1])
    s.sendall(line.encode() + b\"\\n\")
    out = b\"\"
    while not out.endswith(b\"\\n\"):
        b = s.recv(65536)
        if not b: break
        out += b
    return json.loads(out)
print(len(ask(json.dumps({\"op\": \"schema\"}))))
print(ask(json.dumps({\"op\": \"call\", \"name\": \"mcp__t__echo\", \"arguments\": json.dumps({\"text\": \"via socket\"})})))
print(ask(json.dumps({\"op\": \"schema\"}), token=\"0\" * 32))
" "$PWD/sock" "$token" >out &&
	printf "%s\n" 11 "{'"'"'content'"'"': '"'"'via socket'"'"', '"'"'status'"'"': '"'"'ok'"'"'}" \
		"{'"'"'content'"'"': \"Error: refused: the request does not carry this session'"'"'s token\", '"'"'status'"'"': '"'"'error'"'"'}" >expect &&
	test_cmp expect out &&
	kill $watched &&
	wait_until 5 eval "! kill -0 $(cat pid) 2>/dev/null" &&
	test ! -e sock
'

test_done
