#!/bin/sh
# AGENT_STATE_DIR: the session kept outside the workspace (agent-run
# --state-dir), in every program that keeps a file of the session; what
# is refused, and the sandbox's hold on it.
. "$(dirname "$0")/lib.sh"

# audit DIR WS: hook-audit's record of one message, with the state
# directory DIR, for the workspace WS
audit() {
	user hi | AGENT_STATE_DIR=$1 hook-audit -C "$2" >/dev/null
}

test_expect_success 'hook-audit keeps its log in the state directory, made 0700 and marked with the workspace; the workspace is left alone' '
	mkdir ws && audit "$PWD/st" ws &&
	test -f st/audit.jsonl && ! test -e ws/.agent &&
	test "$(stat -c %a st)" = 700 &&
	pwd -P >expect && sed "s|\$|/ws|" expect >expect.ws &&
	test_cmp expect.ws st/workspace &&
	audit "$PWD/st/" ws && test_line_count = 2 st/audit.jsonl &&
	ls -A ws >list && test_line_count = 0 list
'

test_expect_success 'an empty directory is taken up; one with files and no mark is not a state directory' '
	mkdir ws empty full && chmod 700 empty full && echo x >full/f &&
	audit "$PWD/empty" ws && test -f empty/workspace &&
	test_must_fail audit "$PWD/full" ws 2>err &&
	test_grep "cannot use .*/full. as the state directory: it is not empty, and no .workspace. file says which workspace it serves" err &&
	! test -e full/audit.jsonl
'

test_expect_success 'one state directory serves one workspace: another workspace is refused' '
	mkdir ws ws2 && audit "$PWD/st" ws &&
	test_must_fail audit "$PWD/st" ws2 2>err &&
	test_grep "it keeps the sessions of the workspace .*/ws., not of .*/ws2. (one state directory serves one workspace" err &&
	test_line_count = 1 st/audit.jsonl
'

test_expect_success 'refused: a relative path, a link, a file, a missing parent, in or around the workspace' '
	mkdir ws real && chmod 700 real && ln -s real link && echo x >file &&
	test_must_fail audit st ws 2>err &&
	test_grep "cannot use .st. as the state directory: it is not an absolute path" err &&
	test_must_fail audit "$PWD/link" ws 2>err &&
	test_grep "/link. as the state directory: it is a symbolic link, not a directory" err &&
	test_must_fail audit "$PWD/link/" ws 2>err &&
	test_grep "it is a symbolic link" err &&
	test_must_fail audit "$PWD/file" ws 2>err &&
	test_grep "it is a regular file, not a directory" err &&
	test_must_fail audit "$PWD/no/st" ws 2>err &&
	test_grep "/no/st. as the state directory: its parent .*/no.: No such file or directory" err &&
	test_must_fail audit "$PWD/ws/st" ws 2>err &&
	test_grep "it is inside the workspace .*/ws. (of the workspace, only .*/ws/.agent. may be)" err &&
	test_must_fail audit "$PWD" ws 2>err &&
	test_grep "the workspace .*/ws. is inside it" err &&
	test_must_fail audit "$PWD/" ws 2>err &&
	test_grep "the workspace .*/ws. is inside it" err &&
	! test -e ws/st && ! test -e ws/.agent && ls -A real >list &&
	test_line_count = 0 list
'

test_expect_success 'refused: a directory others can write, or one above it (not sticky)' '
	mkdir ws gw open && chmod 770 gw && chmod 777 open &&
	test_must_fail audit "$PWD/gw" ws 2>err &&
	test_grep "it is writable by its group or others (chmod go-w" err &&
	test_must_fail audit "$PWD/open/st" ws 2>err &&
	test_grep "/open/st. as the state directory: .*/open. above it is writable by others" err &&
	! test -e open/st &&
	chmod 1777 open && audit "$PWD/open/st" ws && test -f open/st/audit.jsonl
'

if [ "$(id -u)" = 0 ]; then
test_expect_success 'refused: a directory of another user' '
	mkdir ws theirs && chmod 700 theirs && chown nobody theirs &&
	test_must_fail audit "$PWD/theirs" ws 2>err &&
	test_grep "it belongs to another user" err
'
else
test_skip 'refused: a directory of another user' 'not root: no directory of another user can be made here'
fi

test_expect_success 'no link under the state directory is followed' '
	mkdir ws && audit "$PWD/st" ws && echo keep >victim &&
	rm st/audit.jsonl && ln -s ../victim st/audit.jsonl &&
	test_must_fail audit "$PWD/st" ws 2>err &&
	test_grep "is a symbolic link" err && echo keep >expect &&
	test_cmp expect victim &&
	echo task >task &&
	AGENT_STATE_DIR=$PWD/st agent-session -C ws --begin s1 <task >ev &&
	mkdir elsewhere && cp st/session.json elsewhere/s2.json &&
	ln -s ../elsewhere st/sessions &&
	AGENT_STATE_DIR=$PWD/st agent-session -C ws --list >list &&
	test_line_count = 1 list
'

test_expect_success 'WORKSPACE/.agent named as the state directory is the default, kept as it always was' '
	mkdir ws && audit "$PWD/ws/.agent" ws &&
	test -f ws/.agent/audit.jsonl && ! test -e ws/.agent/workspace
'

