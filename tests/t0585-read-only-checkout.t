#!/bin/sh
# A read-only checkout (issue 28 item 8): agent-run --state-dir DIR
# (AGENT_STATE_DIR) keeps the session in DIR, so that --mode plan works
# on a tree that nothing can write; what DIR may be, and that no command
# of the model writes it.
. "$(dirname "$0")/lib.sh"

AGENT_MODEL=scripted
export AGENT_MODEL

# tree DIR: every path of DIR, with the checksum of each file
tree() {
	(cd "$1" && find . -print | LC_ALL=C sort &&
		find . -type f -exec md5sum {} + | LC_ALL=C sort)
}
# results DIR: the tool results of the session kept in DIR, one a line
results() { jq -r 'select(.role == "tool") | .content | gsub("\n"; " ")' "$1/transcript.jsonl"; }

if [ -n "${AH_NO_SANDBOX:-}" ]; then
	test_skip 'a read-only checkout' 'no sandbox on this machine: plan mode needs one'
	test_done
	exit
fi
if ! can_read_only; then
	test_skip 'a read-only checkout' 'unshare -rm fails here: no read-only mount can be made'
	test_done
	exit
fi

test_expect_success 'a read-only checkout without a state directory: agent-run says where the session is kept, and how to keep it elsewhere' '
	small_workspace && tree w >before &&
	test_expect_code 1 read_only w agent-run --mode plan -C w "plan it" 2>err &&
	test_grep -E "^agent-run: cannot create .$PWD/w/.agent., where the session is kept: (Read-only file system|Permission denied); give --state-dir DIR to keep it elsewhere$" err &&
	tree w >after && test_cmp before after
'

test_expect_success 'plan mode on a read-only checkout with --state-dir: reads, plans, writes the plan and the todo list in DIR, leaves the tree as it was; -c goes on' '
	{
		script_call read_file "{\"path\":\"a.txt\"}" &&
		script_call grep "{\"pattern\":\"needle\"}" &&
		script_call bash "{\"command\":\"cat src/m.c; touch x\"}" &&
		script_call run_todo_write "{\"todos\":[{\"id\":\"1\",\"content\":\"change m.c\",\"status\":\"pending\"}]}" &&
		script_said "1. change m.c" &&
		script_call bash "{\"command\":\"ls\"}" &&
		script_said "2. then the tests" &&
		script_said "3. from below"
	} >script &&
	start_model script && small_workspace && tree w >before &&
	read_only w agent-run --mode plan --state-dir "$PWD/st" -C w "plan the change" >answer 2>progress &&
	test "$(cat answer)" = "1. change m.c" &&
	test "$(cat st/plan.md)" = "1. change m.c" &&
	jq -e ".todos[0].content == \"change m.c\"" st/todo.json &&
	jq -e ".permission_mode == \"plan\"" st/session.json &&
	results st >res &&
	test_grep "alpha needle here" res && test_grep "a.txt:2:needle here" res &&
	test_grep "int x;" res && test_grep "touch: .*Read-only file system" res &&
	tree w >after && test_cmp before after &&
	AGENT_STATE_DIR=$PWD/st read_only w agent-run -c -C w "and the tests?" >answer 2>progress &&
	test "$(cat answer)" = "2. then the tests" &&
	test "$(cat st/plan.md)" = "2. then the tests" &&
	jq -s -e "[.[] | select(.role == \"user\") | .content] | index(\"plan the change\") != null and index(\"and the tests?\") != null" st/transcript.jsonl &&
	results st >res2 && test_grep "^a.txt src" res2 &&
	tree w >after && test_cmp before after &&
	(cd w/src && AGENT_STATE_DIR=$PWD/../../st read_only .. agent-run -c "from below" >../../answer 2>../../progress) &&
	test_grep "^agent-run: the session of .$PWD/w.$" progress &&
	jq -s -e "[.[] | select(.role == \"user\") | .content] | index(\"from below\") != null" st/transcript.jsonl &&
	(cd w/src && agent-run --sessions --state-dir ../../st) >list &&
	test_line_count = 1 list &&
	tree w >after && test_cmp before after
'

test_expect_success 'a subagent of a plan on a read-only checkout keeps its session in the state directory too' '
	{
		echo "{\"match\": \"parent\", \"tool_calls\": [{\"name\": \"task\", \"arguments\": {\"description\": \"d\", \"prompt\": \"the child\"}}]}" &&
		echo "{\"match\": \"the child\", $(script_call read_file "{\"path\":\"a.txt\"}" | cut -c 2-)" &&
		echo "{\"match\": \"the child\", \"content\": \"child read it\"}" &&
		echo "{\"match\": \"parent\", \"content\": \"plan\"}"
	} >script &&
	start_model script && small_workspace && tree w >before &&
	AGENT_MAX_DEPTH=2 read_only w agent-run --mode plan --state-dir "$PWD/st" -C w "parent" >answer 2>progress &&
	test "$(cat answer)" = plan && test "$(cat st/plan.md)" = plan &&
	child=$(ls st/sessions/*.*.jsonl) &&
	jq -s -e "map(select(.role == \"tool\"))[0].content | test(\"needle here\")" "$child" &&
	jq -e ".permission_mode == \"plan\"" "${child%l}" &&
	tree w >after && test_cmp before after
'

test_expect_success 'no command of the model writes the state directory (nor sees it), in any mode' '
	small_workspace && sd=$PWD/st &&
	{
		script_call bash "$(jq -nc --arg c "echo x >$sd/x; echo y >>$sd/transcript.jsonl; ls $sd; echo ok >made" "{command: \$c}")" &&
		script_call write_file "$(jq -nc --arg p "$sd/y" "{path: \$p, content: \"x\"}")" &&
		script_said "tried"
	} >script &&
	start_model script &&
	agent-run -y --state-dir "$sd" -C w "try to write it" >answer 2>progress &&
	test "$(cat answer)" = tried && test -f w/made &&
	! test -e st/x && ! test -e st/y &&
	jq -s -e "length > 3" st/transcript.jsonl &&
	results st >res &&
	test_grep "$sd/x: No such file or directory" res &&
	test_grep "cannot access .$sd.: No such file or directory" res &&
	test_grep "path .$sd/y. is outside the working directory" res
'

test_expect_success 'a state directory serves one workspace: another is refused before anything is written' '
	small_workspace && mkdir w2 &&
	script_said "first" >script && start_model script &&
	agent-run -y --state-dir "$PWD/st" -C w "first" >answer 2>progress &&
	cp st/transcript.jsonl kept &&
	test_expect_code 1 agent-run -y --state-dir "$PWD/st" -C w2 "second" >answer 2>err &&
	test_grep "^agent-run: cannot use .$PWD/st. as the state directory: it keeps the sessions of the workspace .$PWD/w., not of .$PWD/w2." err &&
	test_cmp kept st/transcript.jsonl && ! test -e w2/.agent &&
	test "$(jq -s length requests.jsonl)" = 1
'

test_expect_success 'a state directory that is a symbolic link is refused, and nothing is written through it' '
	small_workspace && mkdir real && chmod 700 real && ln -s real link &&
	script_said "no" >script && start_model script &&
	test_expect_code 1 agent-run -y --state-dir "$PWD/link" -C w "x" >answer 2>err &&
	test_grep "^agent-run: cannot use .$PWD/link. as the state directory: it is a symbolic link" err &&
	ls -A real >list && test_line_count = 0 list && ! test -e w/.agent &&
	! test -s requests.jsonl
'

test_done
