#!/bin/sh
# tool-exec apply_patch: the patch format of OpenAI's models, all files or
# none, confined and protected as write_file is; offered with --tools.
. "$(dirname "$0")/lib.sh"

content() { jq -j .content "$1"; }
# patch [DIR]: the result of one allowed apply_patch call of the patch on
# stdin, in DIR (default the current directory)
patch() {
	jq -Rsc '{input: .}' >args &&
	call_msg apply_patch "$(cat args)" >in &&
	tool-exec --tools apply_patch -C "${1:-.}" <in >out &&
	content out
}
# snapshot FILE: every file under the current directory and its text
snapshot() {
	find . -path ./snap -prune -o -type f -print | LC_ALL=C sort |
		while read -r f; do printf '== %s\n' "$f" && cat "$f"; done >"$1"
}

test_expect_success 'Add File makes a file, and the directories it is in' '
	patch >actual <<-\EOF &&
	*** Begin Patch
	*** Add File: nested/dir/new.txt
	+created
	+
	+  indented
	*** End Patch
	EOF
	printf "Applied the patch:\nA nested/dir/new.txt" >expect &&
	test_cmp expect actual &&
	printf "created\n\n  indented\n" >expect &&
	test_cmp expect nested/dir/new.txt
'

test_expect_success 'Delete File removes a file' '
	echo gone >old.txt &&
	patch >actual <<-\EOF &&
	*** Begin Patch
	*** Delete File: old.txt
	*** End Patch
	EOF
	test "$(cat actual)" = "Applied the patch:
D old.txt" &&
	test ! -e old.txt
'

test_expect_success 'Update File: several hunks of one file, the first without @@' '
	printf "foo\nbar\nbaz\nqux\n" >multi.txt &&
	patch >actual <<-\EOF &&
	*** Begin Patch
	*** Update File: multi.txt
	 foo
	-bar
	+BAR
	@@
	 baz
	-qux
	+QUX
	*** End Patch
	EOF
	printf "foo\nBAR\nbaz\nQUX\n" >expect &&
	test_cmp expect multi.txt
'

test_expect_success 'Update File: interleaved hunks, a line added at the end of the file' '
	printf "a\nb\nc\nd\ne\nf\n" >inter.txt &&
	patch >actual <<-\EOF &&
	*** Begin Patch
	*** Update File: inter.txt
	@@
	 a
	-b
	+B
	@@
	 c
	 d
	-e
	+E
	@@
	 f
	+g
	*** End of File
	*** End Patch
	EOF
	printf "a\nB\nc\nd\nE\nf\ng\n" >expect &&
	test_cmp expect inter.txt
'

test_expect_success '@@ anchors place a hunk; stacked anchors narrow it' '
	cat >two.py <<-\EOF &&
	class A:
	    def run(self):
	        return 1

	class B:
	    def run(self):
	        return 1
	EOF
	patch >actual <<-\EOF &&
	*** Begin Patch
	*** Update File: two.py
	@@ class B:
	@@     def run(self):
	-        return 1
	+        return 2
	*** End Patch
	EOF
	cat >expect <<-\EOF &&
	class A:
	    def run(self):
	        return 1

	class B:
	    def run(self):
	        return 2
	EOF
	test_cmp expect two.py &&
	patch >actual <<-\EOF &&
	*** Begin Patch
	*** Update File: two.py
	@@ class C:
	-        return 1
	+        return 3
	*** End Patch
	EOF
	test_grep "line .@@ class C:. was not found" actual &&
	test_cmp expect two.py
'

test_expect_success 'Move to: the new text at the new path, the old one gone' '
	printf "def greet():\n    print(\"Hi\")\n" >app.py &&
	patch >actual <<-\EOF &&
	*** Begin Patch
	*** Update File: app.py
	*** Move to: src/main.py
	@@ def greet():
	-    print("Hi")
	+    print("Hello, world!")
	*** End Patch
	EOF
	test "$(cat actual)" = "Applied the patch:
