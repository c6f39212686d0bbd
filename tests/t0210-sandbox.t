#!/bin/sh
# tool-exec --sandbox: escapes that must fail, and work that must not.
. "$(dirname "$0")/lib.sh"

# calls FILE [DECISION]: one assistant message with a bash call for each
# line of FILE, ids call_1, call_2, ...
calls() {
	jq -Rsc --arg d "${2:-allow}" '
		{role: "assistant", content: null, tool_calls: [split("\n")
		 | map(select(length > 0)) | to_entries[] | {id: "call_\(.key + 1)",
		   type: "function", permission: {decision: $d},
		   function: {name: "bash",
			      arguments: ({command: .value} | tojson)}}]}' "$1"
}
# breaches OUT: the results in OUT whose command exited 0, one per line.
breaches() {
	jq -r 'select(.content | test("\\[exit code: [0-9]+\\]$|\\[killed by signal") | not) | .tool_call_id' "$1"
}
# project: a workspace as a session leaves it.
project() {
	mkdir -p "$1" && (cd "$1" && git init -q . && mkdir .agent &&
		echo '{"audit":1}' >.agent/audit.jsonl &&
		echo '[]' >todo.json && echo 'all:; @echo made' >Makefile)
}

need_sandbox

test_expect_success 'workspace-write is the default: no_new_privs, seccomp, a private TMPDIR' '
	project p &&
	call_msg bash "{\"command\":\"grep -E \\\"^(NoNewPrivs|Seccomp|CapEff):\\\" /proc/self/status; echo \$TMPDIR; echo t >\$TMPDIR/f && cat \$TMPDIR/f\"}" >in &&
	tool-exec -C p <in >out &&
	jq -r .content out >actual &&
	sed -n 1,3p actual | tr -d "\t" >status &&
	printf "CapEff:0000000000000000\nNoNewPrivs:1\nSeccomp:2\n" >expect &&
	test_cmp expect status &&
	tmp=$(sed -n 4p actual) &&
	case $tmp in "${TMPDIR:-/tmp}"/tool-exec.*) ;; *) false ;; esac &&
	test "$(sed -n 5p actual)" = t &&
	! test -e "$tmp"
'

cat >"$SCRATCH/escapes" <<'EOF'
echo x >/etc/agent-harness-escape
echo x >"$HOME/agent-harness-escape"
echo x >../escape
mkdir ../escape-dir
ln -s /etc ../escape-link
truncate -s 0 ../victim
rm ../victim
mv ../victim ../moved
echo x >.git/hooks/pre-commit
chmod -x .git/hooks/pre-commit.sample
rm .git/hooks/pre-commit.sample
echo "[core] hooksPath = /tmp" >>.git/config
mv .git .git-moved
rm -r .git/hooks
echo x >>.agent/audit.jsonl
: >.agent/audit.jsonl
echo x >.agent/new
rm .agent/audit.jsonl
mv .agent .agent-moved
echo x >todo.json
rm todo.json
mv todo.json t.json
ln todo.json hard-link
umount .agent
umount -l .git/hooks
mount --bind /tmp .agent
unshare -rm sh -c "umount .agent && echo x >.agent/audit.jsonl"
kill -TERM $PPID
echo x >/proc/self/oom_score_adj
EOF

test_expect_success 'escapes: every attempt fails, and nothing changed' '
	project p && echo keep >victim &&
	(cd p && calls "$SCRATCH/escapes" | tool-exec >../out) &&
	test "$(wc -l <out)" = "$(wc -l <"$SCRATCH/escapes")" &&
	breaches out >breached &&
	{ ! test -s breached || { jq -r .content out; false; }; } &&
	! test -e /etc/agent-harness-escape && ! test -e "$HOME/agent-harness-escape" &&
	! test -e escape && ! test -e escape-dir && ! test -L escape-link &&
	test "$(cat victim)" = keep && ! test -e moved &&
	! test -e p/.git/hooks/pre-commit && test -f p/.git/hooks/pre-commit.sample &&
	test -x p/.git/hooks/pre-commit.sample &&
	! grep hooksPath p/.git/config && test -d p/.git && ! test -e p/.git-moved &&
	test "$(cat p/.agent/audit.jsonl)" = "{\"audit\":1}" && ! test -e p/.agent/new &&
	test "$(cat p/todo.json)" = "[]" && ! test -e p/t.json && ! test -e p/hard-link &&
	jq -r "select(.tool_call_id == \"call_9\").content" out >hook &&
	test_contains hook "Read-only file system" &&
	jq -r "select(.tool_call_id == \"call_1\").content" out >etc &&
	test_grep -E "Permission denied|Read-only file system" etc
