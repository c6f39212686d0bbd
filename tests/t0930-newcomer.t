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
		for c in sh cc gcc cpp as ld prove perl jq shellcheck mandoc pgrep script curl wget nc git parallel id printf; do
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

test_done
