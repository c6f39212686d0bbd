#!/bin/sh
# The budget of the project's instructions (AGENTS.md) counts the bytes
# as sent, escapes included, and is a quarter of the window at most: a
# hostile AGENTS.md is cut with a note, and never stops the session.
. "$(dirname "$0")/lib.sh"

AGENT_MODEL=test-model
export AGENT_MODEL

# sent FILE: the bytes of the project message (the transcript's second
# line) as sent: its content as a JSON string, without the two quotes
sent() { jq -c '.content' "$1" | sed -n 2p | tr -d '\n' | wc -c; }

test_expect_success 'an AGENTS.md of 32 KB of control characters: cut to the budget as sent, with a note; the model is called' '
	mkdir -p repo/.git &&
	head -c 32000 /dev/zero | tr "\\0" "\\001" >repo/AGENTS.md &&
	echo "{\"repeat\": true, \"content\": \"ok\"}" >script && start_model script &&
	agent-run -C repo "task" >answer 2>progress &&
	test "$(cat answer)" = ok &&
	test -s requests.jsonl &&
	test_grep "project instructions: AGENTS.md (cut)" progress &&
	jq -s -r ".[1].content" repo/.agent/transcript.jsonl >msg &&
	test_grep "\\[agent-run: cut here: .* of its 32000 bytes left out, past the budget of 24576 bytes for project files, as sent" msg &&
	jq -c ".content" repo/.agent/transcript.jsonl | sed -n 2p >line &&
	test "$(($(wc -c <line) - 3))" -le $((24576 + 700)) &&
	test "$(($(wc -c <line) - 3))" -ge 24576
'

test_expect_success 'project files take a quarter of the window at most: --context-window 4000 cuts at 3000 bytes, off does not' '
	mkdir -p repo/.git &&
	awk "BEGIN { for (i = 0; i < 1000; i++) print \"rule \" i }" >repo/AGENTS.md &&
	echo "{\"repeat\": true, \"content\": \"ok\"}" >script && start_model script &&
	agent-run --context-window 4000 -C repo "task" >answer 2>progress &&
	test "$(cat answer)" = ok &&
	jq -s -r ".[1].content" repo/.agent/transcript.jsonl >msg &&
	test_grep "past the budget of 3000 bytes for project files, as sent (--project-bytes, at most a quarter of the model.s window)" msg &&
	jq -c ".content" repo/.agent/transcript.jsonl | sed -n 2p >line &&
	test "$(($(wc -c <line) - 3))" -le $((3000 + 700)) &&
	rm -rf repo/.agent &&
	agent-run --context-window off -C repo "task" >answer 2>progress &&
	jq -s -r ".[1].content" repo/.agent/transcript.jsonl >msg &&
	test_grep "^rule 999\$" msg &&
	test_grep ! "agent-run: cut here" msg
'

test_expect_success 'agent-session --project: the headers and escapes count, the most specific file first served, the rest left out with a note' '
	printf "a\\tb\\n" >near &&
	awk "BEGIN { for (i = 0; i < 50; i++) print \"far \" i }" >far &&
	env -u AGENT_CONTEXT_WINDOW agent-session --project 40 dir/AGENTS.md near AGENTS.md far >out &&
	head -n 1 out >names &&
	echo "AGENTS.md (left out), dir/AGENTS.md" >want &&
	test_cmp want names &&
	test_grep "^## dir/AGENTS.md\$" out &&
	test_grep "left out (340 bytes): the budget of 40 bytes" out &&
	env -u AGENT_CONTEXT_WINDOW agent-session --project 28 dir/AGENTS.md near >out &&
	test_grep ! "cut here" out &&
	test "$(head -n 1 out)" = dir/AGENTS.md &&
	env -u AGENT_CONTEXT_WINDOW agent-session --project 25 dir/AGENTS.md near >out &&
	test_grep "cut here: 2 of its 4 bytes left out" out &&
	test_must_fail 2 agent-session --project 40 dir/AGENTS.md 2>err &&
	test_grep "a FILE for each REL" err &&
	ln -s far link &&
	test_must_fail agent-session --project 400 x link 2>err &&
	test_grep "cannot open .link." err
'

test_done
