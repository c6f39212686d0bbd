#!/bin/sh
# hook-cc: Claude Code-style hooks in the loop; a failing PreToolUse hook
# denies the call.
. "$(dirname "$0")/lib.sh"
unset XDG_CONFIG_HOME AGENT_YES

AGENT_MODEL=scripted
export AGENT_MODEL

# settings EVENT MATCHER COMMAND [TIMEOUT]: a settings file with one hook,
# on stdout
settings() {
	jq -nc --arg e "$1" --arg m "$2" --arg c "$3" --argjson t "${4:-10}" \
		'{hooks: {($e): [{matcher: $m, hooks: [{type: "command", command: $c, timeout: $t}]}]}}'
}
# hook NAME BODY: an executable script ./NAME running BODY under sh
hook() {
	printf '#!/bin/sh\n%s\n' "$2" >"$1" && chmod +x "$1"
}
# calls: an assistant message with a bash call (rm -rf x) and a read_file
bash_call() {
	jq -nc --arg c "$1" '{role: "assistant", content: null, tool_calls: [
		{id: "c1", type: "function", function: {name: "bash",
		 arguments: ({command: $c, timeout: 5} | tojson)}},
		{id: "c2", type: "function", function: {name: "read_file",
		 arguments: ({path: "a.txt"} | tojson)}}]}'
}
# perm N: the permission of call N of the message in "out", as
# "decision rule: reason"
perm() {
	jq -r ".tool_calls[$1].permission | if . then \"\(.decision) \(.rule): \(.reason)\" else \"none\" end" out
}

test_expect_success 'PreToolUse: exit 2 denies the call, stderr the reason, and tool-exec does not run it' '
	hook no-rm "cat >/dev/null; echo \"no rm here, use trash\" >&2; exit 2" &&
	settings PreToolUse Bash "$PWD/no-rm" >h.json &&
	bash_call "touch made" >in &&
	hook-cc --hooks h.json <in >out 2>err &&
	test "$(perm 0)" = "deny hook-cc: no rm here, use trash" &&
	test "$(perm 1)" = none &&
	hook-perm -y <out | AGENT_SANDBOX=off tool-exec >res &&
	test ! -e made &&
	jq -s -e "map(select(.tool_call_id == \"c1\"))[0].content == \"Error: permission denied: no rm here, use trash\"" res
'

test_expect_success 'PreToolUse: a hook that crashes, is killed, times out or prints nonsense denies' '
	bash_call "ls" >in &&
	while IFS="@" read -r body want; do
		hook h "$body" &&
		settings PreToolUse "*" "$PWD/h" 1 >h.json &&
		hook-cc --hooks h.json <in >out 2>err || return 1
		perm 0 >got &&
		test_grep "^deny hook-cc: the hook .*$want" got || return 1
		test_grep "(the call is denied)" err || return 1
	done <<-\EOF
	exit 1@exited 1
	echo oops >&2; exit 3@exited 3: oops
	kill -9 $$@exited 137
	sleep 30@ran past its timeout of 1 s
	echo allow@printed what is not a hook answer
	echo "{\"hookSpecificOutput\": {\"permissionDecision\": \"maybe\"}}"@printed what is not a hook answer
	echo "{\"hookSpecificOutput\": {\"hookEventName\": \"PostToolUse\"}}"@printed what is not a hook answer
	echo "{\"decision\": 1}"@printed what is not a hook answer
	exec /no/such/program@exited 127
	head -c 70000 /dev/zero | tr "\\0" " "; echo "{}"@printed what is not a hook answer
	EOF
'

test_expect_success 'a hook command that starts with - or + is run, not read as options of the shell' '
	bash_call "ls" >in &&
	for c in "-e 2>/dev/null; echo minus >&2; exit 2" \
		"+x 2>/dev/null; echo plus >&2; exit 2" \
		"--version 2>/dev/null; echo long >&2; exit 2"; do
		settings PreToolUse "*" "$c" >h.json &&
		hook-cc --hooks h.json <in >out 2>err || return 1
		perm 0 >got &&
		echo "deny hook-cc: ${c##*echo }" | sed "s/ >&2; exit 2\$//" >expect &&
		test_cmp expect got || return 1
	done
'

test_expect_success 'the timeout kills the hook and what it started, at once' '
	hook h "sleep 30 & sleep 30" &&
	settings PreToolUse "" "$PWD/h" 1 >h.json &&
	bash_call "ls" >in &&
	start=$(date +%s) &&
	hook-cc --hooks h.json <in >out 2>err &&
	test $(($(date +%s) - start)) -lt 10 &&
	test_grep "ran past its timeout" out
