#!/bin/sh
# hook-perm --serve / --connect: the rules compiled once, for every step.
. "$(dirname "$0")/lib.sh"
# a project's policy is used once trusted; the trust store is under $HOME
unset XDG_CONFIG_HOME

# serve [OPTIONS...]: starts a server on $PWD/s (it ends with this test
# script at the latest); its pid in $srv.
serve() {
	srv=$(hook-perm "$@" --serve "$PWD/s" --watch $$) &&
	test -S s &&
	test -n "$srv"
}

# ends PID [SECONDS]: waits until PID has ended (5 s at most).
ends() { wait_until "${2:-5}" gone "$1"; }

# A rule whose result says who evaluated it: the server was started with
# WHO=server, the clients run with WHO=client.
cat >"$SCRATCH/who.json" <<'JSON'
{"default": "allow", "rules": [
 {"name": "who", "if": "env.WHO == \"server\"", "decision": "deny",
  "reason": "evaluated by the server"}]}
JSON

perm() { # MSG-FILE OPTIONS...: the decision, as "decision rule"
	f=$1
	shift
	WHO=client hook-perm "$@" <"$f" >out &&
	jq -r '.tool_calls[] | .permission | "\(.decision) \(.rule)"' out
}

test_expect_success 'a client has its rules evaluated by the server' '
	call_msg bash "$(bash_args ls)" none >in &&
	WHO=server serve --policy "$SCRATCH/who.json" &&
	test "$(perm in --policy "$SCRATCH/who.json" --connect "$PWD/s")" = "deny who" &&
	test "$(perm in --policy "$SCRATCH/who.json")" = "allow default" &&
	kill "$srv" && ends "$srv"
'

test_expect_success 'the server decides as hook-perm alone does (the built-in policy)' '
	for c in ls "rm -rf /" "sudo id" "git push" "curl x | sh" ":(){ :|:& };:" \
		"echo x > /etc/passwd" "dd if=/dev/zero of=/dev/sda" "make test"; do
		call_msg bash "$(bash_args "$c")" none
	done >in &&
	call_msg write_file "{\"path\":\"a\",\"content\":\"b\"}" none >>in &&
	call_msg run_todo_write "{\"todos\":[]}" none >>in &&
	call_msg read_file "{\"path\":\"a\"}" none >>in &&
	serve &&
	hook-perm --yes <in >alone &&
	hook-perm --yes --connect "$PWD/s" <in >served &&
	test_cmp alone served &&
	test "$(grep -c "\"decision\":\"deny\"" served)" -eq 6 &&
	kill "$srv" && ends "$srv"
'

test_expect_success 'other rules than the server has are evaluated by the client' '
	call_msg bash "$(bash_args ls)" none >in &&
	WHO=server serve --policy "$SCRATCH/who.json" &&
	echo "{\"default\": \"allow\", \"rules\": [{\"name\": \"mine\", \"if\": \".tool == \\\"bash\\\"\", \"decision\": \"deny\"}]}" >mine.json &&
	test "$(perm in --policy mine.json --connect "$PWD/s")" = "deny mine" &&
	test "$(perm in --connect "$PWD/s" --yes)" = "allow shell" &&
	kill "$srv" && ends "$srv"
'

test_expect_success 'when the policy file changes, the server reads it again' '
	call_msg bash "$(bash_args ls)" none >in &&
	mkdir .agent && cp "$SCRATCH/who.json" .agent/policy.json &&
	hook-perm -C . --trust >/dev/null &&
	WHO=server serve -C . &&
	test "$(perm in -C . --connect "$PWD/s")" = "deny who" &&
	jq ".rules[0] |= (.name = \"who2\" | .if += \" and true\")" \
		"$SCRATCH/who.json" >.agent/policy.json &&
	hook-perm -C . --trust >/dev/null &&
	test "$(perm in -C . --connect "$PWD/s")" = "deny who2" &&
	test "$(perm in -C .)" = "allow default" &&
	kill "$srv" && ends "$srv"
'

test_expect_success 'names and reasons come from the client'\''s policy' '
	call_msg bash "$(bash_args ls)" none >in &&
	mkdir .agent && cp "$SCRATCH/who.json" .agent/policy.json &&
	hook-perm -C . --trust >/dev/null &&
	WHO=server serve -C . &&
	jq ".rules[0].reason = \"changed\"" "$SCRATCH/who.json" >.agent/policy.json &&
	hook-perm -C . --trust >/dev/null &&
	test "$(perm in -C . --connect "$PWD/s")" = "deny who" &&
	jq -e ".tool_calls[0].permission.reason == \"changed\"" out &&
	kill "$srv" && ends "$srv"
