#!/bin/sh
# A stdio MCP server's processes are bounded and end with the session:
# it runs under keepers, the second one pid 1 of a PID namespace of its
# own, in cgroups of its own (--max-procs, --max-memory).  Attacks, from
# tests/mcp-server.py's hostile modes: a daemon that detaches (setsid)
# must be gone after the session, kill -9 of mcp-bridge included; a fork
# bomb is bounded; a server that allocates without bound is stopped,
# said, and not started again, while the session and its other servers
# go on.
. "$(dirname "$0")/lib.sh"

SERVER=$TEST_DIR/mcp-server.py

# config FILE MORE ARG...: server "t" running mcp-server.py ARG..., its
# definition with the JSON object MORE added ({"sandbox": false}, or {}
# for the sandbox); and "u", a well-behaved one, unconfined
config() {
	cf_=$1
	cf_more_=$2
	shift 2
	printf '%s\n' "$SERVER" "$@" | jq -Rsc --arg s "$SERVER" --argjson more "$cf_more_" \
		'{mcpServers: {t: ({command: "python3", args: (split("\n")[:-1])} + $more),
		  u: {command: "python3", args: [$s], sandbox: false}}}' >"$cf_"
}

# call ID SERVER TOOL ARGS: a tool call line
call() {
	jq -nc --arg id "$1" --arg n "mcp__$2__$3" --arg a "$4" \
		'{id: $id, type: "function", function: {name: $n, arguments: $a}}'
}

bridge() {
	mcp-bridge --no-user-config "$@"
}

# kill_left MARK: SIGKILL to the processes whose command line holds MARK
# (a path in this test's own directory): what a failing test left.  The
# daemon sleeps an hour, so that it is gone only when it was killed.
kill_left() {
	for f in /proc/[0-9]*/cmdline; do
		if { tr '\0' ' ' <"$f"; } 2>/dev/null | grep -q -e "$1"; then
			p=${f#/proc/} && kill -9 "${p%/cmdline}" 2>/dev/null
		fi
	done
	:
}

# with the sandbox where the machine has one, and without
kinds='{"sandbox":false}'
[ -n "${AH_NO_SANDBOX:-}" ] || kinds="$kinds {}"

for more in $kinds; do
	test_expect_success "$more: a daemon the server starts (setsid) is gone when the session ends" "
		config cfg '$more' --mode daemon --pidfile \"\$PWD/server.pid\" &&
		test_when_finished 'kill_left \"\$PWD/server.pid\"' &&
		call 1 t echo '{}' >calls &&
		bridge --mcp-config cfg <calls >out 2>err &&
		test \"\$(jq -r .content out)\" = 'daemon started' &&
		wait_until 5 none_left \"\$PWD/server.pid\"
	"

	test_expect_success "$more: kill -9 of mcp-bridge: the server and its daemon go too" "
		config cfg '$more' --mode daemon --pidfile \"\$PWD/server.pid\" &&
		test_when_finished 'kill_left \"\$PWD/server.pid\"' &&
		call 1 t echo '{}' >calls &&
		mkfifo in &&
		{ mcp-bridge --no-user-config --mcp-config cfg <in >out 2>err & } &&
		bpid=\$! &&
		test_when_finished \"kill -9 \$bpid 2>/dev/null; true\" &&
		exec 8>in &&
		cat calls >&8 &&
		wait_until 20 test -s out &&
		test \"\$(jq -r .content out)\" = 'daemon started' &&
		some_left \"\$PWD/server.pid\" 2 &&
		kill -9 \$bpid &&
		test_expect_code 137 wait \$bpid &&
		exec 8>&- &&
		wait_until 10 none_left \"\$PWD/server.pid\"
	"
done

test_expect_success 'a fork bomb in a server is bounded by --max-procs; the session goes on; nothing is left' '
	config cfg "{\"sandbox\":false}" --mode forkbomb --pidfile "$PWD/server.pid" &&
	{ call 1 t echo "{}" && call 2 u echo "{\"text\":\"still here\"}"; } >calls &&
	bridge --mcp-config cfg --max-procs 20 <calls >out 2>err &&
	jq -r .content out >text &&
	n=$(sed -n "s/^forked //p" text) &&
	test -n "$n" && test "$n" -lt 20 &&
	test_grep "^still here\$" text &&
	wait_until 5 none_left "$PWD/server.pid"
'

# whether a memory cgroup of its own bounds a server here (else the
# limit is RLIMIT_DATA's, per process, and a hog gets MemoryError)
config cfg '{"sandbox":false}'
call 1 u echo '{"text":"x"}' >calls
if bridge -v --mcp-config cfg --max-memory 64M <calls 2>&1 >/dev/null |
	grep -q "RLIMIT_DATA"; then
	test_skip 'a server that allocates without bound is killed, said, and not started again' \
		'no memory cgroup of its own can be made here'
else
	test_expect_success 'a server that allocates without bound is killed, said, and not started again; the session goes on' '
		config cfg "{\"sandbox\":false}" --mode hog --pidfile "$PWD/server.pid" &&
		{ call 1 t echo "{}" && call 2 u echo "{\"text\":\"still here\"}" &&
		  call 3 t echo "{}"; } >calls &&
		bridge --mcp-config cfg --max-memory 64M <calls >out 2>err &&
		jq -r .content out >text &&
		test_grep "^Error: .*over its memory limit of 67108864 bytes; not started again" text &&
		test_grep "^still here\$" text &&
		test "$(jq -r "select(.tool_call_id == \"3\") | .content" out | cut -c1-30)" = "Error: MCP server '"'"'t'"'"' is down:" &&
		test_grep ! "starting it again" err &&
		wait_until 5 none_left "$PWD/server.pid"
	'
fi

test_expect_success 'the limits are options, and checked' '
	test_expect_code 2 bridge --max-procs -1 --schema 2>err &&
	test_grep "max-procs" err &&
	test_expect_code 2 bridge --max-memory lots --schema 2>err &&
	test_grep "is not a size" err &&
	AGENT_MCP_MAX_MEMORY=1x test_expect_code 2 bridge --schema 2>err &&
	test_grep "AGENT_MCP_MAX_MEMORY" err
'

test_done
