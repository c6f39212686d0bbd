#!/bin/sh
# agent-run's work done by agent-session: the end of the run (--answer:
# the answer, -o, plan mode's plan, the calls denied for want of a
# terminal, the todo items left; one read of the transcript), and the walk
# for the project's instructions (--project --walk).
. "$(dirname "$0")/lib.sh"

# denial REASON: an assistant message whose call hook-perm denied
denial() {
	printf '{"role":"assistant","content":null,"tool_calls":[{"id":"c","type":"function","function":{"name":"bash","arguments":"{}"},"permission":{"decision":"deny","reason":"%s"}}]}\n' "$1"
}
# (the tests use it in their bodies)
export NOTTY='hook-perm: asking needs a terminal, and there is none'

test_expect_success 'agent-session --answer: the answer on stdout, into --output, and into --plan through a draft renamed into place' '
	mkdir drafts &&
	{ user "the task" && printf "%s\n" "{\"role\":\"assistant\",\"content\":\"The answer.\\nTwo lines.\"}"; } >t.jsonl &&
	agent-session --transcript t.jsonl --answer --print --output out \
		--plan plan.md --drafts drafts >stdout 2>err &&
	printf "The answer.\nTwo lines.\n" >expect &&
	test_cmp expect stdout && test_cmp expect out && test_cmp expect plan.md &&
	test -z "$(ls -A drafts)" && test ! -s err &&
	agent-session --transcript t.jsonl --answer >stdout 2>err &&
	test ! -s stdout && test ! -s err
'

test_expect_success 'agent-session --answer: --streamed prints all the same when stdout is not the terminal' '
	{ user "the task" && echo "{\"role\":\"assistant\",\"content\":\"Done.\"}"; } >t.jsonl &&
	agent-session --transcript t.jsonl --answer --print --streamed >stdout &&
	test "$(cat stdout)" = Done.
'

test_expect_success 'agent-session --answer: the calls denied for want of a terminal after --from, in the assistant'\''s messages only' '
	{ user "the task" && denial "$NOTTY" && user "$NOTTY" &&
	  printf "{\"role\":\"user\",\"content\":\"u\",\"permission\":{\"decision\":\"deny\",\"reason\":\"%s\"}}\n" "$NOTTY" &&
	  denial "$NOTTY" && denial "policy: no" && denial "x\\\" $NOTTY" &&
	  echo "{\"role\":\"assistant\",\"content\":\"Done.\"}"; } >t.jsonl &&
	agent-session --transcript t.jsonl --answer --from 0 >stdout 2>err &&
	test_contains err "agent-run: 2 tool calls were denied (no terminal to ask): rerun with -y, or allow them with a rule" &&
	agent-session --transcript t.jsonl --answer --from 2 >stdout 2>err &&
	test_contains err "agent-run: 1 tool call was denied (no terminal to ask)" &&
	agent-session --transcript t.jsonl --answer --from 5 >stdout 2>err &&
	test ! -s err
'

test_expect_success 'agent-session --answer: the todo items of --todo left, said last' '
	{ user "the task" && echo "{\"role\":\"assistant\",\"content\":\"Done.\"}"; } >t.jsonl &&
	printf "%s\n" "{\"todos\":[{\"id\":\"1\",\"content\":\"first\",\"status\":\"in_progress\"},{\"id\":\"2\",\"content\":\"done\",\"status\":\"completed\"},{\"id\":\"3\",\"content\":\"[a] third\\n[b]line\",\"status\":\"pending\"}]}" >list.json &&
	agent-session --transcript t.jsonl --answer --todo list.json >stdout 2>err &&
	echo "agent-run: 2 todo items left: 1 - first; 3 - [a] third" >expect &&
	test_cmp expect err &&
	echo "{\"todos\":[{\"id\":\"1\",\"content\":\"one\",\"status\":\"pending\"}]}" >list.json &&
	agent-session --transcript t.jsonl --answer --todo list.json 2>err &&
	test "$(cat err)" = "agent-run: 1 todo item left: 1 - one" &&
	echo "{\"todos\":[{\"id\":\"1\",\"content\":\"one\",\"status\":\"completed\"}]}" >list.json &&
	agent-session --transcript t.jsonl --answer --todo list.json 2>err &&
	test ! -s err
