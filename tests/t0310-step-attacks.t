#!/bin/sh
# Attacks on agent-step and hook-audit (issue 15, items 9, 12 and 21): a
# repository that plants links and FIFOs under .agent, a server that
# echoes the key, a crash that would dump it, and servers that hold a
# step with keep-alives or a drip.
. "$(dirname "$0")/lib.sh"

AGENT_MODEL=test-model
export AGENT_MODEL

# --- item 9: nothing under .agent is opened through a link --------------

test_expect_success 'hook-audit: a shipped .agent/audit.jsonl -> ~/.bashrc is refused, nothing appended' '
	echo "# my bashrc" >"$HOME/.bashrc.t$$" &&
	test_when_finished "rm -f \"$HOME/.bashrc.t$$\"" &&
	cp "$HOME/.bashrc.t$$" expect &&
	mkdir -p repo/.agent &&
	ln -s "$HOME/.bashrc.t$$" repo/.agent/audit.jsonl &&
	user "touch ~/PWNED" >in &&
	test_must_fail 3 hook-audit -C repo <in >out 2>err &&
	test ! -s out &&
	test_cmp expect "$HOME/.bashrc.t$$" &&
	test_contains err "hook-audit: cannot open the audit log '\''repo/.agent/audit.jsonl'\'': it is a symbolic link" &&
	AGENT_WORKDIR=repo test_must_fail 3 hook-audit <in >out 2>err &&
	test_cmp expect "$HOME/.bashrc.t$$" &&
	test_must_fail 3 hook-audit --log repo/.agent/audit.jsonl <in >out 2>err &&
	test_cmp expect "$HOME/.bashrc.t$$" &&
	test_contains err "is a symbolic link" &&
	rm -r repo/.agent &&
	hook-audit -C repo --tee repo/.agent/transcript.jsonl <in >out &&
	test_cmp in out &&
	test_cmp in repo/.agent/transcript.jsonl &&
	test "$(stat -c %a repo/.agent/audit.jsonl)" = 600
'

test_expect_success 'a dangling link is not created through either: the target never appears' '
	mkdir -p repo/.agent &&
	ln -s "$PWD/planted" repo/.agent/audit.jsonl &&
	ln -s "$PWD/planted2" repo/.agent/transcript.jsonl &&
	user "x" >in &&
	test_must_fail 3 hook-audit -C repo <in >out 2>err &&
	test_must_fail 3 hook-audit --log log --tee repo/.agent/transcript.jsonl <in >out 2>err &&
	test_contains err "cannot open '\''repo/.agent/transcript.jsonl'\'': it is a symbolic link" &&
	test ! -e planted && test ! -e planted2 && test ! -s out
'

test_expect_success '.agent itself a link to a directory elsewhere: refused for the log, the transcript and --history' '
	mkdir elsewhere repo &&
	ln -s ../elsewhere repo/.agent &&
	user "x" >in &&
	test_must_fail 3 hook-audit -C repo <in >out 2>err &&
	test_contains err "'\''repo/.agent'\'' is a symbolic link, and nothing under .agent is opened through one" &&
	test_must_fail 3 hook-audit --log log --tee repo/.agent/transcript.jsonl <in >out 2>err &&
	test_contains err "'\''repo/.agent'\'' is a symbolic link" &&
	cp in elsewhere/transcript.jsonl &&
	test_must_fail 3 agent-step --dry-run --history repo/.agent/transcript.jsonl </dev/null >out 2>err &&
	test_contains err "agent-step: cannot open '\''repo/.agent/transcript.jsonl'\'': '\''repo/.agent'\'' is a symbolic link" &&
	test ! -s out &&
	test "$(ls elsewhere)" = transcript.jsonl &&
	test_cmp in elsewhere/transcript.jsonl
'

test_expect_success 'a link deeper under .agent, and .. there, are refused too' '
	mkdir -p repo/.agent elsewhere &&
	ln -s ../../elsewhere repo/.agent/logs &&
	user "x" >in &&
	test_must_fail 3 hook-audit --log repo/.agent/logs/audit.jsonl <in >out 2>err &&
	test_contains err "'\''repo/.agent/logs'\'' is a symbolic link" &&
	test_must_fail 3 hook-audit --log repo/.agent/../victim <in >out 2>err &&
	test_contains err "'\''..'\'' under .agent is refused" &&
	test ! -e repo/victim && test ! -e elsewhere/audit.jsonl
'

