#!/bin/sh
# The task tool (subagents): tool-exec's side of it.  The child sessions
# are played by a stand-in agent-run, first on PATH: it stands in for the
# real child mode of agent-run (issue 18, written at the same time) and
# keeps to the same contract (tool-exec(1), "Subagents: the task tool"):
# the answer on stdout, progress on stderr, exit 0 done, 3 step limit,
# 4 context, 130 interrupted.  End-to-end tests with the real agent-run come with it.
. "$(dirname "$0")/lib.sh"

# The stand-in runs its prompt as shell code, with nap N (an interruptible
# sleep), and records what it was given in $TASK_LOG/ID.*: its argv, its
# environment, its stdin, its open descriptors, its session, its pid and
# its sleep's pid, the number of stand-ins running when it started, and
# the signal that stopped it.
mkdir "$SCRATCH/fake"
cat >"$SCRATCH/fake/agent-run" <<\EOF
#!/bin/sh
log=${TASK_LOG:?}
id=$2
for a; do prompt=$a; done
printf '%s\n' "$@" >"$log/$id.argv"
env | sort >"$log/$id.env"
readlink /proc/self/fd/0 >"$log/$id.stdin"
ls /proc/$$/fd >"$log/$id.fds"
# fields 5 and 6 of stat: the process group and the session
sed 's/^.*) //' /proc/$$/stat | cut -d" " -f3,4 >"$log/$id.sid"
touch "$log/running.$id"
trap 'rm -f "$log/running.$id"' EXIT
trap 'echo TERM >"$log/$id.sig"; kill $sp 2>/dev/null; exit 130' TERM
trap 'echo INT >"$log/$id.sig"; kill $sp 2>/dev/null; exit 130' INT
ls "$log" | grep -c '^running\.' >>"$log/seen"
nap() { sleep "$1" & sp=$!; echo "$sp" >"$log/$id.sleep"; wait "$sp"; }
echo $$ >"$log/$id.pid"
eval "$prompt"
EOF
chmod +x "$SCRATCH/fake/agent-run"
# tool-exec runs the agent-run installed beside it, never one found on
# PATH: a copy of it goes beside the stand-in (under valgrind, run
# through it: /proc/self/exe is still the copy)
if [ -n "${AH_VALGRIND:-}" ]; then
	cp "$AH_BIN/tool-exec" "$SCRATCH/fake/tool-exec-real" &&
	printf '#!/bin/sh
exec valgrind -q --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite,indirect "%s" "$@"
' \
		"$SCRATCH/fake/tool-exec-real" >"$SCRATCH/fake/tool-exec" &&
	chmod +x "$SCRATCH/fake/tool-exec" || exit 1
else
	cp "$AH_BIN/tool-exec" "$SCRATCH/fake/" || exit 1
fi
PATH=$SCRATCH/fake:$PATH
export PATH

# task_msg ID PROMPT [ID PROMPT...]: an assistant message of task calls,
# allowed.
task_msg() {
	while [ $# -gt 1 ]; do
		jq -nc --arg id "$1" --arg p "$2" '{id: $id, type: "function",
			function: {name: "task", arguments: ({description:
			"part \($id)", prompt: $p} | tojson)}, permission:
			{decision: "allow", reason: "test", rule: "test"}}'
		shift 2
	done | jq -sc '{role: "assistant", content: null, tool_calls: .}'
}
# result FILE ID: the content of the result for ID.
result() { jq -j --arg id "$2" 'select(.tool_call_id == $id) | .content' "$1"; }
# now: seconds, with fractions
now() { date +%s.%N; }
# within START SECONDS: less than SECONDS passed since START
within() { awk -v s="$1" -v e="$(now)" -v m="$2" 'BEGIN { exit !(e - s < m) }'; }
# ran ID: the stand-in ran for ID
ran() { test -f "log/$1.argv"; }

export TASK_LOG
TASK_LOG=.

