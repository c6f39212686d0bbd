#!/bin/sh
# The file tools and the sandbox against a hostile workspace: planted
# temporary files, metadata changes outside the write roots, and .git.
. "$(dirname "$0")/lib.sh"

# todo ID: a run_todo_write argument with one item.
todo() { printf '{"todos":[{"id":"%s","content":"step %s","status":"pending"}]}' "$1" "$1"; }
# ok OUT: the only result in OUT is not an error.
ok() { jq -e '.content | startswith("Error") | not' "$1" >/dev/null || { cat "$1" >&2; return 1; }; }
# only_planted: no file but the planted one has "tmp" in its name.
only_planted() { test "$(find . -name "*tmp*" | sed "s|^\./||")" = "$1"; }
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

# --- links inside the workspace

# Landlock (ABI 2 on) refuses every link and rename to another directory
# unless REFER is handled and allowed: the workspace allows it (mv would
# copy instead; ln cannot)
test_expect_success 'a hard link from one directory of the workspace to another' '
	mkdir w &&
	echo "mkdir a b && echo x >a/f && ln a/f b/g && cat b/g" >cmds &&
	calls cmds &&
	exits >codes && echo "call_1 0" >expect && test_cmp expect codes &&
	test "$(jq -r .content out)" = x &&
	test "$(cat w/b/g)" = x
'

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

# The rest needs the sandbox (under valgrind, or where this machine has
# none, it is off).
if [ -n "${AH_NO_SANDBOX:-}" ] || [ "${AGENT_SANDBOX:-}" = off ]; then
	test_done
	exit
fi

# --- .git (issue 15, item 7)

# gitcfg: git as the user runs it, with an identity and file submodules.
gitcfg() { git -c user.name=t -c user.email=t@t -c protocol.file.allow=always "$@"; }
# repo DIR: a repository with one commit.
repo() { git init -q "$1" && gitcfg -C "$1" commit -q --allow-empty -m init; }
# pwned: the user's git status in $1 ran nothing the model planted.
pwned() { (cd "$1" && git status >/dev/null 2>&1); find "$TRASH" -maxdepth 1 -name "PWNED*" | grep .; }

test_expect_success 'bash: all of .git is read-only: core.fsmonitor, commondir, info, HEAD, refs' '
	TRASH=$PWD AGENT_PASS_ENV=TRASH && export TRASH AGENT_PASS_ENV && repo w && head=$(git -C w rev-parse HEAD) &&
	cp w/.git/info/exclude exclude.before &&
	cat >cmds <<-\EOF &&
	git config core.fsmonitor "touch $TRASH/PWNED-config"
	mkdir -p evil/objects evil/refs && printf "[core]\n\tfsmonitor = touch $TRASH/PWNED-commondir\n" >evil/config && echo ../evil >.git/commondir
	echo "*" >>.git/info/exclude
	echo "ref: refs/heads/evil" >.git/HEAD
	git update-ref refs/heads/master HEAD~0 && echo 0000000000000000000000000000000000000000 >.git/refs/heads/master
	printf "[core]\n\tfsmonitor = touch $TRASH/PWNED-new\n" >.git/config.worktree
	rm -rf .git/objects
	mv .git/config .git/config.old
	EOF
	calls cmds && exits >codes && test_grep ! " 0$" codes && test_line_count = 8 codes &&
	jq -r .content out >text && test_grep "Read-only file system" text &&
	test_must_fail pwned w && test "$(git -C w rev-parse HEAD)" = "$head" &&
	test_cmp exclude.before w/.git/info/exclude && ! test -e w/.git/commondir &&
	test -d w/.git/objects && test -f w/.git/config && ! test -e w/.git/config.worktree
'

test_expect_success 'bash: a submodule'"'"'s .git file and .git/modules/*/config are read-only' '
	TRASH=$PWD AGENT_PASS_ENV=TRASH && export TRASH AGENT_PASS_ENV && repo src && repo w &&
	gitcfg -C w submodule add -q "$PWD/src" sub && gitcfg -C w commit -qm sub &&
	cat >cmds <<-\EOF &&
	git -C sub config core.fsmonitor "touch $TRASH/PWNED-module"
	echo "[core] fsmonitor = touch $TRASH/PWNED-module2" >>.git/modules/sub/config
	git init -q --bare evil && git -C evil config core.fsmonitor "touch $TRASH/PWNED-gitdir" && echo "gitdir: ../evil" >sub/.git
	rm sub/.git
	EOF
	calls cmds && exits >codes && test_grep ! " 0$" codes && test_line_count = 4 codes &&
	test_must_fail pwned w && test "$(cat w/sub/.git)" = "gitdir: ../.git/modules/sub"