M app.py -> src/main.py" &&
	test ! -e app.py &&
	printf "def greet():\n    print(\"Hello, world!\")\n" >expect &&
	test_cmp expect src/main.py
'

test_expect_success 'trailing whitespace in the file or the patch does not count; other differences do' '
	printf "one  \ntwo\t\nthree\n" >ws.txt &&
	patch >actual <<-\EOF &&
	*** Begin Patch
	*** Update File: ws.txt
	 one
	-two
	+TWO
	*** End Patch
	EOF
	printf "one  \nTWO\nthree\n" >expect &&
	test_cmp expect ws.txt &&
	patch >actual <<-\EOF &&
	*** Begin Patch
	*** Update File: ws.txt
	-  three
	+THREE
	*** End Patch
	EOF
	test_grep "^Error: apply_patch: hunk 1 of .ws.txt. does not match" actual &&
	test_cmp expect ws.txt
'

test_expect_success 'a hunk of added lines alone goes at the end, or after its anchor' '
	printf "line1\nline2\nline3\n" >add.txt &&
	patch >actual <<-\EOF &&
	*** Begin Patch
	*** Update File: add.txt
	@@
	+after-context
	+second-line
	@@
	 line1
	-line2
	-line3
	+line2-replacement
	*** End Patch
	EOF
	printf "line1\nline2-replacement\nafter-context\nsecond-line\n" >expect &&
	test_cmp expect add.txt &&
	printf "x\ny\n" >add.txt &&
	patch >actual <<-\EOF &&
	*** Begin Patch
	*** Update File: add.txt
	@@ x
	+after x
	*** End Patch
	EOF
	printf "x\nafter x\ny\n" >expect &&
	test_cmp expect add.txt &&
	patch >actual <<-\EOF &&
	*** Begin Patch
	*** Update File: add.txt
	@@ y
	-y
	+Y
	*** End Patch
	EOF
	test_grep "^Error: apply_patch: hunk 1 of .add.txt. does not match after line 3" actual &&
	test_cmp expect add.txt
'

test_expect_success 'a failing hunk leaves every file as it was, and no file behind' '
	mkdir w && (cd w && printf "keep\n" >a.txt && printf "1\n2\n3\n" >b.txt &&
		printf "del\n" >c.txt && snapshot ../before) &&
	patch w >actual <<-\EOF &&
	*** Begin Patch
	*** Add File: new/fresh.txt
	+new
	*** Update File: a.txt
	-keep
	+changed
	*** Delete File: c.txt
	*** Update File: b.txt
	@@
	 1
	-two
	+TWO
	*** End Patch
	EOF
	test_grep "^Error: apply_patch: hunk 1 of .b.txt. does not match: its 2 lines of context and removal, from .1., were not found. Nothing was changed." actual &&
	(cd w && snapshot ../after) &&
	test_cmp before after &&
	test ! -e w/new &&
	test "$(ls -A w)" = "a.txt
b.txt
c.txt"
'

test_expect_success 'a write that fails once all is checked changes nothing either' '
	# a name whose temporary file (.NAME.XXXXXX.tmp) is too long to make
	long=$(printf "%0250d" 0) &&
	mkdir w && printf "a\n" >w/a.txt && printf "b\n" >"w/$long" &&
	(cd w && snapshot ../before) &&
	printf "*** Begin Patch\n*** Update File: a.txt\n-a\n+A\n*** Add File: d/new.txt\n+n\n*** Update File: %s\n-b\n+B\n*** End Patch\n" "$long" |
		patch w >actual &&
	test_grep "^Error: apply_patch: cannot write .0*.: File name too long. Nothing was changed." actual &&
	(cd w && snapshot ../after) &&
	test_cmp before after &&
	test "$(ls -A w | wc -l)" = 2
'

