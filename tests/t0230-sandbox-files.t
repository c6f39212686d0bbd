#!/bin/sh
# The file tools and the sandbox against a hostile workspace: planted
# temporary files, metadata changes outside the write roots, and .git.
. "$(dirname "$0")/lib.sh"

# todo ID: a run_todo_write argument with one item.
todo() { printf '{"todos":[{"id":"%s","content":"step %s","status":"pending"}]}' "$1" "$1"; }
# ok OUT: the only result in OUT is not an error.
ok() { jq -e '.content | startswith("Error") | not' "$1" >/dev/null || { cat "$1" >&2; return 1; }; }
# only_planted: no file but the planted one has "tmp" in its name.
only_planted() { test "$(ls -A | grep tmp)" = "$1"; }
# calls FILE [MODE]: a bash call for each line of FILE, run by tool-exec
# in the workspace w (--sandbox MODE); the results go to out.
calls() {
	jq -Rsc '{role: "assistant", content: null, tool_calls: [split("\n")
		 | map(select(length > 0)) | to_entries[] | {id: "call_\(.key + 1)",
		   type: "function", permission: {decision: "allow"},
		   function: {name: "bash", arguments: ({command: .value} | tojson)}}]}' "$1" >calls.jsonl &&
	(cd w && timeout 60 tool-exec --sandbox "${2:-workspace-write}" <../calls.jsonl >../out)
}
# exits: "ID CODE" per result of out (0 for a command that exited 0).
exits() {
	jq -r '"\(.tool_call_id) \(.content | capture("\\[exit code: (?<c>[0-9]+)\\]$").c // "0")"' out
}
# meta FILE: its mode, owner, mtime and xattr names, as the harness sees it.
meta() {
	stat -c "%a %u:%g %Y" "$1" &&
	python3 -c "import os, sys; print(sorted(os.listxattr(sys.argv[1])))" "$1"
}

# --- temporary files (issue 15, item 10)

test_expect_success 'run_todo_write and todo-write: a FIFO at .todo.json.tmp does not hang them' '
	mkdir w && mkfifo w/.todo.json.tmp &&
	call_msg run_todo_write "$(todo a)" >in &&
	timeout 10 tool-exec -C w <in >out && ok out &&
	jq -e ".todos[0].id == \"a\"" w/todo.json &&
	todo b >list && (cd w && timeout 10 todo-write -q <../list) &&
	jq -e ".todos[0].id == \"b\"" w/todo.json &&
	test -p w/.todo.json.tmp && (cd w && only_planted .todo.json.tmp)
'

test_expect_success 'run_todo_write: a symlink at .todo.json.tmp is neither followed nor an error' '
	mkdir w && echo secret >victim && ln -s ../victim w/.todo.json.tmp &&
	call_msg run_todo_write "$(todo a)" >in &&
	timeout 10 tool-exec -C w <in >out && ok out &&
	jq -e ".todos[0].id == \"a\"" w/todo.json &&
	test "$(cat victim)" = secret && test -L w/.todo.json.tmp
'

test_expect_success 'write_file: a FIFO or a symlink at .NAME.tmp does not hang it or lead it elsewhere' '
	mkdir -p w/sub && mkfifo w/.new.txt.tmp w/sub/.f.txt.tmp &&
	echo old >w/sub/f.txt && echo secret >victim && ln -s ../victim w/.g.txt.tmp &&
	call_msg write_file "{\"path\":\"new.txt\",\"content\":\"one\\n\"}" >in &&
	timeout 10 tool-exec -C w <in >out && ok out && test "$(cat w/new.txt)" = one &&
	call_msg write_file "{\"path\":\"sub/f.txt\",\"content\":\"two\\n\"}" >in &&
	timeout 10 tool-exec -C w <in >out && ok out && test "$(cat w/sub/f.txt)" = two &&
	call_msg write_file "{\"path\":\"g.txt\",\"content\":\"three\\n\"}" >in &&
	timeout 10 tool-exec -C w <in >out && ok out && test "$(cat w/g.txt)" = three &&
	test "$(cat victim)" = secret && test -L w/.g.txt.tmp && test -p w/.new.txt.tmp
'

test_expect_success 'edit_file: a FIFO or a symlink at .NAME.tmp does not hang it or lead it elsewhere' '
	mkdir w && echo "a b c" >w/f.txt && echo "a b c" >w/g.txt && mkfifo w/.f.txt.tmp &&
	echo secret >victim && ln -s ../victim w/.g.txt.tmp &&
	call_msg edit_file "{\"path\":\"f.txt\",\"old_string\":\"b\",\"new_string\":\"B\"}" >in &&
	timeout 10 tool-exec -C w <in >out && ok out && test "$(cat w/f.txt)" = "a B c" &&
	call_msg edit_file "{\"path\":\"g.txt\",\"old_string\":\"c\",\"new_string\":\"C\"}" >in &&
	timeout 10 tool-exec -C w <in >out && ok out && test "$(cat w/g.txt)" = "a b C" &&
	test "$(cat victim)" = secret
'

test_expect_success 'a failed write leaves no temporary file, and a killed writer'"'"'s is removed by the next' '
	mkdir w && mkfifo w/.todo.json.tmp && : >w/.todo.json.AAAAbbbb1234.tmp &&
	jq -nc "{todos: [range(200) | {id: \"\(.)\", content: (\"step \" * 20), status: \"pending\"}]}" >big &&
	(cd w && trap "" XFSZ && ulimit -f 4 && test_must_fail timeout 10 todo-write -q <../big 2>../err) &&
	test_grep "File too large" err &&
	(cd w && only_planted .todo.json.tmp) &&
	: >w/.todo.json.CCCCdddd5678.tmp && todo a >list && (cd w && timeout 10 todo-write -q <../list) &&
	(cd w && only_planted .todo.json.tmp)
