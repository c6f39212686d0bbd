#!/bin/sh
# agent-run: the loop end to end against the scripted server, in the ring
# and in --step mode.
. "$(dirname "$0")/lib.sh"

AGENT_MODEL=scripted
export AGENT_MODEL
# blog: a fresh copy of the demo project in ./blog
blog() { cp -R "$SRC_DIR/examples/blog" blog; }
DEMO=$SRC_DIR/examples/demo-session.jsonl
export DEMO


# A session with a jq on PATH that records being run and fails: the
# driver must not need it (15 ms a start).  The task, the system prompt
# and the answer must come through exact, quotes and backslashes too.
no_jq_session() {
	cat >script <<-\EOF &&
	{"tool_calls": [{"name": "bash", "arguments": {"command": "echo one"}}]}
	{"content": "the answer: \"quoted\"\nline 2 \\ \u00e9"}
	EOF
	start_model script && mkdir w fake &&
	printf '#!/bin/sh\necho "$*" >>"%s/jq-ran"\nexit 99\n' "$PWD" >fake/jq &&
	chmod +x fake/jq &&
	task='a task: '\''single'\'' "double" \ back
line 2' &&
	PATH=$PWD/fake:$PATH agent-run "$@" -y -C w "$task" >answer 2>progress &&
	test ! -e jq-ran &&
	printf 'the answer: "quoted"\nline 2 \\ \303\251\n' >expect &&
	test_cmp expect answer &&
	test "$(jq -r -s '.[1] | select(.role == "user") | .content' w/.agent/transcript.jsonl)" = "$task" &&
	sed "s|@WORKDIR@|$(cd w && pwd -P)|g" "$SRC_DIR/share/system-prompt.txt" >expect &&
	jq -j -s '.[0] | select(.role == "system") | .content' w/.agent/transcript.jsonl >actual &&
	printf '\n' >>actual && test_cmp expect actual &&
	test "$(wc -l <w/.agent/audit.jsonl)" -eq "$(wc -l <w/.agent/transcript.jsonl)"
}

