#!/bin/sh
# hook-audit: byte-identical pass-through, one whole record per message.
. "$(dirname "$0")/lib.sh"

test_expect_success 'passes its input through byte for byte' '
	printf "%s\n" "{\"role\":\"user\",\"content\":\"caf\\u00e9\"}" "" \
		"{ \"role\" : \"tool\" , \"tool_call_id\":\"a\",\"content\":\"1.50\"}" >in &&
	printf "{\"role\":\"user\",\"content\":\"no newline at end\"}" >>in &&
	hook-audit --log log <in >out &&
	cmp in out &&
	test "$(wc -l <log)" -eq 3
'

test_expect_success 'records: time, session, seq, role, tools, decisions, size' '
	call_msg bash "{\"command\":\"ls\"}" allow c7 >in &&
	echo "{\"role\":\"tool\",\"tool_call_id\":\"c7\",\"content\":\"a\"}" >>in &&
	hook-audit --log log --session s-1 <in >out &&
	jq -e -s ".[0] | .seq == 1 and .session == \"s-1\" and .role == \"assistant\" and
		(.time | test(\"^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\\\\.[0-9]{3}Z$\")) and
		.tools == [{id: \"c7\", name: \"bash\", decision: \"allow\", reason: \"test says allow\", rule: \"test\"}] and
		.bytes == $(head -n 1 in | wc -c) and .message.tool_calls[0].id == \"c7\"" log &&
	jq -e -s ".[1] | .seq == 2 and .role == \"tool\" and .tool_call_id == \"c7\"" log
'

test_expect_success 'default log .agent/audit.jsonl, -C, AGENT_AUDIT_LOG, AGENT_SESSION' '
	echo "{\"role\":\"user\",\"content\":\"x\"}" >in &&
	hook-audit <in >/dev/null && test -f .agent/audit.jsonl &&
	mkdir w && hook-audit -C w <in >/dev/null && test -f w/.agent/audit.jsonl &&
	AGENT_AUDIT_LOG=env.jsonl AGENT_SESSION=from-env hook-audit <in >/dev/null &&
	jq -e ".session == \"from-env\"" env.jsonl &&
	test "$(stat -c %a env.jsonl)" = 600
'

test_expect_success 'secrets are redacted in the record, never in the stream' '
	key=sk-proj-Abcdefghijklmnopqrstuvwxyz012345 &&
	jq -nc --arg k "$key" "{role: \"user\", content: \"use \(\$k) and ghp_0123456789abcdefghijklmnopqrstuvwxyz, Authorization: Bearer abc.def.ghijklmnop, AKIAIOSFODNN7EXAMPLE\"}" >in &&
	jq -nc "{role: \"tool\", tool_call_id: \"x\", content: \"custom-secret-value-42\"}" >>in &&
	AGENT_API_KEY=custom-secret-value-42 hook-audit --log log <in >out &&
	cmp in out &&
	! grep -F -e "$key" -e ghp_0123 -e abc.def -e AKIAIOSFODNN7 -e custom-secret log &&
	jq -r "select(.seq == 1) | .message.content" log >actual &&
	echo "use [REDACTED] and [REDACTED], Authorization: Bearer [REDACTED], [REDACTED]" >expect &&
	test_cmp expect actual &&
	test "$(jq -r "select(.seq == 2) | .message.content" log)" = "[REDACTED]"
'

test_expect_success 'every key we may hold is starred out: AGENT_, OPENAI_ and ANTHROPIC_API_KEY' '
	printf "%s\n" "{\"role\":\"tool\",\"tool_call_id\":\"x\",\"content\":\"a=one-secret-1111 b=two-secret-2222 c=three-secret-333\"}" >in &&
	AGENT_API_KEY=one-secret-1111 OPENAI_API_KEY=two-secret-2222 \
		ANTHROPIC_API_KEY=three-secret-333 hook-audit --log log --events 3 <in >out 3>events &&
	cmp in out &&
	test_must_fail grep -e one-secret -e two-secret -e three-secret log events &&
	ANTHROPIC_API_KEY= hook-audit --log log2 <in >/dev/null &&
	grep -q three-secret log2
'

test_expect_success 'usage and request id of an answer are recorded' '
	echo "{\"role\":\"assistant\",\"content\":\"hi\",\"usage\":{\"total_tokens\":15},\"request_id\":\"req_9\"}" >in &&
	hook-audit --log log <in >/dev/null &&
	jq -e ".usage.total_tokens == 15 and .request_id == \"req_9\"" log
'

test_expect_success 'a log that cannot be written fails the hook; nothing passes on' '
	echo "{\"role\":\"user\",\"content\":\"x\"}" >in &&
	test_must_fail 3 hook-audit --log no/such/dir/log <in >out 2>err &&
	test ! -s out &&
	test_contains err "hook-audit: cannot open the audit log '\''no/such/dir/log'\''" &&
	jq -nc "{role: \"user\", content: (\"x\" * 8000)}" >big &&
	(trap "" XFSZ && ulimit -f 2 && test_must_fail 3 hook-audit --log full <big >out 2>err) &&
	test ! -s out &&
	test_contains err "hook-audit: audit log '\''full'\'': cannot write: File too large"
'

test_expect_success 'a line that is not a JSON object stops it, named' '
	printf "%s\n" "{\"role\":\"user\",\"content\":\"x\"}" "[1]" >in &&
	test_must_fail 5 hook-audit --log log <in >out 2>err &&
	test_contains err "hook-audit: stdin: line 2: not a JSON object" &&
	test "$(wc -l <out)" -eq 1
'

test_expect_success '--sync, and a write error on stdout' '
	echo "{\"role\":\"user\",\"content\":\"x\"}" >in &&
	hook-audit --sync --log log <in >out && cmp in out &&
	test_must_fail 3 hook-audit --log log <in >/dev/full 2>err
'

test_expect_success '--tee: the transcript gets each line before it goes on' '
	printf "%s\n" "{\"role\":\"user\",\"content\":\"a\"}" "" "{\"role\":\"user\",\"content\":\"b\"}" >in &&
	hook-audit --log log --tee t.jsonl <in >out &&
	cmp in out &&
	grep -v "^\$" in >expect && test_cmp expect t.jsonl
'

test_expect_success '--tee: a reader gone downstream loses nothing of the transcript' '
	jq -nc "range(2000) | {role: \"tool\", tool_call_id: \"c\(.)\", content: (\"x\" * 200)}" >in &&
	mkfifo fifo &&
	{ head -n 1 fifo >first & pid=$!; } &&
	test_expect_code 3 hook-audit --log log --tee t.jsonl <in >fifo 2>err &&
	wait_all $pid &&
	test_contains err "hook-audit: cannot write stdout: Broken pipe" &&
	test "$(grep -c "cannot write stdout" err)" -eq 1 &&
	cmp in t.jsonl && test "$(wc -l <log)" -eq 2000
'

# Eight writers appending large records at once: none may tear or mix.
test_expect_success '8 concurrent hook-audit processes: every record whole, the count exact' '
	jq -nc "range(300) | {role: \"tool\", tool_call_id: \"c\(.)\", content: (\"x\" * (1000 + . * 97))}" >in &&
	pids= &&
	for w in 1 2 3 4 5 6 7 8; do
		hook-audit --log log --session "w$w" <in >"out$w" &
		pids="$pids $!"
	done &&
	for p in $pids; do wait "$p" || exit 1; done &&
	test "$(wc -l <log)" -eq 2400 &&
	jq -c "[.session, .seq]" log >pairs &&
	test "$(sort -u pairs | wc -l)" -eq 2400 &&
	for w in 1 2 3 4 5 6 7 8; do cmp in "out$w" || exit 1; done
'

test_expect_success '--message ROLE: text becomes one message, recorded and teed' '
	printf "line 1\n\"quoted\" \\\\ tab\there\n" >text &&
	hook-audit --message user --log log --tee t.jsonl <text >out &&
	cmp out t.jsonl && test "$(wc -l <out)" -eq 1 &&
	jq -j .content out >actual && cmp text actual &&
	jq -e -s "length == 1 and .[0].role == \"user\" and .[0].message.role == \"user\"" log &&
	jq -cn --rawfile c text "{role: \"user\", content: \$c}" >expect &&
	jq -c . out >actual && test_cmp expect actual
'

test_expect_success '--message: empty text, bad UTF-8 and NUL become U+FFFD, secrets redacted in the log only' '
	hook-audit --message system --log log </dev/null >out &&
	test "$(cat out)" = "{\"role\":\"system\",\"content\":\"\"}" &&
	printf "a\377b\000c sk-proj-Abcdefghijklmnopqrstuvwxyz012345" |
		hook-audit --message assistant --log log2 >out &&
	test "$(jq -r .content out)" = "a$(printf "\357\277\275")b$(printf "\357\277\275")c sk-proj-Abcdefghijklmnopqrstuvwxyz012345" &&
	test "$(jq -r .message.content log2)" = "a$(printf "\357\277\275")b$(printf "\357\277\275")c [REDACTED]"
'

test_expect_success '--message: a role without text alone is bad usage; a full log fails' '
	test_must_fail 2 hook-audit --message tool --log log </dev/null 2>err &&
	test_contains err "hook-audit: --message: unknown role '\''tool'\'' (use system, developer, user or assistant)" &&
	test ! -e log &&
	echo x | test_must_fail 3 hook-audit --message user --log /dev/full >out 2>err &&
	test ! -s out
'

test_done