test_expect_success 'schema: task offered at depth 0, not at 1 unless AGENT_MAX_DEPTH allows, at most 3' '
	tool-exec --schema >s0 &&
	jq -e "map(.function.name) | index(\"task\") == length - 1" s0 &&
	jq -e ".[-1].function.parameters.required == [\"description\", \"prompt\"] and
		.[-1].function.parameters.properties.read_only.type == \"boolean\"" s0 &&
	jq -r ".[-1].function.description" s0 >desc &&
	n=$(jq length s0) &&
	test_grep "does not see this conversation" desc &&
	test_grep "final answer" desc &&
	AGENT_DEPTH=1 tool-exec --schema >s1 &&
	jq -e "length == $n - 1 and all(.function.name != \"task\")" s1 &&
	AGENT_DEPTH=1 AGENT_MAX_DEPTH=2 tool-exec --schema >s2 &&
	jq -e "length == $n" s2 &&
	AGENT_MAX_DEPTH=0 tool-exec --schema >s3 &&
	jq -e "length == $n - 1" s3 &&
	AGENT_DEPTH=2 AGENT_MAX_DEPTH=9 tool-exec --schema >s4 2>err4 &&
	jq -e "length == $n" s4 &&
	test_grep "AGENT_MAX_DEPTH=9 is above the hard maximum 3; 3 is used" err4 &&
	AGENT_DEPTH=3 AGENT_MAX_DEPTH=9 tool-exec --schema >s5 2>/dev/null &&
	jq -e "length == $n - 1" s5 &&
	test_expect_code 2 env AGENT_DEPTH=x tool-exec --schema 2>err6 &&
	test_grep "AGENT_DEPTH: .x. is not a whole number" err6 &&
	test_expect_code 2 env AGENT_MAX_TASKS=0 tool-exec --schema 2>/dev/null &&
	test_expect_code 2 env AGENT_MAX_TASKS=17 tool-exec --schema 2>/dev/null
'

test_expect_success 'one child: its answer is the result' '
	mkdir log && TASK_LOG=$PWD/log &&
	task_msg c1 "echo working >&2; echo the answer" >in &&
	tool-exec <in >out 2>err &&
	test_line_count = 1 out &&
	jq -e ".role == \"tool\" and .tool_call_id == \"c1\" and
		.content == \"the answer\"" out &&
	test_grep "^\[task c1\] working$" err &&
	tool-exec -v <in >out 2>err &&
	test_grep "^tool-exec: allow task part c1 -> ok$" err
'

test_expect_success 'the child: --child ID, -- PROMPT, AGENT_DEPTH+1, the env, stdin /dev/null, no other descriptor, a session of its own' '
	mkdir log && TASK_LOG=$PWD/log && mkdir wd &&
	task_msg c7 "-n not an option" >in &&
	AGENT_SESSION=parent-1 AGENT_MODEL=m1 AGENT_API_KEY=k1 AGENT_YES=1 \
		AGENT_POLICY=/x/p.json tool-exec -C wd <in >out 7>seven &&
	printf "%s\n" --child c7 -- "-n not an option" >expect &&
	test_cmp expect log/c7.argv &&
	test_grep "^AGENT_DEPTH=1$" log/c7.env &&
	test_grep "^AGENT_SESSION=parent-1$" log/c7.env &&
	test_grep "^AGENT_MODEL=m1$" log/c7.env &&
	test_grep "^AGENT_API_KEY=k1$" log/c7.env &&
	test_grep "^AGENT_YES=1$" log/c7.env &&
	test_grep "^AGENT_POLICY=/x/p.json$" log/c7.env &&
	test_grep "^AGENT_WORKDIR=$(cd wd && pwd -P)$" log/c7.env &&
	test_grep "^PWD=$(cd wd && pwd -P)$" log/c7.env &&
	test_grep "^AGENT_SANDBOX=${AGENT_SANDBOX:-workspace-write}$" log/c7.env &&
	test_grep "^AGENT_SANDBOX_NETWORK=0$" log/c7.env &&
	test_grep "^AGENT_SANDBOX_GIT=0$" log/c7.env &&
	test "$(cat log/c7.stdin)" = /dev/null &&
	test_grep ! "^7$" log/c7.fds &&
	read -r pgrp sid <log/c7.sid &&
	test "$pgrp" = "$(cat log/c7.pid)" && test "$sid" = "$pgrp" &&
	AGENT_DEPTH=1 AGENT_MAX_DEPTH=3 tool-exec -C wd --allow-network <in >out &&
	test_grep "^AGENT_DEPTH=2$" log/c7.env &&
	test_grep "^AGENT_SANDBOX_NETWORK=1$" log/c7.env
'

