#!/bin/sh
# make bench-peers: the scripted server's OpenAI Responses route and its
# answers to the peers' requests beside the session, and bench/peers.sh
# without the peers (nothing here reaches the network; no time is
# asserted).
. "$(dirname "$0")/lib.sh"

# post PATH BODY: a POST to the server, the answer's body on stdout.
post() {
	curl -sS --fail-with-body -H "content-type: application/json" \
		--data-binary "$2" "${AGENT_BASE_URL%/v1}$1"
}
# events FILE: the data of each server-sent event of FILE, one a line.
events() { sed -n "s/^data: //p" "$1"; }

test_expect_success 'Responses: a function call, then text, streamed and whole' '
	cat >script <<-\EOF &&
	{"tool_calls": [{"name": "exec_command", "id": "call_r", "arguments": {"cmd": "echo step-1"}}]}
	{"content": "all done"}
	{"content": "once more"}
	EOF
	start_model script &&
	post /v1/responses "{\"model\":\"m\",\"stream\":true,\"input\":[],\"tools\":[{\"type\":\"function\",\"name\":\"exec_command\"}]}" >sse &&
	events sse >ev &&
	jq -s -e "map(.type) | .[0] == \"response.created\" and
		.[-1] == \"response.completed\" and
		index(\"response.output_item.added\") < index(\"response.output_item.done\")" ev &&
	jq -s -e "map(select(.type == \"response.output_item.done\")) |
		length == 1 and .[0].item.type == \"function_call\" and
		.[0].item.name == \"exec_command\" and .[0].item.call_id == \"call_r\" and
		(.[0].item.arguments | fromjson) == {cmd: \"echo step-1\"}" ev &&
	jq -s -e "map(select(.type == \"response.completed\"))[0].response |
		.status == \"completed\" and .usage.input_tokens == 10 and
		.usage.output_tokens == 5" ev &&
	test_grep "^event: response.output_item.added$" sse &&
	post /v1/responses "{\"model\":\"m\",\"stream\":true,\"input\":[],\"tools\":[{\"type\":\"function\",\"name\":\"exec_command\"}]}" >sse &&
	events sse >ev &&
	test "$(jq -r -s "map(select(.type == \"response.output_text.delta\") | .delta) | join(\"\")" ev)" = "all done" &&
	jq -s -e "map(select(.type == \"response.completed\"))[0].response.output[0] |
		.type == \"message\" and .role == \"assistant\" and
		.content[0].text == \"all done\"" ev &&
	post /v1/responses "{\"model\":\"m\",\"input\":[]}" >whole &&
	jq -e ".object == \"response\" and .output[0].content[0].text == \"once more\"" whole
'

test_expect_success '--side-requests: probes, count_tokens, requests without tools take no step' '
	cat >script <<-\EOF &&
	{"tool_calls": [{"name": "Bash", "id": "call_1", "arguments": {"command": "echo step-1"}}]}
	{"content": "the end"}
	EOF
	start_model script --side-requests --sent-log "$PWD/sent.jsonl" &&
	curl -sS --fail -I "${AGENT_BASE_URL%/v1}/" >head &&
	test_grep "^HTTP/1.1 200" head &&
	curl -sS --fail "$AGENT_BASE_URL/models" >models &&
	jq -e ".data == []" models &&
	post "/v1/messages/count_tokens?beta=true" "{\"model\":\"m\",\"messages\":[]}" >count &&
	jq -e ".input_tokens == 10" count &&
	post "/v1/messages?beta=true" "{\"model\":\"m\",\"max_tokens\":1,\"messages\":[{\"role\":\"user\",\"content\":\"quota\"}]}" >side &&
	jq -e ".content == [{type: \"text\", text: \"OK\"}]" side &&
	post "/v1/messages?beta=true" "{\"model\":\"m\",\"messages\":[],\"tools\":[{\"name\":\"Bash\"}]}" >step1 &&
	jq -e ".content[0].type == \"tool_use\" and .content[0].name == \"Bash\"" step1 &&
	post /v1/chat/completions "{\"model\":\"m\",\"messages\":[]}" >side &&
	jq -e ".choices[0].message.content == \"OK\"" side &&
	post /v1/responses "{\"model\":\"m\",\"input\":[]}" >side &&
	jq -e ".output[0].content[0].text == \"OK\"" side &&
	post "/v1/messages?beta=true" "{\"model\":\"m\",\"messages\":[],\"tools\":[{\"name\":\"Bash\"}]}" >step2 &&
	jq -e ".content == [{type: \"text\", text: \"the end\"}]" step2 &&
	jq -s -e "map(select(.side | not) | .n) == [5, 8] and
		(map(select(.side) | .n) | sort) == [1, 2, 3, 4, 6, 7]" sent.jsonl
'

test_expect_success 'peers.sh: --help, and usage errors exit 2' '
	sh "$SRC_DIR/bench/peers.sh" --help >out &&
	test_grep "^usage: bench/peers.sh" out &&
	test_expect_code 2 sh "$SRC_DIR/bench/peers.sh" --frob 2>err &&
	test_grep "unknown argument" err &&
	test_expect_code 2 sh "$SRC_DIR/bench/peers.sh" --only claude,vim 2>err &&
	test_grep "unknown peer .vim." err &&
	test_expect_code 2 sh "$SRC_DIR/bench/peers.sh" --steps many 2>err &&
	test_grep "needs a number" err &&
	test_expect_code 2 sh "$SRC_DIR/bench/peers.sh" --rounds 2>err &&
	test_grep "needs a value" err &&
	test_expect_code 2 sh "$SRC_DIR/bench/peers.sh" --cache "$SRC_DIR/bench/cache" 2>err &&
	test_grep "must not be in the source tree" err &&
	test ! -e "$SRC_DIR/bench/cache"
'

test_expect_success 'peers.sh: a peer that cannot be installed is skipped, saying so' '
	npm_config_registry=http://127.0.0.1:1/ npm_config_fetch_retries=0 \
		sh "$SRC_DIR/bench/peers.sh" --bin "$AH_BIN" --cache "$PWD/cache" \
		--only pi --steps 2 --rounds 1 >out 2>err &&
	test_grep "^peers: @mariozechner/pi-coding-agent skipped: " err &&
	test_grep "^floor (one Python process) " out &&
	test_grep ! "^pi-coding-agent" out &&
	test -z "$(ls -A cache)"
'

test_expect_success 'peers.sh --only none: the floor and agent-run rows, ratios first; nothing left' '
	sh "$SRC_DIR/bench/peers.sh" --bin "$AH_BIN" --cache "$PWD/cache" \
		--only none --steps 3 --rounds 1 >out &&
	test_grep "^3 steps, 1 rounds; physical floor [0-9.]* ms" out &&
	test_grep "^row  *x floor  *x phys | per step ms (p10-p90) *| *PSS MB" out &&
	test_grep "^floor (one Python process)  *1\.00 " out &&
	test_grep "^agent-run ring  *[0-9.]* *[0-9.]* | .* 1/1 | [0-9.]*$" out &&
	test_grep "^agent-run ring --sandbox off  *[0-9.]* " out &&
	test_grep "^agent-run --step  *[0-9.]* " out &&
	test_line_count = 6 out &&
	test -z "$(ls -A cache)"
'

test_expect_success 'peers-run.py: a run past --timeout is killed with all it started, and said to fail' '
	mark=3600.$$ &&
	printf "#!/bin/sh\nsetsid sleep %s &\nexec sleep %s\n" "$mark" "$mark" >hang &&
	chmod +x hang &&
	test_when_finished "pkill -9 -f \"sleep $mark\"; :" &&
	test_expect_code 1 python3 "$SRC_DIR/bench/peers-run.py" --bin "$AH_BIN" \
		--peer "pi=$PWD/hang" --steps 2 --rounds 1 --timeout 1 --tmp "$PWD/cache" \
		>out 2>err &&
	test_grep "^peers: round 1, pi-coding-agent: timed out after 1 s" err &&
	test_grep "^pi-coding-agent  *-  *- | failed  *| .* 0/1 | ?$" out &&
	test_grep "^agent-run ring  *[0-9.]* " out &&
	none_left "sleep $mark" &&
	test -z "$(ls -A cache)"
'

test_done
