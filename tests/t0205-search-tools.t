#!/bin/sh
# tool-exec grep and glob: ripgrep run as bash is, confined like read_file.
. "$(dirname "$0")/lib.sh"

command -v rg >/dev/null 2>&1 || {
	echo "1..0 # skip ripgrep (rg) is not installed: make deps"
	exit 0
}

content() { jq -j .content "$1"; }
# search TOOL ARGS [DIR]: the result of one allowed call in DIR (the
# workspace the first test makes).
search() {
	call_msg "$1" "$2" >in &&
	tool-exec -C "${3:-$SCRATCH/w}" <in >out &&
	content out
}

test_expect_success 'setup: a workspace with ignore files and a link out' '
	cd "$SCRATCH" &&
	mkdir -p w/src/sub w/.git w/build outside &&
	printf "int foo;\nbar\nfoo again\n" >w/src/a.c &&
	printf "Foo\n" >w/src/sub/b.h &&
	printf "foo in a log\n" >w/build/out.log &&
	printf "foo ignored\n" >w/gen.c &&
	printf "foo in git\n" >w/.git/HEAD &&
	printf "gen.c\nbuild/\n" >w/.gitignore &&
	printf "foo secret\n" >outside/secret.c &&
	ln -s ../outside w/out &&
	ln -s ../../outside/secret.c w/src/link.c &&
	touch -d "2020-01-01" w/src/a.c &&
	touch -d "2021-01-01" w/src/sub/b.h
'

test_expect_success 'grep: lines with numbers, sorted by path, ignored files and links skipped' '
	search grep "{\"pattern\":\"foo\"}" >actual &&
	printf "src/a.c:1:int foo;\n--\nsrc/a.c:3:foo again" >expect &&
	test_cmp expect actual
'

test_expect_success 'grep: case_insensitive and count' '
	search grep "{\"pattern\":\"foo\",\"case_insensitive\":true,\"output_mode\":\"count\"}" >actual &&
	printf "src/a.c:2\nsrc/sub/b.h:1" >expect &&
	test_cmp expect actual
'

test_expect_success 'grep: files_with_matches under a path, with a glob' '
	search grep "{\"pattern\":\"(?i)foo\",\"output_mode\":\"files_with_matches\",\"path\":\"src\",\"glob\":\"*.h\"}" >actual &&
	test "$(cat actual)" = "src/sub/b.h"
'

test_expect_success 'grep: a glob does not bring back what .gitignore hides' '
	search grep "{\"pattern\":\"foo\",\"glob\":\"*.c\",\"output_mode\":\"files_with_matches\"}" >actual &&
	test "$(cat actual)" = "src/a.c"
'

test_expect_success 'grep: context lines, and the type filter' '
	search grep "{\"pattern\":\"bar\",\"context\":1,\"type\":\"c\"}" >actual &&
	printf "src/a.c-1-int foo;\nsrc/a.c:2:bar\nsrc/a.c-3-foo again" >expect &&
	test_cmp expect actual
'

test_expect_success 'grep: head_limit bounds the result and says how much more' '
	search grep "{\"pattern\":\"o\",\"head_limit\":1}" >actual &&
	printf "src/a.c:1:int foo;\n[... and 2 more matching lines; narrow the search or raise head_limit]" >expect &&
	test_cmp expect actual
'

test_expect_success 'grep: no match, and a bad pattern, say so' '
	search grep "{\"pattern\":\"nothing here\"}" >actual &&
	test "$(cat actual)" = "(no matches)" &&
	search grep "{\"pattern\":\"(\"}" >actual &&
	test_grep "^Error: grep: regex parse error" actual &&
	jq -e ".is_error == true or (.content | startswith(\"Error:\"))" out
'

