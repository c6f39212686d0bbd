#!/bin/sh
# tool-exec: the sandbox helper, set up once per session, which forks every
# sandboxed command.  What it protects follows what is on disk between
# calls, and it dies with tool-exec.
. "$(dirname "$0")/lib.sh"

need_sandbox

# msg ID TOOL ARGS: an assistant message with one allowed call.
msg() {
	call_msg "$2" "$3" allow "$1"
}
# bash_call ID COMMAND: the same for a bash call.
bash_call() {
	msg "$1" bash "$(jq -nc --arg c "$2" '{command: $c}')"
}
# lines FILE N: FILE has at least N lines.
lines() {
	test "$(wc -l <"$1")" -ge "$2"
}
# kids PID: the children of PID, one a line.
kids() {
	tr ' ' '\n' <"/proc/$1/task/$1/children" | grep .
}
# zombie_kids PID: the children of PID that are zombies, one a line.
zombie_kids() {
	for z_ in $(kids "$1"); do
		! gone "$z_" || echo "$z_"
	done
}
# warm PID: the shell started ahead under tool-exec PID (a grandchild of
# its helper, running the line that waits for the command), if one waits.
warm() {
	for h_ in $(kids "$1"); do
		for s_ in $(kids "$h_"); do
			for b_ in $(kids "$s_"); do
				tr '\0' ' ' <"/proc/$b_/cmdline" |
					grep -q 'BASH_EXECUTION_STRING=\$(</proc/self/fd/3)' && echo "$b_"
			done
		done
	done 2>/dev/null
	return 0
}
has_warm() {
	test -n "$(warm "$1")"
}
# result ID: the content of the result of call ID in out.
result() {
	jq -r --arg id "$1" 'select(.tool_call_id == $id) | .content' out
}

