#!/bin/sh
# tool-exec --sandbox: what a command sees is an allow-list view; the
# channels to the user's own processes (unix sockets of daemons, files of
# the home directory, the host's /tmp and /run) are not in it.
. "$(dirname "$0")/lib.sh"

need_sandbox

# calls FILE [OPTION...]: runs each line of FILE as a bash call in p, with
# tool-exec's options; the results in out.
calls() {
	cf_=$1
	shift
	jq -Rsc '{role: "assistant", content: null, tool_calls: [split("\n")
		| map(select(length > 0)) | to_entries[] | {id: "call_\(.key + 1)",
		  type: "function", permission: {decision: "allow"},
		  function: {name: "bash", arguments: ({command: .value} | tojson)}}]}' \
		"$cf_" >calls.json &&
	(cd p && tool-exec "$@" <../calls.json >../out)
}
# code ID: the exit code of call ID, from out (0 when none is shown)
code() {
	jq -r --arg id "$1" 'select(.tool_call_id == $id).content' out >result &&
	sed -n 's/.*\[exit code: \([0-9]*\)\]$/\1/p' result | tail -n 1 | grep . ||
	echo 0
}
# serve SOCKET: a server on the unix socket SOCKET (absolute; abstract
# when it starts with @) that writes "reached" into SOCKET.log at each
# connection, and answers "hello"; its pid in server.pid.
serve() {
	rm -f "$1.log" server.ready
	python3 -c '
import os, socket, sys
path = sys.argv[1]
s = socket.socket(socket.AF_UNIX)
s.bind("\0" + path[1:] if path.startswith("@") else path)
s.listen(8)
open("server.ready", "w").close()
while True:
    c, _ = s.accept()
    with open(sys.argv[2], "a") as f:
        f.write("reached\n")
    c.sendall(b"hello\n")
    c.close()
' "$1" "$2" &
	echo $! >server.pid
	wait_until 10 test -e server.ready
}
stop_server() {
	kill "$(cat server.pid)" 2>/dev/null
	wait "$(cat server.pid)" 2>/dev/null
	:
}
# connect SOCKET: the command that connects to SOCKET and prints what it
# reads
connect() {
	echo "python3 -c \"import socket, sys; p = sys.argv[1]; s = socket.socket(socket.AF_UNIX); s.connect(chr(0) + p[1:] if p[0] == chr(64) else p); print(s.recv(9).decode().strip())\" '$1'"
}

# world: in the test's directory, a workspace p, a home with secrets
# (HOME set to it), and run/ for sockets outside the workspace.
world() {
	mkdir -p p home/.ssh home/.aws home/.config/gh home/.config/git run &&
	(cd p && git init -q . && echo "all:; @echo made" >Makefile) &&
	echo PRIVATE-KEY >home/.ssh/id_ed25519 && chmod 600 home/.ssh/id_ed25519 &&
	echo "aws_secret_access_key = SECRET" >home/.aws/credentials &&
	echo "oauth_token: SECRET" >home/.config/gh/hosts.yml &&
	echo "machine x password SECRET" >home/.netrc &&
	printf "[user]\n\tname = Newcomer\n" >home/.gitconfig &&
	printf "*.swp\n" >home/.config/git/ignore &&
	echo "SECRET" >home/.config/git/credentials &&
	HOME=$PWD/home && export HOME
}

test_expect_success 'a daemon on a unix socket outside the workspace cannot be reached (tmux, D-Bus, docker.sock, ssh-agent)' '
	world &&
	serve "$PWD/run/daemon.sock" "$PWD/run/reached" &&
	test_when_finished stop_server &&
	connect "$PWD/run/daemon.sock" >cmds &&
	echo "ls $SCRATCH/run" >>cmds &&
	calls cmds &&
	test "$(code call_1)" != 0 && test "$(code call_2)" != 0 &&
	! test -e run/reached &&
	test_must_fail grep hello out
'

test_expect_success 'tmux: a command cannot have the user'"'"'s tmux server run anything' '
	world &&
	if ! command -v tmux >/dev/null; then
		echo "# skipped: no tmux" >&2
	else
		sock=$PWD/run/tmux.sock &&
		tmux -S "$sock" -f /dev/null new-session -d -s ah sleep 600 &&
		test_when_finished "tmux -S \"$sock\" kill-server" &&
		echo "tmux -S $sock run-shell \"touch $PWD/pwned\"" >cmds &&
		echo "tmux -S $sock ls" >>cmds &&
		calls cmds &&
		test "$(code call_1)" != 0 && test "$(code call_2)" != 0 &&
		sleep 0.2 && ! test -e pwned
	fi
