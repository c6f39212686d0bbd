#!/bin/sh
# A newcomer's day (issue 28): the small things that misled, each as it
# was met: the scripts' exit statuses, what make install leaves, the
# commands printed in the examples' headers.
. "$(dirname "$0")/lib.sh"

test_expect_success 'agent-session --list -C a directory that is not there: an error, not an empty list' '
	test_expect_code 3 agent-session --list -C "$PWD/nonexistent" >out 2>err &&
	test ! -s out &&
	test_grep "^agent-session: cannot read .*/nonexistent.*: No such file or directory$" err &&
	mkdir empty &&
	agent-session --list -C empty >out 2>err &&
	test ! -s out && test ! -s err
'

test_expect_success 'examples/plan-only.sh: the plan is shown, and the exit status is agent-run'"'"'s' '
	unset AGENT_MODEL &&
	test_expect_code 2 sh "$SRC_DIR/examples/plan-only.sh" -C . "plan it" >out 2>err &&
	test_grep "^agent-run: no model" err &&
	test_grep "No active todos" out
'

test_expect_success 'examples/todo-plan.sh: the commands of its header work as printed' '
	sed -n "s|^#   examples/todo-plan.sh \\([^#]*\\).*|\\1|p" "$SRC_DIR/examples/todo-plan.sh" >cmds &&
	test_line_count = 4 cmds &&
	while read -r line; do
		eval "set -- $line" &&
		sh "$SRC_DIR/examples/todo-plan.sh" "$@" >>out || return 1
	done <cmds &&
	jq -e ".todos == [{id: \"task-1\", content: \"Run the tests\", status: \"completed\"}]" todo.json
'

test_expect_success 'make install: the programs, the pages, the system prompt and the examples' '
	make -C "$SRC_DIR" --no-print-directory -s BUILD="${AH_BIN%/bin}" \
		DESTDIR="$PWD/inst" PREFIX=/usr install >log 2>&1 &&
	for p in agent-run agent-step tool-exec hook-perm; do
		test -x "inst/usr/bin/$p" || return 1
	done &&
	test -f inst/usr/share/agent-harness/system-prompt.txt &&
	test -f inst/usr/share/man/man1/agent-run.1 &&
	for e in "$SRC_DIR"/examples/*.sh; do
		test -x "inst/usr/share/agent-harness/examples/${e##*/}" || return 1
	done &&
	test_expect_code 2 sh inst/usr/share/agent-harness/examples/parallel.sh 2>err &&
	test_grep "^usage: parallel.sh" err
'

if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null; then
	test_expect_success 'tools/deps.sh names python3 when it is missing' '
		d=$(mktemp -d "$AH_TMPDIR/ah-deps.XXXXXX") &&
		test_when_finished "rm -rf \"$d\"" &&
		for c in sh cc gcc cpp as ld prove perl jq shellcheck mandoc pgrep script curl wget nc git parallel rg id printf; do
			p=$(command -v $c) && ln -s "$p" "$d/" || return 1
		done &&
		chmod 755 "$d" &&
		test_expect_code 1 setpriv --reuid=65534 --regid=65534 --clear-groups \
			env PATH="$d" sh "$SRC_DIR/tools/deps.sh" 2>err &&
		test_grep "^agent-harness: missing packages: python3$" err
	'
else
	test_skip 'tools/deps.sh names python3 when it is missing' 'needs root and setpriv'
fi

AGENT_MODEL=scripted
export AGENT_MODEL

test_expect_success 'a run that ends with todo items left says so on its last line' '
	cat >script <<-\EOF &&
	{"tool_calls": [{"name": "run_todo_write", "arguments": {"todos": [{"id": "a", "content": "Step A", "status": "completed"}, {"id": "b", "content": "Step B", "status": "pending"}, {"id": "c", "content": "Step C", "status": "in_progress"}]}}]}
	{"content": "Half done."}
	EOF
	start_model script && mkdir w &&
	agent-run -y --stop-checks 0 -C w "do a, b and c" >answer 2>progress &&
	test "$(cat answer)" = "Half done." &&
	test "$(tail -n 1 progress)" = "agent-run: 2 todo items left: b - Step B; c - Step C"
'

