#!/bin/sh
# What agent-session says for agent-run reaches the terminal as every
# diagnostic does (utf8_for_terminal): the words of the model in it (the
# todo items it left, a task call's id: t0546) cannot colour, retitle or
# write the clipboard (OSC 52); a control character is shown as \xNN.
. "$(dirname "$0")/lib.sh"

test_expect_success 'agent-session --answer: the todo items left, in the model'\''s words, are said escaped' '
	esc=$(printf "\033") && bel=$(printf "\007") &&
	args=$(jq -nc --arg c "x${esc}]52;c;ZXZpbA==${bel}y" \
		"{todos: [{id: \"1\", content: \$c, status: \"pending\"}]}") &&
	printf "%s" "$args" | todo-write -f list.json >shown &&
	# the list is one that a run_todo_write call of the transcript stored
	# (only such a list is said: agent-session(1), --answer)
	{ user t && call_msg run_todo_write "$args" &&
		jq -nc --rawfile c shown \
			"{role: \"tool\", tool_call_id: \"call_1\", content: (\$c | rtrimstr(\"\n\"))}" &&
		jq -nc "{role: \"assistant\", content: \"Done.\"}"; } >t.jsonl &&
	agent-session --transcript t.jsonl --answer --todo list.json >stdout 2>err &&
	test_grep "^agent-run: 1 todo item left: 1 - x\\\\x1b\\]52;c;ZXZpbA==\\\\x07y$" err &&
	! grep -q "$esc" err && ! grep -q "$bel" err
'

test_done