test_expect_success 'no path outside the workspace, through a link out, or under .git or .agent' '
	mkdir -p w/.git w/.agent outside &&
	printf "secret\n" >outside/s.txt && printf "[core]\n" >w/.git/config &&
	printf "x\n" >w/.agent/policy.json && printf "a\n" >w/a.txt &&
	ln -s ../outside w/out && ln -s .git/config w/cfg &&
	(cd w && snapshot ../before) && cp outside/s.txt s.before &&
	for p in "../outside/s.txt" "$PWD/outside/s.txt" "out/s.txt" \
		 ".git/config" "cfg" ".agent/policy.json" "sub/.git/hooks/x" \
		 "deep/.agent/x"; do
		for op in "*** Update File: $p
-x
+y" "*** Add File: $p
+y" "*** Delete File: $p" "*** Update File: a.txt
*** Move to: $p"; do
			printf "*** Begin Patch\n*** Add File: fine.txt\n+fine\n%s\n*** End Patch\n" "$op" |
				patch w >actual &&
			test_grep "^Error: " actual &&
			test_grep "Nothing was changed" actual &&
			{ cat actual && echo; } >>all || return 1
		done
	done &&
	(cd w && snapshot ../after) &&
	test_cmp before after &&
	test_cmp s.before outside/s.txt &&
	test_grep "^Error: path .*/outside/s.txt. is outside the working directory" all &&
	test_grep "^Error: apply_patch: path .out/s.txt. leads outside the working directory" all &&
	test_grep "^Error: apply_patch: .cfg. is under .agent or .git" all &&
	test_grep "^Error: apply_patch: .deep/.agent/x. is under .agent or .git" all
'

test_expect_success '.git and .agent are refused with the sandbox off too' '
	mkdir -p w/.git w/.agent && printf "[core]\n" >w/.git/config &&
	(cd w && snapshot ../before) &&
	for p in .git/config .git/hooks/pre-commit .agent/policy.json; do
		printf "*** Begin Patch\n*** Add File: x\n+x\n*** Delete File: %s\n*** End Patch\n" "$p" |
			AGENT_SANDBOX=off patch w >actual &&
		test_grep "is under .agent or .git, which a patch may not change. Nothing was changed." actual &&
		printf "*** Begin Patch\n*** Add File: %s\n+x\n*** End Patch\n" "$p" |
			AGENT_SANDBOX=off patch w >actual &&
		test_grep "is under .agent or .git, which a patch may not change. Nothing was changed." actual || return 1
	done &&
	(cd w && snapshot ../after) &&
	test_cmp before after
'

test_expect_success 'a file the patch adds must not exist; one it changes, twice, is refused' '
	printf "here\n" >here.txt && printf "a\n" >a.txt &&
	printf "*** Begin Patch\n*** Add File: here.txt\n+new\n*** End Patch\n" |
		patch >actual &&
	test_grep "^Error: apply_patch: \*\*\* Add File: .here.txt. exists" actual &&
	printf "*** Begin Patch\n*** Update File: a.txt\n-a\n+b\n*** Delete File: ./a.txt\n*** End Patch\n" |
		patch >actual &&
	test_grep "is changed twice in the patch" actual &&
	test "$(cat here.txt a.txt)" = "here
a"
'

test_expect_success 'what is not the format is refused, saying where' '
	printf "a\n" >a.txt &&
	printf "*** Update File: a.txt\n-a\n+b\n*** End Patch\n" | patch >actual &&
	test_grep "must start with .\*\*\* Begin Patch." actual &&
	printf "*** Begin Patch\n*** Update File: a.txt\n-a\n+b\n" | patch >actual &&
	test_grep "must end with .\*\*\* End Patch." actual &&
	printf "*** Begin Patch\n*** Update File: a.txt\n-a\nb\n*** End Patch\n" | patch >actual &&
	test_grep "line 4: .b. is no line of a hunk" actual &&
	printf "*** Begin Patch\n*** Add File: n.txt\nno plus\n*** End Patch\n" | patch >actual &&
	test_grep "line 3: every line of \*\*\* Add File: n.txt starts with .+." actual &&
	printf "*** Begin Patch\n*** Rename File: a.txt\n*** End Patch\n" | patch >actual &&
	test_grep "line 2: .\*\*\* Rename File: a.txt. is not" actual &&
	printf "*** Begin Patch\n*** Update File: a.txt\n*** End Patch\n" | patch >actual &&
	test_grep "has no hunk" actual &&
	test "$(cat a.txt)" = a
