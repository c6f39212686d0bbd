#!/bin/sh
# Attacks on agent-step and hook-audit (issue 15, items 9, 12 and 21): a
# repository that plants links and FIFOs under .agent, a server that
# echoes the key, a crash that would dump it, and servers that hold a
# step with keep-alives or a drip.
. "$(dirname "$0")/lib.sh"

AGENT_MODEL=test-model
export AGENT_MODEL
user() { jq -nc --arg c "$1" '{role: "user", content: $c}'; }

# --- item 9: nothing under .agent is opened through a link --------------

test_expect_success 'hook-audit: a shipped .agent/audit.jsonl -> ~/.bashrc is refused, nothing appended' '
	echo "# my bashrc" >"$HOME/.bashrc.t$$" &&
	test_when_finished "rm -f \"$HOME/.bashrc.t$$\"" &&
	cp "$HOME/.bashrc.t$$" expect &&
	mkdir -p repo/.agent &&
	ln -s "$HOME/.bashrc.t$$" repo/.agent/audit.jsonl &&
	user "touch ~/PWNED" >in &&
	test_must_fail 3 hook-audit -C repo <in >out 2>err &&
	test ! -s out &&
	test_cmp expect "$HOME/.bashrc.t$$" &&
	test_contains err "hook-audit: cannot open the audit log '\''repo/.agent/audit.jsonl'\'': it is a symbolic link" &&
	AGENT_WORKDIR=repo test_must_fail 3 hook-audit <in >out 2>err &&
	test_cmp expect "$HOME/.bashrc.t$$" &&
	test_must_fail 3 hook-audit --log repo/.agent/audit.jsonl <in >out 2>err &&
	test_cmp expect "$HOME/.bashrc.t$$" &&
	test_contains err "is a symbolic link" &&
	rm -r repo/.agent &&
	hook-audit -C repo --tee repo/.agent/transcript.jsonl <in >out &&
	test_cmp in out &&
	test_cmp in repo/.agent/transcript.jsonl &&
	test "$(stat -c %a repo/.agent/audit.jsonl)" = 600
'

test_expect_success 'a dangling link is not created through either: the target never appears' '
	mkdir -p repo/.agent &&
	ln -s "$PWD/planted" repo/.agent/audit.jsonl &&
	ln -s "$PWD/planted2" repo/.agent/transcript.jsonl &&
	user "x" >in &&
	test_must_fail 3 hook-audit -C repo <in >out 2>err &&
	test_must_fail 3 hook-audit --log log --tee repo/.agent/transcript.jsonl <in >out 2>err &&
	test_contains err "cannot open '\''repo/.agent/transcript.jsonl'\'': it is a symbolic link" &&
	test ! -e planted && test ! -e planted2 && test ! -s out
'

test_expect_success '.agent itself a link to a directory elsewhere: refused for the log, the transcript and --history' '
	mkdir elsewhere repo &&
	ln -s ../elsewhere repo/.agent &&
	user "x" >in &&
	test_must_fail 3 hook-audit -C repo <in >out 2>err &&
	test_contains err "'\''repo/.agent'\'' is a symbolic link, and nothing under .agent is opened through one" &&
	test_must_fail 3 hook-audit --log log --tee repo/.agent/transcript.jsonl <in >out 2>err &&
	test_contains err "'\''repo/.agent'\'' is a symbolic link" &&
	cp in elsewhere/transcript.jsonl &&
	test_must_fail 3 agent-step --dry-run --history repo/.agent/transcript.jsonl </dev/null >out 2>err &&
	test_contains err "agent-step: cannot open '\''repo/.agent/transcript.jsonl'\'': '\''repo/.agent'\'' is a symbolic link" &&
	test ! -s out &&
	test "$(ls elsewhere)" = transcript.jsonl &&
	test_cmp in elsewhere/transcript.jsonl
'

test_expect_success 'a link deeper under .agent, and .. there, are refused too' '
	mkdir -p repo/.agent elsewhere &&
	ln -s ../../elsewhere repo/.agent/logs &&
	user "x" >in &&
	test_must_fail 3 hook-audit --log repo/.agent/logs/audit.jsonl <in >out 2>err &&
	test_contains err "'\''repo/.agent/logs'\'' is a symbolic link" &&
	test_must_fail 3 hook-audit --log repo/.agent/../victim <in >out 2>err &&
	test_contains err "'\''..'\'' under .agent is refused" &&
	test ! -e repo/victim && test ! -e elsewhere/audit.jsonl
'

test_expect_success 'agent-step --history through a link to a secret: refused, nothing sent' '
	mkdir -p repo/.agent &&
	user "the secret: hunter2" >secret &&
	ln -s "$PWD/secret" repo/.agent/transcript.jsonl &&
	test_must_fail 3 agent-step --dry-run --history repo/.agent/transcript.jsonl </dev/null >out 2>err &&
	test ! -s out &&
	test_contains err "agent-step: cannot open '\''repo/.agent/transcript.jsonl'\'': it is a symbolic link" &&
	rm repo/.agent/transcript.jsonl &&
	user "x" >repo/.agent/transcript.jsonl &&
	agent-step --dry-run --history repo/.agent/transcript.jsonl </dev/null >req &&
	jq -e ".messages == [{role: \"user\", content: \"x\"}]" req
'

test_expect_success 'a FIFO or a device as the log, the transcript or the history: a clear error, no hang' '
	mkdir -p repo/.agent &&
	mkfifo repo/.agent/audit.jsonl repo/.agent/transcript.jsonl &&
	user "x" >in &&
	test_must_fail 3 timeout 20 hook-audit -C repo <in >out 2>err &&
	test_contains err "cannot open the audit log '\''repo/.agent/audit.jsonl'\'': it is a FIFO, not a regular file" &&
	test ! -s out &&
	test_must_fail 3 timeout 20 hook-audit --log log --tee repo/.agent/transcript.jsonl <in >out 2>err &&
	test_contains err "cannot open '\''repo/.agent/transcript.jsonl'\'': it is a FIFO, not a regular file" &&
	test ! -s out &&
	test_must_fail 3 timeout 20 agent-step --dry-run --history repo/.agent/transcript.jsonl </dev/null >out 2>err &&
	test_contains err "agent-step: cannot open '\''repo/.agent/transcript.jsonl'\'': it is a FIFO" &&
	test_must_fail 3 hook-audit --log /dev/null <in >out 2>err &&
	test_contains err "cannot open the audit log '\''/dev/null'\'': it is a character device, not a regular file" &&
	test ! -s out
'

test_expect_success 'elsewhere, --log and --tee refuse a link as the last component' '
	echo keep >target &&
	ln -s target t.jsonl &&
	ln -s target log &&
	user "x" >in &&
	test_must_fail 3 hook-audit --log log <in >out 2>err &&
	test_contains err "cannot open the audit log '\''log'\'': it is a symbolic link, not followed" &&
	test_must_fail 3 hook-audit --log real.log --tee t.jsonl <in >out 2>err &&
	test_contains err "cannot open '\''t.jsonl'\'': it is a symbolic link, not followed" &&
	test "$(cat target)" = keep && test ! -s out
'

test_done
