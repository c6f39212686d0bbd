#!/bin/sh
# tool-exec: each tool, its errors, and the messages around them.
. "$(dirname "$0")/lib.sh"

# content: the content of the only result in file $1.
content() { jq -j .content "$1"; }
# bash_call FILE: a bash call of the command held in FILE (no quoting).
bash_call() { call_msg bash "$(jq -Rsc "{command: .}" "$1")"; }

test_expect_success '--schema prints the eight tools and task in Chat Completions form' '
	tool-exec --schema >schema &&
	jq -e "length == 9 and all(.type == \"function\")" schema &&
	jq -r ".[].function.name" schema >names &&
	printf "bash\nlist_dir\nread_file\nwrite_file\nedit_file\nrun_todo_write\ngrep\nglob\ntask\n" >expect &&
	test_cmp expect names &&
	jq -e ".[5].function.parameters.properties.todos.items.required == [\"id\",\"content\",\"status\"]" schema &&
	jq -e ".[5].function.description | startswith(\"Create or update the full task todo list.\")" schema
'

test_expect_success 'bash: output, stderr merged, exit code' '
	call_msg bash "{\"command\":\"echo out; echo err >&2; exit 3\"}" >in &&
	tool-exec <in >out &&
	jq -e ".role == \"tool\" and .tool_call_id == \"call_1\"" out &&
	content out >actual &&
	printf "out\nerr\n[exit code: 3]" >expect &&
	test_cmp expect actual
'

test_expect_success 'bash: a command that starts with - or + is run, not read as an option of the shell (with and without the sandbox)' '
	printf "%s\n" "+x 2>/dev/null; echo one" "-e 2>/dev/null; echo two" \
		"--version 2>/dev/null; echo three" "-c 2>/dev/null; echo four" |
		jq -Rsc "{role: \"assistant\", content: null, tool_calls: [split(\"\n\")[:-1]
			| to_entries[] | {id: \"c\\(.key)\", type: \"function\",
			  permission: {decision: \"allow\"}, function: {name: \"bash\",
			  arguments: ({command: .value} | tojson)}}]}" >in &&
	printf "%s\n" one two three four >expect &&
	tool-exec --sandbox off <in >out &&
	jq -j .content out >actual &&
	test_cmp expect actual &&
	tool-exec <in >out &&
	jq -j .content out >actual &&
	test_cmp expect actual
'

test_expect_success 'bash: runs in the working directory, stdin empty' '
	mkdir wd &&
	call_msg bash "{\"command\":\"pwd; cat; echo done\"}" >in &&
	tool-exec -C wd <in >out &&
	content out >actual &&
	printf "%s\ndone\n" "$(cd wd && pwd -P)" >expect &&
	test_cmp expect actual
'

test_expect_success 'bash: no output says so' '
	call_msg bash "{\"command\":\"true\"}" | tool-exec >out &&
	test "$(content out)" = "(no output)"
'

test_expect_success 'bash: a killed shell says by which signal' '
	call_msg bash "{\"command\":\"kill -9 \$\$\"}" | tool-exec >out &&
	test "$(content out)" = "[killed by signal 9]"
'

test_expect_success 'bash: timeout kills the whole group, and says so' '
	call_msg bash "{\"command\":\"sleep 31.5$$ & sleep 31.5$$; echo never\",\"timeout\":0.3}" >in &&
	tool-exec <in >out &&
	test "$(content out)" = "[timed out after 0.3 s: killed]" &&
	! pgrep -f "sleep 31[.]5$$\$"
'

test_expect_success 'bash: at the timeout the whole group gets SIGTERM first: a child can clean up' '
	mkdir wd &&
	cat >cmd <<-\EOF &&
	sh -c "trap \"echo cleaned >f; exit 0\" TERM; echo ready >r; while :; do sleep 0.1; done" &
	wait
	EOF
	bash_call cmd | jq -c ".tool_calls[0].function.arguments |= (fromjson | .timeout = 2 | tojson)" >in &&
	tool-exec -C wd <in >out &&
	content out >c && test "$(tail -n 1 c)" = "[timed out after 2 s: killed]" &&
	test "$(cat wd/r)" = ready &&
	test "$(cat wd/f)" = cleaned
