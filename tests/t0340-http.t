#!/bin/sh
# agent-step's own HTTP/1.1 client (lib/http.c), which speaks to a plain
# http:// URL, and libcurl, loaded for anything else: the server's bytes
# as they come on the wire, the hostile ones included.
. "$(dirname "$0")/lib.sh"

AGENT_MODEL=test-model
export AGENT_MODEL
# own: agent-step speaks through its own client, as it does to http://;
# t0341 runs these tests again with AGENT_HTTP=curl, where the same
# answers must fail as surely, with libcurl's words for why
own() { [ "${AGENT_HTTP:-}" != curl ]; }
# wire BYTES [close|reset]: a script line answering with these bytes as
# they are (python's escapes: \r, \n, \x1b), the JSON body of an answer
# ($body, else $answer) where the text BODY stands, its length where LEN
# stands; then the connection closed, or reset, if asked.
answer='{"id":"x","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"wire ok"},"finish_reason":"stop"}]}'
wire() {
	python3 -c '
import json, sys
body = sys.argv[1]
raw = sys.argv[2].encode().decode("unicode_escape")
raw = raw.replace("LEN", str(len(body))).replace("BODY", body)
e = {"wire": raw}
if len(sys.argv) > 3:
    e[sys.argv[3]] = True
print(json.dumps(e))' "${body:-$answer}" "$@"
}
# an answer with a tool call, which --until-done goes on after
call() {
	echo '{"id":"x","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[{"id":"t1","type":"function","function":{"name":"bash","arguments":"{}"}}]},"finish_reason":"tool_calls"}]}'
}

# two_turns: agent-step --until-done over the script, whose first answer
# is the tool call t1: it gets its result, and out holds both answers.
two_turns() {
	mkfifo in &&
	{ agent-step --until-done --retries 0 <in >out & } &&
	tt_pid_=$! &&
	exec 3>in &&
	if user "one" >&3 && wait_for out 1 && sleep 0.2 &&
		echo '{"role":"tool","tool_call_id":"t1","content":"1"}' >&3
	then
		exec 3>&- && wait "$tt_pid_"
	else
		exec 3>&-
		kill "$tt_pid_" 2>/dev/null
		return 1
	fi
}

test_expect_success 'a plain http:// URL: libcurl is not loaded (with AGENT_HTTP=curl, it is)' '
	echo "{\"delay\": 1, \"content\": \"late\"}" >script &&
	start_model script &&
	{ user hi | agent-step >out & } &&
	pid=$! &&
	test_when_finished "kill $pid 2>/dev/null || :" &&
	wait_until 20 test -s requests.jsonl &&
	grep -c "" /proc/$pid/maps >/dev/null &&
	if own; then test_grep ! libcurl /proc/$pid/maps
	else test_grep libcurl /proc/$pid/maps; fi &&
	wait $pid &&
	jq -e ".content == \"late\"" out
'

test_expect_success 'with http_proxy set, libcurl takes the request, through the proxy' '
	echo "{\"content\": \"via the proxy\"}" >script &&
	start_model script &&
	user hi | http_proxy=http://127.0.0.1:$(cat port) \
		AGENT_BASE_URL=http://example.invalid/v1 agent-step >out &&
	jq -e ".content == \"via the proxy\"" out &&
	test "$(jq -r .path requests.jsonl)" = http://example.invalid/v1/chat/completions
'

test_expect_success 'AGENT_HTTP other than curl or empty is refused' '
	user hi >in.json &&
	AGENT_HTTP=own AGENT_BASE_URL=http://127.0.0.1:1/v1 \
		test_expect_code 3 agent-step <in.json 2>err &&
	test_contains err "AGENT_HTTP is '\''own'\'': it is curl, or empty"
'

