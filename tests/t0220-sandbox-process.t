#!/bin/sh
# tool-exec: what a command inherits and how long it lives: file
# descriptors, the terminal, the environment, the harness's death, limits.
. "$(dirname "$0")/lib.sh"

need_sandbox

# bash_msg COMMAND...: an assistant message with one allowed bash call per
# argument, ids call_1, call_2, ...
bash_msg() {
	jq -nc '{role: "assistant", content: null, tool_calls: [$ARGS.positional
		 | to_entries[] | {id: "call_\(.key + 1)", type: "function",
		   permission: {decision: "allow"}, function: {name: "bash",
		   arguments: ({command: .value} | tojson)}}]}' --args "$@"
}

# kill_left MARK: SIGKILL to the processes holding MARK, a number made of
# this script's pid that only the commands of this test carry: where the
# promise fails (an older tool-exec), what escaped must not outlive the
# test.
kill_left() {
	for f in /proc/[0-9]*/cmdline; do
		case $({ tr '\0' ' ' <"$f"; } 2>/dev/null) in
		*"$1"*) p=${f#/proc/} && kill -9 "${p%/cmdline}" 2>/dev/null ;;
		esac
	done
	:
}

test_expect_success 'fds: only 0, 1 and 2 reach a command; an fd left open on a file outside the workspace cannot be used' '
	mkdir ws outside &&
	echo before >outside/f &&
	bash_msg "echo x >&9; echo y >&8; ls /proc/self/fd" >in &&
	tool-exec --yes -C ws <in >out 9>>outside/f 8<>outside/f &&
	echo before >expect &&
	test_cmp expect outside/f &&
	jq -r .content out >actual &&
	test_grep "9: Bad file descriptor" actual &&
	test_grep "8: Bad file descriptor" actual &&
	printf "0\n1\n2\n3\n" >expect &&
	sed -n 3,6p actual >fds &&
	test_cmp expect fds &&
	test_line_count = 7 actual
'

# The command a hostile model runs: TIOCSTI, and its 64-bit spelling, on
# every fd it has and on every way to the terminal it can find.
cat >"$SCRATCH/type.py" <<'PY'
import fcntl, os, termios
fds = [0, 1, 2]
for p in ["/dev/tty", open("ttyname").read().strip()]:
    for mode in (os.O_RDWR, os.O_RDONLY):
        try:
            fds.append(os.open(p, mode | os.O_NOCTTY))
            print("opened", p)
        except OSError as e:
            print("cannot open", p, e.strerror)
for fd in fds:
    for req in (termios.TIOCSTI, termios.TIOCSTI | (1 << 32)):
        for c in b"echo TYPED >typed\n":
            try:
                fcntl.ioctl(fd, req, bytes([c]))
            except OSError:
                pass
print("done")
PY
# The user's terminal: a pseudo-terminal whose session runs tool-exec and
# then reads a line from the terminal, as the user's shell would.
cat >"$SCRATCH/term.py" <<'PY'
import os, pty, sys
pid, fd = pty.fork()
if pid == 0:
    os.execvp("bash", ["bash", "-c", sys.argv[1]])
seen = b""
while True:
    try:
        data = os.read(fd, 4096)
    except OSError:
        break
    if not data:
        break
    seen += data
_, st = os.waitpid(pid, 0)
open("terminal", "wb").write(seen)
sys.exit(os.waitstatus_to_exitcode(st))
PY

test_expect_success 'terminal: a command cannot type into the terminal tool-exec runs in (/dev/tty, the pty by name, fds 0-2, a 64-bit TIOCSTI)' '
	mkdir ws &&
	cp "$SCRATCH/type.py" ws/ &&
	bash_msg "python3 type.py" >in &&
	python3 "$SCRATCH/term.py" "tty >ws/ttyname && tool-exec --yes -C ws <in >out 2>err; if read -r -t 2 line; then printf \"%s\\n\" \"\$line\" >>got; fi" &&
	jq -r .content out >actual &&
	test_grep "^done" actual &&
	test_grep "cannot open /dev/tty" actual &&
	! test -e got &&
	! test -e ws/typed &&
	test_grep ! TYPED terminal
'

test_expect_success 'terminal: seccomp refuses TIOCSTI and TIOCLINUX on any fd, also with bits above the 32 the kernel reads' '
	mkdir ws &&
	bash_msg "python3 -c \"import fcntl