'

test_expect_success 'bash: a command that ignores SIGTERM gets SIGKILL 2 s after it' '
	call_msg bash "{\"command\":\"trap \\\"\\\" TERM; sleep 38.5$$\",\"timeout\":1}" >in &&
	timeout 30 tool-exec <in >out &&
	test "$(content out)" = "[timed out after 1 s: killed]"
'

test_expect_success 'bash: the timeout is capped by --max-timeout' '
	call_msg bash "{\"command\":\"sleep 32.5\",\"timeout\":1000}" >in &&
	tool-exec --max-timeout 0.3 <in >out &&
	test "$(content out)" = "[timed out after 0.3 s: killed]"
'

test_expect_success 'bash: a background child does not hang it, and dies' '
	call_msg bash "{\"command\":\"sleep 33.5$$ & echo started\"}" >in &&
	start=$(date +%s) &&
	tool-exec <in >out &&
	test $(( $(date +%s) - start )) -lt 5 &&
	content out >actual &&
	printf "started\n[background processes still holding the output were killed]" >expect &&
	test_cmp expect actual &&
	! pgrep -f "sleep 33[.]5$$\$"
'

test_expect_success 'bash: setsid and nohup children are killed too' '
	cat >cmd <<-EOF &&
	setsid sleep 34.5$$ >/dev/null 2>&1 &
	nohup sleep 34.6$$ >/dev/null 2>&1 &
	(setsid sh -c "sleep 34.7$$" >/dev/null 2>&1 &)
	echo ok
	EOF
	bash_call cmd | tool-exec >out &&
	test "$(content out)" = "ok" &&
	! pgrep -f "sleep 34[.][567]$$\$"
'

# Without a PID namespace (not root: sv_start falls back to fork) the
# supervisor is only a subreaper, and a command can kill it: what is left
# of the call is then ended by its process group, at once, however deep
# the tree (the walk of our children ends one level a round, 100 rounds).
test_expect_success 'bash: without a PID namespace, a call that killed its supervisor still has its whole group killed, however deep' '
	if [ "$(id -u)" != 0 ] || ! command -v setpriv >/dev/null; then
		echo "skipped: needs root to become nobody" >&2; exit 0
	fi &&
	cat >chain.sh <<-\EOF &&
	# N shells, each waiting on the next; the last writes its pid
	if [ "$1" -gt 0 ]; then sh ./chain.sh $(($1 - 1)); else echo $$ >deep.pid; exec sleep 300; fi
	EOF
	cat >cmd <<-\EOF &&
	sh ./chain.sh 150 >/dev/null 2>&1 &
	while ! [ -s deep.pid ]; do sleep 0.1; done
	echo built; kill -9 $PPID
	EOF
	cp "$AH_BIN/tool-exec" . &&
	chmod 755 "$SCRATCH" . && chown 65534:65534 . &&
	bash_call cmd >in &&
	test_when_finished "kill \$(cat deep.pid) 2>/dev/null; :" &&
	setpriv --reuid 65534 --regid 65534 --clear-groups \
		env AGENT_SANDBOX=off ./tool-exec <in >out 2>err &&
	test "$(content out)" = "built
[killed by signal 9]" &&
	wait_until 10 gone "$(cat deep.pid)"
'

test_expect_success 'bash: 50 MB of output is cut, head and tail kept' '
	cat >cmd <<-\EOF &&
	echo HEAD; head -c 52428800 /dev/zero | tr "\0" x; echo; echo TAIL
	EOF
	bash_call cmd | tool-exec >out &&
	content out >actual &&
	test "$(head -c 4 actual)" = "HEAD" &&
	test "$(tail -n 1 actual)" = "TAIL" &&
	grep -q "^\[\.\.\. 52[0-9]* bytes cut \.\.\.\]$" actual &&
	test "$(wc -c <actual)" -lt 30100