test_expect_success 'grep and glob: no path outside the workspace, no link out' '
	for a in "\"path\":\"../outside\"" "\"path\":\"out\"" \
		 "\"path\":\"src/link.c\"" "\"path\":\"$SCRATCH/outside\""; do
		search grep "{\"pattern\":\"secret\",$a}" >actual &&
		test_grep "^Error: .*outside the working directory" actual &&
		test_grep ! secret.c actual || return 1
	done &&
	search glob "{\"pattern\":\"*\",\"path\":\"out\"}" >actual &&
	test_grep "^Error: glob: path .out. leads outside the working directory" actual
'

test_expect_success 'grep and glob: unknown keys are refused' '
	search grep "{\"pattern\":\"foo\",\"follow\":true}" >actual &&
	test_grep "^Error: grep takes no argument .follow." actual &&
	search glob "{\"pattern\":\"*\",\"hidden\":true}" >actual &&
	test_grep "^Error: glob takes no argument .hidden." actual
'

test_expect_success 'glob: ** patterns, .gitignore respected, newest first' '
	search glob "{\"pattern\":\"**/*.[ch]\"}" >actual &&
	printf "src/sub/b.h\nsrc/a.c" >expect &&
	test_cmp expect actual &&
	search glob "{\"pattern\":\"sub/*\",\"path\":\"src\"}" >actual &&
	test "$(cat actual)" = "(no files)" &&
	search glob "{\"pattern\":\"src/*/*.h\",\"path\":\"src\"}" >actual &&
	test "$(cat actual)" = "src/sub/b.h"
'

test_expect_success 'glob: at most 500 names, then how many more' '
	mkdir many && (cd many && i=0 && while [ $i -lt 503 ]; do
		: >f$i.txt && i=$((i + 1)); done) &&
	search glob "{\"pattern\":\"*.txt\"}" many >actual &&
	test_line_count = 500 actual &&
	test "$(tail -n 1 actual)" = "[... and 3 more files; narrow the pattern or the path]"
'

test_expect_success 'grep and glob: a missing rg is said, not worked around' '
	mkdir bin && te=$(command -v tool-exec) &&
	call_msg grep "{\"pattern\":\"foo\"}" >in &&
	PATH=$PWD/bin "$te" -C "$SCRATCH/w" <in >out &&
	content out >actual &&
	test_grep "^Error: grep: ripgrep (rg) is not installed" actual &&
	call_msg glob "{\"pattern\":\"*\"}" >in &&
	PATH=$PWD/bin "$te" -C "$SCRATCH/w" <in >out &&
	content out >actual &&
	test_grep "^Error: glob: ripgrep (rg) is not installed" actual
'

test_expect_success 'the built-in policy allows both without asking' '
	decide grep "{\"pattern\":\"foo\"}" &&
	test_grep "^allow read-only: grep only reads" got &&
	decide glob "{\"pattern\":\"*\"}" &&
	test_grep "^allow read-only: glob only reads" got
'

test_expect_success 'agent-run without -y nor a terminal searches and reads, no denial' '
	cat >script <<-\EOF &&
	{"tool_calls": [{"name": "glob", "arguments": {"pattern": "**/*.c"}}, {"name": "grep", "arguments": {"pattern": "again"}}]}
	{"tool_calls": [{"name": "read_file", "arguments": {"path": "src/a.c"}}]}
	{"content": "Found it."}
	EOF
	start_model script &&
	AGENT_MODEL=scripted agent-run -C "$SCRATCH/w" "where is foo" </dev/null >answer 2>progress &&
	test "$(cat answer)" = "Found it." &&
	test_grep ! -i "denied" progress &&
	test_grep "allow grep again -> ok" progress &&
	req 2 ".messages | map(select(.role == \"tool\")) | .[1].content" >actual &&
	test "$(cat actual)" = "\"src/a.c:3:foo again\"" &&
	req 2 ".messages | map(select(.role == \"tool\")) | .[0].content" >actual &&
	test "$(cat actual)" = "\"src/a.c\""
'

test_done