'

test_expect_success '--allow-socket lets the one socket named through' '
	world &&
	sock=$PWD/run/agent.sock &&
	serve "$sock" "$PWD/run/reached" &&
	test_when_finished stop_server &&
	connect "$sock" >cmds &&
	calls cmds --allow-socket "$sock" &&
	test "$(code call_1)" = 0 && test_contains out hello &&
	test "$(cat run/reached)" = reached &&
	rm run/reached &&
	(cd p && AGENT_SANDBOX_ALLOW_SOCKET=$sock tool-exec <../calls.json >../out) &&
	test "$(code call_1)" = 0 && test "$(cat run/reached)" = reached &&
	test_must_fail tool-exec --allow-socket "$PWD/home/.netrc" </dev/null 2>err &&
	test_contains err "not a unix socket"
'

test_expect_success 'an abstract unix socket cannot be reached, even with --allow-network' '
	world &&
	name=@ah-test-$$-abstract &&
	serve "$name" "$PWD/run/abstract" &&
	test_when_finished stop_server &&
	connect "$name" >cmds &&
	calls cmds &&
	test "$(code call_1)" != 0 &&
	calls cmds --allow-network &&
	test "$(code call_1)" != 0 &&
	! test -e run/abstract
'

test_expect_success 'the secrets of the home directory are not there; the harmless config is, read-only' '
	world &&
	cat >cmds <<-\EOC &&
	cat ~/.ssh/id_ed25519
	cat ~/.aws/credentials
	cat ~/.config/gh/hosts.yml
	cat ~/.netrc
	cat ~/.config/git/credentials
	ls -A ~/.ssh
	git config user.name
	cat ~/.config/git/ignore
	echo x >>~/.gitconfig
	ls -A ~ | tr "\n" " "
	EOC
	calls cmds &&
	for i in 1 2 3 4 5 6 9; do
		test "$(code call_$i)" != 0 || return 1
	done &&
	test "$(code call_7)" = 0 && test "$(code call_8)" = 0 &&
	test_must_fail grep -e SECRET -e PRIVATE-KEY out &&
	test_contains out Newcomer &&
	jq -r "select(.tool_call_id == \"call_10\").content" out >ls &&
	test "$(cat ls)" = ".config .gitconfig " &&
	test "$(cat home/.gitconfig | wc -l)" = 2
'

test_expect_success '--allow-read lets a path in, read-only' '
	world &&
	printf "%s\n" "cat ~/.aws/credentials" "echo x >>~/.aws/credentials" \
		"cat ~/.netrc" >cmds &&
	calls cmds --allow-read "$HOME/.aws" &&
	test "$(code call_1)" = 0 && test "$(code call_2)" != 0 &&
	test "$(code call_3)" != 0 &&
	test "$(cat home/.aws/credentials)" = "aws_secret_access_key = SECRET" &&
	(cd p && AGENT_SANDBOX_ALLOW_READ=$HOME/.netrc:$HOME/.aws tool-exec <../calls.json >../out) &&
	test "$(code call_1)" = 0 && test "$(code call_3)" = 0 &&
	test_must_fail tool-exec --allow-read "$PWD/nothing" </dev/null 2>err &&
	test_contains err "nothing"
'

test_expect_success 'the host'"'"'s /tmp, /run, /var/run and other directories are not there; a private /tmp is, writable' '
	world &&
	mkdir -p "$PWD/host-secret" && echo SECRET >"$PWD/host-secret/f" &&
	cat >cmds <<-EOC &&
	cat $PWD/host-secret/f
	ls /run
	ls /var/run
	ls /home /root /mnt /media /srv /var 2>/dev/null | grep .
	echo t >/tmp/scratch && cat /tmp/scratch
	echo t >\$TMPDIR/x && cat \$TMPDIR/x
	ls /dev | tr "\n" " "
	ps -e -o pid= | wc -l
	EOC
	calls cmds &&
	for i in 1 2 3 4; do
		test "$(code call_$i)" != 0 || return 1
	done &&
	for i in 5 6 7 8; do
		test "$(code call_$i)" = 0 || return 1
	done &&
	test_must_fail grep SECRET out &&
	! test -e /tmp/scratch &&
	jq -r "select(.tool_call_id == \"call_7\").content" out >dev &&
	test_must_fail grep -e sda -e mem -e kmsg -e "tty[0-9]" dev &&
	jq -r "select(.tool_call_id == \"call_8\").content" out >procs &&
	test "$(cat procs)" -le 5
'