if can_read_only; then
test_expect_success 'a state directory that cannot be made is said in the words of the session' '
	mkdir ws ro && user hi >msg &&
	test_must_fail read_only ro env AGENT_STATE_DIR="$PWD/ro/st" hook-audit -C ws <msg 2>err &&
	test_grep -E "^hook-audit: cannot create .$PWD/ro/st., where the session is kept: (Read-only file system|Permission denied)$" err &&
	! test -e ro/st
'
else
test_skip 'a state directory that cannot be made is said in the words of the session' 'unshare -rm fails here: no read-only mount can be made'
fi

test_expect_success 'agent-session: the record, the transcript and --list are in the state directory' '
	mkdir ws && echo "the task" >task &&
	AGENT_STATE_DIR=$PWD/st agent-session -C ws --begin s1 <task >ev &&
	jq -e ".id == \"s1\"" st/session.json && ! test -e ws/.agent &&
	AGENT_STATE_DIR=$PWD/st agent-session -C ws --list >list &&
	jq -e ".id == \"s1\"" list &&
	AGENT_STATE_DIR=$PWD/none agent-session -C ws --list >list &&
	test_line_count = 0 list && ! test -e none &&
	mkdir ws2 &&
	test_must_fail env AGENT_STATE_DIR="$PWD/st" agent-session -C ws2 --begin s2 <task 2>err &&
	test_grep "keeps the sessions of the workspace" err
'

test_expect_success 'agent-snap keeps its repository in the state directory, and still leaves WORKSPACE/.agent out of snapshots' '
	mkdir ws && echo a >ws/a.txt && mkdir ws/.agent && echo x >ws/.agent/policy.json &&
	id=$(cd ws && AGENT_STATE_DIR=$PWD/../st agent-snap take) &&
	test -d st/snap/git && ! test -e ws/.agent/snap &&
	git --git-dir=st/snap/git ls-tree -r --name-only "$id" >files &&
	echo a.txt >expect && test_cmp expect files &&
	echo b >ws/a.txt &&
	(cd ws && AGENT_STATE_DIR=$PWD/../st agent-snap diff "$id") >diff &&
	test_grep "^+b" diff &&
	(cd ws && AGENT_STATE_DIR=$PWD/../st agent-snap list) >list &&
	test_line_count = 1 list &&
	mkdir ws2 &&
	(cd ws2 && test_must_fail env AGENT_STATE_DIR="$PWD/../st" agent-snap take 2>../err) &&
	test_grep "keeps the sessions of the workspace" err
'

test_expect_success 'plan mode: the todo list is written in the state directory, not in a .agent of the workspace' '
	mkdir ws ws/.agent && audit "$PWD/st" ws &&
	call_msg run_todo_write "{\"todos\":[{\"id\":\"1\",\"content\":\"x\",\"status\":\"pending\"}]}" >in &&
	AGENT_STATE_DIR=$PWD/st AGENT_MODE=plan AGENT_TODO_FILE=$PWD/st/todo.json tool-exec -C ws <in >out &&
	jq -e ".todos | length == 1" st/todo.json &&
	AGENT_STATE_DIR=$PWD/st AGENT_MODE=plan AGENT_TODO_FILE=.agent/todo.json tool-exec -C ws <in >out &&
	test_contains out "the todo list is kept outside $PWD/st (AGENT_TODO_FILE)" &&
	! test -e ws/.agent/todo.json &&
	AGENT_STATE_DIR=$PWD/st AGENT_MODE=plan AGENT_TODO_FILE=$PWD/st/../todo.json tool-exec -C ws <in >out &&
	test_contains out "is kept outside" && ! test -e todo.json
'

if [ -z "${AH_NO_SANDBOX:-}" ] && [ -z "${AH_VALGRIND:-}" ]; then
test_expect_success 'sandbox: a command neither sees nor writes the state directory; let in, it is read-only' '
	mkdir ws && audit "$PWD/st" ws && sd=$PWD/st &&
	call_msg bash "$(jq -nc --arg c "ls $sd; echo x >$sd/x; echo y >>$sd/audit.jsonl; echo ok >w" "{command: \$c}")" >in &&
	AGENT_STATE_DIR=$sd tool-exec -C ws <in >out &&
	jq -r .content out >res &&
	test_grep "cannot access .$sd.: No such file or directory" res &&
	test_grep "$sd/x: No such file or directory" res &&
	AGENT_STATE_DIR=$sd tool-exec -C ws --allow-read "$sd" <in >out &&
	jq -r .content out >res &&
	test_grep "^audit.jsonl$" res &&
	test_grep "$sd/x: Read-only file system" res &&
	test_grep "$sd/audit.jsonl: Read-only file system" res &&
	! test -e st/x && test_line_count = 1 st/audit.jsonl && test -f ws/w
'
else
test_skip 'sandbox: a command neither sees nor writes the state directory' 'no sandbox here'
fi

test_expect_success 'agent-run names the transcript in the state directory where it is, when a stage fails' '
	echo "{\"status\": 500, \"error\": {\"message\": \"down\"}, \"repeat\": true}" >script &&
	start_model script && mkdir w3 && sd=$PWD/st3 &&
	test_expect_code 1 agent-run -m scripted -y --state-dir "$sd" -C w3 "x" >answer 2>progress &&
	test_grep "^agent-run: the agent-step stage failed (exit 7); the transcript is $sd/transcript.jsonl\$" progress &&
	test -s "$sd/transcript.jsonl"
'

test_done
