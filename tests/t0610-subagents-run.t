#!/bin/sh
# Subagents end to end: a task call of the parent's model runs a child
# session of the real agent-run, through the real tool-exec, against a
# scripted server that answers each session by its task ("match").
. "$(dirname "$0")/lib.sh"

AGENT_MODEL=scripted
export AGENT_MODEL

# task DESCRIPTION PROMPT [EXTRA]: a script entry whose one call is a task
task() {
	printf '{"tool_calls": [{"name": "task", "arguments": {"description": "%s", "prompt": "%s"%s}}]}' \
		"$1" "$2" "${3:+, $3}"
}

# the child sessions' transcripts of directory $1
children() {
	ls "$1"/.agent/sessions/*.*.jsonl 2>/dev/null
}

test_expect_success 'one child: its answer is the result, its files beside the parent' '
	{
		echo "{\"match\": \"main task\", $(task look "count the files" | cut -c 2-)" &&
		echo "{\"match\": \"count the files\", \"tool_calls\": [{\"name\": \"list_dir\", \"arguments\": {\"path\": \".\"}}]}" &&
		echo "{\"match\": \"count the files\", \"content\": \"two files\"}" &&
		echo "{\"match\": \"main task\", \"content\": \"the child counted two files\"}"
	} >script &&
	start_model script && mkdir w && echo a >w/a && echo b >w/b &&
	agent-run -y -C w "main task" >answer 2>progress &&
	test "$(cat answer)" = "the child counted two files" &&
	jq -s -e "map(select(.role == \"tool\"))[0].content == \"two files\"" w/.agent/transcript.jsonl &&
	id=$(jq -r .id w/.agent/session.json) &&
	children w >list && test_line_count = 1 list && child=$(cat list) &&
	case $child in "w/.agent/sessions/$id.call_"*) ;; *) false ;; esac &&
	valid "$child" &&
	jq -s -e ".[0].role == \"system\" and .[1].content == \"count the files\"
		and .[-1].content == \"two files\"" "$child" &&
	agent-run -C w --sessions >sessions &&
	jq -s -e --arg id "$id" "map(select(.parent == \$id)) | length == 1 and
		(.[0].call | startswith(\"call_\")) and .[0].status == \"done\"" sessions &&
	jq -e ".children.sessions == 1 and .children.model_calls == 2
		and .model_calls == 4" w/.agent/session.json &&
	jq -s -e --arg id "$id" "map(select(.session != \$id and .message.role == \"assistant\")) | length == 2" w/.agent/audit.jsonl
'

# resume answers an interrupted task call as interrupted; agent-run
# itself refuses to run a call whose child transcript exists (the model's
# call may have cost, and done, what it did)
test_expect_success 'a task call that ran before is never run again' '
	{
		echo "{\"match\": \"main task\", $(task look "count the files" | cut -c 2-)" &&
		echo "{\"match\": \"count the files\", \"content\": \"two files\"}" &&
		echo "{\"match\": \"main task\", \"content\": \"done\"}" &&
		echo "{\"match\": \"count the files\", \"content\": \"again\"}"
	} >script &&
	start_model script && mkdir w &&
	agent-run -y -C w "main task" >answer 2>progress &&
	id=$(jq -r .id w/.agent/session.json) &&
	children w >list && test_line_count = 1 list && child=$(cat list) &&
	call=${child#"w/.agent/sessions/$id."} && call=${call%.jsonl} &&
	cp "$child" before && n=$(wc -l <requests.jsonl) &&
	AGENT_SESSION=$id test_expect_code 1 agent-run -y -C w --child "$call" -- "count the files" >out 2>err &&
	test_contains err "the task call '\''$call'\'' of session $id ran before; it is never run again" &&
	test_cmp before "$child" &&
	test "$(wc -l <requests.jsonl)" = "$n" &&
	! test -s out
'

test_expect_success 'a child is offered no task tool, and gets the parent'"'"'s project files' '
	{
		echo "{\"match\": \"parent\", $(task sub "the child" | cut -c 2-)" &&
		echo "{\"match\": \"the child\", \"content\": \"child done\"}" &&
		echo "{\"match\": \"parent\", \"content\": \"done\"}"
	} >script &&
	start_model script && mkdir w && echo "house rules" >w/AGENTS.md &&
	agent-run -y -C w "parent" >/dev/null 2>&1 &&
	jq -s -e "map(select(.n == 1))[0] | [.body.tools[].function.name] | index(\"task\") != null" requests.jsonl &&
	jq -s -e "map(select(.body.messages[-1].content == \"the child\"))[0] |
		([.body.tools[].function.name] | index(\"task\") == null)
		and (.body.messages[1].content | contains(\"house rules\"))" requests.jsonl
'

test_expect_success 'two children in parallel: both asked the model before either answered; each result to its call' '
	{
		echo "{\"match\": \"parent\", \"tool_calls\": [
			{\"id\": \"c_a\", \"name\": \"task\", \"arguments\": {\"description\": \"a\", \"prompt\": \"job A\"}},
			{\"id\": \"c_b\", \"name\": \"task\", \"arguments\": {\"description\": \"b\", \"prompt\": \"job B\"}}]}" | tr -d "\n\t" &&
		echo &&
		echo "{\"match\": \"job B\", \"delay\": 3, \"content\": \"B done\"}" &&
		echo "{\"match\": \"job A\", \"delay\": 3, \"content\": \"A done\"}" &&
		echo "{\"match\": \"parent\", \"content\": \"both done\"}"
	} >script &&
	start_model script && mkdir w &&
	agent-run -y -C w "parent" >answer 2>progress &&
	test "$(cat answer)" = "both done" &&
	jq -s -e "map(select(.body.messages[-1].content | IN(\"job A\", \"job B\")) | .start)
		| length == 2 and (.[0] - .[1] | fabs) < 2.5" requests.jsonl &&
	jq -s -e "map(select(.role == \"tool\")) | map([.tool_call_id, .content]) ==
		[[\"c_a\", \"A done\"], [\"c_b\", \"B done\"]]" w/.agent/transcript.jsonl &&
	test_grep "\\[task c_a\\]" progress
'

if [ -z "${AH_NO_SANDBOX:-}" ]; then
test_expect_success 'a child is held by the parent'"'"'s sandbox and policy' '
	{
		echo "{\"match\": \"parent\", $(task sub "the child" | cut -c 2-)" &&
		echo "{\"match\": \"the child\", \"tool_calls\": [{\"name\": \"bash\", \"arguments\": {\"command\": \"touch ../escaped; echo rc=\$?\"}}]}" &&
		echo "{\"match\": \"the child\", \"tool_calls\": [{\"name\": \"write_file\", \"arguments\": {\"path\": \"denied.txt\", \"content\": \"x\"}}]}" &&
		echo "{\"match\": \"the child\", \"content\": \"tried\"}" &&
		echo "{\"match\": \"parent\", \"content\": \"done\"}"
	} >script &&
	start_model script && mkdir w &&
	echo "{\"default\": \"allow\", \"rules\": [{\"name\": \"no-writes\", \"decision\": \"deny\", \"reason\": \"no writes\", \"if\": \".tool == \\\"write_file\\\"\"}]}" >policy.json &&
	agent-run -y --policy policy.json -C w "parent" >/dev/null 2>progress &&
	test ! -e escaped && test ! -e w/denied.txt &&
	child=$(children w) &&
	jq -s -e "map(select(.role == \"tool\")) | (.[0].content | contains(\"rc=1\"))
		and (.[1].content | contains(\"permission denied\"))" "$child"
'
else
	test_skip "a child is held by the parent's sandbox and policy" "no sandbox on this machine"
fi

test_expect_success 'a task denied by the policy runs no child' '
	{
		echo "{\"match\": \"parent\", $(task sub "the child" | cut -c 2-)" &&
		echo "{\"match\": \"parent\", \"content\": \"no child then\"}"
	} >script &&
	start_model script && mkdir w &&
	echo "{\"default\": \"allow\", \"rules\": [{\"name\": \"no-children\", \"decision\": \"deny\", \"reason\": \"no children\", \"if\": \".tool == \\\"task\\\"\"}]}" >policy.json &&
	agent-run -y --policy policy.json -C w "parent" >answer 2>/dev/null &&
	test "$(cat answer)" = "no child then" &&
	test -z "$(children w)" &&
	jq -s -e "map(select(.role == \"tool\"))[0].content | contains(\"permission denied\")" w/.agent/transcript.jsonl
'

test_expect_success 'a child that hits its step limit: an error result, and the parent goes on' '
	{
		echo "{\"match\": \"parent\", $(task sub "the child" | cut -c 2-)" &&
		echo "{\"match\": \"the child\", \"tool_calls\": [{\"name\": \"list_dir\", \"arguments\": {}}]}" &&
		echo "{\"match\": \"the child\", \"tool_calls\": [{\"name\": \"list_dir\", \"arguments\": {}}]}" &&
		echo "{\"match\": \"parent\", \"content\": \"went on\"}"
	} >script &&
	start_model script && mkdir w &&
	agent-run -y --max-steps 2 -C w "parent" >answer 2>/dev/null &&
	test "$(cat answer)" = "went on" &&
	jq -s -e "map(select(.role == \"tool\"))[0].content | test(\"step limit\")" w/.agent/transcript.jsonl &&
	agent-run -C w --sessions | jq -s -e "map(select(.parent)) | .[0].status == \"step-limit\""
'

# no_process_in DIR: no process works in DIR (agent-run, its stages, a
# child session and its stages, their commands): by their cwd, so that
# a child, which runs in a session of its own, is seen too
no_process_in() {
	d=$(cd "$1" && pwd -P) &&
	for p in /proc/[0-9]*; do
		[ "$(readlink "$p/cwd" 2>/dev/null)" != "$d" ] || return 1
	done
}

# the child has sent its request
child_asked() {
	test "$(jq -s "map(select(.body.messages[-1].content == \"the child\")) | length" requests.jsonl)" -ge 1
}

# a parent whose child hangs in its model call; $1: the directory
hanging_child() {
	{
		echo "{\"match\": \"parent\", $(task sub "the child" | cut -c 2-)" &&
		echo "{\"match\": \"the child\", \"hang\": true}" &&
		echo "{\"match\": \"parent\", \"content\": \"after the resume\"}"
	} >script &&
	start_model script && mkdir "$1"
}

test_expect_success 'Ctrl-C stops the child too; every call gets a result' '
	hanging_child w &&
	{ fg_signals setsid sh -c "exec agent-run -y -C w parent >answer 2>progress" & sid=$!; } &&
	test_when_finished "kill_session $sid" &&
	wait_until 20 sh -c "ls w/.agent/sessions/*.*.jsonl >/dev/null 2>&1" &&
	wait_until 20 child_asked &&
	kill -INT -$sid &&
	wait_until 20 no_process_in w &&
	valid w/.agent/transcript.jsonl &&
	jq -s -e "map(select(.role == \"tool\"))[0].content | test(\"nterrupted\")" w/.agent/transcript.jsonl &&
	child=$(children w) && valid "$child" &&
	agent-run -C w --sessions | jq -s -e "all(.[]; .status == \"interrupted\")"
'

test_expect_success 'kill -9 of the parent leaves no process behind; resume does not run the task again' '
	hanging_child w &&
	{ setsid sh -c "exec agent-run -y -C w parent >answer 2>progress" & sid=$!; } &&
	test_when_finished "kill_session $sid" &&
	wait_until 20 sh -c "ls w/.agent/sessions/*.*.jsonl >/dev/null 2>&1" &&
	wait_until 20 child_asked &&
	test_must_fail no_process_in w &&
	kill -9 $sid &&
	wait_until 20 no_process_in w &&
	agent-run -y -C w --resume >answer 2>progress &&
	test "$(cat answer)" = "after the resume" &&
	children w >list && test_line_count = 1 list &&
	jq -s -e "map(select(.role == \"tool\"))[0].content | test(\"nterrupted\")" w/.agent/transcript.jsonl
'

test_expect_success '--json: the child'"'"'s events come too, with its own session id' '
	{
		echo "{\"match\": \"parent\", $(task sub "the child" | cut -c 2-)" &&
		echo "{\"match\": \"the child\", \"tool_calls\": [{\"name\": \"list_dir\", \"arguments\": {}}]}" &&
		echo "{\"match\": \"the child\", \"content\": \"child done\"}" &&
		echo "{\"match\": \"parent\", \"content\": \"done\"}"
	} >script &&
	start_model script && mkdir w &&
	agent-run -y --json -C w "parent" >events 2>progress &&
	id=$(jq -r .id w/.agent/session.json) &&
	jq -s -e --arg id "$id" "
		(map(select(.session == \$id)) | .[0].type == \"session\" and .[-1].type == \"result\" and .[-1].status == \"done\")
		and (map(select(.session == (\$id + \".call_1_1\"))) | length > 3
			and .[0].type == \"session\" and .[0].parent == \$id
			and (map(.type) | index(\"tool_call\") != null)
			and .[-1].type == \"result\" and .[-1].answer == \"child done\")
		and .[-1].session == \$id" events
'

test_expect_success 'a child asks on the user'"'"'s terminal, naming itself' '
	{
		echo "{\"match\": \"parent\", $(task sub "the child" | cut -c 2-)" &&
		echo "{\"match\": \"the child\", \"tool_calls\": [{\"name\": \"bash\", \"arguments\": {\"command\": \"echo from-the-child\"}}]}" &&
		echo "{\"match\": \"the child\", \"content\": \"child done\"}" &&
		echo "{\"match\": \"parent\", \"content\": \"done\"}"
	} >script &&
	start_model script && mkdir w &&
	"$TEST_DIR/pty-run.py" --timeout 60 "agent-run -C w parent >answer 2>progress" y y >tty &&
	test "$(cat answer)" = done &&
	test_grep "hook-perm: task wants to act on" tty &&
	test_grep "hook-perm: \\[subagent [0-9TZ-]*\\.call_1_1\\] bash wants to run" tty &&
	child=$(ls w/.agent/sessions/*.call_1_1.jsonl) &&
	jq -s -e "map(select(.role == \"tool\"))[0].content == \"from-the-child\\n\"" "$child"
'

test_expect_success 'agent-run --max-depth: a child may start its own, never past 3' '
	{
		echo "{\"match\": \"parent\", $(task sub "the child" | cut -c 2-)" &&
		echo "{\"match\": \"the child\", $(task subsub "the grandchild" | cut -c 2-)" &&
		echo "{\"match\": \"the grandchild\", \"content\": \"grandchild done\"}" &&
		echo "{\"match\": \"the child\", \"content\": \"child done\"}" &&
		echo "{\"match\": \"parent\", \"content\": \"done\"}"
	} >script &&
	start_model script && mkdir w &&
	agent-run -y --max-depth 2 -C w "parent" >answer 2>progress &&
	test "$(cat answer)" = done &&
	ls w/.agent/sessions/*.call_*.call_*.jsonl &&
	jq -s -e "map(select(.body.messages[-1].content == \"the grandchild\"))[0] | [.body.tools[].function.name] | index(\"task\") == null" requests.jsonl &&
	test_expect_code 2 agent-run --max-depth 4 -C w x 2>err &&
	test_grep "max-depth" err
'

test_done