'

test_expect_success 'escapes: the same attempts succeed with --sandbox off (the test can fail)' '
	project p && echo keep >victim &&
	printf "%s\n" "echo x >../escape" "echo x >.git/hooks/pre-commit" \
		"echo x >>.agent/audit.jsonl" "echo x >todo.json" >some &&
	(cd p && calls ../some | tool-exec --sandbox off >../out) &&
	test "$(breaches out | wc -l)" = 4 &&
	test -e escape && test -e p/.git/hooks/pre-commit
'

test_expect_success 'network: no connection reaches a server on 127.0.0.1' '
	echo "{\"content\":\"hi\",\"repeat\":true}" >script &&
	start_model script && port=$(cat port) &&
	project p &&
	{
		echo "bash -c \"echo x >/dev/tcp/127.0.0.1/$port\""
		echo "python3 -c \"import socket; socket.create_connection((\\\"127.0.0.1\\\", $port))\""
		echo "python3 -c \"import socket; socket.socket(socket.AF_INET6)\""
		echo "python3 -c \"import socket; socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\""
		echo "python3 -c \"import socket; socket.socket(socket.AF_NETLINK, socket.SOCK_RAW)\""
		echo "python3 -c \"import socket; socket.socket(socket.AF_PACKET, socket.SOCK_RAW)\""
		! command -v curl >/dev/null || echo "curl -sS -m 5 http://127.0.0.1:$port/v1/models"
		! command -v wget >/dev/null || echo "wget -q -t 1 -T 5 -O- http://127.0.0.1:$port/v1/models"
		! command -v nc >/dev/null || echo "echo GET | nc -w 5 127.0.0.1 $port"
	} >nets &&
	(cd p && calls ../nets | tool-exec >../out) &&
	breaches out >breached &&
	{ ! test -s breached || { jq -r .content out; false; }; } &&
	! test -s requests.jsonl
'

test_expect_success 'network: --allow-network and AGENT_SANDBOX_NETWORK=1 open it, unix sockets stay open' '
	echo "{\"content\":\"hi\",\"repeat\":true}" >script &&
	start_model script && port=$(cat port) &&
	project p &&
	echo "python3 -c \"import socket; socket.create_connection((\\\"127.0.0.1\\\", $port)).close()\"" >net &&
	(cd p && calls ../net | tool-exec --allow-network >../out) &&
	test "$(breaches out)" = call_1 &&
	(cd p && calls ../net | AGENT_SANDBOX_NETWORK=1 tool-exec >../out) &&
	test "$(breaches out)" = call_1 &&
	echo "python3 -c \"import socket; a, b = socket.socketpair(); s = socket.socket(socket.AF_UNIX); s.bind(\\\"sock\\\")\"" >unix &&
	(cd p && calls ../unix | tool-exec >../out) &&
	test "$(breaches out)" = call_1 && test -S p/sock
'

test_expect_success 'the project keeps working: ./x, /dev/null, make, cc, git' '
	project p &&
	printf "%s\n" "echo x >x && cat x" "echo y >/dev/null" \
		"mkdir -p sub/dir && echo z >sub/dir/f && mv sub/dir/f sub/g && rm -r sub" \
		"make" "printf \"int main(void){return 0;}\\n\" >m.c && cc -o m m.c && ./m" \
		"git status --short" \
		"git add x 2>&1 | grep \"index.lock.*Read-only file system\"" \
		"cat <<X
heredoc
X" >work &&
	(cd p && calls ../work | tool-exec >../out) &&
	test "$(breaches out | wc -l)" = 8 &&
	jq -r "select(.tool_call_id == \"call_4\").content" out >made &&
	test_contains made made &&
	test -x p/m && test "$(cat p/x)" = x
'

test_expect_success 'read-only: nothing in the workspace is writable, the private TMPDIR is' '
	project p &&
	printf "%s\n" "echo x >x" "echo x >\$TMPDIR/t && cat \$TMPDIR/t >/dev/null" >ro &&
	(cd p && calls ../ro | tool-exec --sandbox read-only >../out) &&
	test "$(breaches out)" = call_2 && ! test -e p/x &&
	(cd p && calls ../ro | AGENT_SANDBOX=read-only tool-exec >../out) &&
	test "$(breaches out)" = call_2 &&
	call_msg write_file "{\"path\":\"x\",\"content\":\"x\"}" >in &&
	tool-exec -C p --sandbox read-only <in >out &&
	test_contains out "read-only" && ! test -e p/x