'

test_expect_success 'bash: --max-output and AGENT_MAX_OUTPUT bound results' '
	call_msg bash "{\"command\":\"seq 1 100000\"}" >in &&
	tool-exec --max-output 1000 <in >out &&
	test "$(content out | wc -c)" -lt 1100 &&
	AGENT_MAX_OUTPUT=2000 tool-exec <in >out &&
	test "$(content out | wc -c)" -lt 2100 &&
	test "$(content out | wc -c)" -gt 1900
'

test_expect_success 'bash: 0xFF and NUL bytes still give valid JSON' '
	printf "%s\n" "printf \"a\\377b\\000c\\303\"" >cmd &&
	bash_call cmd | tool-exec >out &&
	jq -e ".content == \"a\\ufffdb\\ufffdc\\ufffd\"" out
'

test_expect_success 'bash: cutting never splits a UTF-8 character' '
	echo "i=0; while [ \$i -lt 3000 ]; do printf 计划; i=\$((i+1)); done" >cmd &&
	bash_call cmd | tool-exec --max-output 1001 >out &&
	content out >actual &&
	sed -n 1p actual | grep -Eq "^(计划)*(计)?$" &&
	sed -n 2p actual | grep -q "^\[\.\.\. [0-9]* bytes cut \.\.\.\]$" &&
	sed -n 3p actual | grep -Eq "^(划)?(计划)*$" &&
	test "$(wc -l <actual)" -eq 2
'

test_expect_success 'bash: a missing or wrongly typed argument is an error' '
	call_msg bash "{}" | tool-exec >out &&
	test "$(content out)" = "Error: bash needs '\''command'\'' (a string)." &&
	call_msg bash "{\"command\":1}" | tool-exec >out &&
	test "$(content out)" = "Error: bash: '\''command'\'' must be a string." &&
	call_msg bash "{\"command\":\"ls\",\"timeout\":\"x\"}" | tool-exec >out &&
	test "$(content out)" = "Error: bash: '\''timeout'\'' must be a number of seconds above 0."
'

test_expect_success 'list_dir: sorted, directories marked' '
	mkdir -p d/sub d/.hidden && touch d/b d/a d/C &&
	call_msg list_dir "{\"path\":\"d\"}" | tool-exec >out &&
	content out >actual &&
	printf ".hidden/\nC\na\nb\nsub/" >expect &&
	test_cmp expect actual &&
	call_msg list_dir "{}" | tool-exec -C d/sub >out &&
	test "$(content out)" = "(empty directory)"
'

test_expect_success 'list_dir: at most 1000 entries' '
	mkdir many && (cd many && seq -w 1 1003 | xargs touch) &&
	call_msg list_dir "{\"path\":\"many\"}" | tool-exec >out &&
	content out >actual &&
	test "$(wc -l <actual)" -eq 1000 &&
	test "$(tail -n 1 actual)" = "[... and 3 more entries]"
'

test_expect_success 'list_dir: errors' '
	touch f &&
	call_msg list_dir "{\"path\":\"nope\"}" | tool-exec >out &&
	test "$(content out)" = "Error: list_dir: no such file or directory: '\''nope'\''" &&
	call_msg list_dir "{\"path\":\"f\"}" | tool-exec >out &&
	content out | grep -q "^Error: list_dir: '\''f'\'': Not a directory$"
'

