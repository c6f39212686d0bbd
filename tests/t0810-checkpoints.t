#!/bin/sh
# agent-run's checkpoints: a snapshot before each step whose calls can
# write, its id in the transcript and in a checkpoint event, a restore of
# each giving back the tree before that step; --no-checkpoints.
. "$(dirname "$0")/lib.sh"

AGENT_MODEL=scripted
export AGENT_MODEL

# manifest DIR: every path but .git and .agent, its type, exec bit and
# content (or link target)
manifest() {
	(cd "$1" && {
		find . \( -path ./.git -o -path ./.agent \) -prune -o \
			-printf '%y %M %p -> %l\n' |
			sed 's/^\(.\) .\(..\)\(.\)[^ ]* /\1 \3 /' &&
		find . \( -path ./.git -o -path ./.agent \) -prune -o \
			-type f -exec cksum {} + ; } | LC_ALL=C sort)
}

# The steps of the scripted session, and the same by hand (step N in
# dir), for the trees the checkpoints must give back.
STEP2='printf "two\n" >>a.txt && printf "\000\377" >b.bin && mkdir -p d/empty'
STEP4='mv a.txt d/a.txt && chmod +x d/a.txt && rm b.bin && ln -s d/a.txt link'
by_hand() { # DIR N
	case $2 in
	1) printf "one\n" >"$1/a.txt" ;;
	2) (cd "$1" && eval "$STEP2") ;;
	3) sed -i "s/one/ONE/" "$1/a.txt" ;;
	4) (cd "$1" && eval "$STEP4") ;;
	esac
}
session_script() {
	jq -nc --arg s2 "$STEP2" --arg s4 "$STEP4" '
		{tool_calls: [{name: "write_file", arguments: {path: "a.txt", content: "one\n"}}]},
		{tool_calls: [{name: "bash", arguments: {command: $s2}}]},
		{tool_calls: [{name: "edit_file", arguments: {path: "a.txt", old_string: "one", new_string: "ONE"}}]},
		{tool_calls: [{name: "bash", arguments: {command: $s4}}]},
		{tool_calls: [{name: "read_file", arguments: {path: "d/a.txt"}}, {name: "list_dir", arguments: {path: "."}}]},
		{content: "done"}' >script
}