test_expect_success 'agent-step --history through a link to a secret: refused, nothing sent' '
	mkdir -p repo/.agent &&
	user "the secret: hunter2" >secret &&
	ln -s "$PWD/secret" repo/.agent/transcript.jsonl &&
	test_must_fail 3 agent-step --dry-run --history repo/.agent/transcript.jsonl </dev/null >out 2>err &&
	test ! -s out &&
	test_contains err "agent-step: cannot open '\''repo/.agent/transcript.jsonl'\'': it is a symbolic link" &&
	rm repo/.agent/transcript.jsonl &&
	user "x" >repo/.agent/transcript.jsonl &&
	agent-step --dry-run --history repo/.agent/transcript.jsonl </dev/null >req &&
	jq -e ".messages == [{role: \"user\", content: \"x\"}]" req
'

test_expect_success 'a FIFO or a device as the log, the transcript or the history: a clear error, no hang' '
	mkdir -p repo/.agent &&
	mkfifo repo/.agent/audit.jsonl repo/.agent/transcript.jsonl &&
	user "x" >in &&
	test_must_fail 3 timeout 20 hook-audit -C repo <in >out 2>err &&
	test_contains err "cannot open the audit log '\''repo/.agent/audit.jsonl'\'': it is a FIFO, not a regular file" &&
	test ! -s out &&
	test_must_fail 3 timeout 20 hook-audit --log log --tee repo/.agent/transcript.jsonl <in >out 2>err &&
	test_contains err "cannot open '\''repo/.agent/transcript.jsonl'\'': it is a FIFO, not a regular file" &&
	test ! -s out &&
	test_must_fail 3 timeout 20 agent-step --dry-run --history repo/.agent/transcript.jsonl </dev/null >out 2>err &&
	test_contains err "agent-step: cannot open '\''repo/.agent/transcript.jsonl'\'': it is a FIFO" &&
	test_must_fail 3 hook-audit --log /dev/null <in >out 2>err &&
	test_contains err "cannot open the audit log '\''/dev/null'\'': it is a character device, not a regular file" &&
	test ! -s out
'

test_expect_success 'elsewhere, --log and --tee refuse a link as the last component' '
	echo keep >target &&
	ln -s target t.jsonl &&
	ln -s target log &&
	user "x" >in &&
	test_must_fail 3 hook-audit --log log <in >out 2>err &&
	test_contains err "cannot open the audit log '\''log'\'': it is a symbolic link, not followed" &&
	test_must_fail 3 hook-audit --log real.log --tee t.jsonl <in >out 2>err &&
	test_contains err "cannot open '\''t.jsonl'\'': it is a symbolic link, not followed" &&
	test "$(cat target)" = keep && test ! -s out
'

# --- item 12: the key never reaches stderr, the transcript, or a core ------

# A key no pattern of redact() knows: only the exact value can catch it.
# shellcheck disable=SC2034 # used in the test bodies
KEY=Zq9-secret-key-for-tests-4242

# calls N: an answer with N tool calls, as a script entry
calls() {
	jq -nc --argjson n "$1" '{raw: ({id: "x", object: "chat.completion",
		choices: [{index: 0, finish_reason: "tool_calls",
		message: {role: "assistant", content: null, tool_calls: [range($n) |
		{id: "c\(.)", type: "function", function: {name: "list_dir",
		 arguments: "{}"}}]}}]} | tojson), ctype: "application/json"}'
}

test_expect_success 'at most 10000 tool calls in one answer (agent-step(1)): the 10001st refuses it' '
	calls 10000 >script &&
	calls 10001 >>script &&
	start_model script &&
	echo "{\"role\":\"user\",\"content\":\"hi\"}" >t.jsonl &&
	agent-step <t.jsonl >out &&
	jq -e ".tool_calls | length == 10000" out &&
	test_expect_code 8 agent-step --retries 0 <t.jsonl >out 2>err &&
	test_contains err "the answer has more than 10000 tool calls" &&
	! test -s out
'

test_expect_success 'a key the server echoes in the request id and the error: never on stderr' '
	cat >script <<-EOF &&
	{"status": 401, "headers": {"x-request-id": "req-$KEY"}, "error": {"message": "Incorrect API key provided: $KEY", "code": "invalid_api_key"}}
	{"status": 503, "headers": {"x-request-id": "req-$KEY-5xx"}, "error": {"message": "overloaded"}}
	EOF
	start_model script &&
	user hi >in &&
	AGENT_API_KEY=$KEY test_must_fail 6 agent-step <in >out 2>err &&
	test_grep ! -F "$KEY" err &&
	test_contains err "agent-step: 401: Incorrect API key provided: [REDACTED] (invalid_api_key) (request req-[REDACTED])" &&
	AGENT_API_KEY=$KEY test_must_fail 7 agent-step --retries 0 <in >out 2>err &&
	test_grep ! -F "$KEY" err &&
	test_contains err "(request req-[REDACTED]-5xx)" &&
	test ! -s out
