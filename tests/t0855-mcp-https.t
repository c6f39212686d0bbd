#!/bin/sh
# mcp-bridge and Streamable HTTP servers over https:// (libcurl) and
# through a proxy: tests/mcp-http.py over TLS with a certificate made
# here by openssl, tests/http-proxy.py as the proxy, both on 127.0.0.1.
# The server's certificate is always checked: a CA file (--ca-file,
# AGENT_MCP_CA_FILE) is how a private one is trusted.
. "$(dirname "$0")/lib.sh"

if ! command -v openssl >/dev/null 2>&1; then
	echo "1..0 # skip openssl is not installed (it makes the certificate)"
	exit 0
fi
# no proxy of the machine's own in the way, unless a test sets one
unset http_proxy https_proxy HTTPS_PROXY all_proxy ALL_PROXY no_proxy NO_PROXY
# shellcheck disable=SC2034 # used in the test bodies
CERT=$SCRATCH/cert.pem
# shellcheck disable=SC2034 # used in the test bodies
KEY=$SCRATCH/key.pem

# start NAME SCRIPT ARG...: a server of ours in the background, stopped
# when the test ends; its port in NAME.port
start() {
	st_name_=$1
	st_script_=$2
	shift 2
	rm -f "$st_name_.port"
	python3 "$TEST_DIR/$st_script_" --port-file "$PWD/$st_name_.port" "$@" &
	echo $! >>"$(servers_file)"
	wait_until 20 test -s "$st_name_.port"
}

# config FILE URL: one server "h" at URL
config() {
	jq -nc --arg u "$2" '{mcpServers: {h: {type: "http", url: $u}}}' >"$1"
}

call() {
	jq -nc --arg id "$1" --arg a "$2" \
		'{id: $id, type: "function", function: {name: "mcp__h__echo", arguments: $a}}'
}

bridge() {
	mcp-bridge --no-user-config "$@"
}

test_expect_success 'a certificate for 127.0.0.1, made here' '
	openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 \
		-nodes -keyout "$KEY" -out "$CERT" -days 2 -subj /CN=127.0.0.1 \
		-addext subjectAltName=IP:127.0.0.1 2>openssl.err &&
	test -s "$CERT" && test -s "$KEY"
'

test_expect_success 'https:// with the CA file given: initialize, tools/list and a call over TLS' '
	start tls mcp-http.py --tls "$CERT" "$KEY" --log "$PWD/tls.log" &&
	config cfg "https://127.0.0.1:$(cat tls.port)/mcp" &&
	call 1 "{\"text\":\"hello\"}" >calls &&
	bridge --mcp-config cfg --ca-file "$CERT" <calls >out 2>err &&
	jq -r .content out >text &&
	echo "hello (over https)" >expect &&
	test_cmp expect text &&
	test_grep "^POST /mcp https\$" tls.log &&
	AGENT_MCP_CA_FILE=$CERT bridge --mcp-config cfg <calls >out2 &&
	test_cmp out out2
'

test_expect_success 'an event stream over https:// too' '
	start sse mcp-http.py --tls "$CERT" "$KEY" --sse &&
	config cfg "https://127.0.0.1:$(cat sse.port)/mcp" &&
	call 1 "{\"text\":\"streamed\"}" >calls &&
	bridge --mcp-config cfg --ca-file "$CERT" <calls >out &&
	test "$(jq -r .content out)" = "streamed (over https)"
'

test_expect_success 'the certificate is checked: without the CA file the server is not used' '
	start tls mcp-http.py --tls "$CERT" "$KEY" &&
	config cfg "https://127.0.0.1:$(cat tls.port)/mcp" &&
	call 1 "{\"text\":\"x\"}" >calls &&
	bridge --mcp-config cfg --max-restarts 0 <calls >out 2>err &&
	test_grep "server .h. could not start: .*certificate" err &&
	test_grep "Error: MCP server .h. is down" out &&
	bridge --mcp-config cfg --ca-file /nonexistent/ca.pem --max-restarts 0 <calls >out 2>err &&
	test_grep "server .h. could not start: " err &&
	test_grep "Error: MCP server .h. is down" out
'