'

test_expect_success 'file tools: the protected paths are refused, however they are named' '
	project p && ln -s .agent p/alias && ln -s .git/hooks p/hooks &&
	for path in .agent/new .agent/audit.jsonl alias/new ./.agent/x \
		todo.json ./todo.json .git/hooks/pre-commit hooks/pre-commit \
		.git/config .agent/deep/er/x "$(cd p && pwd -P)/todo.json"; do
		call_msg write_file "$(jq -nc --arg p "$path" "{path: \$p, content: \"x\"}")" >in &&
		tool-exec -C p <in >out &&
		test_contains out "kept read-only by the sandbox" || return 1
	done &&
	! test -e p/.agent/new && ! test -e p/.agent/deep &&
	test "$(cat p/todo.json)" = "[]" && ! test -e p/.git/hooks/pre-commit &&
	call_msg edit_file "{\"path\":\".git/config\",\"old_string\":\"[core]\",\"new_string\":\"[core]\\n\\thooksPath = /tmp\"}" >in &&
	tool-exec -C p <in >out &&
	test_contains out "kept read-only by the sandbox" &&
	! grep hooksPath p/.git/config &&
	call_msg write_file "{\"path\":\"src/ok.txt\",\"content\":\"fine\"}" >in &&
	tool-exec -C p <in >out &&
	test "$(cat p/src/ok.txt)" = fine &&
	call_msg write_file "{\"path\":\".agent/new\",\"content\":\"x\"}" >in &&
	tool-exec -C p --sandbox off <in >out && test -e p/.agent/new
'

# todo.json before the first list: a protected path that does not exist
# yet is refused where it would be made, to the file tools.  (A command
# can still make it: the mount view keeps only what exists read-only.)
test_expect_success 'a protected path that does not exist yet cannot be created by the file tools' '
	project p && rm p/todo.json &&
	for path in todo.json ./todo.json "$(cd p && pwd -P)/todo.json"; do
		call_msg write_file "$(jq -nc --arg p "$path" "{path: \$p, content: \"x\"}")" >in &&
		tool-exec -C p <in >out &&
		test_contains out "kept read-only by the sandbox" || return 1
	done &&
	call_msg write_file "{\"path\":\"todo.json\",\"content\":\"x\"}" >in &&
	AH_NO_OPENAT2=1 tool-exec -C p <in >out &&
	test_contains out "kept read-only by the sandbox" &&
	! test -e p/todo.json
'

test_expect_success 'file tools: the same without openat2' '
	project p && ln -s .agent p/alias &&
	for path in alias/new .git/hooks/x todo.json; do
		call_msg write_file "$(jq -nc --arg p "$path" "{path: \$p, content: \"x\"}")" >in &&
		AH_NO_OPENAT2=1 tool-exec -C p <in >out &&
		test_contains out "kept read-only by the sandbox" || return 1
	done &&
	! test -e p/.agent/new
'

test_expect_success 'the harness still writes what it protects: run_todo_write' '
	project p &&
	call_msg run_todo_write "{\"todos\":[{\"id\":\"1\",\"content\":\"a\",\"status\":\"pending\"}]}" >in &&
	tool-exec -C p <in >out &&
	jq -e "length == 1" p/todo.json
'

test_expect_success '--protect keeps another path read-only, to commands and file tools' '
	project p && mkdir p/secret && echo s >p/secret/f && echo r >p/rules.json &&
	printf "%s\n" "echo x >secret/f" "echo x >rules.json" "mv secret s2" >pr &&
	(cd p && calls ../pr | tool-exec --protect secret --protect "$(pwd -P)/rules.json" >../out) &&
	test -z "$(breaches out)" &&
	test "$(cat p/secret/f)" = s && test "$(cat p/rules.json)" = r &&
	call_msg write_file "{\"path\":\"secret/g\",\"content\":\"x\"}" >in &&
	tool-exec -C p --protect secret/ <in >out &&
	test_contains out "kept read-only by the sandbox"
'

