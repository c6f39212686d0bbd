#!/bin/sh
# agent-run --mode plan|ask|edit|auto: presets of the policy (share/
# modes.json, hook-perm --mode) and the sandbox (tool-exec --mode), kept
# in the session's record.  Plan mode is held by the read-only sandbox,
# whatever the policy says: a scripted model tries every way to write.
. "$(dirname "$0")/lib.sh"

AGENT_MODEL=scripted
export AGENT_MODEL

# tree DIR: every path of DIR but .agent, with the checksum of each file
tree() {
	(cd "$1" && find . -path ./.agent -prune -o -print | LC_ALL=C sort &&
		find . -path ./.agent -prune -o -type f -exec md5sum {} + | LC_ALL=C sort)
}
# results: the tool results of the session in w, one a line
results() { jq -r 'select(.role == "tool") | .content | gsub("\n"; " ")' w/.agent/transcript.jsonl; }
# decisions: "decision tool" of each script_call of the session in w
decisions() {
	jq -r 'select(.role == "assistant") | .tool_calls[]? | "\(.permission.decision) \(.function.name)"' \
		w/.agent/transcript.jsonl
}

test_expect_success '--print-policy: each mode adds its rules to the policy in force, and says what it is' '
	agent-run --mode plan --print-policy >plan.json &&
	jq -e ".mode.name == \"plan\" and .mode.sandbox == \"read-only\" and
		(.rules | map(.name) | index(\"mode-plan-writes\") != null)" plan.json &&
	agent-run --print-policy >ask.json &&
	hook-perm --print-policy >builtin.json &&
	jq -e --slurpfile b builtin.json ".mode.name == \"ask\" and .rules == \$b[0].rules" ask.json &&
	AGENT_MODE=edit agent-run --print-policy >edit.json &&
	jq -e ".mode.name == \"edit\" and .rules[-1].name == \"mode-edit\"" edit.json &&
	agent-run -y --print-policy >auto.json &&
	jq -e ".mode.approve_asks == true" auto.json &&
	echo "{\"default\": \"deny\", \"rules\": []}" >mine.json &&
	agent-run --mode edit --policy mine.json --print-policy >mine-edit.json &&
	jq -e ".default == \"deny\" and (.rules | map(.name)) == [\"mode-edit\"]" mine-edit.json &&
	hook-perm --policy plan.json --mode plan --print-policy >again.json &&
	jq -e ".rules | length > 0" again.json
'

test_expect_success 'a mode that is not one, -y with another mode, plan with a writable sandbox: usage errors' '
	test_expect_code 2 agent-run --mode plans --print-policy 2>err &&
	test_contains err "unknown mode '\''plans'\'' (use plan, ask, edit or auto)" &&
	test_expect_code 2 agent-run -y --mode plan "x" 2>err &&
	test_contains err "-y is --mode auto" &&
	test_expect_code 2 agent-run --mode plan --sandbox off "x" 2>err &&
	test_contains err "read-only sandbox" &&
	test_expect_code 2 env AGENT_MODE=nope hook-perm --print-policy 2>err &&
	test_contains err "AGENT_MODE: unknown mode" &&
	test_expect_code 2 tool-exec --mode plan --sandbox off </dev/null 2>err &&
	test_contains err "the plan mode runs commands in the read-only sandbox" &&
	test_expect_code 2 tool-exec --mode nope </dev/null
'

test_expect_success 'hook-perm --mode: plan allows reads and commands, denies the rest; edit allows edits; auto approves asks' '
	decide bash "$(bash_args "ls -l")" --mode plan && test_grep "^allow mode-plan-reads" got &&
	decide write_file "{\"path\":\"f\",\"content\":\"x\"}" --mode plan && test_grep "^deny mode-plan-writes" got &&
	decide apply_patch "{\"input\":\"x\"}" --mode plan && test_grep "^deny mode-plan-writes" got &&
	decide mcp__s__t "{}" --mode plan && test_grep "^deny mode-plan-writes" got &&
	decide bash "$(bash_args "sudo ls")" --mode plan && test_grep "^deny privilege" got &&
	decide edit_file "{\"path\":\"f\",\"old_string\":\"a\",\"new_string\":\"b\"}" --mode edit &&
	test_grep "^allow mode-edit" got &&
	AGENT_MODE=edit decide bash "$(bash_args "make")" </dev/null && test_grep "^deny shell" got &&
	decide bash "$(bash_args "make")" --mode auto && test_grep "^allow shell: .*approved by the auto mode" got &&
	decide bash "$(bash_args "sudo make")" --mode auto && test_grep "^deny privilege" got
'

if [ -n "${AH_NO_SANDBOX:-}" ]; then
	test_skip 'tool-exec in plan mode' 'no sandbox on this machine'
	test_skip 'plan mode' 'no sandbox on this machine'
	test_done
	exit
fi

test_expect_success 'tool-exec in plan mode refuses every tool not known to read only, whatever the policy allowed' '
	small_workspace && tree w >before &&
	for c in "write_file {\"path\":\"n\",\"content\":\"x\"}" \
		"edit_file {\"path\":\"a.txt\",\"old_string\":\"alpha\",\"new_string\":\"beta\"}" \
		"apply_patch {\"input\":\"*** Begin Patch\n*** Add File: n\n+x\n*** End Patch\"}" \
		"mcp__srv__write {\"path\":\"n\"}" \
		"frobnicate {}" \
		"bash {\"command\":\"echo x >n; echo x >>a.txt; rm src/m.c\"}"; do
		call_msg "${c%% *}" "${c#* }" >in &&
		AGENT_SANDBOX=off AGENT_MODE=plan tool-exec -C w <in >out &&
		jq -r .content out >res &&
		case $c in
		bash*) test_grep "rm: .*Read-only file system" res ;;
		*) test_grep "^Error: ${c%% *} is refused: the sandbox is read-only" res ;;
		esac || return 1
	done &&
	tree w >after && test_cmp before after &&
	call_msg run_todo_write "{\"todos\":[{\"id\":\"1\",\"content\":\"x\",\"status\":\"pending\"}]}" >in &&
	AGENT_MODE=plan AGENT_TODO_FILE=todo.json tool-exec -C w <in >out &&
	test_contains out "the todo list is kept outside .agent" && ! test -e w/todo.json &&
	mkdir w/.agent && AGENT_MODE=plan AGENT_TODO_FILE=.agent/todo.json tool-exec -C w <in >out &&
	jq -e ".todos | length == 1" w/.agent/todo.json &&
	call_msg grep "{\"pattern\":\"needle\"}" >in &&
	AGENT_MODE=plan tool-exec -C w <in >out && test_contains out "a.txt:2:needle here" &&
	call_msg skill "{\"name\":\"none\"}" >in &&
	AGENT_MODE=plan tool-exec -C w <in >out && test_contains out "there is no skill '\''none'\''"