'

test_expect_success 'bash: a worktree'"'"'s .git pointer file, and the git directory it points to inside the workspace, are read-only' '
	TRASH=$PWD AGENT_PASS_ENV=TRASH && export TRASH AGENT_PASS_ENV && repo main &&
	git -C main worktree add -q ../w && mkdir w/inner && repo w/inner/r &&
	git -C w/inner/r worktree add -q ../../wt2 && cp w/.git pointer &&
	cat >cmds <<-\EOF &&
	git init -q --bare evil && git -C evil config core.fsmonitor "touch $TRASH/PWNED-worktree" && echo "gitdir: $PWD/evil" >.git
	git -C wt2 config core.fsmonitor "touch $TRASH/PWNED-inner"
	echo "[core] fsmonitor = touch $TRASH/PWNED-wt2" >>inner/r/.git/worktrees/wt2/config.worktree
	EOF
	calls cmds && exits >codes && test_grep ! " 0$" codes && test_line_count = 3 codes &&
	test_cmp pointer w/.git && test_must_fail pwned w && test_must_fail pwned w/wt2
'

test_expect_success 'bash: a .git the command creates anywhere is moved aside after it, and the result says so' '
	TRASH=$PWD AGENT_PASS_ENV=TRASH && export TRASH AGENT_PASS_ENV && mkdir -p w/a/b && echo keep >w/a/b/f &&
	cat >cmds <<-\EOF &&
	git init -q && git config core.fsmonitor "touch $TRASH/PWNED-top" && echo top
	mkdir -p a/b/.git/hooks && printf "#!/bin/sh\ntouch $TRASH/PWNED-hook\n" >a/b/.git/hooks/pre-commit && echo nested
	git init -q a/c && echo inited
	ln -s "$TRASH" .GIT && echo "gitdir: ../../evil" >a/.git && echo links
	EOF
	calls cmds && exits >codes &&
	printf "call_%s 0\n" 1 2 3 4 >expect && test_cmp expect codes &&
	jq -r .content out >text && grep "refused-" text >text.refused &&
	for g in .git a/b/.git a/c/.git .GIT a/.git
	do
		test_grep "^\[sandbox: '"'"'$g'"'"' was made by the command: a .git there would run its hooks and configuration at the user'"'"'s next git command, outside the sandbox; moved aside to '"'"'${g##*/}\.refused-[a-z0-9]\{6\}'"'"'\]$" text || return 1
	done &&
	test -z "$(find w -iname .git)" && test "$(cat w/a/b/f)" = keep &&
	test -d w/a/c && test_must_fail pwned w/a/b && test_must_fail pwned w &&
	test_line_count = 5 text.refused &&
	ls -d w/.git.refused-* w/.GIT.refused-* w/a/.git.refused-* w/a/b/.git.refused-* w/a/c/.git.refused-*
'

test_expect_success 'write_file and edit_file refuse .git and every path through one, existing or new' '
	repo w && repo w/inner && git init -q --separate-git-dir="$PWD/w/gd" w/sep &&
	ln -s .git w/lnk && cp w/.git/config config.before &&
	for p in .git/config .git/commondir .git/info/exclude inner/.git/config sep/.git gd/config \
		new/.git/config x/y/.Git/hooks/pre-commit lnk/config lnk/newfile
	do
		call_msg write_file "$(jq -nc --arg p "$p" "{path: \$p, content: \"x\"}")" >in &&
		(cd w && tool-exec <../in >../out) &&
		jq -e ".content | startswith(\"Error: write_file\")" out >/dev/null &&
		test_grep "read-only" out || return 1
	done &&
	call_msg edit_file "{\"path\":\".git/config\",\"old_string\":\"[core]\",\"new_string\":\"[core]\\n\\tfsmonitor = touch PWNED\"}" >in &&
	(cd w && tool-exec <../in >../out) && test_grep "Error: edit_file" out &&
	test_cmp config.before w/.git/config && test -z "$(find w -iname .git -newer config.before)" &&
	! test -e w/new && ! test -e w/x && test "$(cat w/sep/.git)" = "gitdir: $PWD/w/gd" &&
	call_msg write_file "{\"path\":\"sub/.gitignore\",\"content\":\"x\"}" >in &&
	(cd w && tool-exec <../in >../out) && test_grep "Wrote 1 bytes" out