test_expect_success 'fails closed: a protected path that is a symbolic link stops the call' '
	project p && rm -r p/.agent && mkdir p/elsewhere && ln -s elsewhere p/.agent &&
	call_msg bash "{\"command\":\"touch ran\"}" >in &&
	tool-exec -C p <in >out &&
	test_contains out "Error: bash: cannot set up the sandbox: " &&
	test_contains out "is a symbolic link" &&
	test_contains out "the command was not run" &&
	! test -e p/ran
'

test_expect_success 'fails closed: where the sandbox cannot make its temporary directory, bash, grep and glob are not run' '
	project p &&
	jq -nc "{role: \"assistant\", content: null, tool_calls: [
		[\"bash\", {command: \"touch ran\"}], [\"grep\", {pattern: \"made\"}],
		[\"glob\", {pattern: \"*\"}]] | to_entries | map({id: \"call_\(.key + 1)\",
		type: \"function\", permission: {decision: \"allow\"}, function: {name:
		.value[0], arguments: (.value[1] | tojson)}})}" >in &&
	TMPDIR=$PWD/missing tool-exec -C p <in >out &&
	! test -e p/ran &&
	why="cannot set up the sandbox: cannot create a temporary directory in .$PWD/missing.: No such file or directory" &&
	jq -r "select(.tool_call_id == \"call_1\") | .content" out >bash &&
	test_grep "^Error: bash: $why; the command was not run$" bash &&
	jq -r "select(.tool_call_id == \"call_2\") | .content" out >grep &&
	test_grep "^Error: grep: $why; the search was not run$" grep &&
	jq -r "select(.tool_call_id == \"call_3\") | .content" out >glob &&
	test_grep "^Error: glob: $why; the search was not run$" glob
'

test_expect_success 'file tools: a symbolic link swapped in during the writes never reaches .agent' '
	project p && mkdir p/real &&
	{ (cd p && i=0 && while [ ! -e ../stop ] && [ $i -lt 20000 ]; do
		ln -sfn .agent d.new && mv -T d.new d; rm -f d; mkdir -p d; rmdir d
		i=$((i + 1)); done) & racer=$!; } &&
	test_when_finished "touch stop; wait $racer" &&
	i=0 && while [ $i -lt 150 ]; do
		call_msg write_file "{\"path\":\"d/x$i\",\"content\":\"x\"}" "allow" "c$i"
		i=$((i + 1)); done >in &&
	jq -c ".tool_calls[]" in | jq -sc "{role: \"assistant\", content: null, tool_calls: .}" >one &&
	tool-exec -C p <one >out &&
	test_line_count = 150 out &&
	echo "refused $(grep -c "kept read-only" out) of 150" >&2 &&
	ls -A p/.agent >left && printf "audit.jsonl\n" >expect && test_cmp expect left
'

test_expect_success 'a bad mode is a usage error' '
	test_must_fail 2 tool-exec --sandbox none </dev/null 2>err &&
	test_contains err "unknown sandbox mode '\''none'\''" &&
	test_must_fail 2 env AGENT_SANDBOX=wide tool-exec </dev/null 2>err &&
	test_contains err "unknown sandbox mode '\''wide'\''"
'

test_expect_success 'without privilege: a user namespace does the same' '
	if [ "$(id -u)" != 0 ] || ! command -v setpriv >/dev/null; then
		echo "skipped: needs root to become nobody" >&2; exit 0
	fi &&
	{ setpriv --reuid 65534 --regid 65534 --clear-groups test -x "$AH_BIN/tool-exec" || {
		echo "nobody cannot run $AH_BIN/tool-exec: a directory above it is closed to others" >&2
		false; }; } &&
	project p && echo keep >victim && chown -R 65534:65534 p &&
	printf "%s\n" "echo x >../escape" "echo x >>.agent/audit.jsonl" "mv .git g" >np &&
	printf "%s\n" "echo x >x" >nok &&
	chmod 755 "$SCRATCH" . && calls np >np.json && calls nok >nok.json &&
	(cd p && setpriv --reuid 65534 --regid 65534 --clear-groups \
		env TMPDIR=/tmp tool-exec <../np.json >../out 2>../err) &&
	{ ! grep -q "cannot set up the sandbox" out || { cat out; false; }; } &&
	test -z "$(breaches out)" && ! test -e escape &&
	test "$(cat p/.agent/audit.jsonl)" = "{\"audit\":1}" &&
	(cd p && setpriv --reuid 65534 --regid 65534 --clear-groups \
		env TMPDIR=/tmp tool-exec <../nok.json >../out) &&
	test "$(breaches out)" = call_1
'

test_done