for mode in ring step; do
	flag=
	[ $mode = step ] && flag=--step

	test_expect_success "$mode: the demo session reaches its goal" "
		start_model '$DEMO' && blog &&
		agent-run $flag -y -C blog 'add a search box and run the tests' >answer 2>progress &&
		test_contains answer 'Added a search box to the blog' &&
		jq -e '[.todos[].status] | all(. == \"completed\") and length == 4' blog/todo.json &&
		jq -e '.todos[2].id == \"fix-case\"' blog/todo.json &&
		(cd blog && python3 -m unittest) &&
		grep -q 'lower()' blog/search.py &&
		valid blog/.agent/transcript.jsonl &&
		test \"\$(jq -s 'map(select(.role == \"assistant\")) | length' blog/.agent/transcript.jsonl)\" -eq 15 &&
		test \"\$(wc -l <blog/.agent/audit.jsonl)\" -eq \"\$(wc -l <blog/.agent/transcript.jsonl)\" &&
		jq -e -s 'map(.tools[]?) | map(select(.name == \"write_file\"))[0].reason | endswith(\"approved by --yes\")' blog/.agent/audit.jsonl &&
		test_contains progress 'tool-exec: allow bash python3 -m unittest' &&
		test_contains progress '[>] fix-case - Make the search ignore case'
	"

	test_expect_success "$mode: the driver runs no jq program, from the task to the answer" "
		no_jq_session $flag
	"

	test_expect_success "$mode: the stop check fires once when todos are left" "
		cat >script <<-\\EOF &&
		{\"tool_calls\": [{\"name\": \"run_todo_write\", \"arguments\": {\"todos\": [{\"id\": \"a\", \"content\": \"do a\", \"status\": \"in_progress\"}]}}]}
		{\"content\": \"All done!\"}
		{\"content\": \"Still done, I promise.\"}
		EOF
		start_model script && mkdir w &&
		agent-run $flag -y -C w 'do a' >answer 2>progress &&
		test \"\$(cat answer)\" = 'Still done, I promise.' &&
		test_contains progress 'the model stopped with todos left' &&
		jq -s -e '.[-2].role == \"user\" and (.[-2].content | contains(\"[>] a - do a\"))' w/.agent/transcript.jsonl &&
		test \"\$(wc -l <requests.jsonl)\" -eq 3
	"

	test_expect_success "$mode: --stop-checks 0 turns it off" "
		cat >script <<-\\EOF &&
		{\"tool_calls\": [{\"name\": \"run_todo_write\", \"arguments\": {\"todos\": [{\"id\": \"a\", \"content\": \"do a\"}]}}]}
		{\"content\": \"Done.\"}
		EOF
		start_model script && mkdir w &&
		agent-run $flag -y --stop-checks 0 -C w 'do a' >answer 2>progress &&
		test \"\$(cat answer)\" = Done. && test \"\$(wc -l <requests.jsonl)\" -eq 2
	"

	test_expect_success "$mode: the step limit stops it with exit 3, transcript valid" "
		echo '{\"tool_calls\": [{\"name\": \"bash\", \"arguments\": {\"command\": \"echo again\"}}], \"repeat\": true}' >script &&
		start_model script && mkdir w &&
		test_must_fail 3 agent-run $flag -y --max-steps 3 -C w 'loop' >answer 2>progress &&
		test_contains progress 'stopped at the step limit (3 model calls)' &&
		test \"\$(wc -l <requests.jsonl)\" -eq 3 &&
		valid w/.agent/transcript.jsonl
	"

	test_expect_success "$mode: a denied call, and the model recovering" "
		cat >script <<-\\EOF &&
		{\"tool_calls\": [{\"name\": \"bash\", \"arguments\": {\"command\": \"sudo rm -rf /tmp/x\"}}]}
		{\"tool_calls\": [{\"name\": \"bash\", \"arguments\": {\"command\": \"echo without sudo\"}}]}
		{\"content\": \"Done without sudo.\"}
		EOF
		start_model script && mkdir w &&
		agent-run $flag -y -C w 'clean up' >answer 2>progress &&
		test \"\$(cat answer)\" = 'Done without sudo.' &&
		jq -s -e 'map(select(.role == \"tool\"))[0].content == \"Error: permission denied: runs as another user\"' w/.agent/transcript.jsonl &&
		jq -s -e 'map(select(.role == \"tool\"))[1].content == \"without sudo\\n\"' w/.agent/transcript.jsonl &&
		test_contains progress 'tool-exec: deny  bash sudo rm -rf /tmp/x'
	"

	test_expect_success "$mode: a model failing for good ends the run, no hang" "
		echo '{\"status\": 500, \"error\": {\"message\": \"down\"}, \"repeat\": true}' >script &&
		start_model script && mkdir w &&
		test_must_fail 1 timeout 60 agent-run $flag -y -C w 'x' >answer 2>progress &&
		test_contains progress 'agent-step: 500: down, after 2 retries' &&
		test_contains progress 'agent-run: the agent-step stage failed (exit 7)' &&
		test ! -s answer
	"

	test_expect_success "$mode: SIGINT during a long bash call, then --resume" "
		cat >script <<-\\EOF &&
		{\"tool_calls\": [{\"name\": \"bash\", \"arguments\": {\"command\": \"echo started >started; sleep 36.5$$\"}}, {\"name\": \"bash\", \"arguments\": {\"command\": \"touch second\"}}]}
		{\"content\": \"Resumed and done.\"}
		EOF
		start_model script && mkdir w &&
		{ fg_signals agent-run $flag -y -C w 'long' >answer 2>progress & pid=\$!; } &&
		test_when_finished \"kill -9 \$pid 2>/dev/null || :\" &&
		wait_until 10 test -e w/started &&
		kill -INT \$pid &&
		test_expect_code 130 wait \$pid &&
		test_contains progress 'Resume with: agent-run --resume' &&
		valid w/.agent/transcript.jsonl &&
		! pgrep -f 'sleep 36[.]5$$\$' &&
		test ! -e w/second &&
		jq -s -e 'map(select(.role == \"tool\")) | length == 2 and (.[1].content | startswith(\"Error: interrupted by signal 2\"))' w/.agent/transcript.jsonl &&
		agent-run $flag -y --resume -C w >answer 2>progress &&
		test \"\$(cat answer)\" = 'Resumed and done.' &&
		valid w/.agent/transcript.jsonl
	"

	test_expect_success "$mode: kill -9 mid-session, then --resume finishes it" "
		cat >script <<-\\EOF &&
		{\"tool_calls\": [{\"name\": \"bash\", \"arguments\": {\"command\": \"echo one >>log\"}}]}
		{\"tool_calls\": [{\"name\": \"bash\", \"arguments\": {\"command\": \"echo two >>log; touch killme; sleep 37.5$$\"}}]}
		{\"content\": \"Finished after the crash.\"}
		EOF
		start_model script && mkdir w &&
		{ setsid agent-run $flag -y -C w 'crash' >answer 2>progress & pid=\$!; } &&
		sid=\$(new_session_of \$pid) && test -n \"\$sid\" &&
		test_when_finished \"kill_session \$sid\" &&
		wait_until 10 test -e w/killme &&
		kill_session \"\$sid\" && { wait \$pid || :; } && sleep 0.2 &&
		! pgrep -f 'sleep 37[.]5$$\$' &&
		! valid w/.agent/transcript.jsonl &&
		agent-run $flag -y --resume -C w >answer 2>progress &&
		test \"\$(cat answer)\" = 'Finished after the crash.' &&
		test_contains progress 'answered as interrupted, not run again' &&
		valid w/.agent/transcript.jsonl &&
		printf 'one\\ntwo\\n' >expect && test_cmp expect w/log &&
		jq -s -e 'map(select(.role == \"tool\"))[1].content | startswith(\"Error: interrupted: the harness stopped\")' w/.agent/transcript.jsonl
	"
done

# The policy server: its socket is under $TMPDIR
servers() { pgrep -f "[h]ook-perm --serve $PWD/tmp/" || :; }
no_servers() { test -z "$(servers)"; }
# (but for agent-harness/, where agent-step keeps the state of the
# endpoint's rate limit that every session shares: agent-step(1))
tmp_empty() { test -z "$(find tmp -mindepth 1 -maxdepth 1 ! -name agent-harness)"; }

# the servers of our tmp, not the workers a server forks for its clients
# (same command line, a server for a parent)
session_servers() {
	for p in $(servers); do
		pp=$(ps -o ppid= -p "$p" | tr -d " ")
		ps -o args= -p "$pp" | grep -q "hook-perm --serve" || echo "$p"
	done | wc -l
}

# A hook-perm first on PATH that runs the real one with WHO=server for
# --serve, WHO=client otherwise, and a policy that denies what the server
# evaluates: a call denied by rule "who" was decided by the server.
mkdir "$SCRATCH/who"
cat >"$SCRATCH/who/hook-perm" <<SH
#!/bin/sh
WHO=client
case " \$* " in *" --serve "*) WHO=server ;; esac
export WHO
exec "$(command -v hook-perm)" "\$@"
SH
chmod +x "$SCRATCH/who/hook-perm"
# agent-run runs the programs installed beside it (never others found on
# PATH): the rest of them, beside the wrapper
for p in "$AH_BIN"/*; do
	[ -e "$SCRATCH/who/${p##*/}" ] || ln -s "$p" "$SCRATCH/who/"
done
cat >"$SCRATCH/who.json" <<'JSON'
{"default": "allow", "rules": [
 {"name": "who", "if": "env.WHO == \"server\"", "decision": "deny",
  "reason": "evaluated by the server"}]}
JSON

for mode in ring step; do
	flag=
	[ $mode = step ] && flag=--step

	test_expect_success "$mode: the policy server decides the calls" "
		cat >script <<-\\EOF &&
		{\"tool_calls\": [{\"name\": \"bash\", \"arguments\": {\"command\": \"touch one\"}}]}
		{\"tool_calls\": [{\"name\": \"bash\", \"arguments\": {\"command\": \"touch two\"}}]}
		{\"content\": \"Done.\"}
		EOF
		start_model script && mkdir w &&
		PATH=\$SCRATCH/who:\$PATH agent-run $flag -y --policy \"\$SCRATCH/who.json\" -C w go >answer 2>progress &&
		test \"\$(cat answer)\" = Done. &&
		jq -s -e 'map(select(.role == \"tool\") | .content) == [\"Error: permission denied: evaluated by the server\", \"Error: permission denied: evaluated by the server\"]' w/.agent/transcript.jsonl &&
		test ! -e w/one && test ! -e w/two
	"

	test_expect_success "$mode: one policy server for the session, gone when it ends" "
		cat >script <<-\\EOF &&
		{\"tool_calls\": [{\"name\": \"bash\", \"arguments\": {\"command\": \"touch started; while [ ! -e go ]; do sleep 0.05; done\"}}]}
		{\"tool_calls\": [{\"name\": \"bash\", \"arguments\": {\"command\": \"echo two\"}}]}
		{\"content\": \"Done.\"}
		EOF
		start_model script && mkdir w tmp &&
		{ TMPDIR=\$PWD/tmp setsid agent-run $flag -y -C w count >answer 2>progress &
		  pid=\$!; } &&
		sid=\$(new_session_of \$pid) && test -n \"\$sid\" &&
		test_when_finished \"kill_session \$sid\" &&
		wait_until 30 test -e w/started &&
		test \"\$(session_servers)\" = 1 &&
		touch w/go &&
		wait \$pid &&
		test \"\$(cat answer)\" = Done. &&
		wait_until 10 no_servers &&
		wait_until 10 tmp_empty
	"

	test_expect_success "$mode: the policy server ends with agent-run, also after kill -9" "
		echo '{\"delay\": 30, \"content\": \"late\"}' >script &&
		start_model script && mkdir w tmp &&
		{ TMPDIR=\$PWD/tmp setsid agent-run $flag -y -C w wait >answer 2>progress &
		  run=\$!; } &&
		sid=\$(new_session_of \$run) && test -n \"\$sid\" &&
		test_when_finished \"kill_session \$sid\" &&
		wait_until 10 test -s requests.jsonl &&
		wait_until 10 test -n \"\$(servers)\" &&
		kill -9 \$run &&
		wait_until 3 no_servers
	"

	# its socket's path too long for a unix socket: no server starts
	test_expect_success "$mode: a policy server that cannot start: the rules still decide" "
		cat >script <<-\\EOF &&
		{\"tool_calls\": [{\"name\": \"bash\", \"arguments\": {\"command\": \"sudo touch one\"}}]}
		{\"tool_calls\": [{\"name\": \"bash\", \"arguments\": {\"command\": \"touch two\"}}]}
		{\"content\": \"Done.\"}
		EOF
		start_model script && mkdir w &&
		long=\$PWD/\$(printf '%0100d' 0) && mkdir \"\$long\" &&
		TMPDIR=\$long agent-run $flag -y -C w go >answer 2>progress &&
		test \"\$(cat answer)\" = Done. &&
		test_contains progress 'agent-run: no policy server: hook-perm compiles the rules itself' &&
		jq -s -e 'map(select(.role == \"tool\"))[0].content == \"Error: permission denied: runs as another user\"' w/.agent/transcript.jsonl &&
		test ! -e w/one && test -e w/two
	"
done

test_expect_success 'a torn last line is cut back, and the run goes on' '
	echo "{\"content\": \"After the repair.\"}" >script &&
	start_model script && mkdir -p w/.agent &&
	printf "%s\n" "{\"role\":\"system\",\"content\":\"s\"}" "{\"role\":\"user\",\"content\":\"go\"}" >w/.agent/transcript.jsonl &&
	printf "{\"role\":\"assistant\",\"content\":\"half wri" >>w/.agent/transcript.jsonl &&
	agent-session -C w --claim torn 2>/dev/null &&
	agent-run -y --resume -C w >answer 2>progress &&
	test "$(cat answer)" = "After the repair." &&
	test_contains progress "the last line of .agent/transcript.jsonl was torn (39 bytes): cut back" &&
	valid w/.agent/transcript.jsonl &&
	test "$(wc -l <w/.agent/transcript.jsonl)" -eq 3
'

test_expect_success 'an earlier transcript is kept, never overwritten' '
	printf "%s\n" "{\"content\": \"one\"}" "{\"content\": \"two\"}" >script &&
	start_model script && mkdir w &&
	agent-run -C w first >/dev/null 2>&1 &&
	agent-run -C w second >/dev/null 2>&1 &&
	test "$(ls w/.agent/sessions/*.jsonl | wc -l)" -eq 1 &&
	grep -q "\"first\"" w/.agent/sessions/*.jsonl &&
	grep -q "\"second\"" w/.agent/transcript.jsonl
'

test_expect_success 'the task from stdin, --system, and -q' '
	echo "{\"content\": \"ok\"}" >script &&
	start_model script && mkdir w &&
	echo "You are terse." >sys &&
	echo "the task from stdin" | agent-run -q --system sys -C w >answer 2>progress &&
	test "$(cat answer)" = ok && test ! -s progress &&
	jq -s -e ".[0].content == \"You are terse.\" and .[1].content == \"the task from stdin\"" w/.agent/transcript.jsonl
'

test_expect_success 'the built-in system prompt has the seed rules and the directory' '
	echo "{\"content\": \"ok\"}" >script &&
	start_model script && mkdir w &&
	agent-run -C w task >/dev/null 2>&1 &&
	jq -r ".messages[0].content" requests.jsonl 2>/dev/null | head -0 &&
	jq -r ".body.messages[0].content" requests.jsonl >prompt &&
	test_contains prompt "working in the directory $(cd w && pwd -P)" &&
	test_contains prompt "first call run_todo_write" &&
	test_contains prompt "At most one item is in_progress" &&
	test_contains prompt "A simple one-step task needs no todo list"
'

test_expect_success 'examples/one-step.sh: one step by hand' '
	echo "{\"tool_calls\": [{\"name\": \"read_file\", \"arguments\": {\"path\": \"f\"}}]}" >script &&
	start_model script && echo hi >f &&
	echo "{\"role\":\"user\",\"content\":\"read f\"}" >t.jsonl &&
	"$SRC_DIR/examples/one-step.sh" t.jsonl >last 2>progress &&
	jq -e ".role == \"tool\" and .content == \"hi\\n\"" last &&
	valid t.jsonl && test "$(wc -l <t.jsonl)" -eq 3
'

test_expect_success 'examples/truncate-hook.sh: a jq filter as a hook' '
	jq -nc "{role: \"tool\", tool_call_id: \"a\", content: (\"x\" * 50)}, {role: \"user\", content: (\"y\" * 50)}" >in &&
	"$SRC_DIR/examples/truncate-hook.sh" 10 <in >out &&
	jq -s -e ".[0].content == (\"x\" * 10 + \"\\n[cut by truncate-hook: 40 more characters]\") and .[1].content == (\"y\" * 50)" out
'

test_expect_success 'examples/plan-only.sh: a plan, and nothing else done' '
	cat >script <<-\EOF &&
	{"tool_calls": [{"name": "bash", "arguments": {"command": "touch changed"}}]}
	{"tool_calls": [{"name": "run_todo_write", "arguments": {"todos": [{"id": "m", "content": "Move to meson"}]}}]}
	{"content": "Planned."}
	EOF
	start_model script && mkdir w &&
	"$SRC_DIR/examples/plan-only.sh" -C w "migrate" >plan &&
	test ! -e w/changed &&
	printf "Current todos:\n[ ] m - Move to meson\n" >expect && test_cmp expect plan
'

test_expect_success 'a second agent-run in the same directory is refused' '
	echo "{\"tool_calls\": [{\"name\": \"bash\", \"arguments\": {\"command\": \"touch busy; sleep 38.5\"}}], \"repeat\": true}" >script &&
	start_model script && mkdir w &&
	{ setsid agent-run -y -C w "first" >/dev/null 2>&1 & pid=$!; } &&
	sid=$(new_session_of $pid) && test -n "$sid" &&
	test_when_finished "kill_session $sid" &&
	wait_until 10 test -e w/busy &&
	test_must_fail 1 timeout 20 agent-run -y -C w "second" 2>err &&
	test_contains err "agent-run: another agent-run is working in"
'

if [ -n "${AH_VALGRIND:-}${AH_NO_SANDBOX:-}" ]; then
	test_skip 'the sandbox: commands cannot touch the session' 'no sandbox here'
else
test_expect_success 'the sandbox: commands cannot touch the session, --sandbox off can' '
	cat >script <<-\EOF &&
	{"tool_calls": [{"name": "bash", "arguments": {"command": "echo {} >>.agent/transcript.jsonl; echo x >../outside; echo x >>\"$AGENT_POLICY\"; echo here >inside"}}]}
	{"content": "Tried."}
	EOF
	start_model script && mkdir w && echo "{}" >rules.json &&
	agent-run -y -C w --policy rules.json "try" >answer 2>progress &&
	valid w/.agent/transcript.jsonl && ! test -e outside &&
	test "$(cat rules.json)" = "{}" && test "$(cat w/inside)" = here &&
	jq -s -r "map(select(.role == \"tool\"))[0].content" w/.agent/transcript.jsonl >result &&
	test_contains result ".agent/transcript.jsonl: Read-only file system" &&
	test_grep -E "[.][.]/outside: (Permission denied|Read-only file system)" result &&
	stop_models && start_model script && mkdir v &&
	agent-run -y -C v --sandbox off "try" >answer 2>progress &&
	test -e outside &&
	test_must_fail 2 agent-run --sandbox wide task 2>err &&
	test_contains err "unknown mode '\''wide'\''"
'
fi

test_expect_success 'usage errors exit 2' '
	test_must_fail 2 agent-run --bogus 2>err &&
	test_contains err "agent-run: unknown option '\''--bogus'\''" &&
	AGENT_MODEL= test_must_fail 2 agent-run task 2>err &&
	test_contains err "no model" &&
	test_must_fail 2 agent-run --max-steps x task 2>err &&
	test_must_fail 2 agent-run --resume task 2>err &&
	agent-run --help >out && test_contains out "usage: agent-run"
'

test_done
