#!/bin/sh
# The policy server's workers run outside the sandbox, for any process of
# the user that has the handshake: a line is bounded, memory and CPU are
# limited, and only so many run at once.
. "$(dirname "$0")/lib.sh"
unset XDG_CONFIG_HOME

# handshake: what a hook-perm --connect sends, captured by a server that
# answers NO (the client then evaluates alone); in hello.
handshake() {
	rm -f hello ready
	python3 -c '
import socket, sys
s = socket.socket(socket.AF_UNIX)
s.bind(sys.argv[1]); s.listen(1)
open("ready", "w").close()
c, _ = s.accept()
head = b""
while not head.endswith(b"\n"):
    head += c.recv(1)
n = int(head.split()[1])
prog = b""
while len(prog) < n:
    prog += c.recv(n - len(prog))
open("hello", "wb").write(head + prog)
c.sendall(b"NO\n")
' "$PWD/fake" &
	hs_pid_=$!
	wait_until 10 test -e ready &&
	call_msg bash "{\"command\":\"ls\"}" none >in &&
	hook-perm --connect "$PWD/fake" <in >/dev/null &&
	wait "$hs_pid_" && test -s hello
}

# children PID: the children of PID
children() {
	cat "/proc/$1/task/$1/children" 2>/dev/null
}

# flood: a client that has a worker, then sends it 100 MiB without a
# newline; exit 0 when the worker ended the connection first.  It
# touches "up" once it has the worker.
flood() {
	python3 -c "
import socket, sys, time
s = socket.socket(socket.AF_UNIX)
s.connect(sys.argv[1])
s.sendall(open(\"hello\", \"rb\").read())
assert s.recv(3) == b\"OK\\n\"
time.sleep(0.2)
open(\"up\", \"w\").close()
chunk = b\"x\" * (1 << 20)
try:
    for i in range(100):
        s.sendall(chunk)
except (BrokenPipeError, ConnectionResetError):
    sys.exit(0)
sys.exit(1)
" "$PWD/s"
}

flood_bg() {
	flood &
	echo $! >client.pid
}

test_expect_success 'a worker ends at a line longer than hook-perm takes; it runs with memory and CPU limits' '
	handshake &&
	srv=$(hook-perm --serve "$PWD/s" --watch $$) &&
	test_when_finished "kill $srv" &&
	flood_bg &&
	wait_until 10 test -e up &&
	w=$(children "$srv" | awk "{ print \$1 }") && test -n "$w" &&
	grep "^Max cpu time" "/proc/$w/limits" >cpu &&
	grep "^Max data size" "/proc/$w/limits" >data &&
	test_grep ! unlimited cpu && test_grep ! unlimited data &&
	wait "$(cat client.pid)"
'

test_expect_success 'at most 32 workers at once: a connection more is refused' '
	handshake &&
	srv=$(hook-perm --serve "$PWD/s" --watch $$) &&
	test_when_finished "kill $srv" &&
	python3 -c "
import socket, sys
hello = open(\"hello\", \"rb\").read()
held, answers = [], []
for i in range(40):
    s = socket.socket(socket.AF_UNIX)
    s.connect(sys.argv[1])
    s.sendall(hello)
    answers.append(s.recv(3))
    held.append(s)
print(answers.count(b\"OK\\n\"), answers.count(b\"NO\\n\"))
" "$PWD/s" >counts &&
	test "$(cat counts)" = "32 8"
'

test_done