'

test_expect_success '--hooks-fail-open: a failing hook decides nothing (a deny still denies)' '
	hook h "exit 1" &&
	hook d "exit 2" &&
	jq -n --arg h "$PWD/h" --arg d "$PWD/d" "{hooks: {PreToolUse: [{matcher: \"Bash\", hooks: [{type: \"command\", command: \$h}]}, {matcher: \"Read\", hooks: [{type: \"command\", command: \$d}]}]}}" >h.json &&
	bash_call "ls" >in &&
	hook-cc --hooks h.json --hooks-fail-open <in >out 2>err &&
	test "$(perm 0)" = none &&
	test_grep "hooks-fail-open: it decides nothing" err &&
	test "$(perm 1)" = "deny hook-cc: a hook exited 2"
'

test_expect_success 'a hook of a type hook-cc cannot run denies what it matches' '
	echo "{\"hooks\": {\"PreToolUse\": [{\"hooks\": [{\"type\": \"prompt\", \"prompt\": \"is it safe?\"}]}]}}" >h.json &&
	bash_call "ls" >in &&
	hook-cc --hooks h.json <in >out 2>err &&
	test_grep "^deny hook-cc: the hook .prompt. .*cannot run" "$(perm 0 >got && echo got)"
'

test_expect_success 'updatedInput is what hook-perm judges and tool-exec runs' '
	hook up "jq -c \"{hookSpecificOutput: {hookEventName: \\\"PreToolUse\\\", permissionDecision: \\\"allow\\\", updatedInput: (.tool_input | .command = \\\"echo rewritten > made\\\")}}\"" &&
	settings PreToolUse Bash "$PWD/up" >h.json &&
	bash_call "echo original > made" >in &&
	hook-cc --hooks h.json <in >out 2>err &&
	jq -e ".tool_calls[0].function.arguments | fromjson == {command: \"echo rewritten > made\", timeout: 5}" out &&
	hook-perm -y <out | AGENT_SANDBOX=off tool-exec >res &&
	test "$(cat made)" = rewritten &&
	hook sudo "jq -c \"{hookSpecificOutput: {hookEventName: \\\"PreToolUse\\\", permissionDecision: \\\"allow\\\", updatedInput: {command: \\\"sudo id\\\"}}}\"" &&
	settings PreToolUse Bash "$PWD/sudo" >h.json &&
	hook-cc --hooks h.json <in | hook-perm -y >out &&
	test "$(perm 0)" = "deny privilege: runs as another user"
'

test_expect_success 'a hook allow never loosens the policy; ask asks, deny stays deny' '
	hook ok "echo \"{\\\"hookSpecificOutput\\\": {\\\"permissionDecision\\\": \\\"allow\\\"}}\"" &&
	settings PreToolUse Bash "$PWD/ok" >h.json &&
	bash_call "sudo id" >in &&
	hook-cc --hooks h.json <in | hook-perm >out &&
	test "$(perm 0)" = "deny privilege: runs as another user" &&
	hook ask "echo \"{\\\"hookSpecificOutput\\\": {\\\"permissionDecision\\\": \\\"ask\\\", \\\"permissionDecisionReason\\\": \\\"check it\\\"}}\"" &&
	settings PreToolUse Read "$PWD/ask" >h.json &&
	bash_call "ls" >in &&
	hook-cc --hooks h.json <in | hook-perm >out &&
	perm 1 >got &&
	test_grep "^deny hook-cc: check it; asking needs a terminal" got &&
	hook-cc --hooks h.json <in | hook-perm -y >out &&
	test "$(perm 1)" = "allow hook-cc: check it; approved by --yes" &&
	call_msg bash "{\"command\":\"ls\"}" >in &&
	jq -c ".tool_calls[0].permission.decision = \"bogus\"" in | hook-perm -y >out &&
	test "$(perm 0)" = "deny test: test says allow"
'

