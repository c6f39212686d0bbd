#!/bin/sh
# The documentation: man pages lint clean, every option of --help is in the
# man page, the scripts are shellcheck-clean, the examples work.
. "$(dirname "$0")/lib.sh"

progs=$(sed -n 's/^PROGS *= *//p' "$SRC_DIR/Makefile")

if command -v mandoc >/dev/null 2>&1; then
	test_expect_success 'man pages lint clean (mandoc -Tlint)' '
		mandoc -Tlint -Wwarning "$SRC_DIR"/man/*
	'
else
	test_skip 'man pages lint clean' 'mandoc not installed'
fi

for p in $progs agent-run; do
	test_expect_success "$p: a man page with the usual sections" "
		page='$SRC_DIR/man/$p.1' &&
		for s in NAME SYNOPSIS DESCRIPTION OPTIONS 'EXIT STATUS' EXAMPLES 'SEE ALSO'; do
			grep -q \"^\\.Sh \$s\\\$\" \"\$page\" || { echo \"no \$s\"; exit 1; }
		done &&
		grep -q 'Xr $p 1' '$SRC_DIR/man/agent-harness.7'
	"
	test_expect_success "$p: every option of --help is in the man page" "
		$p --help >help &&
		grep -o -e '--[a-z][a-z-]*' help | sort -u >long &&
		test -s long &&
		while read -r opt; do
			name=\${opt#--}
			grep -q \"Fl \\\\\\\\-\$name\" '$SRC_DIR/man/$p.1' ||
				{ echo \"\$opt is not in $p.1\"; exit 1; }
		done <long
	"
	test_expect_success "$p: the man page's EXIT STATUS lists the codes of --help" "
		$p --help >help &&
		sed -n '/Exit status:/,/^\$/p' help | tr '\\n' ' ' |
			sed 's/\\([0-9]\\) or \\([0-9][0-9]*\\) \\([a-z]\\)/\\1 \\3, \\2 \\3/g' |
			grep -oE '(status:|,) +[0-9]+(\\+N)? +[A-Za-z-]' |
			grep -oE '[0-9]+(\\+N)?' | sort -u >help-codes &&
		sed -n '/^\\.Sh EXIT STATUS/,/^\\.Sh /s/^\\.It //p' '$SRC_DIR/man/$p.1' |
			sed -e 's/ Ns Ar n\$/N/' -e 's/ , /\\n/g' | sort -u >man-codes &&
		test -s help-codes &&
		test_cmp man-codes help-codes
	"
	test_expect_success "$p: --help exits 0 on stdout, nothing on stderr" "
		$p --help >out 2>err && test -s out && test ! -s err
	"
	test_expect_success "$p: --version names it and the release" "
		$p --version >out 2>err && test ! -s err &&
		test_grep '^$p (agent-harness) [0-9][0-9.]*\$' out &&
		test_line_count = 1 out &&
		case $p in agent-run) ;; *) test_expect_code 3 $p --version >/dev/full 2>/dev/null ;; esac
	"
done

test_expect_success 'a full stdout: exit 3 and one message with the reason, every program' '
	echo "{\"role\":\"user\",\"content\":\"x\"}" >user &&
	call_msg list_dir "{}" >call &&
	cat user user >pair &&
	for cmd in "hook-perm" "hook-audit --log log" "agent-step -m m --dry-run" \
		"tool-exec" "todo-write --show" "tool-exec --schema" \
		"agent-compact -n --keep-bytes 0"; do
		in=user
		case $cmd in tool-exec) in=call ;; agent-compact*) in=pair ;; esac
		status=0
		$cmd <$in >/dev/full 2>err || status=$?
		test $status -eq 3 || { echo "$cmd: exit $status"; return 1; }
		test "$(grep -c "cannot write stdout: No space left on device" err)" -eq 1 ||
			{ echo "$cmd:"; cat err; return 1; }
	done
'

test_expect_success 'share/*.json: valid (jq -e), and what the programs compiled in' '
	jq -e "type == \"object\" and (.default | IN(\"allow\", \"ask\", \"deny\")) and (.rules | length > 5) and all(.rules[]; (.name | type) == \"string\" and (.if | type) == \"string\" and (.decision | IN(\"allow\", \"ask\", \"deny\")) and (.reason | type) == \"string\")" "$SRC_DIR/share/policy.json" &&
	jq -e "type == \"array\" and length == 8 and all(.[]; .type == \"function\" and (.function.name | type) == \"string\" and .function.parameters.type == \"object\")" "$SRC_DIR/share/tools.json" &&
	hook-perm --print-policy >policy.json &&
	test_cmp "$SRC_DIR/share/policy.json" policy.json &&
	jq -e "type == \"object\" and .function.name == \"task\" and .function.parameters.type == \"object\"" "$SRC_DIR/share/task.json" &&
	AGENT_DEPTH=1 tool-exec --schema >tools.json &&
	test_cmp "$SRC_DIR/share/tools.json" tools.json &&
	tool-exec --schema >with-task.json &&
	jq -s -e ".[0] == .[1] + [.[2]]" with-task.json "$SRC_DIR/share/tools.json" "$SRC_DIR/share/task.json"
'

test_expect_success 'a whole-number option or variable refuses a fraction: exit 2, every program' '
	while read -r cmd; do
		test_expect_code 2 env $cmd </dev/null >out 2>err &&
		test_grep "is not a whole number" err &&
		test ! -s out || { echo "$cmd"; return 1; }
	done <<-\EOF
	agent-step -m m --dry-run --max-tokens 10.5
	agent-step -m m --dry-run --max-calls 1.5
	agent-step -m m --dry-run --retries 1.5
	agent-step -m m --dry-run --context-window 1000.5
	agent-step -m m --dry-run --max-tokens 1e3
	hook-perm --watch 1.5
	tool-exec --max-output 100.5
	tool-exec --max-procs 1.5
	AGENT_MAX_PROCS=1.5 tool-exec
	AGENT_MAX_OUTPUT=1e5 tool-exec
	agent-compact --keep-bytes 1.5
	agent-compact --context-window 300.5
	EOF
'

if command -v shellcheck >/dev/null 2>&1; then
	test_expect_success 'shell scripts are shellcheck-clean' '
		cd "$SRC_DIR" &&
		shellcheck -s sh .ci/run tools/deps.sh cmd/agent-run tests/lib.sh \
			tests/suite-probe.sh tests/*.t examples/*.sh
	'
else
	test_skip 'shell scripts are shellcheck-clean' 'shellcheck not installed'
fi

test_expect_success 'CI runs exactly the test command of the README' '
	sed -n "s/^    \(make [a-z-]*\) *# every test.*/\1/p" "$SRC_DIR/README.md" >readme &&
	test_line_count = 1 readme &&
	grep -v -e "^#" -e "^set -eu$" -e "^cd " "$SRC_DIR/.ci/run" >ci &&
	echo "exec $(cat readme)" >expect &&
	test_cmp expect ci
'

test_expect_success 'examples/todo-plan.sh keeps a list by snapshots' '
	"$SRC_DIR/examples/todo-plan.sh" add "Write the code" >/dev/null &&
	"$SRC_DIR/examples/todo-plan.sh" add "Run the tests" >/dev/null &&
	"$SRC_DIR/examples/todo-plan.sh" start task-1 >/dev/null &&
	"$SRC_DIR/examples/todo-plan.sh" start task-2 >/dev/null &&
	"$SRC_DIR/examples/todo-plan.sh" done task-2 >actual &&
	cat >expect <<-\EOF &&
	Current todos:
	[ ] task-1 - Write the code
	[x] task-2 - Run the tests
	EOF
	test_cmp expect actual
'

test_done