test_expect_success 'read_file: text, offset and limit' '
	seq 1 10 >ten &&
	call_msg read_file "{\"path\":\"ten\"}" | tool-exec >out &&
	content out >actual && test_cmp ten actual &&
	call_msg read_file "{\"path\":\"ten\",\"offset\":3,\"limit\":2}" | tool-exec >out &&
	content out >actual &&
	printf "3\n4\n[lines 3-4 of 10; read on with offset 5]" >expect &&
	test_cmp expect actual &&
	call_msg read_file "{\"path\":\"ten\",\"offset\":11}" | tool-exec >out &&
	test "$(content out)" = "Error: read_file: '\''ten'\'' has 10 lines; offset 11 is past the end." &&
	call_msg read_file "{\"path\":\"ten\",\"offset\":0}" | tool-exec >out &&
	test "$(content out)" = "Error: read_file: '\''offset'\'' must be a whole number of at least 1."
'

test_expect_success 'read_file: binary, invalid UTF-8, empty, directory' '
	printf "\177ELF\0\0\1" >bin && printf "caf\351\n" >latin1 && : >empty && mkdir dir &&
	call_msg read_file "{\"path\":\"bin\"}" | tool-exec >out &&
	test "$(content out)" = "Error: read_file: '\''bin'\'' is a binary file (7 bytes); not shown." &&
	call_msg read_file "{\"path\":\"latin1\"}" | tool-exec >out &&
	jq -e ".content == \"caf\\ufffd\\n\"" out &&
	call_msg read_file "{\"path\":\"empty\"}" | tool-exec >out &&
	test "$(content out)" = "(empty file)" &&
	call_msg read_file "{\"path\":\"dir\"}" | tool-exec >out &&
	test "$(content out)" = "Error: read_file: '\''dir'\'' is a directory; list it with list_dir."
'

test_expect_success 'write_file: creates parents, replaces atomically, keeps the mode' '
	call_msg write_file "{\"path\":\"new/deep/f.txt\",\"content\":\"one\\n\"}" | tool-exec >out &&
	test "$(content out)" = "Wrote 4 bytes to new/deep/f.txt." &&
	echo one >expect && test_cmp expect new/deep/f.txt &&
	printf "#!/bin/sh\necho old\n" >run.sh && chmod 755 run.sh &&
	call_msg write_file "{\"path\":\"run.sh\",\"content\":\"#!/bin/sh\\necho new\\n\"}" | tool-exec >out &&
	test "$(./run.sh)" = new &&
	test ! -e .run.sh.tmp &&
	call_msg write_file "{\"path\":\"new\",\"content\":\"x\"}" | tool-exec >out &&
	test "$(content out)" = "Error: write_file: '\''new'\'' is a directory."
'

test_expect_success 'write_file: an absolute path inside the directory is fine' '
	call_msg write_file "{\"path\":\"$(pwd -P)/abs.txt\",\"content\":\"a\"}" | tool-exec >out &&
	test "$(cat abs.txt)" = a
'

test_expect_success 'write_file: through a symlink inside, the target is replaced' '
	echo old >real && ln -s real link &&
	call_msg write_file "{\"path\":\"link\",\"content\":\"new\\n\"}" | tool-exec >out &&
	test -L link && test "$(cat real)" = new
'

test_expect_success 'edit_file: one occurrence, replace_all, and the errors' '
	printf "a x b x\n" >f &&
	call_msg edit_file "{\"path\":\"f\",\"old_string\":\"a\",\"new_string\":\"A\"}" | tool-exec >out &&
	test "$(content out)" = "Replaced 1 occurrence in f." &&
	test "$(cat f)" = "A x b x" &&
	cp f before &&
	call_msg edit_file "{\"path\":\"f\",\"old_string\":\"x\",\"new_string\":\"y\"}" | tool-exec >out &&
	test "$(content out)" = "Error: edit_file: old_string occurs 2 times in '\''f'\''; give more context to make it unique, or set replace_all. The file is unchanged." &&
	cmp before f &&
	call_msg edit_file "{\"path\":\"f\",\"old_string\":\"zzz\",\"new_string\":\"y\"}" | tool-exec >out &&
	test "$(content out)" = "Error: edit_file: old_string was not found in '\''f'\''; the file is unchanged." &&
	cmp before f &&
	call_msg edit_file "{\"path\":\"f\",\"old_string\":\"\",\"new_string\":\"y\"}" | tool-exec >out &&
	content out | grep -q "^Error: edit_file: old_string is empty" &&
	call_msg edit_file "{\"path\":\"f\",\"old_string\":\"x\",\"new_string\":\"y\",\"replace_all\":true}" | tool-exec >out &&
	test "$(content out)" = "Replaced 2 occurrences in f." &&
	test "$(cat f)" = "A y b y" &&
	call_msg edit_file "{\"path\":\"f\",\"old_string\":\"x\"}" | tool-exec >out &&
	test "$(content out)" = "Error: edit_file needs '\''new_string'\'' (a string)."