test_expect_success 'the input is Claude Code'\''s, in the environment of the commands with CLAUDE_PROJECT_DIR' '
	hook dump "cat >\"$PWD/input.\$\$\"; env >\"$PWD/env.\$\$\"" &&
	settings PreToolUse "Bash|Read" "$PWD/dump" >h.json &&
	bash_call "ls -l" >in &&
	AGENT_API_KEY=sk-secret AGENT_SESSION=s-1 hook-cc --hooks h.json --transcript t.jsonl <in >out 2>err &&
	cat input.* >inputs &&
	jq -s -e --arg d "$PWD" "sort_by(.tool_name) == [
		{session_id: \"s-1\", transcript_path: (\$d + \"/t.jsonl\"), cwd: \$d, permission_mode: \"default\",
		 hook_event_name: \"PreToolUse\", tool_name: \"Bash\", tool_input: {command: \"ls -l\", timeout: 5000}, tool_use_id: \"c1\"},
		{session_id: \"s-1\", transcript_path: (\$d + \"/t.jsonl\"), cwd: \$d, permission_mode: \"default\",
		 hook_event_name: \"PreToolUse\", tool_name: \"Read\", tool_input: {file_path: (\$d + \"/a.txt\")}, tool_use_id: \"c2\"}]" inputs &&
	cat env.* >envs &&
	test_grep "^CLAUDE_PROJECT_DIR=$PWD\$" envs &&
	test_grep ! sk-secret envs
'

test_expect_success 'the hooks of a call run at once' '
	hook a "cat >/dev/null; touch a-ran; i=0; while [ ! -e b-ran ]; do i=\$((i + 1)); [ \$i -lt 400 ] || exit 1; sleep 0.05; done" &&
	hook b "cat >/dev/null; touch b-ran; i=0; while [ ! -e a-ran ]; do i=\$((i + 1)); [ \$i -lt 400 ] || exit 1; sleep 0.05; done" &&
	jq -n --arg a "$PWD/a" --arg b "$PWD/b" "{hooks: {PreToolUse: [{matcher: \"Bash\", hooks: [{type: \"command\", command: \$a}, {type: \"command\", command: \$b}]}]}}" >h.json &&
	bash_call "ls" >in &&
	hook-cc --hooks h.json <in >out 2>err &&
	test "$(perm 0)" = none
'

test_expect_success 'matchers as Claude Code reads them: names, alternatives, regular expressions' '
	hook d "echo \"matched\" >&2; exit 2" &&
	bash_call "ls" >in &&
	while IFS="@" read -r m want0 want1; do
		settings PreToolUse "$m" "$PWD/d" >h.json &&
		hook-cc --hooks h.json <in >out 2>err || return 1
		test "$(perm 0 | cut -c1-4)|$(perm 1 | cut -c1-4)" = "$want0|$want1" ||
			{ echo "matcher $m: $(perm 0) / $(perm 1)"; return 1; }
	done <<-\EOF
	Bash@deny@none
	Write|Edit@none@none
	Edit|Read@none@deny
	^Ba@deny@none
	.*@deny@deny
	*@deny@deny
	@deny@deny
	Bas@none@none
	B.s@deny@none
	EOF
'

test_expect_success 'PostToolUse: a block reason and additionalContext are added to the result' '
	hook post "jq -c \"{decision: \\\"block\\\", reason: (\\\"saw \\\" + .tool_input.command), hookSpecificOutput: {hookEventName: \\\"PostToolUse\\\", additionalContext: .tool_response}}\"" &&
	settings PostToolUse Bash "$PWD/post" >h.json &&
	bash_call "echo hi" >in &&
	AGENT_SANDBOX=off tool-exec --yes <in >res &&
	cat in res | hook-cc --hooks h.json >out 2>err &&
	jq -s -e ".[1].content == \"hi\n\n\n[PostToolUse hook, not the tool'\''s output]\nsaw echo hi\nhi\n\" and (.[2].content | startswith(\"Error: read_file\")) and (.[2].content | contains(\"[PostToolUse\") | not)" out &&
	cat in >t.jsonl &&
	hook-cc --hooks h.json --transcript t.jsonl <res >out 2>err &&
	jq -s -e ".[0].content | endswith(\"saw echo hi\nhi\n\")" out
'

test_expect_success 'a repository'\''s .claude/settings.json runs nothing until trusted' '
	mkdir -p repo/.claude &&
	hook repo/evil "touch \"$PWD/evil-ran\"; exit 2" &&
	settings PreToolUse "*" "$PWD/repo/evil" >repo/.claude/settings.json &&
	bash_call "ls" >in &&
	hook-cc -C repo <in >out 2>err &&
	test ! -e evil-ran &&
	test "$(perm 0)" = none &&
	test_grep "ignoring .*/repo/.claude/settings.json.: its hooks are not trusted" err &&
	test_grep "run: hook-cc -C .*/repo. --trust" err &&
	test_expect_code 1 hook-cc -C repo --configured 2>err &&
	hook-cc -C repo --trust >out &&
	test_grep "^trusted .*/repo/.claude/settings.json. (sha256:" out &&
	hook-cc -C repo <in >out 2>err &&
	test -e evil-ran &&
	rm evil-ran &&
	echo " " >>repo/.claude/settings.json &&
	hook-cc -C repo <in >out 2>err &&
	test ! -e evil-ran &&
	test_grep "not trusted" err &&
	ln -s .claude repo/.codex &&
	test_must_fail hook-cc -C repo --configured 2>err &&
	test_grep "symbolic link is not followed" err
'

test_expect_success 'settings hook-cc does not understand are refused' '
	for bad in "[]" "{\"hooks\": []}" "{\"hooks\": {\"PreToolUse\": {}}}" \
		"{\"hooks\": {\"PreToolUse\": [{\"matcher\": 1, \"hooks\": []}]}}" \
		"{\"hooks\": {\"PreToolUse\": [{\"hooks\": [{\"type\": \"command\"}]}]}}" \
		"{\"hooks\": {\"PreToolUse\": [{\"matcher\": \"[\", \"hooks\": [{\"type\": \"command\", \"command\": \"true\"}]}]}}" \
		"{\"hooks\": {\"PreToolUse\": [{\"hooks\": [{\"type\": \"command\", \"command\": \"true\", \"timeout\": -1}]}]}}"
	do
		printf "%s" "$bad" >h.json &&
		test_expect_code 4 hook-cc --hooks h.json </dev/null 2>err || return 1
	done &&
	echo "{\"hooks\": {\"PermissionRequest\": []}}" >h.json &&
	hook-cc --hooks h.json </dev/null 2>err &&
	test_grep "left out: PermissionRequest" err
'

test_expect_success 'Notification: hook-perm runs the hooks before it asks at the terminal (AGENT_HOOKS=1)' '
	hook note "cat >>\"$PWD/notified\"; echo >>\"$PWD/notified\"" &&
	settings Notification permission_prompt "$PWD/note" >h.json &&
	call_msg bash "{\"command\":\"make\"}" none >in &&
	AGENT_HOOKS_FILE=$PWD/h.json "$TEST_DIR/pty-run.py" "hook-perm <in >out" n >tty &&
	test ! -e notified &&
	AGENT_HOOKS=1 AGENT_HOOKS_FILE=$PWD/h.json "$TEST_DIR/pty-run.py" "hook-perm <in >out" n >tty &&
	jq -e ".hook_event_name == \"Notification\" and .notification_type == \"permission_prompt\" and (.message | endswith(\"permission to use bash\"))" notified &&
	test "$(perm 0)" = "deny shell: bash runs a shell command; refused at the terminal"
'

test_expect_success 'agent-run: kill -9 of agent-run alone, or Ctrl-C, stops a hook still running' '
	cat >script <<-\EOF &&
	{"tool_calls": [{"name": "bash", "arguments": {"command": "touch made"}}]}
	{"content": "done"}
	EOF
	start_model script && mkdir w &&
	hook slow "cat >/dev/null; sleep 60 & echo \$! >\"$PWD/sleep.pid\"; wait" &&
	settings PreToolUse Bash "$PWD/slow" 100 >h.json &&
	{ setsid agent-run -y --sandbox off --hooks h.json -C w "make it" >answer 2>progress & pid=$!; } &&
	sid=$(new_session_of $pid) && test -n "$sid" &&
	test_when_finished "kill_session $sid" &&
	wait_until 60 test -s sleep.pid &&
	kill -9 $pid && { wait $pid || :; } &&
	wait_until 10 gone "$(cat sleep.pid)" &&
	test ! -e w/made &&
	rm sleep.pid &&
	wait_until 30 flock -n w/.agent/lock true &&
	start_model script &&
	{ fg_signals agent-run -y --sandbox off --hooks h.json -C w --resume >answer 2>progress & pid=$!; } &&
	wait_until 60 test -s sleep.pid &&
	kill -INT $pid && { wait $pid; test $? = 130; } &&
	wait_until 10 gone "$(cat sleep.pid)" &&
	test ! -e w/made &&
	valid w/.agent/transcript.jsonl
'

# agent-run with hooks, against the scripted model
test_expect_success 'agent-run: a PreToolUse exit 2 blocks the call and the model sees the reason' '
	cat >script <<-\EOF &&
	{"tool_calls": [{"name": "bash", "arguments": {"command": "touch made"}}]}
	{"content": "ok, not made"}
	EOF
	start_model script && mkdir w &&
	hook no "cat >/dev/null; echo \"touching is forbidden by the user\" >&2; exit 2" &&
	settings PreToolUse Bash "$PWD/no" >h.json &&
	agent-run -y --sandbox off --hooks h.json -C w "make it" >answer 2>progress &&
	test ! -e w/made &&
	test "$(cat answer)" = "ok, not made" &&
	tail -n 1 requests.jsonl | jq -e "[.body.messages[] | select(.role == \"tool\")][0].content | contains(\"touching is forbidden by the user\")"
'

test_expect_success 'agent-run: PostToolUse context reaches the model; a Stop hook sends it on once' '
	cat >script <<-\EOF &&
	{"tool_calls": [{"name": "bash", "arguments": {"command": "echo hi"}}]}
	{"content": "done"}
	{"content": "done, really"}
	EOF
	start_model script && mkdir w &&
	hook post "echo \"{\\\"hookSpecificOutput\\\": {\\\"hookEventName\\\": \\\"PostToolUse\\\", \\\"additionalContext\\\": \\\"lint: 3 warnings\\\"}}\"" &&
	hook stop "cat >\"$PWD/stop-input.\$\$\"; echo \"run the linter first\" >&2; exit 2" &&
	jq -n --arg p "$PWD/post" --arg s "$PWD/stop" "{hooks: {PostToolUse: [{hooks: [{type: \"command\", command: \$p}]}], Stop: [{hooks: [{type: \"command\", command: \$s}]}]}}" >h.json &&
	agent-run -y --sandbox off --hooks h.json -C w "say hi" >answer 2>progress &&
	test "$(cat answer)" = "done, really" &&
	test_line_count = 3 requests.jsonl &&
	sed -n 2p requests.jsonl | jq -e "[.body.messages[] | select(.role == \"tool\")][0].content | contains(\"lint: 3 warnings\")" &&
	tail -n 1 requests.jsonl | jq -e ".body.messages[-1] | .role == \"user\" and (.content | contains(\"run the linter first\"))" &&
	test_grep "a Stop hook did not let the model stop" progress &&
	cat stop-input.* >stop-input &&
	jq -s -e "length == 1" stop-input >/dev/null &&
	jq -e ".hook_event_name == \"Stop\" and .stop_hook_active == false" stop-input
'

test_expect_success 'agent-run: an untrusted .claude/settings.json of the directory runs nothing' '
	cat >script <<-\EOF &&
	{"tool_calls": [{"name": "bash", "arguments": {"command": "echo hi"}}]}
	{"content": "done"}
	EOF
	start_model script && mkdir -p w/.claude &&
	hook w/evil "cat >/dev/null; touch \"$PWD/evil-ran\"" &&
	jq -n --arg c "$PWD/w/evil" "{hooks: {PreToolUse: [{hooks: [{type: \"command\", command: \$c}]}], SessionStart: [{hooks: [{type: \"command\", command: \$c}]}], UserPromptSubmit: [{hooks: [{type: \"command\", command: \$c}]}], Stop: [{hooks: [{type: \"command\", command: \$c}]}]}}" >w/.claude/settings.json &&
	agent-run -y --sandbox off -C w "say hi" >answer 2>progress &&
	test ! -e evil-ran &&
	test_grep "its hooks are not trusted" progress &&
	test "$(cat answer)" = done
'

test_expect_success 'agent-run: SessionStart and UserPromptSubmit add context; a block stops the task' '
	cat >script <<-\EOF &&
	{"content": "done"}
	EOF
	start_model script && mkdir w &&
	hook ctx "jq -r \"if .hook_event_name == \\\"SessionStart\\\" then \\\"branch: main (\\\" + .source + \\\")\\\" else \\\"prompt was: \\\" + .prompt end\"" &&
	jq -n --arg c "$PWD/ctx" "{hooks: {SessionStart: [{matcher: \"startup\", hooks: [{type: \"command\", command: \$c}]}], UserPromptSubmit: [{hooks: [{type: \"command\", command: \$c}]}]}}" >h.json &&
	agent-run -y --hooks h.json -C w "say \"hi\"" >answer 2>progress &&
	jq -e ".body.messages[-2:] | map(.content) == [\"Context from a SessionStart hook of the user'\''s settings:\nbranch: main (startup)\", \"Context from a UserPromptSubmit hook of the user'\''s settings:\nprompt was: say \\\"hi\\\"\"]" requests.jsonl &&
	hook block "echo \"{\\\"decision\\\": \\\"block\\\", \\\"reason\\\": \\\"no tasks on Fridays\\\"}\"" &&
	settings UserPromptSubmit "" "$PWD/block" >h.json &&
	test_expect_code 1 agent-run -y --hooks h.json -C w -c "more" >answer 2>progress &&
	test_grep "a UserPromptSubmit hook blocked the task: no tasks on Fridays" progress &&
	test_line_count = 1 requests.jsonl
'

test_done