test_expect_success 'https:// through the proxy of HTTPS_PROXY: a CONNECT tunnel; NO_PROXY bypasses it' '
	start tls mcp-http.py --tls "$CERT" "$KEY" &&
	start proxy http-proxy.py --log "$PWD/proxy.log" &&
	config cfg "https://127.0.0.1:$(cat tls.port)/mcp" &&
	call 1 "{\"text\":\"tunnelled\"}" >calls &&
	HTTPS_PROXY=http://127.0.0.1:$(cat proxy.port) \
		bridge --mcp-config cfg --ca-file "$CERT" <calls >out &&
	test "$(jq -r .content out)" = "tunnelled (over https)" &&
	test_grep "^CONNECT 127.0.0.1:$(cat tls.port) HTTP/1.1\$" proxy.log &&
	rm proxy.log &&
	HTTPS_PROXY=http://127.0.0.1:$(cat proxy.port) NO_PROXY=127.0.0.1 \
		bridge --mcp-config cfg --ca-file "$CERT" <calls >out &&
	test "$(jq -r .content out)" = "tunnelled (over https)" &&
	! test -e proxy.log
'

test_expect_success 'http:// through the proxy of http_proxy (libcurl then, not our own client)' '
	start plain mcp-http.py --log "$PWD/plain.log" &&
	start proxy http-proxy.py --log "$PWD/proxy.log" &&
	url=http://127.0.0.1:$(cat plain.port)/mcp &&
	config cfg "$url" &&
	call 1 "{\"text\":\"forwarded\"}" >calls &&
	http_proxy=http://127.0.0.1:$(cat proxy.port) \
		bridge --mcp-config cfg <calls >out &&
	test "$(jq -r .content out)" = "forwarded (over http)" &&
	test_grep "^POST $url HTTP/1.1\$" proxy.log &&
	test_grep "^POST $url http\$" plain.log &&
	rm proxy.log &&
	bridge --mcp-config cfg <calls >out &&
	test "$(jq -r .content out)" = "forwarded (over http)" &&
	! test -e proxy.log
'

test_expect_success 'every POST carries the session, the configured headers and, once agreed, the version; a ping in the middle of a streamed answer is answered on a connection of its own' '
	start ping mcp-http.py --sse --ping --headers "$PWD/headers.log" &&
	jq -nc --arg u "http://127.0.0.1:$(cat ping.port)/mcp" \
		"{mcpServers: {h: {type: \"http\", url: \$u, headers: {\"X-Token\": \"t0k\"}}}}" >cfg &&
	call 1 "{\"text\":\"pinged\"}" >calls &&
	bridge --mcp-config cfg <calls >out 2>err &&
	test "$(jq -r .content out)" = "pinged (over http)" &&
	sed -n "1,4p" headers.log >actual &&
	cat >expect <<-\EOF &&
	initialize - - t0k
	notifications/initialized s-1 2025-06-18 t0k
	tools/list s-1 2025-06-18 t0k
	tools/call s-1 2025-06-18 t0k
	EOF
	test_cmp expect actual &&
	sed -n "5,\$p" headers.log >actual &&
	test_line_count = 1 actual &&
	test_grep "^response s-1 [^ ]* t0k$" actual
'

test_expect_success 'the value of a configured header is a secret: never in a result' '
	start plain mcp-http.py &&
	jq -nc --arg u "http://127.0.0.1:$(cat plain.port)/mcp" \
		"{mcpServers: {h: {type: \"http\", url: \$u, headers: {\"X-Token\": \"t0k-secret-value\"}}}}" >cfg &&
	call 1 "{\"text\":\"say t0k-secret-value\"}" >calls &&
	bridge --mcp-config cfg <calls >out &&
	test "$(jq -r .content out)" = "say [REDACTED] (over http)" &&
	test_grep ! t0k-secret out
'

test_expect_success 'a proxy out of reach: the server could not start, said' '
	start plain mcp-http.py &&
	config cfg "http://127.0.0.1:$(cat plain.port)/mcp" &&
	call 1 "{\"text\":\"x\"}" >calls &&
	http_proxy=http://127.0.0.1:1 bridge --mcp-config cfg --max-restarts 0 \
		<calls >out 2>err &&
	test_grep "server .h. could not start: " err &&
	test_grep "Error: MCP server .h. is down" out
'

test_expect_success 'a URL of another scheme, or with a user name, is refused' '
	config bad "ftp://127.0.0.1/mcp" &&
	test_expect_code 1 bridge --mcp-config bad --schema 2>err &&
	test_grep "not an http:// or https:// URL without a user name" err &&
	config bad "https://me:pw@127.0.0.1/mcp" &&
	test_expect_code 1 bridge --mcp-config bad --schema 2>err &&
	test_grep "give credentials in .headers." err
'

test_done
