#!/bin/sh
# hook-cc's moments of an agent-run session (--start, --prompt, --stop,
# --compact, --end, --add FILE): each event's input, the message for the
# model made as hook-audit --message makes one, what agent-run says of a
# block or a failure; and agent-run running them.
. "$(dirname "$0")/lib.sh"
unset XDG_CONFIG_HOME AGENT_YES AGENT_HOOKS AGENT_HOOKS_FILE

AGENT_MODEL=scripted
export AGENT_MODEL

# hook NAME BODY: an executable script ./NAME running BODY under sh
hook() {
	printf '#!/bin/sh\n%s\n' "$2" >"$1" && chmod +x "$1"
}
# every EVENT... : settings running ./h for each EVENT (matcher: all), on
# stdout
every() {
	jq -nc --arg c "$PWD/h" '$ARGS.positional | map({(.): [{hooks:
		[{type: "command", command: $c}]}]}) | add | {hooks: .}' --args "$@"
}
# the inputs ./h saw, without the fields every input has but the event
inputs() {
	jq -c "del(.session_id, .transcript_path, .cwd, .permission_mode)" seen
}

test_expect_success 'each moment: its event, its input, and what the matchers are tried on' '
	hook h "cat >>\"$PWD/seen\"; echo >>\"$PWD/seen\"" &&
	every SessionStart UserPromptSubmit Stop SubagentStop PreCompact SessionEnd >h.json &&
	export AGENT_HOOKS_FILE=$PWD/h.json &&
	hook-cc --start startup --add add &&
	hook-cc --start resume &&
	printf "do \"it\"\nnow" | hook-cc --prompt --add add &&
	hook-cc --stop --add add &&
	hook-cc --stop --active --add add &&
	hook-cc --stop --subagent --active --add add &&
	hook-cc --compact --add add &&
	hook-cc --end 0 && hook-cc --end 130 &&
	inputs >got &&
	cat >expect <<-\EOF &&
	{"hook_event_name":"SessionStart","source":"startup"}
	{"hook_event_name":"SessionStart","source":"resume"}
	{"hook_event_name":"UserPromptSubmit","prompt":"do \"it\"\nnow"}
	{"hook_event_name":"Stop","stop_hook_active":false}
	{"hook_event_name":"Stop","stop_hook_active":true}
	{"hook_event_name":"SubagentStop","stop_hook_active":true}
	{"hook_event_name":"PreCompact","trigger":"auto","custom_instructions":""}
	{"hook_event_name":"SessionEnd","reason":"exit"}
	{"hook_event_name":"SessionEnd","reason":"other"}
	EOF
	test_cmp expect got &&
	test ! -s add &&
	rm seen &&
	jq -n --arg c "$PWD/h" "{hooks: {SessionStart: [{matcher: \"resume\", hooks: [{type: \"command\", command: \$c}]}],
		PreCompact: [{matcher: \"auto\", hooks: [{type: \"command\", command: \$c}]}]}}" >h.json &&
	hook-cc --start startup &&
	test ! -e seen &&
	hook-cc --start resume && hook-cc --compact &&
	inputs >got &&
	cat >expect <<-\EOF &&
	{"hook_event_name":"SessionStart","source":"resume"}
	{"hook_event_name":"PreCompact","trigger":"auto","custom_instructions":""}
	EOF
	test_cmp expect got
'

test_expect_success 'the message for the model: the bytes hook-audit --message makes of the driver'\''s text' '
	hook h "cat >/dev/null; printf \"caf\\303\\251 \\377 \\033[31mred\\n\\n\\n\"" &&
	every SessionStart UserPromptSubmit >h.json &&
	AGENT_HOOKS_FILE=$PWD/h.json hook-cc --start startup --add add >out &&
	test ! -s out &&
	test_line_count = 1 add &&
	printf "Context from a SessionStart hook of the user'\''s settings:\ncaf\303\251 \377 \033[31mred" |
		hook-audit --message user >expect &&
	test_cmp expect add &&
	hook h "cat >\"$PWD/seen\"" &&
	printf "task \377 \000x" | AGENT_HOOKS_FILE=$PWD/h.json hook-cc --prompt --add add &&
	test ! -s add &&
	printf "task \377 \000x" | hook-audit --message user | jq .content >expect &&
	jq .prompt seen >got &&
	test_cmp expect got
'

test_expect_success 'a block: the task refused, the model sent on; SessionStart takes its reason as context' '
	hook h "jq -r \"{decision: \\\"block\\\", reason: (.hook_event_name + \\\" says no\\n\\n\\\")}\"" &&
	every SessionStart UserPromptSubmit Stop SubagentStop PreCompact SessionEnd >h.json &&
	export AGENT_HOOKS_FILE=$PWD/h.json &&
	hook-cc --start startup --add add >out &&
	test ! -s out &&
	jq -e ".content == \"Context from a SessionStart hook of the user'\''s settings:\nSessionStart says no\"" add &&
	echo task | test_expect_code 1 hook-cc --prompt --add add >out &&
	test ! -s add &&
	echo "a UserPromptSubmit hook blocked the task: UserPromptSubmit says no" >expect &&
	test_cmp expect out &&
	test_expect_code 1 hook-cc --stop --subagent --add add >out &&
	echo "a SubagentStop hook did not let the model stop; asking it to go on" >expect &&
	test_cmp expect out &&
	jq -e ". == {role: \"user\", content: \"A SubagentStop hook of the user'\''s settings did not let you stop yet. It says:\nSubagentStop says no\"}" add &&
	hook-cc --compact --add add >out &&
	hook-cc --end 1 >>out &&
	test ! -s out && test ! -s add
'

test_expect_success 'context: UserPromptSubmit'\''s goes to the model, Stop'\''s and the others'\'' do not' '
	hook h "cat >/dev/null; echo \"{\\\"hookSpecificOutput\\\": {\\\"additionalContext\\\": \\\"note\\\"}}\"" &&
	every UserPromptSubmit Stop PreCompact >h.json &&
	export AGENT_HOOKS_FILE=$PWD/h.json &&
	echo task | hook-cc --prompt --add add &&
	jq -e ".content == \"Context from a UserPromptSubmit hook of the user'\''s settings:\nnote\"" add &&
	hook-cc --stop --add add >out &&
	test ! -s add && test ! -s out &&
	hook-cc --compact --add add >out &&
	test ! -s add && test ! -s out
'

test_expect_success '--add is emptied first: what an earlier moment added is never added again' '
	hook h "cat >/dev/null" &&
	every Stop >h.json &&
	echo "{\"role\":\"user\",\"content\":\"stale\"}" >add &&
	AGENT_HOOKS_FILE=$PWD/h.json hook-cc --stop --add add &&
	test -e add && test ! -s add &&
	ln -s add link &&
	test_expect_code 3 env AGENT_HOOKS_FILE=$PWD/h.json hook-cc --stop --add link >out 2>err &&
	test_grep "cannot open .link." err &&
	echo "the Stop hooks failed" >expect &&
	test_cmp expect out
'

test_expect_success 'a failure: its status, and which hooks failed said on stdout' '
	echo "[]" >bad.json &&
	test_expect_code 4 env AGENT_HOOKS_FILE=$PWD/bad.json hook-cc --start startup --add add >out 2>err &&
	echo "the SessionStart hooks failed" >expect &&
	test_cmp expect out &&
	test_grep "^hook-cc: .*bad.json" err &&
	echo task | test_expect_code 4 env AGENT_HOOKS_FILE=$PWD/bad.json hook-cc --prompt >out 2>err &&
	echo "the UserPromptSubmit hooks failed" >expect &&
	test_cmp expect out &&
	test_expect_code 3 env AGENT_HOOKS_FILE=$PWD/no-such.json hook-cc --end 0 >out 2>err &&
	echo "the SessionEnd hooks failed" >expect &&
	test_cmp expect out
'

test_expect_success 'bad usage of the moments' '
	for args in "--start" "--start compact" "--start startup --stop" "--end" "--end x" \
		"--end -1" "--end 1000" "--active" "--subagent --prompt" "--add f" \
		"--add f --event Stop" "--compact --configured" "--prompt --match x"; do
		# shellcheck disable=SC2086 # $args: options, a word each
		test_expect_code 2 hook-cc $args </dev/null >out 2>err || { echo "args: $args"; return 1; }
		test_grep "Try .hook-cc --help." err || return 1
		test ! -s out || return 1
	done &&
	test ! -e f
'

# agent-run with hooks of the session's moments, against the scripted model
test_expect_success 'agent-run: the hooks'\'' messages go through hook-audit: the transcript, the audit log, --json' '
	cat >script <<-\EOF &&
	{"content": "done"}
	EOF
	start_model script && mkdir w &&
	hook h "cat >/dev/null; echo \"the branch is main\"" &&
	every SessionStart >h.json &&
	agent-run -y --json --hooks h.json -C w "say hi" >events 2>progress &&
	text="Context from a SessionStart hook of the user'\''s settings:
the branch is main" &&
	jq -s -e --arg t "$text" "map(select(.role == \"user\" and .content == \$t)) | length == 1" w/.agent/transcript.jsonl &&
	jq -s -e --arg t "$text" "map(select(.message.content == \$t)) | length == 1" w/.agent/audit.jsonl &&
	grep -F "the branch is main" events >ours &&
	test_line_count = 1 ours &&
	jq -e "(.session | length) > 0" ours &&
	jq -e --arg t "$text" ".body.messages[-1].content == \$t" requests.jsonl
'

test_expect_success 'agent-run: a failure of the hooks ends the run, the messages before it kept' '
	cat >script <<-\EOF &&
	{"content": "done"}
	EOF
	start_model script && mkdir w &&
	hook h "cat >/dev/null; echo \"[]\" >\"$PWD/h.json\"; echo \"started\"" &&
	every SessionStart UserPromptSubmit >h.json &&
	test_expect_code 1 agent-run -y --json --hooks h.json -C w "say hi" >events 2>progress &&
	test_grep "^agent-run: the UserPromptSubmit hooks failed; the transcript is $PWD/w/.agent/transcript.jsonl\$" progress &&
	jq -s -e ".[-1].content == \"Context from a SessionStart hook of the user'\''s settings:\nstarted\"" w/.agent/transcript.jsonl &&
	tail -n 1 events | jq -e ".error == \"agent-run: the UserPromptSubmit hooks failed; the transcript is $PWD/w/.agent/transcript.jsonl\"" &&
	test ! -e requests.jsonl
'

test_expect_success 'agent-run: Stop again with stop_hook_active, PreCompact, SessionEnd, in their order' '
	jq -nc "{tool_calls: [{name: \"bash\", arguments: {command: \"head -c 6000 /dev/zero | tr \\\"\\\\0\\\" x\"}}]},
		{tool_calls: [{name: \"bash\", arguments: {command: \"head -c 6000 /dev/zero | tr \\\"\\\\0\\\" y\"}}]},
		{tool_calls: [{name: \"bash\", arguments: {command: \"head -c 6000 /dev/zero | tr \\\"\\\\0\\\" z\"}}]},
		{content: \"done\"}, {content: \"done, really\"}, {content: \"done, really, really\"}" >script &&
	start_model script --window-bytes 20000 --summaries --real-usage &&
	mkdir w &&
	hook h "jq -c \"{hook_event_name, stop_hook_active, trigger, reason}\" >>\"$PWD/seen\"; echo \"not yet\" >&2; exit 2" &&
	every Stop PreCompact SessionEnd >h.json &&
	agent-run -y --sandbox off --stop-checks 2 --context-window 4000 --hooks h.json -C w "make files" >answer 2>progress &&
	test "$(cat answer)" = "done, really, really" &&
	test_grep "the context is full: compacting it" progress &&
	test "$(grep -c "a Stop hook did not let the model stop; asking it to go on" progress)" = 2 &&
	jq -c "select(.hook_event_name != \"PreCompact\")" seen >got &&
	cat >expect <<-\EOF &&
	{"hook_event_name":"Stop","stop_hook_active":false,"trigger":null,"reason":null}
	{"hook_event_name":"Stop","stop_hook_active":true,"trigger":null,"reason":null}
	{"hook_event_name":"SessionEnd","stop_hook_active":null,"trigger":null,"reason":"exit"}
	EOF
	test_cmp expect got &&
	jq -s -e "map(select(.hook_event_name == \"PreCompact\")) | length >= 1 and all(.trigger == \"auto\")" seen &&
	jq -s -e "map(select(.hook_event_name == \"PreCompact\" or .hook_event_name == \"Stop\")) | .[0].hook_event_name == \"PreCompact\"" seen &&
	jq -s -e "map(select(.role == \"user\" and .content == \"A Stop hook of the user'\''s settings did not let you stop yet. It says:\nnot yet\")) | length == 2" w/.agent/transcript.jsonl
'

test_expect_success 'agent-run: a child session runs SubagentStop, its parent Stop; SessionEnd, each one'\''s' '
	{
		echo "{\"match\": \"main task\", \"tool_calls\": [{\"name\": \"task\", \"arguments\": {\"description\": \"look\", \"prompt\": \"count the files\"}}]}" &&
		echo "{\"match\": \"count the files\", \"content\": \"two files\"}" &&
		echo "{\"match\": \"main task\", \"content\": \"done\"}"
	} >script &&
	start_model script && mkdir w &&
	hook h "jq -r \".hook_event_name + \\\" \\\" + (.reason // \\\"-\\\")\" >>\"$PWD/seen\"" &&
	every Stop SubagentStop SessionEnd >h.json &&
	agent-run -y --hooks h.json -C w "main task" >answer 2>progress &&
	test "$(cat answer)" = done &&
	printf "SubagentStop -\nSessionEnd exit\nStop -\nSessionEnd exit\n" >expect &&
	test_cmp expect seen &&
	rm seen &&
	test_expect_code 3 agent-run -y --max-steps 0 --hooks h.json -C w -c "more" >answer 2>progress &&
	echo "SessionEnd other" >expect &&
	test_cmp expect seen
'

test_expect_success 'agent-run: the words of a UserPromptSubmit hook that blocks (which may quote the task) reach the terminal escaped, on one line' '
	mkdir w &&
	hook h "cat >/dev/null; printf \"{\\\"decision\\\":\\\"block\\\",\\\"reason\\\":\\\"no \\\\u001b]52;c;ZXZpbA==\\\\u0007 way\\\\nagent-run: forged\\\"}\"" &&
	every UserPromptSubmit >h.json &&
	test_expect_code 1 agent-run -y --hooks h.json -C w "say hi" >answer 2>progress &&
	test_grep "^agent-run: a UserPromptSubmit hook blocked the task: no \\\\x1b\\]52;c;ZXZpbA==\\\\x07 way\\\\x0aagent-run: forged\$" progress &&
	test_grep ! "^agent-run: forged" progress &&
	! grep -q "$(printf "\033")" progress && ! grep -q "$(printf "\007")" progress
'

test_done
