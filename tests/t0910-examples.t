#!/bin/sh
# Every example of README.md and of the man pages runs as printed, as jq
# tests its manual (issue 16).  tests/examples.py pulls them out; what is
# run, what is compared and how to say that a display is not run is in its
# header and in README.md's "Tests".  Each example runs with sh -e (and
# pipefail), PATH at the build's programs, in a copy of the project below,
# against the scripted model (AGENT_BASE_URL, AGENT_MODEL and AGENT_API_KEY
# set in the environment, as a user has them set), which answers "Done."
# to whatever is asked, and a summary to agent-compact.
. "$(dirname "$0")/lib.sh"

EX=$SCRATCH/examples
if command -v mandoc >/dev/null 2>&1; then
	pages=$(ls "$SRC_DIR"/man/*.[157])
else
	pages=
	test_skip 'the examples of the man pages' 'mandoc not installed'
fi
# shellcheck disable=SC2086 # the pages' names have no blanks
python3 "$TEST_DIR/examples.py" extract "$EX" "$SRC_DIR/README.md" $pages ||
	{ echo "Bail out! examples.py could not read the documentation"; exit 1; }

AGENT_MODEL=gpt-4o-mini AGENT_API_KEY=sk-test
export AGENT_MODEL AGENT_API_KEY
echo '{"repeat": true, "content": "Done."}' >"$SCRATCH/done.jsonl"
start_model "$SCRATCH/done.jsonl" --summaries || exit 1

# The project the examples run in, as the documentation supposes it: a git
# repository with a README.md, a main.c and a Makefile, in which one
# session has run, "add a --verbose option to main.c and run the tests":
# it planned with run_todo_write, listed the files, wrote main.c (-y), was
# denied a sudo, ran make check (28 KB of output, so that there is
# something to compact) and completed its list; .agent/ holds its
# transcript and audit log, todo.json its list.  Besides, t.jsonl is a
# transcript begun by hand (a user message), for the examples that run a
# step themselves.
PROJECT=$SCRATCH/project
test_expect_success 'the project the examples run in: one session done' '
	mkdir "$PROJECT" && cd "$PROJECT" &&
	echo "# hello" >README.md &&
	printf "int main(void) { return 0; }\n" >main.c &&
	printf "check:\n\t@seq 400 | sed \"s/.*/ok & - a test of main.c, with the output of a real one/\"\n" >Makefile &&
	git init -q && git add . &&
	git -c user.name=t -c user.email=t@t commit -q -m start &&
	cat >../session.jsonl <<-\EOF &&
	{"tool_calls": [{"name": "run_todo_write", "arguments": {"todos": [{"id": "plan", "content": "Read main.c", "status": "in_progress"}, {"id": "edit", "content": "Add the --verbose option"}, {"id": "test", "content": "Run the tests"}]}}]}
	{"tool_calls": [{"name": "bash", "arguments": {"command": "ls"}}, {"name": "read_file", "arguments": {"path": "main.c"}}]}
	{"tool_calls": [{"name": "write_file", "arguments": {"path": "main.c", "content": "#include <string.h>\nint verbose;\nint main(int argc, char **argv) { verbose = argc > 1 && !strcmp(argv[1], \"--verbose\"); return 0; }\n"}}]}
	{"tool_calls": [{"name": "bash", "arguments": {"command": "sudo make install"}}, {"name": "bash", "arguments": {"command": "make check"}}]}
	{"tool_calls": [{"name": "run_todo_write", "arguments": {"todos": [{"id": "plan", "content": "Read main.c", "status": "completed"}, {"id": "edit", "content": "Add the --verbose option", "status": "completed"}, {"id": "test", "content": "Run the tests", "status": "completed"}]}}]}
	{"content": "main.c takes --verbose now, and make check passes."}
	EOF
	start_model ../session.jsonl &&
	agent-run -y "add a --verbose option to main.c and run the tests" >answer 2>progress &&
	test_contains answer "make check passes" &&
	test_grep "deny *bash sudo make install" progress &&
	jq -e "[.todos[].status] == [\"completed\", \"completed\", \"completed\"]" todo.json &&
	rm answer progress port requests.jsonl &&
	echo "{\"role\":\"user\",\"content\":\"List the files.\"}" >t.jsonl
'
[ -s "$PROJECT/t.jsonl" ] ||
	{ echo "Bail out! no project to run the examples in"; exit 1; }

# start_script LINE...: the scripted model answers with these entries,
# for an example that needs the loop to do something.
start_script() {
	printf '%s\n' "$@" >../script.jsonl &&
	(cd .. && start_model script.jsonl) &&
	AGENT_BASE_URL=http://127.0.0.1:$(cat ../port)/v1 &&
	export AGENT_BASE_URL
}

# prepare_example WHERE SCRIPT: what one example needs beyond the project,
# as the text around it says it is there.
prepare_example() {
	# a step to undo: a session whose step wrote a file (the project's
	# snapshots were moved aside in its copy)
	if grep -q agent-snap "$2"; then
		start_script '{"tool_calls": [{"name": "write_file", "arguments": {"path": "notes.txt", "content": "a note\n"}}]}' \
			'{"content": "Done."}' &&
		agent-run -q -y "write a note" >/dev/null || return 1
	fi
	case $1 in
	man/agent-run.1:*)
		# tasks/NAME a task, work/NAME a copy of the project
		! grep -q xargs "$2" || {
			mkdir tasks work &&
			echo "add a --verbose option to main.c" >tasks/verbose &&
			echo "say hello in README.md" >tasks/hello &&
			cp -R "$PROJECT" work/verbose && cp -R "$PROJECT" work/hello
		} ;;
	man/agent-step.1:*)
		# the cache's share: a session with Anthropic's API
		! grep -q cache_read_input_tokens "$2" ||
			agent-run -q --api anthropic "say hi" >/dev/null ;;
	man/hook-perm.1:*)
		# steps until the model answers: a call, then the answer
		! grep -q 'until agent-step' "$2" ||
			start_script '{"tool_calls": [{"name": "bash", "arguments": {"command": "ls"}}]}' \
				'{"content": "Done."}' ;;
	esac
}