test_expect_success 'the request: Host, the headers, the length, the key' '
	echo "{\"content\": \"ok\"}" >script &&
	start_model script &&
	user hi | AGENT_API_KEY=sk-test agent-step >out &&
	jq -e --arg host "127.0.0.1:$(cat port)" ".headers | .host == \$host and
		.authorization == \"Bearer sk-test\" and
		.\"content-type\" == \"application/json\" and
		(.\"user-agent\" | startswith(\"agent-harness/\")) and
		(.\"content-length\" | tonumber) > 0" requests.jsonl
'

test_expect_success 'chunks with extensions and trailers, bare LF line ends, a 100 Continue first' '
	python3 -c "
import json, sys
body = sys.argv[1]
a, b = body[:10], body[10:]
raw = (\"HTTP/1.1 100 Continue\r\n\r\n\"
       \"HTTP/1.1 200 OK\nContent-Type: application/json\n\"
       \"Transfer-Encoding: chunked\n\n\"
       \"%x;name=value\n%s\n%X \r\n%s\r\n0\r\nX-Trailer: t\r\n\r\n\"
       % (len(a), a, len(b), b))
print(json.dumps({\"wire\": raw}))" "$answer" >script &&
	start_model script &&
	user hi | agent-step >out &&
	jq -e ".content == \"wire ok\"" out
'

test_expect_success 'an answer to the end of the connection (HTTP/1.0, no length)' '
	wire "HTTP/1.0 200 OK\r\nContent-Type: application/json\r\n\r\nBODY" close >script &&
	start_model script &&
	user hi | agent-step >out &&
	jq -e ".content == \"wire ok\"" out
'

test_expect_success 'a kept connection the server closed: the next request goes on a new one' '
	body=$(call) wire "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: LEN\r\n\r\nBODY" close >script &&
	echo "{\"content\": \"second\"}" >>script &&
	start_model script &&
	two_turns &&
	jq -s -e "length == 2 and .[0].tool_calls[0].id == \"t1\" and
		.[1].content == \"second\"" out &&
	test "$(jq -s "map(.conn) | unique | length" requests.jsonl)" = 2
'

# agent-step(1): a request is sent again at once only when a kept
# connection was found closed; on a fresh one the server may have taken
# it (a POST is billed), so that is a failure, retried as one only with
# --retries
# the server says it will close, and does not yet: the next request goes on
# a new connection all the same
test_expect_success 'an answer with Connection: close: the next request goes on a new connection' '
	body=$(call) wire "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\nContent-Length: LEN\r\n\r\nBODY" >script &&
	echo "{\"content\": \"second\"}" >>script &&
	start_model script &&
	two_turns &&
	jq -s -e "length == 2 and .[1].content == \"second\"" out &&
	test "$(jq -s "map(.conn) | unique | length" requests.jsonl)" = 2
'

test_expect_success 'a fresh connection closed without an answer: the request is not sent again' '
	wire "" close >script &&
	echo "{\"content\": \"second\"}" >>script &&
	start_model script &&
	user hi >in.json &&
	test_expect_code 7 agent-step --retries 0 <in.json >out 2>err &&
	! test -s out &&
	test_line_count = 1 requests.jsonl
'

# two.test is 127.0.0.1 and 127.0.0.2 (an /etc/hosts of a mount namespace
# of our own); on 127.0.0.1 a listener whose queue is full, so that a
# connection there times out; on 127.0.0.2 the model
if unshare -rm true 2>/dev/null; then
test_expect_success 'after a connect timeout, the next address is tried' '
	echo "{\"content\": \"second address\"}" >script &&
	start_model script --host 127.0.0.2 &&
	{ python3 -c "
import socket, sys, time
s = socket.socket()
s.bind((\"127.0.0.1\", int(sys.argv[1])))
s.listen(0)
held = []
for _ in range(3):
    c = socket.socket()
    c.setblocking(False)
    c.connect_ex((\"127.0.0.1\", int(sys.argv[1])))
    held.append(c)
open(\"full\", \"w\").close()
time.sleep(60)
" "$(cat port)" & } &&
	full_pid=$! &&
	test_when_finished "kill $full_pid" &&
	wait_until 10 test -e full &&
	printf "127.0.0.1 two.test\n127.0.0.2 two.test\n" >hosts &&
	user hi >in.json &&
	AGENT_BASE_URL=http://two.test:$(cat port)/v1 unshare -rm sh -c "
		mount --bind hosts /etc/hosts &&
		exec agent-step --timeout 6 --retries 0" <in.json >out 2>err &&
	jq -e ".content == \"second address\"" out
'
else
	test_skip 'after a connect timeout, the next address is tried' \
		'no user and mount namespaces here (unshare -rm)'
fi

test_expect_success 'Retry-After as an HTTP date is honoured' '
	when=$(date -u -d "+3 seconds" "+%a, %d %b %Y %H:%M:%S GMT") &&
	jq -nc --arg when "$when" "{status: 429, headers: {\"retry-after\": \$when},
		error: {message: \"later\", type: \"requests\"}}" >script &&
	echo "{\"content\": \"now\"}" >>script &&
	start_model script &&
	user hi | agent-step 2>err >out &&
	test_grep "retrying in [123]\.[0-9] s" err &&
	jq -e ".content == \"now\"" out
'

# hostile NAME WIRE MESSAGE [reset]: the answer WIRE, then the connection
# closed (or reset), is refused with MESSAGE, exit 7, after no retry.
hostile() {
	wire "$2" "${4:-close}" >script &&
	start_model script &&
	user hi >in.json &&
	if own; then
		test_expect_code 7 agent-step --retries 0 <in.json >out 2>err &&
		test_contains err "$3"
	else
		# libcurl takes some of these whole, and what it makes of
		# them is not an answer (exit 8) rather than unreadable
		test_must_fail agent-step --retries 0 <in.json >out 2>err &&
		test_grep -E "cannot reach http://127.0.0.1:|the answer is not" err
	fi &&
	! test -s out
}

test_expect_success 'hostile: a head over 100 KB' '
	pad=$(head -c 110000 /dev/zero | tr "\0" a) &&
	hostile big "HTTP/1.1 200 OK\r\nX-Pad: $pad\r\n\r\n" \
		"the answer'\''s head is longer than 102400 bytes"
'

test_expect_success 'hostile: escapes in the status line do not reach the terminal' '
	hostile esc "\x1b]0;owned\x07\x1b[2J HTTP/1.1 200 OK\r\n\r\n" \
		"the answer does not begin as HTTP/1.x does: '\''?]0;owned??[2J HTTP/1.1 200 OK'\''" &&
	! grep -q "$(printf "\033")" err
'

test_expect_success 'hostile: an encoding not asked for' '
	hostile gzip "HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: 4\r\n\r\nBODY" \
		"the answer is encoded ('\''gzip'\''), which was not asked for" &&
	hostile te "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n" \
		"the answer'\''s Transfer-Encoding is '\''gzip, chunked'\''"
'

test_expect_success 'hostile: two lengths, a body cut short' '
	hostile twice "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nBODY" \
		"the answer'\''s Content-Length is not one number" &&
	hostile short "HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\nBODY" \
		"the connection closed $((1000 - ${#answer})) bytes before the end of the answer"
'

test_expect_success 'hostile: a chunk size past 48 bits, a chunk longer than its size' '
	hostile huge "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1000000000000\r\nx" \
		"a chunk of the answer has no size: '\''1000000000000'\''" &&
	hostile long "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nabc\r\n0\r\n\r\n" \
		"a chunk of the answer is longer than its size"
'

test_expect_success 'hostile: switching protocols, a head that never ends' '
	hostile upgrade "HTTP/1.1 101 Switching Protocols\r\nUpgrade: x\r\n\r\n" \
		"the server switched protocols (101)" &&
	hostile open "HTTP/1.1 200 OK\r\nContent-Length: 3\r\n" \
		"the connection closed in the middle of the answer'\''s head"
'

test_expect_success 'URLs: an IPv6 address, an empty port, a port out of range' '
	echo "{\"content\": \"empty port\"}" >script &&
	start_model script &&
	user hi >in.json &&
	AGENT_BASE_URL=http://[::1]:1/v1 test_expect_code 7 agent-step --retries 0 <in.json 2>err &&
	if own; then test_contains err "cannot connect to ::1 port 1: "
	else test_contains err "Failed to connect to ::1 port 1"; fi &&
	for p in 99999 65536 0; do
		AGENT_BASE_URL=http://127.0.0.1:$p/v1 test_expect_code 3 agent-step <in.json 2>err &&
		test_contains err "cannot read the host and port of '\''http://127.0.0.1:$p/v1/chat/completions'\''" ||
		return 1
	done &&
	http_proxy=http://127.0.0.1:$(cat port) AGENT_BASE_URL=http://example.invalid:/v1 \
		agent-step <in.json >out &&
	jq -e ".content == \"empty port\"" out &&
	test "$(jq -r .headers.host requests.jsonl)" = example.invalid
'

test_expect_success 'hostile configuration: a space or line end in the URL is refused, not sent' '
	echo "{\"content\": \"ok\"}" >script &&
	start_model script &&
	user hi >in.json &&
	AGENT_BASE_URL="http://127.0.0.1:$(cat port)/v1 HTTP/1.1
X-Injected: 1
Y: /v1" test_expect_code 3 agent-step --retries 0 <in.json 2>err &&
	test_contains err "the URL holds a space or a control character" &&
	AGENT_BASE_URL="http://127.0.0.1:$(cat port)/v1 x" \
		test_expect_code 3 agent-step --retries 0 <in.json 2>err &&
	test_contains err "the URL holds a space or a control character" &&
	AGENT_BASE_URL="http://127.0.0.1:$(cat port)/v1$(printf "\r")" \
		test_expect_code 3 agent-step --retries 0 <in.json 2>err &&
	! test -s requests.jsonl &&
	AGENT_BASE_URL="http://127.0.0.1:$(cat port)/v1/é" agent-step <in.json >out &&
	# (libcurl writes the hex digits in lowercase)
	test "$(jq -r ".path | ascii_upcase" requests.jsonl)" = /V1/%C3%A9/CHAT/COMPLETIONS
'

test_expect_success 'hostile configuration: a line end in the API key is refused, not sent' '
	echo "{\"content\": \"ok\"}" >script &&
	start_model script &&
	user hi >in.json &&
	AGENT_API_KEY="sk-secret-key-1234$(printf "\r\nX-Injected: 1")" \
		test_expect_code 3 agent-step --retries 0 <in.json 2>err &&
	test_contains err "the API key holds a control character" &&
	! grep -q secret-key err &&
	! test -s requests.jsonl
'

test_expect_success 'hostile: an answer to the end of the connection cut by a reset is not taken whole' '
	half=$(printf %s "$answer" | head -c 60) &&
	body=$half hostile cut "HTTP/1.0 200 OK\r\nContent-Type: application/json\r\n\r\nBODY" \
		"the connection was reset before the end of the answer" reset
'

test_expect_success 'hostile: a status below 100 is not taken for a 1xx' '
	hostile zero "HTTP/1.1 099 X\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: LEN\r\n\r\nBODY" \
		"the answer'\''s status (099) is not one HTTP has"
'

# (libcurl reads these its own way: the own client only)
test_expect_success 'hostile: a status of four digits, a status line without its space after the code' '
	if own; then
		hostile four "HTTP/1.1 2000 OK\r\nContent-Length: LEN\r\n\r\nBODY" \
			"the answer does not begin as HTTP/1.x does: '\''HTTP/1.1 2000 OK'\''" &&
		hostile glued "HTTP/1.1 200OK\r\nContent-Length: LEN\r\n\r\nBODY" \
			"the answer does not begin as HTTP/1.x does: '\''HTTP/1.1 200OK'\''"
	fi
'

test_expect_success 'hostile: a NUL byte in the head is refused' '
	hostile nul "HTTP/1.1 200 OK\r\nX-A: a\x00b\r\nContent-Length: LEN\r\n\r\nBODY" \
		"the answer'\''s head holds a NUL byte"
'

test_expect_success 'hostile: an answer with a length and chunks is not kept alive after' '
	cb=$(call) &&
	c=$(printf %x ${#cb}) &&
	body=$cb wire "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n$c\r\nBODY\r\n0\r\n\r\n" >script &&
	echo "{\"content\": \"second\"}" >>script &&
	start_model script &&
	two_turns &&
	jq -s -e "length == 2 and .[1].content == \"second\"" out &&
	# (libcurl keeps such a connection: it takes the chunks)
	{ ! own || test "$(jq -s "map(.conn) | unique | length" requests.jsonl)" = 2; }
'

test_expect_success 'a chunk size with leading zeros past 12 digits' '
	c=$(printf %016x ${#answer}) &&
	wire "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n$c\r\nBODY\r\n0000000000000000\r\n\r\n" >script &&
	start_model script &&
	user hi | agent-step >out &&
	jq -e ".content == \"wire ok\"" out
'

test_expect_success 'hostile: the key echoed where a message cuts the server'\''s bytes short is still not shown' '
	key=mysecretkeyvalue0123456789abcdef &&
	x=xxxxxxxxxxxxxxxxxxxxxxxxxxxxx &&
	wire "$x$key\r\n\r\n" close >script &&
	wire "HTTP/1.1 200 OK\r\nTransfer-Encoding: $x$x$key\r\n\r\n" close >>script &&
	start_model script &&
	user hi >in.json &&
	if own; then
		AGENT_API_KEY=$key test_expect_code 7 agent-step --retries 1 <in.json 2>err &&
		test_contains err "does not begin as HTTP/1.x does" &&
		test_contains err "Transfer-Encoding is"
	else
		AGENT_API_KEY=$key test_must_fail agent-step --retries 1 <in.json 2>err &&
		test_contains err "HTTP/0.9"
	fi &&
	! grep -q mysecret err
'

# a server that answers 413 to the head of the request and closes, not
# reading its body
# shellcheck disable=SC2034 # used in the test bodies
early='
import socket, time
s = socket.socket()
s.bind(("127.0.0.1", 0))
s.listen(1)
open("port", "w").write(str(s.getsockname()[1]))
b = b"{\"error\":{\"message\":\"request too large\",\"type\":\"invalid_request_error\"}}"
c = s.accept()[0]
h = b""
while b"\r\n\r\n" not in h:
    h += c.recv(65536)
c.sendall(b"HTTP/1.1 413 Payload Too Large\r\nContent-Type: application/json\r\n"
          b"Content-Length: %d\r\n\r\n%s" % (len(b), b))
time.sleep(0.2)
c.close()
time.sleep(60)
'

test_expect_success 'an answer sent before the request was read whole (413), then a close, is read' '
	rm -f port &&
	{ python3 -c "$early" & } &&
	echo $! >>"$(servers_file)" &&
	wait_until 20 test -s port &&
	python3 -c "import json; print(json.dumps({\"role\": \"user\", \"content\": \"x\" * 8000000}))" >big.json &&
	AGENT_BASE_URL=http://127.0.0.1:$(cat port)/v1 \
		test_expect_code 6 agent-step --retries 0 <big.json 2>err &&
	test_contains err "413: request too large"
'

test_done