'

test_expect_success 'agent-session --answer: exit 4 when --output cannot be written, 1 without an answer, the plan not left half made' '
	mkdir drafts &&
	{ user "the task" && echo "{\"role\":\"assistant\",\"content\":\"Done.\"}"; } >t.jsonl &&
	test_expect_code 4 agent-session --transcript t.jsonl --answer --print \
		--output nodir/out >stdout 2>err &&
	test "$(cat stdout)" = Done. &&
	test_contains err "agent-run: the answer could not be written to '\''nodir/out'\''" &&
	mkdir plan.md &&
	test_expect_code 1 agent-session --transcript t.jsonl --answer \
		--plan plan.md --drafts drafts 2>err &&
	test_contains err "agent-run: the plan could not be written to '\''plan.md'\''" &&
	test -z "$(ls -A drafts)" &&
	denial x >t.jsonl &&
	test_expect_code 1 agent-session --transcript t.jsonl --answer --print >stdout 2>err &&
	test_contains err "the last message is not an answer" && test ! -s stdout
'

test_expect_success 'agent-session: --print goes with --answer, --plan with --drafts' '
	test_expect_code 2 agent-session --print --stop x 2>err &&
	test_contains err "go with --answer" &&
	test_expect_code 2 agent-session --answer --plan p 2>err &&
	test_contains err "--drafts"
'

test_expect_success 'agent-session --project --walk: from the nearest .git down to DIR, AGENTS.md else CLAUDE.md; a FIFO or a link left out (and its CLAUDE.md with it), said' '
	mkdir -p far/.git far/r/.git far/r/a/b/c &&
	echo far >far/AGENTS.md && echo top >far/r/CLAUDE.md &&
	echo mid-agents >far/r/a/AGENTS.md && echo mid-claude >far/r/a/CLAUDE.md &&
	mkfifo far/r/a/b/AGENTS.md && echo not-this >far/r/a/b/CLAUDE.md &&
	ln -s ../../AGENTS.md far/r/a/b/c/AGENTS.md &&
	env -u AGENT_CONTEXT_WINDOW agent-session --project 1000 --walk "$PWD/far/r/a/b/c" >out 2>err &&
	cat >expect <<-EOF &&
	agent-run: '\''$PWD/far/r/a/b/c/AGENTS.md'\'' is not a regular file: left out
	agent-run: '\''$PWD/far/r/a/b/AGENTS.md'\'' is not a regular file: left out
	agent-run: project instructions: CLAUDE.md, a/AGENTS.md
	EOF
	test_cmp expect err &&
	test_grep "^## a/AGENTS.md" out && test_grep "^mid-agents" out &&
	test_grep "^## CLAUDE.md" out && test_grep "^top" out &&
	test_grep ! "far\|not-this\|mid-claude" out &&
	env -u AGENT_CONTEXT_WINDOW agent-session --project 1000 --walk "$PWD/far/r/a/b/c" --quiet >out2 2>err &&
	test ! -s err && test_cmp out out2
'

test_expect_success 'agent-session --project --walk: without a .git above, DIR alone; none found, nothing said; DIR must be absolute' '
	mkdir -p w/sub && echo up >w/AGENTS.md && echo here >w/sub/AGENTS.md &&
	agent-session --project 1000 --walk "$PWD/w/sub" >out 2>err &&
	test "$(cat err)" = "agent-run: project instructions: AGENTS.md" &&
	test_grep "^here" out && test_grep ! "^up" out &&
	mkdir empty && agent-session --project 1000 --walk "$PWD/empty" >out 2>err &&
	test ! -s out && test ! -s err &&
	test_expect_code 2 agent-session --project 1000 --walk w/sub 2>err &&
	test_contains err "not an absolute path"
'

test_done
