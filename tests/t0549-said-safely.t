#!/bin/sh
# What agent-session says for agent-run reaches the terminal as every
# diagnostic does (utf8_for_terminal): the words of the model in it (the
# todo items it left, a task call's id: t0546) cannot colour, retitle or
# write the clipboard (OSC 52); a control character is shown as \xNN.
. "$(dirname "$0")/lib.sh"

test_expect_success 'agent-session --answer: the todo items left, in the model'\''s words, are said escaped' '
	esc=$(printf "\033") && bel=$(printf "\007") &&
	printf "%s\n" "{\"role\":\"user\",\"content\":\"t\"}" \
		"{\"role\":\"assistant\",\"content\":\"Done.\"}" >t.jsonl &&
	jq -nc --arg c "x${esc}]52;c;ZXZpbA==${bel}y" \
		"{todos: [{id: \"1\", content: \$c, status: \"pending\"}]}" >list.json &&
	agent-session --transcript t.jsonl --answer --todo list.json >stdout 2>err &&
	test_grep "^agent-run: 1 todo item left: 1 - x\\\\x1b\\]52;c;ZXZpbA==\\\\x07y$" err &&
	! grep -q "$esc" err && ! grep -q "$bel" err
'

test_done
