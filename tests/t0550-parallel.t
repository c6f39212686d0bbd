#!/bin/sh
# examples/parallel.sh: many sessions at once with GNU parallel, a git
# worktree each, the results collected in one JSON Lines file.
. "$(dirname "$0")/lib.sh"

AGENT_MODEL=scripted
export AGENT_MODEL

if ! command -v parallel >/dev/null 2>&1; then
	echo "1..0 # skip GNU parallel is not installed (make deps installs it)"
	exit 0
fi

test_expect_success 'three tasks, a worktree each, one result line each' '
	echo "{\"repeat\": true, \"content\": \"done here\"}" >script &&
	start_model script &&
	git init -q repo && echo hello >repo/file &&
	git -C repo add file &&
	git -C repo -c user.name=t -c user.email=t@t commit -q -m one &&
	printf "%s\n" "{\"id\": \"a\", \"task\": \"task a\"}" "" \
		"{\"id\": \"b\", \"task\": \"task b: \\\"quoted\\\" \$HOME\"}" \
		"{\"task\": \"-starts with a dash\"}" >tasks.jsonl &&
	JOBS=3 sh "$SRC_DIR/examples/parallel.sh" repo tasks.jsonl >results.jsonl &&
	test_line_count = 3 results.jsonl &&
	jq -s -e "map(.task_id) | sort == [\"4\", \"a\", \"b\"]" results.jsonl &&
	jq -s -e "all(.[]; .type == \"result\" and .status == \"done\" and .answer == \"done here\")" results.jsonl &&
	test "$(git -C work/a rev-parse --show-toplevel)" = "$PWD/work/a" &&
	test "$(cat work/a/file)" = hello &&
	jq -s -e ".[1].content == \"task b: \\\"quoted\\\" \$HOME\"" work/b/.agent/transcript.jsonl &&
	jq -s -e ".[1].content == \"-starts with a dash\"" work/4/.agent/transcript.jsonl &&
	test_line_count = 3 requests.jsonl
'

test_expect_success 'a session that fails: its result says so, and the exit status is 1' '
	echo "{\"repeat\": true, \"status\": 400, \"error\": {\"message\": \"bad\", \"type\": \"invalid_request_error\"}}" >script &&
	start_model script && mkdir repo && echo x >repo/file &&
	echo "{\"id\": \"x\", \"task\": \"fails\"}" >tasks.jsonl &&
	test_expect_code 1 sh "$SRC_DIR/examples/parallel.sh" repo tasks.jsonl >results.jsonl &&
	jq -e ".task_id == \"x\" and .status == \"failed\" and .exit == 1" results.jsonl &&
	test -f work/x/file
'

test_expect_success 'usage, and a tasks file that is not one' '
	test_expect_code 2 sh "$SRC_DIR/examples/parallel.sh" 2>err &&
	test_grep "usage: parallel.sh" err &&
	mkdir repo && echo "[1]" >tasks.jsonl &&
	test_expect_code 2 sh "$SRC_DIR/examples/parallel.sh" repo tasks.jsonl 2>err &&
	test_grep "must be an object" err
'

test_done