test_expect_success 'one helper per session: it forks every call, holds no fd but /dev/null, its socket and its Landlock ruleset, and goes with tool-exec' '
	mkdir ws &&
	bash_call c1 "echo one" >m1 && bash_call c2 "echo two" >m2 &&
	test_when_finished "kill -9 \$(cat pid) 2>/dev/null || :" &&
	{ { cat m1 && wait_until 20 lines out 1 &&
	    kids "$(cat pid)" >h1 &&
	    for f in /proc/$(cat h1)/fd/*; do readlink "$f"; done >fds &&
	    cat m2 && wait_until 20 lines out 2 &&
	    kids "$(cat pid)" >h2 && touch fed; } |
	  sh -c "echo \$\$ >pid && exec tool-exec -C ws >out"; } &&
	test -e fed &&
	test_line_count = 1 h1 &&
	test_cmp h1 h2 &&
	sed "s/socket:.*/socket/" fds | sort >actual &&
	printf "%s\n" /dev/null /dev/null /dev/null "anon_inode:[landlock-ruleset]" \
		socket | sort >expect &&
	test_cmp expect actual &&
	test "$(result c1)" = one && test "$(result c2)" = two &&
	wait_until 5 gone "$(cat h1)"
'

test_expect_success 'a protected path the session creates, then replaces, is read-only to the next call' '
	mkdir ws ws/.agent &&
	todo="{\"todos\":[{\"id\":\"1\",\"content\":\"a\",\"status\":\"pending\"}]}" &&
	{ bash_call c1 "echo one" &&
	  msg c2 run_todo_write "$todo" &&
	  bash_call c3 "echo x >todo.json" &&
	  msg c4 run_todo_write "$todo" &&
	  bash_call c5 "echo x >todo.json"; } >in &&
	jq -c ".tool_calls[]" in | jq -sc "{role: \"assistant\", content: null, tool_calls: .}" >one &&
	tool-exec -C ws <one >out &&
	test "$(result c1)" = one &&
	result c3 >r3 && test_grep "Read-only file system" r3 &&
	test_grep "\[exit code: 1\]" r3 &&
	result c5 >r5 && test_grep "Read-only file system" r5 &&
	jq -e ".todos[0].content == \"a\"" ws/todo.json
'

test_expect_success 'a .git made outside the sandbox between two calls, in a new directory or an old one, is read-only to the second' '
	mkdir ws ws/old &&
	bash_call c1 "echo one" >m1 &&
	bash_call c2 "echo x >>sub/.git/config; echo x >sub/.git/hooks/post-checkout" >m2 &&
	bash_call c3 "echo x >>old/.git/config" >m3 &&
	{ cat m1 && wait_until 20 lines out 1 && git init -q ws/sub &&
	  git init -q ws/old &&
	  cp ws/sub/.git/config config.before && cp ws/old/.git/config old.before &&
	  cat m2 && wait_until 20 lines out 2 && cat m3 && wait_until 20 lines out 3 &&
	  touch fed; } | tool-exec -C ws >out &&
	test -e fed &&
	result c2 >r2 && test_grep "Read-only file system" r2 &&
	result c3 >r3 && test_grep "Read-only file system" r3 &&
	test_cmp config.before ws/sub/.git/config &&
	test_cmp old.before ws/old/.git/config &&
	! test -e ws/sub/.git/hooks/post-checkout
'

test_expect_success 'watched walks: a .git made in a new tree, a tree moved in, an old directory, a renamed one is moved aside after the command' '
	mkdir ws ws/keep &&
	{ bash_call c1 "mkdir -p a/b/c && git init -q a/b/c" &&
	  bash_call c2 "mkdir -p \$TMPDIR/t/u && git init -q \$TMPDIR/t/u && mv \$TMPDIR/t moved" &&
	  bash_call c3 "git init -q keep" &&
	  bash_call c4 "mkdir -p r/s && mv r q && git init -q q/s" &&
	  bash_call c5 "echo done"; } >in &&
	jq -c ".tool_calls[]" in | jq -sc "{role: \"assistant\", content: null, tool_calls: .}" >one &&
	tool-exec -C ws <one >out &&
	for c in c1 c2 c3 c4; do
		result $c >r && test_grep "was made by the command" r || return 1
	done &&
	(cd ws && find . -iname .git) >left &&
	test_line_count = 0 left &&
	(cd ws && find . -name ".git.refused-*") >aside &&
	test_line_count = 4 aside &&
	test "$(result c5)" = done
'

test_expect_success 'kill -9 of the helper: every process of the call it ran is gone, the call says so, the next runs' '
	mark=7$(($$ % 1000))4 &&
	mkdir ws &&
	bash_call c1 "sleep ${mark}1 & setsid sleep ${mark}2 & sleep ${mark}3" >m1 &&
	bash_call c2 "echo after" >m2 &&
	test_when_finished "kill -9 \$(cat pid) 2>/dev/null || :" &&
	{ { cat m1 && wait_until 10 some_left "$mark" 3 &&
	    kill -9 "$(kids "$(cat pid)")" &&
	    wait_until 20 lines out 1 && cat m2 && wait_until 20 lines out 2 &&
	    touch fed; } |
	  sh -c "echo \$\$ >pid && exec tool-exec -C ws >out"; } &&
	test -e fed &&
	test -z "$(left "$mark")" &&
	result c1 >r1 && test_grep "\[killed by signal 9\]" r1 &&
	test "$(result c2)" = after
'

test_expect_success 'kill -9 of tool-exec: the helper and the call it runs are gone within a second' '
	mark=7$(($$ % 1000))5 &&
	mkdir ws &&
	bash_call c1 "sleep ${mark}1 & setsid sleep ${mark}2 & sleep ${mark}3" >m1 &&
	test_when_finished "kill -9 \$(cat pid) 2>/dev/null || :" &&
	{ { cat m1 && wait_until 10 some_left "$mark" 3 &&
	    kids "$(cat pid)" >h && kill -9 "$(cat pid)" && sleep 1 && touch fed; } |
	  sh -c "echo \$\$ >pid && exec tool-exec -C ws >out"; echo $? >rc; } &&
	test -e fed && test "$(cat rc)" = 137 &&
	test_line_count = 1 h &&
	gone "$(cat h)" &&
	test -z "$(left "$mark")"
'

test_expect_success 'the next shell starts while tool-exec waits for the model: the call runs in it, confined, fds 0-2, SECONDS from the command' '
	mkdir ws &&
	bash_call c1 "echo one" >m1 &&
	cat >cmd2 <<-\EOF &&
	echo "$SECONDS [$_]"
	cut -d" " -f22 /proc/$$/stat
	ls /proc/self/fd | tr "\n" " "
	echo
	touch ../escaped
	EOF
	bash_call c2 "$(cat cmd2)" >m2 &&
	test_when_finished "kill -9 \$(cat pid) 2>/dev/null || :" &&
	{ { cat m1 && wait_until 20 lines out 1 &&
	    wait_until 20 has_warm "$(cat pid)" &&
	    w=$(warm "$(cat pid)") && cut -d" " -f22 "/proc/$w/stat" >started &&
	    sleep 1 && cat m2 && wait_until 20 lines out 2 && touch fed; } |
	  sh -c "echo \$\$ >pid && exec tool-exec -C ws >out"; } &&
	test -e fed &&
	result c2 >r2 &&
	sed -n 2p r2 >got && test_cmp started got &&
	head -n 1 r2 >secs && echo "0 [/bin/bash]" >expect && test_cmp expect secs &&
	sed -n 3p r2 >fds && echo "0 1 2 3 " >expect && test_cmp expect fds &&
	test_grep "escaped.*Read-only file system" r2 &&
	! test -e escaped
'

test_expect_success 'a shell started ahead: one killed is replaced and the call runs; it goes at the end of input' '
	mkdir ws &&
	bash_call c1 "echo one" >m1 && bash_call c2 "echo two" >m2 &&
	test_when_finished "kill -9 \$(cat pid) 2>/dev/null || :" &&
	{ { cat m1 && wait_until 20 lines out 1 &&
	    wait_until 20 has_warm "$(cat pid)" && warm "$(cat pid)" >w1 &&
	    kill -9 "$(cat w1)" && wait_until 5 gone "$(cat w1)" &&
	    cat m2 && wait_until 20 lines out 2 &&
	    wait_until 20 has_warm "$(cat pid)" && warm "$(cat pid)" >w2 &&
	    touch fed; } |
	  sh -c "echo \$\$ >pid && exec tool-exec -C ws >out"; } &&
	test -e fed &&
	test "$(result c1)" = one && test "$(result c2)" = two &&
	! test "$(cat w1)" = "$(cat w2)" &&
	wait_until 5 gone "$(cat w2)"
'

test_expect_success 'a shell started ahead runs a command that starts with - or + as a shell started for the call does (bash -c --)' '
	mkdir ws &&
	bash_call c1 "-e 2>/dev/null; echo one" >m1 &&
	bash_call c2 "+x 2>/dev/null; echo two" >m2 &&
	test_when_finished "kill -9 \$(cat pid) 2>/dev/null || :" &&
	{ { cat m1 && wait_until 20 lines out 1 &&
	    wait_until 20 has_warm "$(cat pid)" &&
	    cat m2 && wait_until 20 lines out 2 && touch fed; } |
	  sh -c "echo \$\$ >pid && exec tool-exec -C ws >out"; } &&
	test -e fed &&
	test "$(result c1)" = one && test "$(result c2)" = two
'

test_expect_success 'a shell started ahead goes with tool-exec (kill -9)' '
	mkdir ws &&
	bash_call c1 "echo one" >m1 &&
	test_when_finished "kill -9 \$(cat pid) 2>/dev/null || :" &&
	{ { cat m1 && wait_until 20 lines out 1 &&
	    wait_until 20 has_warm "$(cat pid)" && warm "$(cat pid)" >w &&
	    kill -9 "$(cat pid)" && touch fed; } |
	  sh -c "echo \$\$ >pid && exec tool-exec -C ws >out"; echo $? >rc; } &&
	test -e fed && test "$(cat rc)" = 137 &&
	test_line_count = 1 w &&
	wait_until 5 gone "$(cat w)"
'

test_expect_success 'with a shell other than bash, none is started ahead (no supervisor waits): each call runs in SHELL -c' '
	mkdir ws &&
	bash_call c1 "echo one" >m1 && bash_call c2 "echo \$0" >m2 &&
	test_when_finished "kill -9 \$(cat pid) 2>/dev/null || :" &&
	{ { cat m1 && wait_until 20 lines out 1 && sleep 1 &&
	    h=$(kids "$(cat pid)") && { kids "$h" || :; } >sups &&
	    cat m2 && wait_until 20 lines out 2 && touch fed; } |
	  sh -c "echo \$\$ >pid && exec tool-exec --shell /bin/sh -C ws >out"; } &&
	test -e fed &&
	test_line_count = 0 sups &&
	test "$(result c2)" = /bin/sh
'

test_expect_success 'what is protected changes, six times: each shell started ahead is discarded and reaped (no zombie counts against --max-procs 4), every call runs' '
	mkdir ws &&
	for i in 1 2 3 4 5 6; do bash_call c$i "echo $i" >m$i || return 1; done &&
	test_when_finished "kill -9 \$(cat pid) 2>/dev/null || :" &&
	{ { for i in 1 2 3 4 5 6; do
		cat m$i && wait_until 20 lines out $i &&
		wait_until 20 has_warm "$(cat pid)" &&
		if test -e ws/prot; then rm ws/prot; else touch ws/prot; fi ||
		exit 1
	    done &&
	    zombie_kids "$(cat pid)" >zombies &&
	    touch fed; } |
	  sh -c "echo \$\$ >pid && exec tool-exec -C ws --max-procs 4 --protect \"\$PWD/ws/prot\" >out"; } &&
	test -e fed &&
	test_line_count = 0 zombies &&
	for i in 1 2 3 4 5 6; do test "$(result c$i)" = $i || return 1; done
'

test_expect_success 'a shell started ahead runs the command as bash -c: its trailing backslash, the blank lines ending a here-document, BASH_EXECUTION_STRING, no fd of the shell but 0-2' '
	mkdir ws &&
	printf "echo a\\\\" >cmd1 &&
	printf "cat <<EOF\nx\n\n\n" >cmd2 &&
	printf "%s\n%s" "printf \"%s|\" \"\$BASH_EXECUTION_STRING\"" \
		"ls /proc/\$\$/fd >\"\$TMPDIR/fds\"; tr \"\\\\n\" \" \" <\"\$TMPDIR/fds\"" >cmd3 &&
	for i in 1 2 3; do
		c=$(cat cmd$i; echo .) && bash_call c$i "${c%.}" >m$i || return 1
	done &&
	test_when_finished "kill -9 \$(cat pid) 2>/dev/null || :" &&
	{ { wait_until 20 test -s pid && for i in 1 2 3; do
		wait_until 20 has_warm "$(cat pid)" && cat m$i &&
		wait_until 20 lines out $i || exit 1
	    done
	    touch fed; } |
	  sh -c "echo \$\$ >pid && exec tool-exec -C ws >out"; } &&
	test -e fed &&
	for i in 1 2; do
		jq -j "select(.tool_call_id == \"c$i\") | .content" out >got$i &&
		c=$(cat cmd$i; echo .) &&
		/bin/bash -c "${c%.}" >want$i 2>&1 </dev/null &&
		test_cmp want$i got$i || return 1
	done &&
	printf "%s|0 1 2 " "$(cat cmd3)" >want3 &&
	jq -j "select(.tool_call_id == \"c3\") | .content" out >got3 &&
	test_cmp want3 got3
'

test_expect_success 'a shell started ahead stopped (SIGSTOP), and a command of 100 KB: the call ends at its --timeout, tool-exec goes on' '
	mkdir ws &&
	bash_call c1 "echo one" >m1 &&
	bash_call c2 "echo big; : $(printf "%0100000d" 0)" >m2 &&
	bash_call c3 "echo three" >m3 &&
	test_when_finished "kill -9 \$(cat pid) 2>/dev/null || :" &&
	{ { cat m1 && wait_until 20 lines out 1 &&
	    wait_until 20 has_warm "$(cat pid)" && kill -STOP "$(warm "$(cat pid)")" &&
	    cat m2 && { wait_until 20 lines out 2 || kill -9 "$(cat pid)"; } &&
	    cat m3 && wait_until 20 lines out 3 && touch fed; } |
	  sh -c "echo \$\$ >pid && exec tool-exec -C ws --timeout 1 >out"; } &&
	test -e fed &&
	result c2 >r2 && test_grep "^\[timed out after 1 s: killed\]" r2 &&
	test "$(result c3)" = three
'

test_expect_success 'a shell started ahead is not counted against --max-procs: a command that bash -c runs within the limit runs' '
	mkdir ws &&
	bash_call c1 "sleep 0.1" >m1 &&
	test_when_finished "kill -9 \$(cat pid) 2>/dev/null || :" &&
	{ { wait_until 20 test -s pid && wait_until 20 has_warm "$(cat pid)" &&
	    cat m1 && wait_until 20 lines out 1 && touch fed; } |
	  sh -c "echo \$\$ >pid && exec tool-exec -C ws --max-procs 2 >out"; } &&
	test -e fed &&
	test "$(result c1)" = "(no output)" &&
	ln -s /bin/bash coldbash &&
	bash_call c2 "sleep 0.1" | tool-exec -C ws --shell "$PWD/coldbash" --max-procs 2 >out &&
	test "$(result c2)" = "(no output)"
'

test_expect_success 'a task call leaves the sandbox helper and the shell started ahead alone (the sweep after it spares the helper): the next call runs in that shell' '
	mkdir ws &&
	bash_call c1 "echo one" >m1 &&
	msg t1 task "{\"prompt\": \"p\"}" >m2 &&
	bash_call c2 "echo two" >m3 &&
	test_when_finished "kill -9 \$(cat pid) 2>/dev/null || :" &&
	{ { cat m1 && wait_until 20 lines out 1 &&
	    wait_until 20 has_warm "$(cat pid)" &&
	    kids "$(cat pid)" >h1 && warm "$(cat pid)" >w1 &&
	    cat m2 && wait_until 20 lines out 2 &&
	    kids "$(cat pid)" >h2 && warm "$(cat pid)" >w2 &&
	    cat m3 && wait_until 20 lines out 3 && touch fed; } |
	  sh -c "echo \$\$ >pid && exec tool-exec -C ws >out"; } &&
	test -e fed &&
	result t1 >r1 && test_grep "^Error: task" r1 &&
	test_line_count = 1 h1 && test_cmp h1 h2 &&
	test_line_count = 1 w1 && test_cmp w1 w2 &&
	test "$(result c2)" = two
'

test_expect_success 'a protected path made by a call of the same message: the bash call after it does not run in the shell started before' '
	mkdir ws ws/.agent &&
	todo="{\"todos\":[{\"id\":\"1\",\"content\":\"a\",\"status\":\"pending\"}]}" &&
	bash_call c1 "echo one" >m1 &&
	{ msg t1 run_todo_write "$todo" && bash_call c2 "echo x >todo.json"; } >two &&
	jq -c ".tool_calls[]" two | jq -sc "{role: \"assistant\", content: null, tool_calls: .}" >m2 &&
	test_when_finished "kill -9 \$(cat pid) 2>/dev/null || :" &&
	{ { cat m1 && wait_until 20 lines out 1 &&
	    wait_until 20 has_warm "$(cat pid)" && warm "$(cat pid)" >w1 &&
	    cat m2 && wait_until 20 lines out 3 && touch fed; } |
	  sh -c "echo \$\$ >pid && exec tool-exec -C ws >out"; } &&
	test -e fed &&
	result c2 >r2 && test_grep "Read-only file system" r2 &&
	jq -e ".todos[0].content == \"a\"" ws/todo.json &&
	wait_until 5 gone "$(cat w1)"
'

test_expect_success 'kill -9 of the helper while a shell started ahead waits: the next call runs, and no zombie is left' '
	mkdir ws &&
	bash_call c1 "echo one" >m1 && bash_call c2 "echo two" >m2 &&
	test_when_finished "kill -9 \$(cat pid) 2>/dev/null || :" &&
	{ { cat m1 && wait_until 20 lines out 1 &&
	    wait_until 20 has_warm "$(cat pid)" && warm "$(cat pid)" >w &&
	    kids "$(cat pid)" >h && kill -9 "$(cat h)" &&
	    wait_until 5 gone "$(cat h)" && wait_until 5 gone "$(cat w)" &&
	    cat m2 && wait_until 20 lines out 2 &&
	    zombie_kids "$(cat pid)" >zombies &&
	    touch fed; } |
	  sh -c "echo \$\$ >pid && exec tool-exec -C ws >out"; } &&
	test -e fed &&
	test_line_count = 0 zombies &&
	test "$(result c2)" = two
'

test_expect_success 'the line a shell started ahead runs: a command that did not come whole (tool-exec died while it wrote: no dot after it) is not run' '
	mkdir ws &&
	test_when_finished "kill -9 \$(cat pid) 2>/dev/null || :" &&
	{ { wait_until 20 test -s pid && wait_until 20 has_warm "$(cat pid)" &&
	    tr "\0" "\n" <"/proc/$(warm "$(cat pid)")/cmdline" >argv &&
	    touch fed; } |
	  sh -c "echo \$\$ >pid && exec tool-exec -C ws >out"; } &&
	test -e fed &&
	sed -n 4p argv >boot &&
	{ printf "touch cut" | bash -c "$(cat boot)" 3<&0 </dev/null; echo $? >rc; } &&
	echo 125 >expect && test_cmp expect rc && ! test -e cut &&
	printf "touch whole." | bash -c "$(cat boot)" 3<&0 </dev/null &&
	test -e whole
'

test_expect_success 'no shell is started ahead when the commands get SHELLOPTS, BASHOPTS or BASH_ENV (--pass-env): bash would trace the line that waits' '
	mkdir ws &&
	bash_call c1 "echo one" >m1 && bash_call c2 "echo two" >m2 &&
	test_when_finished "kill -9 \$(cat pid) 2>/dev/null || :" &&
	{ { cat m1 && wait_until 20 lines out 1 && sleep 1 &&
	    warm "$(cat pid)" >w &&
	    cat m2 && wait_until 20 lines out 2 && touch fed; } |
	  SHELLOPTS=xtrace sh -c "echo \$\$ >pid && exec tool-exec -C ws --pass-env SHELLOPTS >out"; } &&
	test -e fed &&
	test_line_count = 0 w &&
	printf "+ echo two\ntwo\n" >expect &&
	result c2 | sed "/^\$/d" >actual && test_cmp expect actual
'

# inotify PID: the inotify fds PID holds, one a line.
inotify() {
	for f_ in /proc/"$1"/fd/*; do readlink "$f_"; done |
		awk "\$0 == \"anon_inode:inotify\""
}

test_expect_success 'the .git walks are watched from the second message on: a tool-exec of one message holds no inotify, whose freeing at exit waits' '
	mkdir ws &&
	bash_call c1 "echo one" >m1 && bash_call c2 "echo two" >m2 &&
	bash_call c3 "mkdir -p d/e/.git" >m3 &&
	test_when_finished "kill -9 \$(cat pid) 2>/dev/null || :" &&
	{ { cat m1 && wait_until 20 lines out 1 && inotify "$(cat pid)" >n1 &&
	    cat m2 && wait_until 20 lines out 2 && inotify "$(cat pid)" >n2 &&
	    cat m3 && wait_until 20 lines out 3 && touch fed; } |
	  sh -c "echo \$\$ >pid && exec tool-exec -C ws >out"; } &&
	test -e fed &&
	test_line_count = 0 n1 &&
	test_line_count = 1 n2 &&
	result c3 >r3 && test_grep "d/e/.git. was made" r3 &&
	ls -d ws/d/e/.git.refused-*
'

test_done