test_expect_success 'read_only: the child runs with --sandbox read-only' '
	mkdir log && TASK_LOG=$PWD/log &&
	jq -nc "{role: \"assistant\", content: null, tool_calls: [{id: \"r1\",
		type: \"function\", function: {name: \"task\", arguments:
		({description: \"look\", prompt: \"echo ok\", read_only: true} | tojson)},
		permission: {decision: \"allow\"}}]}" >in &&
	tool-exec <in >out &&
	printf "%s\n" --child r1 --sandbox read-only -- "echo ok" >expect &&
	test_cmp expect log/r1.argv &&
	test "$(result out r1)" = ok
'

if [ -n "${AH_NO_SANDBOX:-}" ]; then
	test_skip 'a read-only parent makes a read-only child' 'no sandbox here'
else
	test_expect_success 'a read-only parent makes a read-only child, whatever its environment says' '
		mkdir log && TASK_LOG=$PWD/log &&
		task_msg p1 "echo ok" >in &&
		AGENT_SANDBOX=off \
			tool-exec --sandbox read-only <in >out &&
		printf "%s\n" --child p1 --sandbox read-only -- "echo ok" >expect &&
		test_cmp expect log/p1.argv &&
		test_grep "^AGENT_SANDBOX=read-only$" log/p1.env &&
		test_grep "^AGENT_SANDBOX_NETWORK=0$" log/p1.env
	'
fi

test_expect_success 'two children run in parallel; the results come in call order' '
	mkdir log && TASK_LOG=$PWD/log &&
	task_msg a1 "nap 2; echo from a1" a2 "nap 1; echo from a2" >in &&
	start=$(now) &&
	tool-exec <in >out &&
	within "$start" 3.5 &&
	jq -r ".tool_call_id" out >ids &&
	printf "a1\na2\n" >expect && test_cmp expect ids &&
	test "$(result out a1)" = "from a1" &&
	test "$(result out a2)" = "from a2" &&
	test_grep "^2$" log/seen
'

test_expect_success 'AGENT_MAX_TASKS=2: five calls, never more than two at once' '
	mkdir log && TASK_LOG=$PWD/log &&
	task_msg m1 "nap 1; echo 1" m2 "nap 1; echo 2" m3 "nap 1; echo 3" \
		m4 "nap 1; echo 4" m5 "nap 1; echo 5" >in &&
	start=$(now) &&
	AGENT_MAX_TASKS=2 tool-exec <in >out &&
	! within "$start" 2.9 &&
	test_line_count = 5 log/seen &&
	test "$(sort -n log/seen | tail -n 1)" = 2 &&
	jq -j ".content" out >all &&
	test "$(cat all)" = 12345
'

test_expect_success 'other calls keep their order around a run of task calls, which runs together' '
	mkdir log && TASK_LOG=$PWD/log &&
	task_msg t1 "nap 2; echo one" t2 "nap 2; echo two" >tasks &&
	jq -c ".tool_calls = [{id: \"b1\", type: \"function\", function: {name: \"bash\",
		arguments: \"{\\\"command\\\":\\\"echo before\\\"}\"}, permission: {decision: \"allow\"}}]
		+ .tool_calls + [{id: \"b2\", type: \"function\", function: {name: \"bash\",
		arguments: \"{\\\"command\\\":\\\"echo after\\\"}\"}, permission: {decision: \"allow\"}}]" tasks >in &&
	start=$(now) &&
	tool-exec <in >out &&
	within "$start" 3.5 &&
	jq -r "[.tool_call_id, (.content | rtrimstr(\"\\n\"))] | join(\" \")" out >got &&
	printf "b1 before\nt1 one\nt2 two\nb2 after\n" >expect &&
	test_cmp expect got
'

test_expect_success 'a child that hits its step limit, fails, is interrupted or killed: an error result, and the next call runs' '
	mkdir log && TASK_LOG=$PWD/log &&
	task_msg s3 "echo partial answer; exit 3" s1 "echo boom >&2; exit 1" \
		s130 "exit 130" s4 "exit 4" s9 "kill -9 \$\$" >tasks &&
	jq -c ".tool_calls += [{id: \"b\", type: \"function\", function: {name: \"bash\",
		arguments: \"{\\\"command\\\":\\\"echo next\\\"}\"}, permission: {decision: \"allow\"}}]" tasks >in &&
	tool-exec <in >out 2>err &&
	test_line_count = 6 out &&
	printf "Error: task: the subagent reached its step limit before it finished (exit status 3).\nIts answer:\npartial answer" >expect &&
	result out s3 >got && test_cmp expect got &&
	printf "Error: task: the subagent failed with exit status 1.\nThe last lines of its stderr:\nboom" >expect &&
	result out s1 >got && test_cmp expect got &&
	test "$(result out s130)" = "Error: task: the subagent was interrupted (exit status 130)." &&
	test "$(result out s4)" = "Error: task: the subagent'"'"'s conversation no longer fits the model'"'"'s context (exit status 4)." &&
	test "$(result out s9)" = "Error: task: the subagent was killed by signal 9." &&
	test "$(result out b)" = next
'

test_expect_success 'a long answer is bounded by --max-output, head and tail kept, the cut marked' '
	mkdir log && TASK_LOG=$PWD/log &&
	task_msg l1 "echo HEAD; head -c 20000 /dev/zero | tr \"\\\\0\" x; echo; echo TAIL" >in &&
	tool-exec --max-output 1000 <in >out &&
	result out l1 >got &&
	test "$(wc -c <got)" -lt 1100 &&
	test "$(head -n 1 got)" = HEAD &&
	test "$(tail -n 1 got)" = TAIL &&
	test_grep "^\[\.\.\. [0-9]* bytes cut \.\.\.\]$" got
'

test_expect_success 'the children'"'"'s progress passes through in whole lines, never mixed' '
	mkdir log && TASK_LOG=$PWD/log &&
	task_msg w1 "printf AAA >&2; nap 0.6; printf \"AAA\\\\nend\" >&2" \
		w2 "nap 0.3; printf \"BBB\\\\n\" >&2" >in &&
	tool-exec <in >out 2>err &&
	printf "[task w2] BBB\n[task w1] AAAAAA\n[task w1] end\n" >expect &&
	test_cmp expect err
'

test_expect_success 'what a child leaves behind does not hold up its result, and is killed' '
	mkdir log && TASK_LOG=$PWD/log &&
	task_msg o1 "setsid sleep 31.5 & echo \$! >\$log/o1.left; echo done" >in &&
	start=$(now) &&
	tool-exec <in >out &&
	within "$start" 3 &&
	test "$(result out o1)" = done &&
	wait_until 5 gone $(cat log/o1.left)
'

test_expect_success 'a task call where the depth allows none is refused, never run' '
	mkdir log && TASK_LOG=$PWD/log &&
	task_msg d1 "echo ran" >in &&
	AGENT_DEPTH=1 tool-exec <in >out &&
	test "$(result out d1)" = "Error: task: no subagent can be started at this depth (AGENT_DEPTH=1, AGENT_MAX_DEPTH=1); do this part yourself." &&
	! ran d1
'

test_expect_success 'bad arguments are refused, never run' '
	mkdir log && TASK_LOG=$PWD/log &&
	long=$(printf "%0101d" 0) &&
	jq -nc --arg long "$long" "{role: \"assistant\", content: null, tool_calls: [
		{id: \"e1\", args: {description: \"d\"}},
		{id: \"e2\", args: {description: \$long, prompt: \"echo x\"}},
		{id: \"e3\", args: {description: \"d\", prompt: \" \\n\"}},
		{id: \"e4\", args: {description: \"d\", prompt: \"echo x\", read_only: \"yes\"}},
		{id: \"e5\", args: [1]}]
		| map({id, type: \"function\", function: {name: \"task\",
		  arguments: (.args | tojson)}, permission: {decision: \"allow\"}})}" >in &&
	tool-exec <in >out &&
	test "$(result out e1)" = "Error: task needs '"'"'prompt'"'"' (a string: the whole task for the subagent)." &&
	test "$(result out e2)" = "Error: task '"'"'description'"'"' is longer than 100 characters; give a few words, and the rest in '"'"'prompt'"'"'." &&
	test "$(result out e3)" = "Error: task '"'"'prompt'"'"' is empty; say the whole task." &&
	test "$(result out e4)" = "Error: task '"'"'read_only'"'"' must be true or false." &&
	test "$(result out e5)" = "Error: arguments for task must be a JSON object." &&
	ls log >list && test_line_count = 0 list
'

test_expect_success 'no agent-run beside tool-exec: no task tool, a call fails and says so' '
	task_msg n1 "echo x" >in &&
	mkdir alone log && TASK_LOG=$PWD/log && cp "$AH_BIN/tool-exec" alone/ &&
	alone/tool-exec --schema >schema &&
	jq -e "map(.function.name) | index(\"task\") == null" schema &&
	alone/tool-exec --sandbox off <in >out &&
	result out n1 >got &&
	test_grep "^Error: task: no subagent can be started: there is no agent-run beside tool-exec" got &&
	ls log >list && test_line_count = 0 list
'

test_expect_success 'Ctrl-C: each running child gets SIGTERM and is gone, each call an interrupted result' '
	mkdir log && TASK_LOG=$PWD/log &&
	task_msg i1 "nap 30" i2 "nap 30" i3 "nap 30" >in &&
	{ AGENT_MAX_TASKS=2 fg_signals tool-exec <in >out 2>err & pid=$!; } &&
	test_when_finished "kill -9 $pid 2>/dev/null; kill \$(cat log/*.pid log/*.sleep 2>/dev/null) 2>/dev/null; true" &&
	wait_until 10 test -s log/i1.sleep &&
	wait_until 10 test -s log/i2.sleep &&
	start=$(now) &&
	kill -INT $pid &&
	test_expect_code 130 wait $pid &&
	within "$start" 3 &&
	test "$(cat log/i1.sig log/i2.sig)" = "TERM
TERM" &&
	for f in log/i1.pid log/i2.pid log/i1.sleep log/i2.sleep; do
		gone $(cat $f) || return 1
	done &&
	! ran i3 &&
	test_line_count = 3 out &&
	test "$(result out i1)" = "Error: task: interrupted by signal 2: the subagent was stopped." &&
	test "$(result out i2)" = "Error: task: interrupted by signal 2: the subagent was stopped." &&
	test "$(result out i3)" = "Error: interrupted by signal 2 before it ran; it was not run." &&
	test_grep "interrupted by signal 2" err
'

test_expect_success 'a child that ignores SIGTERM is killed, with its session, after the grace' '
	mkdir log && TASK_LOG=$PWD/log &&
	task_msg k1 "trap \"\" TERM; sleep 30 & echo \$! >\$log/k1.sleep; wait" >in &&
	{ tool-exec <in >out 2>err & pid=$!; } &&
	test_when_finished "kill -9 $pid 2>/dev/null; kill \$(cat log/*.pid log/*.sleep 2>/dev/null) 2>/dev/null; true" &&
	wait_until 10 test -s log/k1.sleep &&
	kill -TERM $pid &&
	test_expect_code 143 wait $pid &&
	gone $(cat log/k1.pid) && gone $(cat log/k1.sleep) &&
	test "$(result out k1)" = "Error: task: interrupted by signal 15: the subagent was stopped (killed, it did not stop in time)."
'

test_expect_success 'kill -9 of tool-exec: the children end too (SIGTERM, PR_SET_PDEATHSIG)' '
	mkdir log && TASK_LOG=$PWD/log &&
	task_msg p1 "nap 30" p2 "nap 30" >in &&
	{ tool-exec <in >out 2>err & pid=$!; } &&
	test_when_finished "kill -9 $pid 2>/dev/null; kill \$(cat log/*.pid log/*.sleep 2>/dev/null) 2>/dev/null; true" &&
	wait_until 10 test -s log/p1.sleep &&
	wait_until 10 test -s log/p2.sleep &&
	kill -9 $pid &&
	wait_until 10 gone $(cat log/p1.pid) &&
	wait_until 10 gone $(cat log/p2.pid) &&
	wait_until 10 gone $(cat log/p1.sleep) &&
	wait_until 10 gone $(cat log/p2.sleep) &&
	test "$(cat log/p1.sig log/p2.sig)" = "TERM
TERM"
'

test_expect_success '--interrupted answers a task call as interrupted, never runs it' '
	mkdir log && TASK_LOG=$PWD/log &&
	task_msg r1 "echo ran" >in &&
	tool-exec --interrupted <in >out &&
	test "$(result out r1)" = "Error: interrupted: the harness stopped before this call got its result; whether it ran, and what it changed, is unknown. It was not run again." &&
	! ran r1
'

test_expect_success 'hook-perm: a rule denies task; the built-in policy asks for it' '
	mkdir log && TASK_LOG=$PWD/log &&
	cat >pol.json <<-\EOF &&
	{"default": "allow", "rules": [{"name": "no-subagents", "if": ".tool == \"task\" and .args.read_only != true",
	  "decision": "deny", "reason": "only read-only subagents"}]}
	EOF
	task_msg h1 "echo ran" | jq -c "del(.tool_calls[].permission)" >in &&
	hook-perm --policy pol.json <in >checked &&
	tool-exec <checked >out &&
	test "$(result out h1)" = "Error: permission denied: only read-only subagents" &&
	! ran h1 &&
	hook-perm <in >builtin &&
	jq -e ".tool_calls[0].permission | .decision == \"deny\" and .rule == \"subagent\"" builtin &&
	hook-perm --yes <in >approved &&
	jq -e ".tool_calls[0].permission | .decision == \"allow\" and .rule == \"subagent\"" approved &&
	tool-exec <approved >out &&
	test "$(result out h1)" = ran
'

test_expect_success 'a task call without a decision runs only with --yes' '
	mkdir log && TASK_LOG=$PWD/log &&
	task_msg y1 "echo ran" | jq -c "del(.tool_calls[].permission)" >in &&
	tool-exec <in >out &&
	result out y1 >got &&
	test_grep "^Error: permission required" got &&
	! ran y1 &&
	tool-exec --yes <in >out &&
	test "$(result out y1)" = ran
'

test_done