test_expect_success 'a newcomer'"'"'s session works: make, cc, git status/diff/log, python3' '
	world &&
	cat >cmds <<-\EOC &&
	make
	printf "int main(void){return 0;}\n" >m.c && cc -o m m.c && ./m
	git add m.c && git -c user.email=n@x commit -qm first && git log --oneline | wc -l
	echo x >>m.c && git diff --stat && git status --short
	python3 -c "import tempfile; print(tempfile.mkdtemp())"
	EOC
	calls cmds --allow-git &&
	for i in 1 2 3 4 5; do
		test "$(code call_$i)" = 0 || { cat out; return 1; }
	done &&
	test_contains out made
'

test_expect_success 'System V IPC is private: the user'"'"'s segment is not seen, and a command'"'"'s does not stay' '
	world &&
	if ! command -v ipcmk >/dev/null || ! command -v ipcs >/dev/null; then
		echo "# skipped: no ipcmk/ipcs" >&2
	else
		id=$(ipcmk -M 4097 | sed -n "s/^Shared memory id: //p") &&
		test -n "$id" && test_when_finished "ipcrm -m $id" &&
		test_when_finished "ipcs -m | awk '"'"'\$5 == 8209 { print \$2 }'"'"' | xargs -r -n 1 ipcrm -m" &&
		printf "%s\n" "ipcs -m | awk '"'"'\$5 == 4097'"'"' | grep ." \
			"ipcrm -m $id" "ipcmk -M 8209" >cmds &&
		calls cmds &&
		test "$(code call_1)" != 0 && test "$(code call_2)" != 0 &&
		test "$(code call_3)" = 0 &&
		ipcs -m | awk "\$5 == 4097" | grep . &&
		! ipcs -m | awk "\$5 == 8209" | grep .
	fi
'

test_expect_success 'the private temporary directory goes however deep a command made it (and made parts unreadable)' '
	world &&
	cat >cmds <<-\EOC &&
	echo "$TMPDIR"; cd "$TMPDIR" && for i in $(seq 600); do mkdir d && cd d || exit 1; [ $i = 300 ] && echo x >f && chmod 000 . ; [ $i = 300 ] && cd ..; [ $i = 300 ] && mkdir e && cd e; done; echo deep
	EOC
	calls cmds &&
	test "$(code call_1)" = 0 && test_contains out deep &&
	tmp=$(jq -r .content out | sed -n 1p) &&
	case $tmp in */tool-exec.*) ;; *) false ;; esac &&
	test_when_finished "chmod -R u+rwx \"$tmp\" 2>/dev/null; rm -rf \"$tmp\"" &&
	! test -e "$tmp"
'

test_expect_success 'without privilege: a .git hidden in a directory made unsearchable (0600) is found and moved aside' '
	if [ "$(id -u)" != 0 ] || ! command -v setpriv >/dev/null ||
	   ! setpriv --reuid=65534 --regid=65534 --clear-groups test -x "$AH_BIN/tool-exec"; then
		echo "# skipped: needs root, setpriv, and programs nobody can run" >&2
	else
		u=$(mktemp -d "$AH_TMPDIR/ah-nobody.XXXXXX") &&
		test_when_finished "chmod -R u+rwx \"$u\"; rm -rf \"$u\"" &&
		mkdir "$u/w" && chmod 755 "$u" && chown -R 65534:65534 "$u" &&
		printf "%s\n" "mkdir d && git init -q d && git -C d config core.fsmonitor \"touch $u/pwned\" && chmod 0600 d" \
			"chmod 0755 d && ls -A d" >cmds &&
		jq -Rsc "{role: \"assistant\", content: null, tool_calls: [split(\"\n\")
			| map(select(length > 0)) | to_entries[] | {id: \"call_\(.key + 1)\",
			type: \"function\", permission: {decision: \"allow\"},
			function: {name: \"bash\", arguments: ({command: .value} | tojson)}}]}" cmds >"$u/in" &&
		(cd "$u/w" && HOME=$u TMPDIR=$u setpriv --reuid=65534 --regid=65534 \
			--clear-groups timeout 60 "$AH_BIN/tool-exec" <../in >"$u/out") &&
		cp "$u/out" out &&
		test "$(code call_1)" = 0 &&
		jq -r "select(.tool_call_id == \"call_1\").content" out >first &&
		test_grep "d/.git'"'"' was made by the command" first &&
		! test -e "$u/w/d/.git" && ls -d "$u"/w/d/.git.refused-* &&
		(cd "$u/w/d" && git status >/dev/null 2>&1; :) && ! test -e "$u/pwned"
	fi
'

test_done