for r in (0x5412, 0x5412 | 1 << 32, 0xffffffff00005412, 0x541C, 0x541C | 1 << 40):
    try:
        fcntl.ioctl(0, r, b\\\"x\\\")
        print(hex(r), 0)
    except OSError as e:
        print(hex(r), e.errno)\"" >in &&
	tool-exec --yes -C ws <in >out &&
	jq -j .content out >actual &&
	printf "%s 1\n" 0x5412 0x100005412 0xffffffff00005412 0x541c 0x1000000541c >expect &&
	test_cmp expect actual
'

test_expect_success 'terminal: a command runs in a session of its own, without a controlling terminal' '
	mkdir ws &&
	bash_msg "cut -d\" \" -f7 /proc/self/stat" >in &&
	python3 "$SCRATCH/term.py" "tool-exec --yes -C ws <in >out 2>err" &&
	jq -j .content out >ttynr &&
	echo 0 >expect &&
	test_cmp expect ttynr
'

test_expect_success 'environment: the model key and other secrets never reach a command, nor can it read them in /proc; the allow-list and --pass-env do' '
	mkdir ws &&
	bash_msg "env; for p in /proc/[0-9]*; do tr \"\\\\0\" \"\\\\n\" <\$p/environ; done 2>/dev/null | grep -a -e AGENT_API_KEY -e OPENAI_API_KEY; echo end" >in &&
	AGENT_API_KEY=sk-agent-secret OPENAI_API_KEY=sk-openai-secret \
	AWS_SECRET_ACCESS_KEY=aws-secret GITHUB_TOKEN=ghp-secret \
	SSH_AUTH_SOCK=/tmp/agent.sock DB_PASSWORD=pw-secret \
	MY_CREDENTIALS=cred-secret RANDOM_VAR=not-passed FOO=foo BAR=bar \
	LC_TIME=C LANG=C.UTF-8 AGENT_PASS_ENV=BAR \
	tool-exec --yes -C ws --pass-env FOO <in >out &&
	jq -r .content out >actual &&
	test_grep ! secret actual &&
	test_grep ! -e "-sock" actual &&
	test_grep ! not-passed actual &&
	test_grep "^FOO=foo$" actual &&
	test_grep "^BAR=bar$" actual &&
	test_grep "^PATH=" actual &&
	test_grep "^HOME=" actual &&
	test_grep "^LC_TIME=C$" actual &&
	test_grep "^LANG=C.UTF-8$" actual &&
	test_grep "^end$" actual
'

test_expect_success 'environment: --pass-env and AGENT_PASS_ENV refuse a name that looks like a secret' '
	mkdir ws &&
	bash_msg "env" >in &&
	for n in AGENT_API_KEY OPENAI_API_KEY MY_TOKEN AWS_REGION SSH_AUTH_SOCK GITHUB_SHA db_password
	do
		test_expect_code 2 tool-exec --yes -C ws --pass-env "$n" <in >out 2>err &&
		test_grep "looks like a secret" err &&
		! test -s out || return 1
		AGENT_PASS_ENV="FOO,$n" test_expect_code 2 tool-exec --yes -C ws <in >out 2>err &&
		test_grep "looks like a secret" err || return 1
	done
'

# start_call MARK: tool-exec running one call that starts, with MARK in
# their command lines, a background child, a setsid one, a nohup one, a
# double-forked one, and a setsid loop writing the workspace's beat file.
call_with_escapees() {
	bash_msg "sleep ${1}1 & setsid sleep ${1}2 & nohup sleep ${1}3 >/dev/null 2>&1 & (sleep ${1}4 &) ; setsid sh -c \"while :; do echo >>beat; sleep 0.05; done\" ${1}5 & sleep ${1}6"
}

test_expect_success 'lifetime: kill -9 of tool-exec alone: every process of the call is gone within a second (setsid, nohup, double fork)' '
	mark=7$(($$ % 1000))1 &&
	mkdir ws &&
	call_with_escapees "$mark" >in &&
	test_when_finished "kill -9 \$pid 2>/dev/null; kill_left $mark" &&
	{ tool-exec --yes -C ws <in >out 2>err & pid=$!; } &&
	wait_until 10 some_left "$mark" 6 &&
	wait_until 10 test -s ws/beat &&
	kill -9 "$pid" &&
	sleep 1 &&
	none_left "$mark" &&
	wc -c <ws/beat >size1 &&
	sleep 0.3 &&
	wc -c <ws/beat >size2 &&
	test_cmp size1 size2
'

test_expect_success 'lifetime: kill -9 of the process group tool-exec runs in: every process of the call is gone within a second' '
	mark=7$(($$ % 1000))2 &&
	mkdir ws &&
	call_with_escapees "$mark" >in &&
	test_when_finished "kill -9 -\$pid 2>/dev/null; kill_left $mark" &&
	{ setsid tool-exec --yes -C ws <in >out 2>err & pid=$!; } &&
	wait_until 10 some_left "$mark" 6 &&
	kill -9 -"$pid" &&
	sleep 1 &&
	none_left "$mark"
'

test_expect_success 'limits: a fork bomb ends as a tool error at --max-procs, and the next call runs' '
	mkdir ws &&
	bash_msg "b() { [ \$1 -gt 0 ] && { b \$((\$1 - 1)) & b \$((\$1 - 1)) & }; sleep 20; }; b 7; wait" "echo after" >in &&
	start=$(date +%s) &&
	tool-exec --yes -C ws --max-procs 40 --timeout 15 <in >out &&
	end=$(date +%s) &&
	test $((end - start)) -lt 10 &&
	jq -r "select(.tool_call_id == \"call_1\") | .content" out >actual &&
	test_grep "^Error: bash: the command went over the limit of 40 processes" actual &&
	jq -r "select(.tool_call_id == \"call_2\") | .content" out >after &&
	test_grep "^after$" after
'

# no_cgroups CMD...: CMD where no cgroup can be made (an empty /sys/fs/cgroup
# in a user and mount namespace of its own): the supervisor counts the
# command's processes in /proc.
no_cgroups() {
	unshare -rm sh -c 'mount -t tmpfs none /sys/fs/cgroup && exec "$@"' sh "$@"
}
if no_cgroups true 2>/dev/null; then
	test_expect_success 'limits: where no cgroup can be made, a fork bomb counted in /proc ends at --max-procs, and the next call runs' '
		mkdir ws &&
		bash_msg "b() { [ \$1 -gt 0 ] && { b \$((\$1 - 1)) & b \$((\$1 - 1)) & }; sleep 20; }; b 7; wait" "echo after" >in &&
		start=$(date +%s) &&
		no_cgroups tool-exec --yes -C ws --max-procs 40 --max-memory 1G --timeout 15 <in >out 2>err &&
		end=$(date +%s) &&
		test_grep "no memory cgroup of our own can be made here" err &&
		test $((end - start)) -lt 10 &&
		jq -r "select(.tool_call_id == \"call_1\") | .content" out >actual &&
		test_grep "^Error: bash: the command went over the limit of 40 processes" actual &&
		jq -r "select(.tool_call_id == \"call_2\") | .content" out >after &&
		test_grep "^after$" after
	'
else
	test_skip 'limits: where no cgroup can be made, a fork bomb counted in /proc ends at --max-procs' \
		'no user and mount namespace of our own here (unshare -rm)'
fi

test_expect_success 'limits: yes >big ends as a tool error at --max-file-size' '
	mkdir ws &&
	bash_msg "yes >big" "echo after" >in &&
	(ulimit -f 40000 && tool-exec --yes -C ws --max-file-size 1M --timeout 20 <in >out) &&
	test "$(wc -c <ws/big)" -le 1048576 &&
	jq -r "select(.tool_call_id == \"call_1\") | .content" out >actual &&
	test_grep "^Error: bash: the command went over the file size limit of 1048576 bytes" actual &&
	jq -r "select(.tool_call_id == \"call_2\") | .content" out >after &&
	test_grep "^after$" after
'

test_expect_success 'limits: a memory hog ends as a tool error at --max-memory' '
	mkdir ws &&
	bash_msg "head -c 400M /dev/zero | tail -n 1 | wc -c" "echo after" >in &&
	tool-exec --yes -C ws --max-memory 64M --timeout 20 <in >out &&
	jq -r "select(.tool_call_id == \"call_1\") | .content" out >actual &&
	test_grep "^Error: bash: the command went over the memory limit of 67108864 bytes" actual &&
	jq -r "select(.tool_call_id == \"call_2\") | .content" out >after &&
	test_grep "^after$" after
'

test_expect_success 'processes: a command sees its own /proc: ps works, the harness and the user are not in it' '
	{ sleep 33.31 & outside=$!; } &&
	test_when_finished "kill $outside 2>/dev/null || :" &&
	bash_msg "ps -o pid= -p \$\$ && echo ps-ok" \
		"pgrep -f \"sleep 33[.]31\" || echo none-seen" \
		"ls /proc | grep -c \"^[0-9]\"" | tool-exec >out &&
	jq -r "select(.tool_call_id == \"call_1\") | .content" out >ps &&
	test_grep "^ps-ok$" ps && test_grep ! "fatal library error" ps &&
	jq -r "select(.tool_call_id == \"call_2\") | .content" out >seen &&
	test_grep "^none-seen$" seen &&
	test "$(jq -r "select(.tool_call_id == \"call_3\") | .content" out)" -lt 10
'

test_done