'

test_expect_success '--allow-git (AGENT_SANDBOX_GIT=1): the model may commit and git init, unsafely, and nothing is moved aside' '
	repo w &&
	printf "%s\n" "echo x >x && git add x && git -c user.name=t -c user.email=t@t commit -qm x && git init -q sub && echo done" >cmds &&
	calls cmds && test_must_fail test "$(git -C w log --oneline | wc -l)" = 2 &&
	jq -Rsc "{role: \"assistant\", content: null, tool_calls: [{id: \"c\", type: \"function\", permission: {decision: \"allow\"}, function: {name: \"bash\", arguments: ({command: .} | tojson)}}]}" cmds >in &&
	(cd w && git reset -q --hard && git clean -qfdx && tool-exec --allow-git <../in >../out) &&
	test "$(git -C w log --oneline | wc -l)" = 2 && test -d w/sub/.git && test_grep ! refused out &&
	call_msg write_file "{\"path\":\".git/info/exclude\",\"content\":\"*.o\\n\"}" >in &&
	(cd w && AGENT_SANDBOX_GIT=1 tool-exec <../in >../out) && test_grep "Wrote 4 bytes" out &&
	test "$(cat w/.git/info/exclude)" = "*.o"
'

# --- metadata outside the write roots, nosuid (issue 15, item 8)


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
	AGENT_SANDBOX_ALLOW_READ=$PWD:$HOME/.bashrc calls cmds && exits >codes &&
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

test_expect_success 'without privilege (a user namespace): the same, for an ordinary user, and a .git hidden in a directory made unreadable is found' '
	if [ "$(id -u)" != 0 ] || ! command -v setpriv >/dev/null ||
	   ! setpriv --reuid=65534 --regid=65534 --clear-groups test -x "$AH_BIN/tool-exec"; then
		echo "# skipped: needs root, setpriv, and programs nobody can run" >&2
	else
		u=$(mktemp -d "$AH_TMPDIR/ah-nobody.XXXXXX") &&
		test_when_finished "rm -rf \"$u\"" &&
		mkdir "$u/w" && echo secret >"$u/key" && chmod 600 "$u/key" && echo x >"$u/w/f" &&
		chmod 755 "$u" && chown -R 65534:65534 "$u" && meta "$u/key" >before &&
		printf "%s\n" "chmod 644 ../key" "touch -d 2001-02-03 ../key" \
			"chmod 600 f && touch -d 2001-02-03 f && echo y >g" \
			"python3 -c \"import os, sys; sys.exit(0 if os.statvfs(\\\".\\\").f_flag & os.ST_NOSUID else 1)\"" \
			"mkdir -p hide/.git/hooks && chmod 000 hide" >cmds &&
		jq -Rsc "{role: \"assistant\", content: null, tool_calls: [split(\"\n\")
			| map(select(length > 0)) | to_entries[] | {id: \"call_\(.key + 1)\",
			type: \"function\", permission: {decision: \"allow\"},
			function: {name: \"bash\", arguments: ({command: .value} | tojson)}}]}" cmds >"$u/in" &&
		(cd "$u/w" && HOME=$u TMPDIR=$AH_TMPDIR setpriv --reuid=65534 --regid=65534 --clear-groups \
			timeout 60 "$AH_BIN/tool-exec" <../in >"$u/out") &&
		cp "$u/out" out && exits >codes &&
		printf "call_1 1\ncall_2 1\ncall_3 0\ncall_4 0\ncall_5 0\n" >expect && test_cmp expect codes &&
		meta "$u/key" >after && test_cmp before after && test "$(cat "$u/w/g")" = y &&
		test_grep "'"'"'hide/.git'"'"' was made by the command" out &&
		! test -e "$u/w/hide/.git" && ls -d "$u"/w/hide/.git.refused-*
	fi
'

test_done