'

test_expect_success 'plan: reads and searches run without a terminal and without -y; every write changes nothing; the plan lands in .agent/plan.md' '
	{
		script_call read_file "{\"path\":\"a.txt\"}" &&
		script_call grep "{\"pattern\":\"needle\"}" &&
		script_call list_dir "{\"path\":\"src\"}" &&
		script_call bash "{\"command\":\"cat src/m.c\"}" &&
		script_call write_file "{\"path\":\"new.txt\",\"content\":\"x\"}" &&
		script_call edit_file "{\"path\":\"a.txt\",\"old_string\":\"alpha\",\"new_string\":\"beta\"}" &&
		script_call apply_patch "{\"input\":\"*** Begin Patch\n*** Add File: p.txt\n+x\n*** End Patch\"}" &&
		script_call run_todo_write "{\"todos\":[{\"id\":\"1\",\"content\":\"change m.c\",\"status\":\"pending\"}]}" &&
		script_call bash "{\"command\":\"bash -c '\''echo x > f'\''\"}" &&
		script_call bash "{\"command\":\"AGENT_MODE=auto AGENT_SANDBOX=off sh -c '\''echo x >>a.txt'\''; touch .agent/x; python3 -c '\''open(\\\"g\\\",\\\"w\\\")'\''\"}" &&
		script_call write_file "{\"path\":\".agent/session.json\",\"content\":\"{}\"}" &&
		script_said "1. change m.c"
	} >script &&
	start_model script && small_workspace && tree w >before &&
	agent-run --mode plan --json -C w "plan the change" >events 2>progress </dev/null &&
	tree w >after && test_cmp before after &&
	test ! -e w/.agent/x &&
	test "$(cat w/.agent/plan.md)" = "1. change m.c" &&
	decisions >got &&
	head -n 4 got >reads && ! grep -v "^allow" reads &&
	test_grep "^deny write_file" got && test_grep "^deny apply_patch" got &&
	! test_grep "no terminal" progress &&
	results >res &&
	test_grep "alpha needle here" res && test_grep "a.txt:2:needle here" res &&
	test_grep "int x;" res &&
	test_grep "Read-only file system" res &&
	jq -e ".todos[0].content == \"change m.c\"" w/.agent/todo.json &&
	jq -e ".permission_mode == \"plan\" and .todo == \".agent/todo.json\"" w/.agent/session.json &&
	jq -s -e "(.[0] | .type == \"session\" and .permission_mode == \"plan\") and
		(.[-1] | .type == \"result\" and .permission_mode == \"plan\")" events &&
	req 1 ".messages[0].content" >sys && test_grep "You are in plan mode" sys
'

test_expect_success 'plan: -c keeps the mode (AGENT_MODE does not change it); --mode edit carries the plan out, told so, and edits without asking' '
	{
		script_said "1. add b.txt" &&
		script_call write_file "{\"path\":\"b.txt\",\"content\":\"x\"}" &&
		script_said "still a plan" &&
		script_said "a fork of a plan" &&
		script_call write_file "{\"path\":\"b.txt\",\"content\":\"b\n\"}" &&
		script_call bash "{\"command\":\"touch c.txt\"}" &&
		script_said "done"
	} >script &&
	start_model script && small_workspace && tree w >before &&
	agent-run --mode plan -C w "plan it" >answer 2>progress </dev/null &&
	AGENT_MODE=auto agent-run -c -C w "once more" >answer 2>progress </dev/null &&
	tree w >after && test_cmp before after &&
	test "$(cat w/.agent/plan.md)" = "still a plan" &&
	jq -e ".permission_mode == \"plan\"" w/.agent/session.json &&
	plan=$(jq -r .id w/.agent/session.json) &&
	agent-run --fork -C w "a fork" >answer 2>progress </dev/null &&
	test "$(cat answer)" = "a fork of a plan" &&
	jq -e ".permission_mode == \"plan\"" w/.agent/session.json &&
	agent-run --session "$plan" -C w --mode edit --json "go ahead" >events 2>progress </dev/null &&
	test "$(cat w/b.txt)" = b && test ! -e w/c.txt &&
	test "$(cat w/.agent/plan.md)" = "a fork of a plan" &&
	decisions >got && test_grep "^allow write_file" got && test_grep "^deny bash" got &&
	jq -e ".permission_mode == \"edit\"" w/.agent/session.json &&
	jq -s -e ".[0].permission_mode == \"edit\" and .[0].mode == \"continue\"" events &&
	req 5 ".messages[-2].content" >note &&
	test_grep "left plan mode: it is in edit mode now" note && test_grep "plan you made" note &&
	req 5 "[.messages[] | select(.role == \"assistant\") | .content] | index(\"still a plan\") != null" >seen &&
	test "$(cat seen)" = true
'

test_expect_success 'plan: -c --mode plan takes a session into plan mode, told so; --sandbox read-only keeps the list in .agent' '
	{
		script_said "ok" &&
		script_call write_file "{\"path\":\"b.txt\",\"content\":\"x\"}" &&
		script_said "the plan" &&
		script_call run_todo_write "{\"todos\":[{\"id\":\"1\",\"content\":\"x\",\"status\":\"completed\"}]}" &&
		script_said "listed"
	} >script &&
	start_model script && small_workspace && tree w >before &&
	agent-run -C w "hello" >answer 2>progress </dev/null &&
	agent-run -c --mode plan -C w "plan it" >answer 2>progress </dev/null &&
	tree w >after && test_cmp before after &&
	test "$(cat w/.agent/plan.md)" = "the plan" &&
	req 2 ".messages[-2].content" >note && test_grep "in plan mode now. You are in plan mode" note &&
	agent-run --sandbox read-only -C w "list" >answer 2>progress </dev/null &&
	test ! -e w/todo.json && jq -e ".todos | length == 1" w/.agent/todo.json &&
	jq -e ".permission_mode == \"ask\"" w/.agent/session.json
'

test_expect_success 'plan: a subagent inherits the mode, whatever read_only says' '
	{
		echo "{\"match\": \"parent\", \"tool_calls\": [{\"name\": \"task\", \"arguments\": {\"description\": \"d\", \"prompt\": \"the child\", \"read_only\": false}}]}" &&
		echo "{\"match\": \"the child\", $(script_call write_file "{\"path\":\"w.txt\",\"content\":\"x\"}" | cut -c 2-)" &&
		echo "{\"match\": \"the child\", $(script_call bash "{\"command\":\"echo x >b.txt; echo rc=\$?\"}" | cut -c 2-)" &&
		echo "{\"match\": \"the child\", \"content\": \"child tried\"}" &&
		echo "{\"match\": \"parent\", \"content\": \"plan\"}"
	} >script &&
	start_model script && small_workspace && tree w >before &&
	AGENT_MAX_DEPTH=2 agent-run --mode plan -C w "parent" >answer 2>progress </dev/null &&
	tree w >after && test_cmp before after &&
	child=$(ls w/.agent/sessions/*.*.jsonl) &&
	jq -s -e "map(select(.role == \"tool\")) | (.[0].content | test(\"Error\")) and (.[1].content | test(\"rc=1\"))" "$child" &&
	jq -e ".permission_mode == \"plan\"" "${child%l}" &&
	test "$(cat w/.agent/plan.md)" = plan
'

test_expect_success 'edit and auto: edits run without asking in edit, commands too in auto (and -y is auto); deny rules stand' '
	{
		script_call edit_file "{\"path\":\"a.txt\",\"old_string\":\"alpha\",\"new_string\":\"beta\"}" &&
		script_call apply_patch "{\"input\":\"*** Begin Patch\n*** Add File: p.txt\n+patched\n*** End Patch\"}" &&
		script_call bash "{\"command\":\"touch made\"}" &&
		script_said "edited" &&
		script_call bash "{\"command\":\"touch made\"}" &&
		script_call bash "{\"command\":\"sudo touch root\"}" &&
		script_said "ran" &&
		script_call bash "{\"command\":\"touch y\"}" &&
		script_said "ran again"
	} >script &&
	start_model script && small_workspace &&
	agent-run --mode edit --tools read_file,edit_file,apply_patch,bash -C w "edit" >answer 2>progress </dev/null &&
	test_grep "^beta" w/a.txt && test "$(cat w/p.txt)" = patched && test ! -e w/made &&
	AGENT_MODE=auto agent-run -C w "run" >answer 2>progress </dev/null &&
	test -e w/made && test ! -e w/root &&
	decisions >got && test_grep "^deny bash" got &&
	jq -e ".permission_mode == \"auto\"" w/.agent/session.json &&
	agent-run -y -C w "again" >answer 2>progress </dev/null &&
	test -e w/y && jq -e ".permission_mode == \"auto\"" w/.agent/session.json &&
	test ! -e w/.agent/plan.md
'

test_done