# check_example WHERE SCRIPT: that an example did what its text says, where
# the display shows no output to compare.
check_example() {
	case $1 in
	man/agent-run.1:*)
		! grep -q xargs "$2" || {
			test "$(cat work/verbose.answer)" = Done. &&
			test "$(cat work/hello.answer)" = Done. &&
			jq -e -s '.[1].content == "say hello in README.md"' \
				work/hello/.agent/transcript.jsonl >/dev/null
		} ;;
	man/hook-perm.1:*)
		! grep -q 'until agent-step' "$2" || {
			test_line_count -eq 4 t.jsonl &&
			jq -e -s '.[2].role == "tool" and .[3].content == "Done."' t.jsonl >/dev/null
		} ;;
	esac
}

# same_output EXPECT ACTUAL: ACTUAL is what EXPECT shows, "..." in a line
# standing for any text, a line of only "..." for any number of lines.
same_output() {
	awk '
	function line_ok(e, a,   n, part, k, at, p, last) {
		n = split(e, part, /\.\.\./)
		if (n == 1)
			return e == a
		if (substr(a, 1, length(part[1])) != part[1])
			return 0
		at = length(part[1]) + 1
		for (k = 2; k < n; k++) {
			p = index(substr(a, at), part[k])
			if (p == 0)
				return 0
			at += p - 1 + length(part[k])
		}
		last = length(a) - length(part[n]) + 1
		return last >= at && substr(a, last) == part[n]
	}
	function from(i, j,   k) {
		if (i > ne)
			return j > na
		if (want[i] ~ /^[ \t]*\.\.\.[ \t]*$/) {
			for (k = j; k <= na + 1; k++)
				if (from(i + 1, k))
					return 1
			return 0
		}
		return j <= na && line_ok(want[i], got[j]) && from(i + 1, j + 1)
	}
	FNR == NR { want[++ne] = $0; next }
	{ got[++na] = $0 }
	END { exit !from(1, 1) }
	' "$1" "$2"
}

# run_example ID WHERE: runs the example in a copy of the project, and
# compares what its commands printed with the display.  (The copy's
# session is claimed, as the user of a copied tree would: agent-run goes
# on only with a session marked for its own state directory.)
run_example() {
	cp -R "$PROJECT" project && cd project &&
	agent-session --claim "$(jq -r .id .agent/session.json)" 2>/dev/null &&
	prepare_example "$2" "$EX/$1.sh" &&
	sh -n "$EX/$1.sh" &&
	{
		# shellcheck disable=SC2086 # a command and its options
		$EX_SH "$EX/$1.sh" </dev/null || {
			echo "$EX_SH exited $? on:" && cat "$EX/$1.sh" &&
			for out in "$EX/$1".out.*; do
				[ -e "$out" ] || continue
				echo "--- ${out##*/}" && cat "$out"
			done
			false
		}
	} &&
	for cmd in "$EX/$1".cmd.*; do
		[ -e "$EX/$1.exp.${cmd##*.}" ] || continue
		same_output "$EX/$1.exp.${cmd##*.}" "$EX/$1.out.${cmd##*.}" || {
			printf '$ ' && cat "$cmd" &&
			echo "printed what the display does not show:" &&
			diff -u "$EX/$1.exp.${cmd##*.}" "$EX/$1.out.${cmd##*.}"
			return 1
		}
	done &&
	check_example "$2" "$EX/$1.sh"
}

# sh -e, and a command that fails in a pipeline fails the example too:
# where sh has no pipefail (Debian's dash), bash in its POSIX mode runs
# them, after sh -n has read them.
EX_SH="sh -e -o pipefail"
if ! sh -c 'set -o pipefail' 2>/dev/null; then
	if command -v bash >/dev/null 2>&1; then
		EX_SH="bash --posix -e -o pipefail"
	else
		EX_SH="sh -e"
		echo "# neither sh nor bash has pipefail: a failure left of a | goes unseen"
	fi
fi

tab=$(printf '\t')
while IFS=$tab read -r id where kind what; do
	if [ "$kind" = skip ]; then
		test_skip "$where" "not run: $what"
	elif [ -n "${AH_NO_SANDBOX:-}" ] && grep -q 'echo x >\.\./y' "$EX/$id.sh"; then
		test_skip "$where" "shows the sandbox, which this machine cannot have"
	else
		# a "#" in a TAP description could read as a directive
		test_expect_success "$where: ${what%%#*}" "run_example $id '$where'"
	fi
done <"$EX/index"

test_done