'

test_expect_success 'an echoed key reaches neither the answer line nor -v, streamed (split) or not' '
	cat >script <<-EOF &&
	{"content": "ok", "headers": {"x-request-id": "req-$KEY"}}
	{"content": "your key is $KEY, right?", "chunk": 4, "headers": {"request-id": "$KEY"}}
	{"content": "cut", "finish_reason": "length", "headers": {"x-request-id": "$KEY"}}
	EOF
	start_model script &&
	user hi >in &&
	AGENT_API_KEY=$KEY agent-step -v <in >out 2>err &&
	test_grep ! -F "$KEY" out && test_grep ! -F "$KEY" err &&
	jq -e ".request_id == \"req-[REDACTED]\"" out &&
	test_contains err "request req-[REDACTED]: " &&
	AGENT_API_KEY=$KEY agent-step -v --stream <in >out 2>err &&
	test_grep ! -F "$KEY" out && test_grep ! -F "$KEY" err &&
	jq -e ".content == \"your key is [REDACTED], right?\" and .request_id == \"[REDACTED]\"" out &&
	test_contains err "your key is [REDACTED], right?" &&
	AGENT_API_KEY=$KEY test_must_fail 8 agent-step <in >out 2>err &&
	test_grep ! -F "$KEY" err &&
	test_contains err "request [REDACTED]"
'

test_expect_success 'a key of 8 or 9 bytes echoed: starred out, no endless loop' '
	cat >script <<-\EOF &&
	{"status": 401, "error": {"message": "bad key k8-short"}}
	EOF
	start_model script &&
	user "the key k8-short again" >in &&
	AGENT_API_KEY=k8-short test_must_fail 6 timeout -s KILL 20 agent-step <in >out 2>err &&
	test_contains err "agent-step: 401: bad key ********" &&
	AGENT_API_KEY=k8-short timeout -s KILL 20 hook-audit --log log <in >out &&
	test_grep ! -F k8-short log &&
	test "$(jq -r .message.content log)" = "the key ******** again"
'

# $as_nobody CMD...: CMD as an unprivileged user when we are root (root
# may read any process), else as ourselves; setpriv execs, so $! of a
# "$as_nobody CMD &" is the pid of CMD.
as_nobody=
# shellcheck disable=SC2034 # used in the test bodies
[ "$(id -u)" = 0 ] && as_nobody="setpriv --reuid=65534 --regid=65534 --clear-groups --"

if [ "$(id -u)" = 0 ] && ! command -v setpriv >/dev/null; then
	test_skip 'agent-step is not dumpable: core limit 0, memory and environment closed to the user' \
		'running as root without setpriv(1): cannot test as a user'
else
test_expect_success 'agent-step is not dumpable: core limit 0, memory and environment closed to the user' '
	echo "{\"hang\": true}" >script &&
	start_model script &&
	user hi >in &&
	# a runtime directory of its own for the state of the rate limit
	# (agent-step(1)), which the user must own, and a home of its own
	# (the configuration file is read from it; root'"'"'s is closed to it)
	rt=$(mktemp -d "$AH_TMPDIR/ah-rt.XXXXXX") &&
	test_when_finished "rm -rf \"$rt\"" &&
	{ [ -z "$as_nobody" ] || chown 65534:65534 "$rt"; } &&
	{ HOME=$rt XDG_CONFIG_HOME= XDG_RUNTIME_DIR=$rt AGENT_API_KEY=$KEY $as_nobody agent-step --retries 0 <in >out 2>err & pid=$!; } &&
	test_when_finished "kill $pid 2>/dev/null || :" &&
	wait_until 10 test -s requests.jsonl &&
	grep "^Max core file size" /proc/$pid/limits >limits &&
	test_grep "size  *0  *0  *bytes" limits &&
	test_must_fail $as_nobody cat /proc/$pid/environ >environ 2>/dev/null &&
	test_grep ! -F "$KEY" environ &&
	test_must_fail $as_nobody od -c /proc/$pid/mem >/dev/null 2>&1
'
fi