'

test_expect_success 'unknown keys are refused' '
	call_msg apply_patch "{\"input\":\"*** Begin Patch\n*** End Patch\",\"dry_run\":true}" >in &&
	tool-exec --tools apply_patch <in >out &&
	content out >actual &&
	test_grep "^Error: apply_patch takes no argument .dry_run." actual
'

test_expect_success 'offered only by --tools: the default schema has it not, nor runs it' '
	tool-exec --schema >schema &&
	jq -e "map(.function.name) | index(\"apply_patch\") == null" schema &&
	AGENT_TOOLS=read_file,apply_patch tool-exec --schema >schema &&
	jq -e "map(.function.name) == [\"read_file\", \"apply_patch\"]" schema &&
	jq -e ".[1].function.parameters.required == [\"input\"]" schema &&
	test_expect_code 2 tool-exec --tools bash,patch --schema 2>err &&
	test_grep "unknown tool .patch." err &&
	printf "a\n" >a.txt &&
	call_msg apply_patch "{\"input\":\"*** Begin Patch\n*** Delete File: a.txt\n*** End Patch\"}" >in &&
	tool-exec <in >out &&
	content out >actual &&
	test_grep "^Error: the tool .apply_patch. is not offered" actual &&
	call_msg bash "{\"command\":\"echo hi\"}" >in &&
	tool-exec --tools read_file,apply_patch <in >out &&
	content out >actual &&
	test_grep "^Error: the tool .bash. is not offered in this session (the tools are: read_file,apply_patch)" actual &&
	test -e a.txt
'

test_expect_success 'the built-in policy asks about it, as about write_file' '
	decide apply_patch "{\"input\":\"*** Begin Patch\n*** End Patch\"}" &&
	test_grep "^deny file-writes: apply_patch modifies files; asking needs a terminal" got &&
	decide apply_patch "{\"input\":\"*** Begin Patch\n*** End Patch\"}" --yes &&
	test_grep "^allow file-writes: apply_patch modifies files" got
'

test_expect_success 'asked at a terminal, the question shows the patch as it is' '
	printf "*** Begin Patch\n*** Update File: a.txt\n-a\n+B\n*** End Patch" |
		jq -Rsc "{input: .}" >args &&
	call_msg apply_patch "$(cat args)" none >in &&
	"$TEST_DIR/pty-run.py" "hook-perm <in >out" n >tty &&
	test_contains tty "hook-perm: apply_patch wants to act on:" &&
	test_contains tty "    *** Update File: a.txt" &&
	test_contains tty "    +B" &&
	jq -e ".tool_calls[0].permission.decision == \"deny\"" out
'

test_expect_success 'agent-run --tools offers those tools, and the model patches with it' '
	printf "print(1)\n" >main.py &&
	jq -nc --arg p "*** Begin Patch
*** Update File: main.py
-print(1)
+print(2)
*** End Patch" "{tool_calls: [{name: \"apply_patch\", arguments: {input: \$p}}]}" >script &&
	echo "{\"content\": \"Patched.\"}" >>script &&
	start_model script &&
	AGENT_MODEL=scripted agent-run -y --tools bash,read_file,apply_patch "patch it" >answer 2>progress &&
	test "$(cat answer)" = Patched. &&
	test "$(cat main.py)" = "print(2)" &&
	req 1 ".tools | map(.function.name)" >actual &&
	test "$(cat actual)" = "[\"bash\",\"read_file\",\"apply_patch\"]" &&
	test_expect_code 2 agent-run -m scripted --tools bash,nope "x" 2>err &&
	test_grep "unknown tool .nope." err
'

test_done