'

# --- metadata outside the write roots, nosuid (issue 15, item 8)

if [ -n "${AH_NO_SANDBOX:-}" ]; then
	test_done
	exit
fi

test_expect_success 'workspace-write: no chmod, chown, touch -d, setxattr or setuid bit outside the workspace' '
	mkdir w && echo "-----BEGIN KEY-----" >key && chmod 600 key &&
	echo "alias ls=ls" >"$HOME/.bashrc" && chmod 644 "$HOME/.bashrc" &&
	printf "#!/bin/sh\nid\n" >prog && chmod 755 prog &&
	meta key >key.before && meta "$HOME/.bashrc" >rc.before && meta prog >prog.before &&
	cat >cmds <<-\EOF &&
	chmod 644 ../key
	chmod 777 "$HOME/.bashrc"
	chown "$(id -u):$(id -g)" ../key
	touch -d 2001-02-03 ../key
	touch -h -d 2001-02-03 ../prog
	python3 -c "import os; os.setxattr(\"../key\", \"user.pwned\", b\"1\")"
	python3 -c "import os; os.setxattr(\"../prog\", \"user.pwned\", b\"1\", follow_symlinks=False)"
	chmod u+s,g+s ../prog
	EOF
	calls cmds && exits >codes &&
	test_grep ! " 0$" codes && test_line_count = 8 codes &&
	jq -r .content out >text && test_grep "Read-only file system" text &&
	meta key >key.after && meta "$HOME/.bashrc" >rc.after && meta prog >prog.after &&
	test_cmp key.before key.after && test_cmp rc.before rc.after &&
	test_cmp prog.before prog.after
'

test_expect_success 'workspace-write: metadata changes inside the workspace and TMPDIR work; both are nosuid; /dev/null is writable' '
	mkdir w && echo x >w/f && printf "#!/bin/sh\nid\n" >w/prog && chmod 755 w/prog &&
	cat >cmds <<-\EOF &&
	chmod 600 f && touch -d 2001-02-03 f && chmod u+s prog
	python3 -c "import os; os.setxattr(\"f\", \"user.ok\", b\"1\")"
	echo t >"$TMPDIR/t" && chmod 600 "$TMPDIR/t" && touch -d 2001-02-03 "$TMPDIR/t"
	python3 -c "import os, sys; sys.exit(0 if all(os.statvfs(d).f_flag & os.ST_NOSUID for d in (\".\", os.environ[\"TMPDIR\"])) else 1)"
	echo x >/dev/null && echo x >>/dev/null && : </dev/zero
	EOF
	calls cmds && exits >codes &&
	printf "call_%s 0\n" 1 2 3 4 5 >expect && test_cmp expect codes &&
	test "$(stat -c "%a %Y" w/f)" = "600 $(date -d 2001-02-03 +%s)" &&
	test "$(stat -c %a w/prog)" = 4755 &&
	python3 -c "import os; assert os.getxattr(\"w/f\", \"user.ok\") == b\"1\""
'

test_expect_success 'read-only: no metadata change in the workspace either; TMPDIR and /dev/null still work' '
	mkdir w && echo x >w/f && chmod 644 w/f && meta w/f >before &&
	cat >cmds <<-\EOF &&
	chmod 600 f
	touch -d 2001-02-03 f
	python3 -c "import os; os.setxattr(\"f\", \"user.pwned\", b\"1\")"
	echo t >"$TMPDIR/t" && chmod 600 "$TMPDIR/t" && echo x >/dev/null
	EOF
	calls cmds read-only && exits >codes &&
	printf "call_1 1\ncall_2 1\ncall_3 1\ncall_4 0\n" >expect && test_cmp expect codes &&
	meta w/f >after && test_cmp before after
'

test_expect_success 'without privilege (a user namespace): the same, for an ordinary user' '
	if [ "$(id -u)" != 0 ] || ! command -v setpriv >/dev/null ||
	   ! setpriv --reuid=65534 --regid=65534 --clear-groups test -x "$AH_BIN/tool-exec"; then
		echo "# skipped: needs root, setpriv, and programs nobody can run" >&2
	else
		u=$(mktemp -d "${TMPDIR:-/tmp}/ah-nobody.XXXXXX") &&
		test_when_finished "rm -rf \"$u\"" &&
		mkdir "$u/w" && echo secret >"$u/key" && chmod 600 "$u/key" && echo x >"$u/w/f" &&
		chmod 755 "$u" && chown -R 65534:65534 "$u" && meta "$u/key" >before &&
		printf "%s\n" "chmod 644 ../key" "touch -d 2001-02-03 ../key" \
			"chmod 600 f && touch -d 2001-02-03 f && echo y >g" \
			"python3 -c \"import os, sys; sys.exit(0 if os.statvfs(\\\".\\\").f_flag & os.ST_NOSUID else 1)\"" >cmds &&
		jq -Rsc "{role: \"assistant\", content: null, tool_calls: [split(\"\n\")
			| map(select(length > 0)) | to_entries[] | {id: \"call_\(.key + 1)\",
			type: \"function\", permission: {decision: \"allow\"},
			function: {name: \"bash\", arguments: ({command: .value} | tojson)}}]}" cmds >"$u/in" &&
		(cd "$u/w" && HOME=$u setpriv --reuid=65534 --regid=65534 --clear-groups \
			timeout 60 "$AH_BIN/tool-exec" <../in >"$u/out") &&
		cp "$u/out" out && exits >codes &&
		printf "call_1 1\ncall_2 1\ncall_3 0\ncall_4 0\n" >expect && test_cmp expect codes &&
		meta "$u/key" >after && test_cmp before after && test "$(cat "$u/w/g")" = y
	fi
'

test_done