'

test_expect_success 'without a server, or when it is gone, the client decides alone' '
	call_msg bash "$(bash_args "rm -rf /")" none >in &&
	test "$(perm in --yes --connect "$PWD/none")" = "deny rm-root-or-home" &&
	serve &&
	test "$(perm in --yes --connect "$PWD/s")" = "deny rm-root-or-home" &&
	kill -9 "$srv" && ends "$srv" &&
	test "$(perm in --yes --connect "$PWD/s")" = "deny rm-root-or-home" &&
	: >notsock &&
	test "$(perm in --yes --connect "$PWD/notsock")" = "deny rm-root-or-home"
'

# ready PID: PID has a child (its worker, or a server's for a client)
ready() { test -n "$(pgrep -P "$1")"; }

test_expect_success 'the worker is ready before the first call: forked here, or the server'\''s' '
	mkfifo fifo &&
	{ hook-perm <fifo >out & pid=$!; } &&
	exec 7>fifo &&
	test_when_finished "exec 7>&-; kill $pid 2>/dev/null || :" &&
	wait_until 10 ready "$pid" &&
	serve &&
	test_when_finished "kill $srv 2>/dev/null || :" &&
	{ hook-perm --connect "$PWD/s" <fifo >out2 & pid2=$!; } &&
	exec 6>fifo &&
	test_when_finished "exec 6>&-; kill $pid2 2>/dev/null || :" &&
	wait_until 10 ready "$srv" &&
	test -z "$(pgrep -P "$pid2")"
'

test_expect_success 'a rule that never ends, in the server: denied in time, and its worker ends' '
	echo "{\"default\": \"allow\", \"rules\": [{\"name\": \"forever\", \"if\": \".args.command == \\\"loop\\\" and (def f: f; f)\", \"decision\": \"allow\"}]}" >p.json &&
	for c in loop ls; do call_msg bash "$(bash_args "$c")" none; done >in &&
	serve --policy p.json &&
	perm in --policy p.json --connect "$PWD/s" --rule-timeout 0.3 >got &&
	printf "%s\n" "deny forever" "allow default" >expect &&
	test_cmp expect got &&
	i=0 &&
	while pgrep -P "$srv" >/dev/null; do
		i=$((i + 1)) && test $i -lt 150 && sleep 0.02 || return 1
	done &&
	kill "$srv" && ends "$srv"
'

test_expect_success 'a policy that does not compile: the client reports it at start, naming the rule' '
	echo "{\"rules\": [{\"name\": \"broken\", \"if\": \".tool ==\", \"decision\": \"deny\"}]}" >p.json &&
	serve --policy p.json &&
	call_msg bash "$(bash_args ls)" none >in &&
	test_must_fail 4 hook-perm --policy p.json --connect "$PWD/s" <in 2>err &&
	test_contains err "hook-perm: policy p.json: rule '\''broken'\'' does not compile" &&
	test_must_fail 4 hook-perm --policy p.json --connect "$PWD/s" </dev/null 2>err &&
	test_contains err "rule '\''broken'\'' does not compile" &&
	kill "$srv" && ends "$srv"
'

test_expect_success 'the server ends with the process it watches, or with its socket' '
	{ sleep 60 & w=$!; } &&
	test_when_finished "kill $w 2>/dev/null || :" &&
	srv=$(hook-perm --serve "$PWD/s" --watch $w) &&
	kill -0 "$srv" &&
	kill $w && ends "$srv" 3 &&
	test ! -e s &&
	serve && rm s && ends "$srv" 3 &&
	serve && kill "$srv" && ends "$srv" && test ! -e s
'

test_expect_success 'the socket is for its user only; one in the way is not replaced' '
	serve &&
	test "$(stat -c %a s)" = 700 &&
	test_must_fail 3 hook-perm --serve "$PWD/s" 2>err &&
	test_contains err "hook-perm: cannot listen on '\''$PWD/s'\'': Address already in use" &&
	kill -0 "$srv" && kill "$srv" && ends "$srv"
'

test_expect_success 'usage errors' '
	test_must_fail 2 hook-perm --serve s --connect s 2>err &&
	test_contains err "hook-perm: --serve cannot go with --connect" &&
	test_must_fail 2 hook-perm --serve s --yes 2>err &&
	test_must_fail 2 hook-perm --watch x --serve s 2>err &&
	long=$(printf "%0120d" 0) &&
	test_must_fail 3 hook-perm --serve "$long" 2>err &&
	test_contains err "is longer than 107 bytes" &&
	hook-perm --help >out && test_contains out "--serve SOCKET"
'

test_done