for mode in ring step; do
	flag=
	# the ring's stage makes the snapshot before step 4 (after an edit of
	# a file it has) from the changes; the others follow new files, and
	# a stage of --step lives one step: each is a whole walk
	scans='["changes", "full", "full", "full"]'
	[ $mode = step ] && flag=--step && scans='["full", "full", "full", "full"]'

	test_expect_success "$mode: a checkpoint before each step that writes; each restores the tree before its step" "
		session_script && start_model script &&
		mkdir w e && echo keep >w/keep.txt && echo keep >e/keep.txt &&
		(cd w && git init -q . && git add keep.txt && echo more >>keep.txt &&
		 echo more >>../e/keep.txt && cp .git/index ../index) &&
		manifest e >m0 &&
		for n in 1 2 3 4; do by_hand e \$n && manifest e >m\$n || return 1; done &&
		agent-run $flag -y -C w --json 'do the steps' >events 2>progress &&
		manifest w >now && test_cmp m4 now &&
		cmp index w/.git/index &&
		jq -r 'select(.checkpoint) | .checkpoint' w/.agent/transcript.jsonl >ids &&
		test_line_count = 4 ids &&
		jq -r 'select(.type == \"checkpoint\") | .checkpoint' events >event-ids &&
		test_cmp ids event-ids &&
		jq -e -s 'map(select(.role == \"assistant\" and .tool_calls)) |
			map(has(\"checkpoint\")) == [true, true, true, true, false]' w/.agent/transcript.jsonl &&
		id=\$(jq -r .id w/.agent/session.json) &&
		agent-snap -C w list --session \"\$id\" >list &&
		jq -e -s 'map(.step) == [4, 3, 2, 1] and all(.calls | length == 1)' list &&
		jq -e -s 'map(.scan) == $scans' list &&
		n=0 &&
		while read -r c; do
			agent-snap -C w restore \"\$c\" >/dev/null &&
			manifest w >now && test_cmp m\$n now || return 1
			n=\$((n + 1))
		done <ids &&
		cmp index w/.git/index
	"
done

# An empty workspace (no file at all): the ring's stage makes its
# snapshots from the changes (the empty tree) but for its first two
# (whole walks: the watches are made for the second) and the one after a
# new file; the file is in it and --rewind-code brings it back, or
# removes it.
test_expect_success 'ring, an empty workspace: checkpoints from the changes; a file made in it restored and removed' '
	for c in "echo one" "echo two" "echo new >new.txt" "rm new.txt" "echo five"; do
		jq -nc --arg c "$c" "{tool_calls: [{name: \"bash\", arguments: {command: \$c}}]}" || return 1
	done >script && echo "{\"content\": \"done\"}" >>script &&
	start_model script && mkdir w &&
	agent-run -y -C w "do the steps" >answer 2>progress &&
	test "$(cat answer)" = done && test ! -e w/new.txt &&
	agent-snap -C w list >list &&
	jq -e -s "map(.scan) == [\"changes\", \"full\", \"changes\", \"full\", \"full\"]" list &&
	jq -r "select(.checkpoint) | .checkpoint" w/.agent/transcript.jsonl >ids &&
	test_line_count = 5 ids &&
	c3=$(sed -n 3p ids) && c4=$(sed -n 4p ids) &&
	agent-run -C w --rewind-code "$c4" >answer 2>progress &&
	echo new >expect && test_cmp expect w/new.txt &&
	agent-run -C w --rewind-code "$c3" >answer 2>progress &&
	test ! -e w/new.txt
'

test_expect_success '--no-checkpoints: no snapshot, no checkpoint in the transcript' '
	session_script && start_model script && mkdir w &&
	agent-run --no-checkpoints -y -C w "do the steps" >answer 2>progress &&
	test ! -e w/.agent/snap &&
	test_must_fail grep -q checkpoint w/.agent/transcript.jsonl &&
	test_expect_code 2 env AGENT_CHECKPOINTS=x agent-run -C w "x" 2>err &&
	test_grep "AGENT_CHECKPOINTS" err
'

test_expect_success 'denied calls and read-only calls take no snapshot' '
	jq -nc "{tool_calls: [{name: \"bash\", arguments: {command: \"touch x\"}}]},
		{tool_calls: [{name: \"read_file\", arguments: {path: \"f\"}}]},
		{content: \"done\"}" >script && start_model script && mkdir w &&
	echo f >w/f &&
	agent-run -C w "try" >answer 2>progress </dev/null &&
	test ! -e w/x &&
	test_must_fail grep -q checkpoint w/.agent/transcript.jsonl
'

test_expect_success 'a child of a task call: its steps are checkpoints of its own session, its changes in the next snapshot of the parent' '
	{
		echo "{\"match\": \"parent\", \"tool_calls\": [{\"name\": \"task\", \"arguments\": {\"description\": \"w\", \"prompt\": \"the child\"}}]}" &&
		echo "{\"match\": \"the child\", \"tool_calls\": [{\"name\": \"bash\", \"arguments\": {\"command\": \"echo by-child >child.txt\"}}]}" &&
		echo "{\"match\": \"the child\", \"content\": \"child done\"}" &&
		echo "{\"match\": \"parent\", \"tool_calls\": [{\"name\": \"bash\", \"arguments\": {\"command\": \"rm child.txt\"}}]}" &&
		echo "{\"match\": \"parent\", \"content\": \"done\"}"
	} >script && start_model script && mkdir w &&
	agent-run -y -C w "parent" >answer 2>progress &&
	test "$(cat answer)" = done && test ! -e w/child.txt &&
	parent=$(jq -r .id w/.agent/session.json) &&
	agent-snap -C w list >list &&
	jq -e -s --arg p "$parent" "length == 3 and .[0].session == \$p and .[2].session == \$p
		and (.[1].session | startswith(\$p + \".call_\")) and .[1].step == 1" list &&
	last=$(jq -r -s ".[0].id" list) &&
	agent-snap -C w restore "$last" >/dev/null &&
	echo by-child >expect && test_cmp expect w/child.txt
'

# a session of the four steps in w (the trees before each in m0..m3, the
# tree after in m4), its checkpoints in ids, the transcript kept as old,
# and the server's script going on with the lines given
four_steps() {
	session_script && printf "%s\n" "$@" >>script && start_model script &&
	mkdir w e && echo keep >w/keep.txt && echo keep >e/keep.txt &&
	manifest e >m0 &&
	for n in 1 2 3 4; do by_hand e $n && manifest e >m$n || return 1; done &&
	agent-run -y -C w "do the steps" >answer 2>progress &&
	jq -r "select(.checkpoint) | .checkpoint" w/.agent/transcript.jsonl >ids &&
	test_line_count -eq 4 ids &&
	cp w/.agent/transcript.jsonl old && jq -r .id w/.agent/session.json >old-id
}

test_expect_success '--rewind ID TASK: files and conversation back to before the step; the old session kept whole' '
	four_steps "{\"content\": \"redone\"}" &&
	c3=$(sed -n 3p ids) &&
	agent-run -C w --json --rewind "$c3" "do step 3 differently" >events 2>progress &&
	manifest w >now && test_cmp m2 now &&
	old=$(cat old-id) && cmp old "w/.agent/sessions/$old.jsonl" &&
	new=$(jq -r .id w/.agent/session.json) && test "$new" != "$old" &&
	n=$(grep -n -F "\"checkpoint\":\"$c3\"" old | cut -d: -f1) &&
	head -n $((n - 1)) old >expect &&
	head -n $((n - 1)) w/.agent/transcript.jsonl >actual && test_cmp expect actual &&
	jq -s -e --argjson n "$n" ".[\$n - 1] | .role == \"user\" and
		(.content | contains(\"restored to checkpoint\") and contains(\"do step 3 differently\"))" w/.agent/transcript.jsonl &&
	jq -s -e ".[-1].content == \"redone\"" w/.agent/transcript.jsonl &&
	test "$(cat events | jq -r "select(.type == \"result\") | .answer")" = redone &&
	agent-run -C w --sessions >sessions &&
	jq -r .id sessions | LC_ALL=C sort >ids-listed &&
	printf "%s\n" "$old" "$new" | LC_ALL=C sort >expect && test_cmp expect ids-listed &&
	agent-snap -C w list >list &&
	jq -e -s "map(select(.kind == \"before-restore\")) | length == 1" list
'

test_expect_success '--rewind-conversation: only the conversation; --rewind-code: only the files, no new session' '
	four_steps "{\"content\": \"went on\"}" &&
	c2=$(sed -n 2p ids) && c4=$(sed -n 4p ids) &&
	agent-run -C w --rewind-conversation "$c4" >answer 2>progress &&
	manifest w >now && test_cmp m4 now &&
	jq -s -e ".[-2] | .role == \"user\" and (.content | contains(\"was not restored\"))" w/.agent/transcript.jsonl &&
	id=$(jq -r .id w/.agent/session.json) && cp w/.agent/transcript.jsonl t-before &&
	agent-run -C w --rewind-code "$c2" >answer 2>progress &&
	test ! -s answer && manifest w >now && test_cmp m1 now &&
	test "$(jq -r .id w/.agent/session.json)" = "$id" &&
	cmp t-before w/.agent/transcript.jsonl
'

test_expect_success '--fork: a new session from the whole conversation; the old one untouched' '
	four_steps "{\"content\": \"forked\"}" &&
	old=$(cat old-id) &&
	agent-run -C w --fork "now a variant" >answer 2>progress &&
	test "$(cat answer)" = forked &&
	cmp old "w/.agent/sessions/$old.jsonl" &&
	manifest w >now && test_cmp m4 now &&
	n=$(wc -l <old) && head -n "$n" w/.agent/transcript.jsonl >actual &&
	test_cmp old actual &&
	jq -s -e --argjson n "$n" ".[\$n] | .role == \"user\" and .content == \"now a variant\"" w/.agent/transcript.jsonl
'

test_expect_success '--rewind and --fork: usage, and a checkpoint no session has' '
	mkdir w &&
	test_expect_code 2 agent-run -C w --rewind xyz 2>err &&
	test_grep "^agent-run: --rewind: '\''xyz'\'' is not a checkpoint id (agent-snap list shows them)" err &&
	test_expect_code 2 agent-run -C w --rewind-code xyz 2>err &&
	test_grep "^agent-run: --rewind-code: '\''xyz'\'' is not a checkpoint id" err &&
	test_expect_code 2 agent-run -C w --rewind-conversation "$(printf %041d 0)" x 2>err &&
	test_grep "^agent-run: --rewind-conversation: '\''0*'\'' is not a checkpoint id" err &&
	test_expect_code 2 agent-run -C w --rewind abc 2>err &&
	test_expect_code 2 agent-run -C w --fork 2>err && test_grep "needs a task" err &&
	test_expect_code 2 agent-run -C w --rewind-code abcdef "task" 2>err &&
	test_expect_code 2 agent-run -C w --rewind abcdef -c 2>err &&
	test_expect_code 2 agent-run -C w --rewind abcdef --fork x 2>err &&
	test_expect_code 1 agent-run -C w --rewind abcdef "task" 2>err &&
	test_grep "no step of a session" err
'

test_done