'

test_expect_success 'run_todo_write: same code and texts as todo-write' '
	call_msg run_todo_write "{\"todos\":[{\"id\":\"a\",\"content\":\"x\",\"status\":\"in_progress\"}]}" | tool-exec >out &&
	test "$(content out)" = "$(printf "Current todos:\n[>] a - x")" &&
	jq -e ".todos[0].id == \"a\"" todo.json &&
	cp todo.json before &&
	call_msg run_todo_write "{\"todos\":[{\"id\":\"a\",\"content\":\"x\"},{\"id\":\"a\",\"content\":\"y\"}]}" | tool-exec >out &&
	test "$(content out)" = "Error: duplicate todo id - a" &&
	cmp before todo.json &&
	mkdir w && call_msg run_todo_write "{\"todos\":[]}" | tool-exec -C w >out &&
	test -f w/todo.json &&
	call_msg run_todo_write "{\"todos\":[{\"content\":\"y\"}]}" >in &&
	AGENT_TODO_FILE=list.json tool-exec -C w <in >out &&
	test "$(content out)" = "$(printf "Current todos:\n[ ] todo-1 - y")" &&
	jq -e ".todos == [{id: \"todo-1\", content: \"y\", status: \"pending\"}]" w/list.json &&
	test ! -e list.json
'

# --- the working directory is a boundary for the file tools

# (set, even empty, AH_NO_OPENAT2 turns openat2 off: unset for the first run)
for fallback in "" 1; do
if [ -n "$fallback" ]; then
	AH_NO_OPENAT2=1
	export AH_NO_OPENAT2
else
	unset AH_NO_OPENAT2
fi
test_expect_success "boundaries: .., absolute, symlinks, string prefixes${fallback:+ (without openat2)}" '
	mkdir -p root rootx outside && echo secret >outside/s && echo s2 >rootx/s &&
	ln -s ../outside/s root/filelink && ln -s ../outside root/dirlink &&
	ln -s /etc root/abslink &&
	for p in ../outside/s ../../../../etc/passwd /etc/passwd filelink dirlink/s \
		abslink/passwd "$(pwd -P)/rootx/s" "$(pwd -P)/root/../outside/s"; do
		for t in read_file list_dir write_file edit_file; do
			# each tool takes its own keys, and no other
			case $t in
			write_file) more=", content: \"x\"" ;;
			edit_file) more=", old_string: \"s\", new_string: \"x\"" ;;
			*) more= ;;
			esac
			args=$(jq -nc --arg p "$p" "{path: \$p$more}")
			call_msg "$t" "$args" | tool-exec -C root >out || return 1
			content out | grep -q "^Error: .*outside the working directory" || {
				echo "$t $p was not refused:"; cat out; return 1; }
		done
	done &&
	test "$(cat outside/s)" = secret && test "$(cat rootx/s)" = s2 &&
	test ! -e outside/x
'