test_expect_success 'a run that ends with its list done, or with none, says nothing of todos' '
	cat >script <<-\EOF &&
	{"tool_calls": [{"name": "run_todo_write", "arguments": {"todos": [{"id": "a", "content": "Step A", "status": "completed"}]}}]}
	{"content": "Done."}
	{"content": "Nothing to plan."}
	EOF
	start_model script && mkdir w &&
	agent-run -y -C w "do a" >answer 2>progress &&
	test_grep ! "todo item" progress &&
	agent-run -y -C w "again" >answer 2>progress &&
	test "$(cat answer)" = "Nothing to plan." &&
	test_grep ! "todo item" progress
'

test_expect_success 'a headless run without -y: the denials are said at the end, whole, and listed in the --json result' '
	cat >script <<-\EOF &&
	{"tool_calls": [{"name": "bash", "arguments": {"command": "touch a"}}, {"name": "write_file", "arguments": {"path": "b", "content": "x"}}]}
	{"content": "All done: I made a and b."}
	EOF
	start_model script && mkdir w &&
	agent-run --json -C w "make a and b" >events 2>progress &&
	test ! -e w/a && test ! -e w/b &&
	test "$(tail -n 1 progress)" = "agent-run: 2 tool calls were denied (no terminal to ask): rerun with -y, or allow them with a rule" &&
	test_grep "deny  bash touch a -> Error: permission denied: .*there is none: allow it with a rule in .agent/policy.json, or run with --yes$" progress &&
	tail -n 1 events >result &&
	jq -e ".type == \"result\" and .status == \"done\" and .run.denied == 2 and
		(.denied | map(.tool)) == [\"bash\", \"write_file\"] and
		(.denied[0].reason | test(\"asking needs a terminal\"))" result
'

test_expect_success 'a run whose calls were all allowed says nothing of denials, and lists none' '
	cat >script <<-\EOF &&
	{"tool_calls": [{"name": "bash", "arguments": {"command": "touch a"}}]}
	{"content": "Made a."}
	EOF
	start_model script && mkdir w &&
	agent-run -y --json -C w "make a" >events 2>progress &&
	test -e w/a &&
	test_grep ! "denied" progress &&
	tail -n 1 events | jq -e ".denied == [] and .run.denied == 0"
'

test_expect_success 'at a terminal the answer is shown once; into a file, it is there whole too' '
	cat >script <<-\EOF &&
	{"content": "The one answer."}
	{"content": "The second answer."}
	EOF
	start_model script && mkdir w &&
	python3 "$TEST_DIR/pty-run.py" "agent-run -C w hi; echo \"exit \$?\"" >tty &&
	test_grep "^exit 0" tty &&
	test "$(grep -c "The one answer" tty)" = 1 &&
	python3 "$TEST_DIR/pty-run.py" "agent-run -C w -c again >out; echo \"exit \$?\"" >tty &&
	test_grep "^exit 0" tty &&
	test "$(grep -c "The second answer" tty)" = 1 &&
	test "$(cat out)" = "The second answer."
'

test_expect_success '-c and --sessions from a subdirectory of the repository: the session at its top' '
	cat >script <<-\EOF &&
	{"content": "First."}
	{"content": "Second."}
	EOF
	start_model script && mkdir r && git -C r init -q && mkdir -p r/src/deep &&
	agent-run -C r "start" >answer 2>progress &&
	(cd r/src/deep && agent-run -c "go on" >../../../answer 2>../../../progress) &&
	test "$(cat answer)" = Second. &&
	test_grep "^agent-run: the session of .*/r.$" progress &&
	test ! -e r/src/.agent && test ! -e r/src/deep/.agent &&
	test "$(grep -c "^{\"role\":\"user\"" r/.agent/transcript.jsonl)" = 2 &&
	(cd r/src && agent-run --sessions >../../list) &&
	test_line_count = 1 list
'

test_expect_success '-c where there is no session: refused, and nothing written' '
	mkdir r && git -C r init -q && mkdir r/src &&
	(cd r/src && test_expect_code 2 agent-run -c "go on" >out 2>err) &&
	test_grep "no session to continue" r/src/err &&
	test ! -e r/src/.agent && test ! -e r/.agent &&
	mkdir plain &&
	test_expect_code 1 agent-run --resume -C plain 2>err &&
	test_grep "nothing to resume" err &&
	test ! -e plain/.agent &&
	mkdir -p made/.agent &&
	test_expect_code 2 agent-run -c -C made "go on" 2>err &&
	test_grep "no session to continue" err &&
	test -z "$(ls -A made/.agent)"
'

test_expect_success '.agent ignores itself: after a session, git status shows nothing of it' '
	echo "{\"content\": \"Done.\"}" >script &&
	start_model script && mkdir r && git -C r init -q &&
	AGENT_TODO_FILE=.agent/todo.json agent-run -C r "hi" >answer 2>progress &&
	test "$(cat r/.agent/.gitignore)" = "*" &&
	git -C r status --porcelain --untracked-files=all >status &&
	test_line_count = 0 status
'

test_expect_success 'a .gitignore planted as a link in .agent is refused, its target untouched' '
	mkdir -p r/.agent && echo keep >target &&
	ln -s ../../target r/.agent/.gitignore &&
	test_expect_code 1 agent-run -C r "hi" 2>err &&
	test_grep "is a symbolic link: refusing" err &&
	test "$(cat target)" = keep
'

test_expect_success 'a wrong base URL: the URL asked, what came, and the usual cause' '
	cat >script <<-\EOF &&
	{"raw": "404 page not found", "status": 404, "ctype": "text/plain"}
	{"raw": "<html><body>Welcome</body></html>", "ctype": "text/html"}
	{"raw": "<html><body>Welcome</body></html>", "ctype": "text/html"}
	EOF
	start_model script &&
	base=${AGENT_BASE_URL%/v1} &&
	user hi >in &&
	test_expect_code 6 agent-step -m x --base-url "$base" --retries 0 <in 2>err &&
	test_grep "^agent-step: 404: 404 page not found; POST $base/chat/completions answered 404 with text/plain: is that the API.s address (does the base URL end in /v1?)" err &&
	test_expect_code 8 agent-step -m x --retries 0 <in 2>err &&
	test_grep "^agent-step: the answer is not a JSON object.*; POST $AGENT_BASE_URL/chat/completions answered 200 with text/html: .*does the base URL end in /v1" err &&
	test_expect_code 8 agent-step -m x --retries 0 --stream <in 2>err &&
	test_grep "^agent-step: the answer is no stream of events; POST $AGENT_BASE_URL/chat/completions answered 200 with text/html: .*does the base URL end in /v1" err
'

test_expect_success 'options are checked before anything is written, in agent-run'"'"'s words, exit 2' '
	mkdir w &&
	echo "{\"content\": \"First.\"}" >script &&
	start_model script &&
	agent-run -C w "first" >answer 2>progress &&
	cp w/.agent/transcript.jsonl before &&
	for o in "--policy nope.json" "--system nope.txt" "--base-url localhost:8080" \
		"--base-url ftp://x/v1" "--context-window 100"; do
		# shellcheck disable=SC2086
		test_expect_code 2 agent-run $o -C w "task" >out 2>err &&
		test_grep "^agent-run: ${o%% *}: " err &&
		test_grep ! "Broken pipe\|AGENT_\|^cat:" err &&
		test_cmp before w/.agent/transcript.jsonl || return 1
	done &&
	test_line_count = 0 out
'

test_expect_success 'a new session that failed before the model answered does not take the place of the last one' '
	cat >script <<-\EOF &&
	{"content": "First."}
	{"content": "Second, after First."}
	EOF
	start_model script && mkdir w &&
	agent-run -C w "first" >answer 2>progress &&
	test_expect_code 1 agent-run -C w --base-url http://127.0.0.1:1/v1 "lost" >answer 2>progress &&
	test_grep "failed before the model answered: .* is the last session again" progress &&
	agent-run -C w -c "go on" >answer 2>progress &&
	test "$(cat answer)" = "Second, after First." &&
	req 2 ".messages | map(.content) | .[1:]" >msgs &&
	jq -e ". == [\"first\", \"First.\", \"go on\"]" msgs &&
	agent-run -C w --sessions >list &&
	test_line_count = 2 list &&
	jq -s -e "map(.status) | sort == [\"done\", \"failed\"]" list
'

test_expect_success '--sessions shows the task as typed, and the size of the stdin attached to it' '
	echo "{\"repeat\": true, \"content\": \"ok\"}" >script &&
	start_model script && mkdir w &&
	seq 1000 >log &&
	agent-run -C w "why does it fail?" <log >answer 2>progress &&
	agent-run -C w --sessions >list &&
	jq -e ".task == \"why does it fail?\" and .stdin_bytes == $(($(wc -c <log) - 1))" list &&
	jq -s -e "map(select(.role == \"user\"))[0].content | contains(\"\n1000\")" w/.agent/transcript.jsonl &&
	agent-run -C w "no stdin" </dev/null >answer 2>progress &&
	agent-run -C w --sessions >all && head -n 1 all >list &&
	jq -e ".task == \"no stdin\" and (has(\"stdin_bytes\") | not)" list
'

test_expect_success '-m MODEL with no AGENT_MODEL in the environment' '
	echo "{\"content\": \"Hi.\"}" >script &&
	start_model script && mkdir w &&
	(unset AGENT_MODEL && agent-run -m my-model -C w "hi" >answer 2>progress) &&
	test "$(cat answer)" = Hi. &&
	test "$(req 1 .model)" = "\"my-model\""
'

test_expect_success '--session ID TASK goes on with that session; a unique prefix of the id does' '
	cat >script <<-\EOF &&
	{"content": "A."}
	{"content": "B."}
	{"content": "More of alpha."}
	{"content": "Again."}
	EOF
	start_model script && mkdir w &&
	agent-run -C w "alpha" >answer 2>progress &&
	a=$(sed -n "s/^agent-run: session //p" progress) &&
	agent-run -C w "beta" >answer 2>progress &&
	b=$(sed -n "s/^agent-run: session //p" progress) &&
	agent-run -C w --session "$a" "more" >answer 2>progress &&
	test "$(cat answer)" = "More of alpha." &&
	req 3 "[.messages[1:][] | .content]" >msgs &&
	jq -e ". == [\"alpha\", \"A.\", \"more\"]" msgs &&
	test "$(sed -n "s/^{\"id\":\"\([^\"]*\)\".*/\1/p" w/.agent/session.json)" = "$a" &&
	common=$(printf "%s\n%s\n" "$a" "$b" | sed -e "N;s/^\(.*\).*\n\1.*$/\1/") &&
	test_expect_code 2 agent-run -C w --session "$common" "again" 2>err &&
	test_grep "starts the ids of 2 sessions" err &&
	test_expect_code 1 agent-run -C w --session "X$a" "again" 2>err &&
	test_grep "no session .X$a." err &&
	agent-run -C w --session "${b%?}" "again" >answer 2>progress &&
	test "$(cat answer)" = "Again." &&
	test "$(sed -n "s/^{\"id\":\"\([^\"]*\)\".*/\1/p" w/.agent/session.json)" = "$b"
'

test_expect_success '-o FILE: the final answer into FILE too, also with --json; a FILE in no directory is refused first' '
	echo "{\"repeat\": true, \"content\": \"The answer.\"}" >script &&
	start_model script && mkdir w &&
	agent-run -C w -o last.txt "hi" >answer 2>progress &&
	test "$(cat last.txt)" = "The answer." && test_cmp answer last.txt &&
	agent-run -C w --json --output-last-message=last2.txt "hi" >events 2>progress &&
	test "$(cat last2.txt)" = "The answer." &&
	agent-run -C w --sessions >before &&
	test_expect_code 2 agent-run -C w -o nodir/last.txt "hi" 2>err &&
	test_grep "^agent-run: --output-last-message: no directory" err &&
	agent-run -C w --sessions >after &&
	test_cmp before after
'

test_expect_success '--ephemeral: the session is not kept, and the one before is the last again' '
	cat >script <<-\EOF &&
	{"content": "Kept."}
	{"tool_calls": [{"name": "run_todo_write", "arguments": {"todos": [{"id": "x", "content": "passing", "status": "completed"}]}}]}
	{"content": "Passing."}
	{"content": "Back to kept."}
	EOF
	start_model script && mkdir w &&
	agent-run -C w "keep me" >answer 2>progress &&
	agent-run -C w --sessions >before &&
	agent-run -C w -y --ephemeral "just asking" >answer 2>progress &&
	test "$(cat answer)" = Passing. &&
	test ! -e w/todo.json &&
	agent-run -C w --sessions >after &&
	jq -s -e "length == 1 and .[0].task == \"keep me\"" after &&
	agent-run -C w -c "more" >answer 2>progress &&
	test "$(cat answer)" = "Back to kept." &&
	req 4 "[.messages[1:][] | .content]" >msgs &&
	jq -e ". == [\"keep me\", \"Kept.\", \"more\"]" msgs &&
	test_expect_code 2 agent-run -C w --ephemeral -c "x" 2>err &&
	test_grep "ephemeral starts a new session" err
'

# doc_lines FILE START: the lines of the example in FILE that follow the
# line START, to the end of its block, as a script ("$ " taken off)
doc_lines() {
	awk -v start="$2" '
		found && (/^\.Ed/ || /^$/ && n) { exit }
		found { sub(/^\$ /, ""); sub(/^    /, ""); print; n++ }
		index($0, start) == 1 { found = 1; getline; if ($0 !~ /^\.Bd/) { sub(/^    /, ""); print; n++ } }
	' "$1"
}

test_expect_success 'printed examples in an ordinary repository: AGENTS.md, a plan made beside a command, a subagent' '
	cat >script <<-\EOF &&
	{"match": "parent", "tool_calls": [{"name": "run_todo_write", "arguments": {"todos": [{"id": "a", "content": "look", "status": "in_progress"}]}}, {"name": "bash", "arguments": {"command": "ls"}}]}
	{"match": "parent", "tool_calls": [{"name": "task", "arguments": {"description": "d", "prompt": "look around"}}]}
	{"match": "look around", "content": "I looked."}
	{"match": "parent", "content": "Done."}
	EOF
	start_model script && mkdir r && git -C r init -q &&
	echo "Be brief." >r/AGENTS.md &&
	(cd r && agent-run -y --stop-checks 0 "parent task" >answer 2>progress) &&
	doc_lines "$SRC_DIR/man/hook-audit.1" "When the plan changed:" >plan.sh &&
	test_grep "run_todo_write" plan.sh &&
	(cd r && sh -e ../plan.sh) >plan.out &&
	test_grep "\"in_progress\"" plan.out &&
	grep -A 1 "^    agent-run --sessions | jq -r .select(.parent)" "$SRC_DIR/README.md" |
		sed "s/^    //" >kids.sh &&
	test_line_count = 2 kids.sh &&
	(cd r && sh -e ../kids.sh) >kids.out &&
	echo "[\"look around\",\"I looked.\"]" >expect &&
	test_cmp expect kids.out
'

test_expect_success 'the README'"'"'s recipes over what a session leaves, in a session that kept no list' '
	echo "{\"content\": \"Done.\"}" >script &&
	start_model script && mkdir r && git -C r init -q &&
	(cd r && agent-run "hi" >answer 2>progress) &&
	test ! -e r/todo.json &&
	doc_lines "$SRC_DIR/README.md" "Recipes over what a session leaves:" | grep -v "^cp -R" >recipes.sh &&
	test_grep "todo.json" recipes.sh &&
	(cd r && sh -e ../recipes.sh) >out
'

test_expect_success 'the --json result and the session record say why a run failed: agent-step, tool-exec, agent-run' '
	mkdir w &&
	echo "{\"raw\": \"this is no JSON\", \"ctype\": \"application/json\"}" >script &&
	start_model script &&
	test_expect_code 1 agent-run --json -C w "hi" >events 2>progress &&
	tail -n 1 events >result &&
	jq -e ".type == \"result\" and .status == \"failed\" and
		(.error | startswith(\"agent-step: the answer is not a JSON object\"))" result &&
	jq -e ".status == \"failed\" and (.error | startswith(\"agent-step: the answer is not a JSON object\"))" \
		w/.agent/session.json &&
	cat >script <<-\EOF &&
	{"tool_calls": [{"name": "bash", "arguments": {"command": "echo hi"}}]}
	{"content": "Said hi."}
	EOF
	start_model script &&
	AGENT_PASS_ENV=1bad= test_expect_code 1 agent-run -y --json -C w "hi" >events 2>progress &&
	test_grep "Broken pipe" progress &&
	tail -n 1 events >result &&
	jq -e ".status == \"failed\" and
		.error == \"tool-exec: --pass-env or AGENT_PASS_ENV: '"'"'1bad='"'"' is not a variable name\"" result &&
	cat >script <<-\EOF &&
	{"tool_calls": [{"name": "bash", "arguments": {"command": "echo one"}}]}
	{"tool_calls": [{"name": "bash", "arguments": {"command": "echo two"}}]}
	{"content": "Said hi."}
	{"content": "Said it again."}
	EOF
	start_model script &&
	test_expect_code 3 agent-run -y --json --max-steps 1 -C w "hi" >events 2>progress &&
	tail -n 1 events >result &&
	jq -e ".status == \"step-limit\" and
		(.error | startswith(\"agent-run: stopped at the step limit (1 model calls)\"))" result &&
	jq -e ".error | startswith(\"agent-run: stopped at the step limit\")" w/.agent/session.json &&
	mkdir answer.d &&
	test_expect_code 1 agent-run -y --json -o answer.d -C w "hi" >events 2>progress &&
	tail -n 1 events >result &&
	jq -e ".status == \"failed\" and .answer == \"Said hi.\" and
		.error == \"agent-run: the answer could not be written to '"'"'$PWD/answer.d'"'"'\"" result &&
	agent-run -y --json -C w -c "again" >events 2>progress &&
	tail -n 1 events | jq -e ".status == \"done\" and .error == null" &&
	jq -e ".status == \"done\" and .error == null" w/.agent/session.json
'

test_expect_success 'a key in the task and in a tool output: in no file of .agent; the output'"'"'s sent to the model in its step' '
	task_key=sk-proj-TASKKEY0123456789abcdef &&
	tool_key=ghp_TOOLKEY0123456789abcdefghijklmnopq &&
	mkdir w && echo "token=$tool_key" >w/creds &&
	cat >script <<-\EOF &&
	{"tool_calls": [{"name": "bash", "arguments": {"command": "cat creds"}}]}
	{"content": "Read it."}
	{"content": "Again."}
	EOF
	start_model script &&
	agent-run -y --json -C w "log in with $task_key" >events 2>progress &&
	req 2 ".messages[-1].content" >sent &&
	test_grep "$tool_key" sent &&
	req 1 ".messages[1].content" >sent &&
	test "$(cat sent)" = "\"log in with [REDACTED]\"" &&
	agent-run -y -C w "a new one" >answer 2>progress &&
	ls w/.agent/sessions/*.jsonl w/.agent/sessions/*.json &&
	test_must_fail grep -r -l -e "$task_key" -e "$tool_key" -e TASKKEY -e TOOLKEY w/.agent &&
	test_must_fail grep -e TASKKEY -e TOOLKEY events &&
	test_grep "\[REDACTED\]" w/.agent/sessions/*.jsonl &&
	jq -s -e "map(select(.role == \"tool\"))[0].content == \"token=[REDACTED]\n\"" w/.agent/sessions/*.jsonl &&
	jq -e ".task == \"log in with [REDACTED]\"" w/.agent/sessions/*.json
'

if [ "$(id -u)" != 0 ]; then
	test_expect_success 'a read-only checkout: agent-run says so in its own words' '
		mkdir ro && chmod 555 ro &&
		test_when_finished "chmod 755 ro" &&
		test_expect_code 1 agent-run -C ro "hi" 2>err &&
		test_grep "^agent-run: cannot create .*/ro/.agent., where the session is kept: Permission denied; give --state-dir DIR to keep it elsewhere$" err
	'
else
	test_expect_success 'a read-only checkout (a read-only mount): agent-run says so in its own words' '
		mkdir ro &&
		test_expect_code 1 unshare -m sh -c "mount --bind -o ro ro ro 2>/dev/null || mount -o remount,bind,ro ro; agent-run -C ro hi" 2>err &&
		test_grep "^agent-run: cannot create .*/ro/.agent., where the session is kept: Read-only file system; give --state-dir DIR to keep it elsewhere$" err
	'
fi

test_done