# Cores are observable here only when the kernel writes them as a file in
# the working directory (core_pattern without a pipe or a directory).
pattern=$(cat /proc/sys/kernel/core_pattern 2>/dev/null)
case $pattern in
''|'|'*|*/*)
	test_skip 'a crash (SIGSEGV, SIGABRT) of agent-step leaves no core file' \
		"core_pattern is '$pattern': cores cannot be observed here" ;;
*)
	# shellcheck disable=SC3045 # dash and bash have ulimit -c
	if ! (ulimit -c unlimited) 2>/dev/null; then
		test_skip 'a crash (SIGSEGV, SIGABRT) of agent-step leaves no core file' \
			'ulimit -c unlimited is not allowed here'
	else
test_expect_success 'a crash (SIGSEGV, SIGABRT) of agent-step leaves no core file' '
	printf "%s\n" "{\"hang\": true}" "{\"hang\": true}" >script &&
	start_model script &&
	user hi >in &&
	mkdir crash &&
	for sig in SEGV ABRT; do
		(ulimit -c unlimited &&
		 cd crash &&
		 { AGENT_API_KEY=$KEY agent-step --retries 0 <../in >out 2>err & pid=$!; } &&
		 wait_until 10 test -s ../requests.jsonl &&
		 kill -$sig $pid && { wait $pid; test $? -ne 0; }) || return 1
		rm -f requests.jsonl
	done &&
	ls -a crash >files &&
	test_grep ! "core" files
'
	fi ;;
esac

# --- item 21: a server cannot hold a step for ever ------------------------

test_expect_success 'a stream of only keep-alive comments ends the attempt after --timeout, not retried' '
	echo "{\"keepalive\": 0.2}" >script &&
	start_model script &&
	user hi >in &&
	test_must_fail 7 timeout -s KILL 60 agent-step --stream --timeout 2 <in >out 2>err &&
	test ! -s out &&
	test_contains err "agent-step: the stream sent no data for 2 s (--timeout; comments and keep-alives do not count)" &&
	test_line_count = 1 requests.jsonl
'

test_expect_success 'a valid stream dripped a byte at a time, slower than --timeout between events: ended' '
	echo "{\"content\": \"a dripped answer\", \"drip_bytes\": 0.05}" >script &&
	start_model script &&
	user hi >in &&
	test_must_fail 7 timeout -s KILL 100 agent-step --stream --timeout 2 <in >out 2>err &&
	test ! -s out &&
	test_contains err "the stream sent no data for 2 s"
'

test_expect_success 'a valid stream dripped a byte at a time, each event in time: the deadline ends it' '
	printf "%s\n" "{\"content\": \"a dripped answer\", \"drip_bytes\": 0.05}" \
		"{\"content\": \"one two three four five six seven eight\", \"chunk\": 1, \"drip\": 0.3}" \
		"{\"content\": \"a whole answer, dripped\", \"drip_bytes\": 0.1}" >script &&
	start_model script &&
	user hi >in &&
	AGENT_DEADLINE=4 test_must_fail 7 timeout -s KILL 100 agent-step --stream --timeout 30 <in >out 2>err &&
	test ! -s out &&
	test_contains err "agent-step: no answer within the deadline of 4 s (--deadline)" &&
	test_must_fail 7 timeout -s KILL 100 agent-step --stream --deadline 3 --timeout 30 <in >out 2>err &&
	test ! -s out &&
	test_contains err "agent-step: no answer within the deadline of 3 s (--deadline)" &&
	AGENT_DEADLINE=3 test_must_fail 7 timeout -s KILL 100 agent-step --timeout 30 <in >out 2>err &&
	test ! -s out &&
	test_contains err "agent-step: no answer within the deadline of 3 s (--deadline)"
'

test_expect_success 'the deadline bounds retries and their waits; --deadline 0 is none' '
	printf "%s\n" "{\"status\": 503, \"headers\": {\"retry-after\": \"5\"}}" \
		"{\"status\": 503, \"headers\": {\"retry-after\": \"2\"}}" "{\"content\": \"late\"}" >script &&
	start_model script &&
	user hi >in &&
	AGENT_DEADLINE=3 test_must_fail 7 timeout -s KILL 100 agent-step --retries 3 <in >out 2>err &&
	test ! -s out &&
	test_contains err "503: scripted error; not retried: the deadline of 3 s (--deadline) would pass in the wait of 5.0 s" &&
	test_line_count = 1 requests.jsonl &&
	user again >in &&
	AGENT_DEADLINE=1 agent-step --deadline 0 --retries 3 <in >out 2>err &&
	jq -e ".content == \"late\"" out &&
	test_line_count = 3 requests.jsonl
'

test_done