# what does not exist yet is refused as well as what does (without
# RESOLVE_BENEATH, ../new would be created); and the root /w/root does not
# hold /w/rootx, which a link inside can lead to
test_expect_success "boundaries: new files, .., a sibling named like the root${fallback:+ (without openat2)}" '
	mkdir -p root rootx outside && echo s2 >rootx/s &&
	ln -s ../rootx/s root/sib && ln -s ../rootx root/sibdir &&
	for c in "write_file ../new" "write_file ../outside/new" "write_file sibdir/new" \
		"write_file sib" "edit_file sib" "read_file sib" "read_file sibdir/s" \
		"list_dir .." "list_dir ../outside" "list_dir sibdir"; do
		set -- $c &&
		args=$(jq -nc --arg t "$1" --arg p "$2" "{path: \$p} + {write_file: {content: \"x\"},
			edit_file: {old_string: \"s2\", new_string: \"x\"}}[\$t]") &&
		call_msg "$1" "$args" | tool-exec -C root >out || return 1
		content out | grep -q "^Error: .*outside the working directory" || {
			echo "$c was not refused:"; cat out; return 1; }
	done &&
	test ! -e new && test ! -e outside/new && test ! -e rootx/new &&
	test "$(cat rootx/s)" = s2
'

test_expect_success "boundaries: no creation through a symlinked directory${fallback:+ (without openat2)}" '
	mkdir -p root outside && ln -s ../outside root/out &&
	call_msg write_file "{\"path\":\"out/new/f\",\"content\":\"x\"}" | tool-exec -C root >out &&
	content out | grep -q "outside the working directory" &&
	test ! -e outside/new
'

# a link inside to a directory that does not exist: the directories of
# the new file cannot be made through it, and the model is told the path
# does not exist (mkdirat's EEXIST on the link is not the error)
test_expect_success "write_file through a dangling link to a directory: no such file, nothing made${fallback:+ (without openat2)}" '
	mkdir -p root && ln -s gone root/l &&
	call_msg write_file "{\"path\":\"l/sub/f\",\"content\":\"x\"}" | tool-exec -C root >out &&
	test "$(content out)" = "Error: write_file: no such file or directory: '\''l/sub/f'\''" &&
	test ! -e root/gone
'

done
unset AH_NO_OPENAT2

# --- messages in, messages out

test_expect_success 'three calls in one message are answered in order' '
	jq -nc "{role:\"assistant\",tool_calls:[range(3) as \$i | {id:\"c\(\$i)\",type:\"function\",
		function:{name:\"bash\",arguments:({command:\"echo \(\$i)\"}|tojson)},
		permission:{decision:\"allow\"}}]}" >in &&
	tool-exec <in >out &&
	jq -r "\"\(.tool_call_id)=\(.content)\"" out >actual &&
	printf "c0=0\n\nc1=1\n\nc2=2\n\n" | sed "/^\$/d" >expect &&
	jq -rj "\"\(.tool_call_id)=\(.content)\n\"" out | sed "/^\$/d" >actual &&
	test_cmp expect actual
'

test_expect_success 'a half-answered transcript: only the rest runs' '
	{
		echo "{\"role\":\"user\",\"content\":\"go\"}" &&
		jq -nc "{role:\"assistant\",tool_calls:[range(3) as \$i | {id:\"c\(\$i)\",type:\"function\",
			function:{name:\"bash\",arguments:({command:\"echo ran \(\$i) >>log; echo \(\$i)\"}|tojson)},
			permission:{decision:\"allow\"}}]}" &&
		echo "{\"role\":\"tool\",\"tool_call_id\":\"c1\",\"content\":\"done before\"}"
	} >t.jsonl &&
	tool-exec <t.jsonl >out &&
	jq -r .tool_call_id out >actual &&
	printf "c0\nc2\n" >expect && test_cmp expect actual &&
	printf "ran 0\nran 2\n" >expect && test_cmp expect log
'

test_expect_success 'only the last assistant message counts; answered means nothing runs' '
	call_msg bash "{\"command\":\"echo old >>log\"}" allow old >t.jsonl &&
	echo "{\"role\":\"user\",\"content\":\"no\"}" >>t.jsonl &&
	call_msg bash "{\"command\":\"echo new >>log\"}" allow new >>t.jsonl &&
	tool-exec <t.jsonl >out &&
	test "$(jq -r .tool_call_id out)" = new && test "$(cat log)" = new &&
	content out >/dev/null &&
	jq -c . out >>t.jsonl &&
	tool-exec <t.jsonl >out2 && test ! -s out2 && test "$(cat log)" = new
'

test_expect_success 'permission: deny gives the reason, none is refused, --yes trusts' '
	call_msg bash "{\"command\":\"touch ran\"}" deny | tool-exec >out &&
	test "$(content out)" = "Error: permission denied: test says deny" &&
	call_msg bash "{\"command\":\"touch ran\"}" none | tool-exec >out &&
	content out | grep -q "^Error: permission required: .*hook-perm.*--yes" &&
	test ! -e ran &&
	call_msg bash "{\"command\":\"touch ran\"}" ask | tool-exec >out &&
	content out | grep -q "^Error: permission required" && test ! -e ran &&
	call_msg bash "{\"command\":\"touch ran\"}" deny | tool-exec --yes >out &&
	content out | grep -q "^Error: permission denied" && test ! -e ran &&
	call_msg bash "{\"command\":\"touch ran\"}" none | tool-exec --yes >out &&
	test -e ran
'

test_expect_success 'bad arguments and unknown tools get an Error: result' '
	call_msg bash "{\"command\":" | tool-exec >out &&
	test "$(content out)" = "Error: arguments for bash are not valid JSON (at byte 11): {\"command\":" &&
	call_msg bash "[1]" | tool-exec >out &&
	test "$(content out)" = "Error: arguments for bash must be a JSON object." &&
	call_msg bash "{\"command\":\"ls\",\"command\":\"rm -rf x\"}" | tool-exec >out &&
	test "$(content out)" = "Error: arguments for bash give the key '\''command'\'' more than once." &&
	call_msg "no such" "{}" | tool-exec >out &&
	content out | grep -q "^Error: unknown tool '\''no such'\''; the tools are" &&
	echo "{\"role\":\"assistant\",\"tool_calls\":[{\"id\":\"z\",\"permission\":{\"decision\":\"allow\"}}]}" | tool-exec >out &&
	test "$(content out)" = "Error: the tool call has no function name."
'

test_expect_success 'streaming: answers each message as it arrives' '
	mkfifo fifo &&
	{ tool-exec <fifo >out & pid=$!; } &&
	exec 3>fifo &&
	call_msg bash "{\"command\":\"echo first\"}" allow a >&3 &&
	wait_for out 1 &&
	call_msg bash "{\"command\":\"echo second\"}" allow b >&3 &&
	wait_for out 2 &&
	exec 3>&- &&
	wait_all $pid &&
	jq -rj ".content" out >actual &&
	printf "first\nsecond\n" >expect && test_cmp expect actual
'

test_expect_success 'SIGINT mid-call: one result per call, exit 130' '
	jq -nc "{role:\"assistant\",tool_calls:[
		{id:\"a\",function:{name:\"bash\",arguments:({command:\"echo begun; sleep 35.5$$\"}|tojson)},permission:{decision:\"allow\"}},
		{id:\"b\",function:{name:\"bash\",arguments:({command:\"touch ran-b\"}|tojson)},permission:{decision:\"allow\"}},
		{id:\"c\",function:{name:\"list_dir\",arguments:\"{}\"},permission:{decision:\"allow\"}}]}" >in &&
	mkfifo fifo &&
	{ tool-exec <fifo >out 2>err & pid=$!; } &&
	exec 3>fifo && cat in >&3 &&
	sleep 0.5 && kill -INT $pid &&
	test_expect_code 130 wait $pid &&
	exec 3>&- &&
	jq -r .tool_call_id out >ids && printf "a\nb\nc\n" >expect && test_cmp expect ids &&
	jq -rs ".[0].content" out | grep -q "^\[interrupted by signal 2: killed\]" &&
	jq -rs ".[1].content" out | grep -q "^Error: interrupted by signal 2 before it ran" &&
	test ! -e ran-b &&
	! pgrep -f "sleep 35[.]5$$\$" &&
	test_contains err "tool-exec: interrupted by signal 2"
'

test_expect_success 'input that is not JSON Lines is an error with its line' '
	{ echo "{\"role\":\"user\",\"content\":\"x\"}"; echo "[1]"; } >in &&
	test_must_fail 5 tool-exec <in 2>err &&
	test_contains err "tool-exec: stdin: line 2: not a JSON object"
'

test_expect_success 'write errors on stdout: exit 3' '
	call_msg bash "{\"command\":\"true\"}" >in &&
	test_must_fail 3 tool-exec <in >/dev/full 2>err &&
	test_contains err "tool-exec: cannot write stdout"
'

test_expect_success 'usage errors exit 2' '
	test_must_fail 2 tool-exec --bogus 2>err &&
	test_must_fail 2 tool-exec --timeout abc 2>err &&
	test_contains err "tool-exec: --timeout: '\''abc'\'' is not a number" &&
	test_must_fail 2 tool-exec stray 2>err &&
	AGENT_BASH_TIMEOUT=-1 test_must_fail 2 tool-exec </dev/null 2>err &&
	test_must_fail 3 tool-exec -C /nonexistent </dev/null 2>err &&
	test_contains err "tool-exec: cannot resolve '\''/nonexistent'\''"
'

test_expect_success '-v: a line per call: decision, tool, gist (cut whole characters), outcome' '
	call_msg run_todo_write "{\"todos\":[{\"id\":\"a\",\"content\":\"do a\",\"status\":\"in_progress\"},{\"id\":\"b\",\"content\":\"do b\",\"status\":\"pending\"}]}" >in &&
	tool-exec -v <in >out 2>err &&
	test_contains err "tool-exec: allow run_todo_write 2 items -> ok" &&
	test_contains err "[>] a - do a" &&
	printf "echo %s" "$(printf "\303\251%.0s" $(seq 60))" >cmd &&
	bash_call cmd | tool-exec -v >out 2>err &&
	grep "^tool-exec: " err >line &&
	printf "tool-exec: allow bash echo %s... -> ok\n" "$(printf "\303\251%.0s" $(seq 37))" >expect &&
	test_cmp expect line
'

test_expect_success '-v: the progress line says how a command ended: exit N, timed out, killed' '
	printf "%s\n" "exit 3" "sleep 30.3$$" "kill -9 \$\$" "echo fine" "sleep 30.4$$ & echo x; exit 4" |
		jq -Rsc "{role: \"assistant\", content: null, tool_calls: [split(\"\n\")[:-1]
			| to_entries[] | {id: \"c\(.key)\", type: \"function\",
			  permission: {decision: \"allow\"}, function: {name: \"bash\",
			  arguments: ({command: .value, timeout: 1} | tojson)}}]}" >in &&
	tool-exec -v <in >out 2>err &&
	sed -n "s/^tool-exec: allow bash .* -> //p" err >actual &&
	printf "%s\n" "exit 3" "timed out after 1 s" "killed by signal 9" ok "exit 4" >expect &&
	test_cmp expect actual
'

test_expect_success '-v: escape sequences of the model are shown, not sent to the terminal' '
	printf "echo \033]2;pwned\007 \302\233" >cmd &&
	bash_call cmd | tool-exec -v --sandbox off >out 2>err &&
	test_contains err "tool-exec: allow bash echo \\x1b]2;pwned\\x07 \\u{009B} -> exit 127" &&
	call_msg run_todo_write "{\"todos\":[{\"id\":\"a\",\"content\":\"do \\u001b[2Ja \\u202etxt.exe\",\"status\":\"pending\"}]}" >in &&
	tool-exec -v <in >out 2>err &&
	test_contains err "[ ] a - do \\x1b[2Ja \\u{202E}txt.exe" &&
	! grep -q "$(printf "\033")" err
'

test_done
