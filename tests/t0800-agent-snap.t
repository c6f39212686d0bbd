#!/bin/sh
# agent-snap: snapshots of the workspace in .agent/snap, and their
# restore; the user's own repository untouched; a hostile repository.
. "$(dirname "$0")/lib.sh"

# manifest DIR: every path of DIR but .git and .agent, with its type,
# whether it is executable and writable, and its content (a checksum) or
# link target: what a restore must give back
manifest() {
	(cd "$1" && {
		find . \( -path ./.git -o -path ./.agent \) -prune -o \
			-printf '%y %M %p -> %l\n' |
			sed 's/^\(.\) .\(..\)\(.\)[^ ]* /\1 \3 /' &&
		find . \( -path ./.git -o -path ./.agent \) -prune -o \
			-type f -exec cksum {} + ; } | LC_ALL=C sort)
}

test_expect_success '--help, --version, usage' '
	agent-snap --help >out &&
	test_grep "^usage: agent-snap" out &&
	test_grep "Exit status" out &&
	agent-snap --version >out &&
	test_grep "^agent-snap (agent-harness) " out &&
	test_expect_code 2 agent-snap 2>err &&
	test_grep "say what to do" err &&
	test_expect_code 2 agent-snap frobnicate 2>err &&
	test_grep "unknown command" err &&
	test_expect_code 2 agent-snap take --step x 2>err &&
	test_expect_code 2 agent-snap --bogus list 2>err &&
	test_expect_code 2 agent-snap diff 2>err &&
	test_expect_code 2 agent-snap restore 2>err &&
	test_expect_code 2 agent-snap list --lock-fd 9 2>err &&
	test_expect_code 2 agent-snap restore abcd ../x 2>err &&
	test_grep "not a path in the workspace" err
'

test_expect_success 'list with no snapshots: nothing; restore of none: exit 1' '
	mkdir w &&
	agent-snap -C w list >out &&
	test_line_count = 0 out &&
	test_expect_code 1 agent-snap -C w restore abcdef 2>err &&
	test_grep "no snapshots here" err
'

test_expect_success 'every step restored exactly: writes, appends, deletions, renames, modes, links, binary, empty directories' '
	mkdir w && cd w &&
	echo one >a.txt && printf "\000\001\377bin" >b.bin && mkdir -p src/deep &&
	echo code >src/deep/m.c && ln -s a.txt link && mkdir empty &&
	printf "*.log\n" >.gitignore && echo kept >x.log &&
	manifest . | grep -v x.log >../m1 && s1=$(agent-snap take --step 1) &&
	echo two >>a.txt && rm b.bin && mv src/deep/m.c src/m.c &&
	chmod +x src/m.c && mkdir -p new/empty/deeper && rmdir empty &&
	printf "\377\376" >new/bin && ln -sf src/m.c link && chmod 444 a.txt &&
	manifest . | grep -v x.log >../m2 && s2=$(agent-snap take --step 2) &&
	rm -rf src new && echo three >c.txt && mkdir -p empty/x &&
	chmod u+w a.txt && printf "" >a.txt && rm link && mkdir link &&
	manifest . | grep -v x.log >../m3 && s3=$(agent-snap take --step 3) &&
	echo after >>c.txt && echo junk >junk && echo more >x.log &&
	agent-snap restore "$s1" >../r1 && manifest . | grep -v x.log >../now &&
	test_cmp ../m1 ../now &&
	agent-snap restore "$s3" >../r3 && manifest . | grep -v x.log >../now &&
	test_cmp ../m3 ../now &&
	agent-snap restore "$s2" >../r2 && manifest . | grep -v x.log >../now &&
	test_cmp ../m2 ../now &&
	agent-snap restore "$s1" >../r1b && manifest . | grep -v x.log >../now &&
	test_cmp ../m1 ../now &&
	echo more >../expect && test_cmp ../expect x.log &&
	jq -e --arg s "$s2" ".id == \$s" ../r2 &&
	before=$(jq -r .before ../r1) &&
	agent-snap restore "$before" && test_grep after c.txt && test_grep junk junk &&
	agent-snap list >../list && test_line_count = 13 ../list &&
	jq -e -s "[.[] | select(.kind == \"step\") | .step] == [3, 2, 1]" ../list &&
	jq -e -s "[.[] | select(.kind == \"restore\")] | length == 5" ../list
'

test_expect_success 'list: newest first, by session, with the calls and the files changed' '
	mkdir w && cd w && echo a >a &&
	agent-snap take --session s1 --step 1 --calls c1,c2 >../id1 &&
	echo b >b && echo c >c &&
	agent-snap take --session s2 --step 7 >../id2 &&
	AGENT_SESSION=s1 agent-snap take --step 2 >../id3 &&
	agent-snap list >../all &&
	jq -r .id ../all >../ids &&
	printf "%s\n" "$(cat ../id3)" "$(cat ../id2)" "$(cat ../id1)" >../expect &&
	test_cmp ../expect ../ids &&
	agent-snap list --session s1 >../s1 && test_line_count = 2 ../s1 &&
	jq -e -s ".[1] | .calls == [\"c1\", \"c2\"] and .step == 1 and .session == \"s1\" and .files == 1 and (.time | test(\"^20..-..-..T\"))" ../s1 &&
	jq -e -s ".[0].files == 0" ../s1 &&
	agent-snap list --session s2 >../s2 && jq -e ".files == 2 and .step == 7" ../s2 &&
	agent-snap take >/dev/null && agent-snap list >../all &&
	jq -e -s ".[0].session == null and .[0].step == null" ../all
'

test_expect_success 'diff: a snapshot against the workspace, and against another' '
	mkdir w && cd w && printf "one\ntwo\n" >f && echo gone >g &&
	id=$(agent-snap take) &&
	printf "one\nTWO\n" >f && rm g && echo new >n &&
	agent-snap diff "$id" >../d &&
	test_grep "^-two" ../d && test_grep "^+TWO" ../d &&
	test_grep "^deleted file mode" ../d && test_grep "^+new" ../d &&
	id2=$(agent-snap take) &&
	agent-snap diff "$id" "$id2" >../d2 && test_cmp ../d ../d2 &&
	agent-snap diff "$id2" >../d3 && test_line_count = 0 ../d3 &&
	test_expect_code 1 agent-snap diff 0000 2>err && test_grep "no snapshot" err
'

# next_second: returns once the clock has passed into another second
next_second() {
	ns_now=$(date +%s)
	while test "$(date +%s)" = "$ns_now"; do sleep 0.05; done
}

test_expect_success 'diff: an edit of the same size, made in the second of the snapshot, is seen a second later' '
	# the file, the snapshot and the edit fall in one second, the diff
	# in the next: git must not take the file for unchanged on its
	# stat data (a fresh workspace each round: a first snapshot)
	for i in 1 2 3; do
		mkdir w$i && (
			cd w$i && next_second && echo aaaa >f &&
			id=$(agent-snap take) && echo bbb$i >f &&
			next_second &&
			agent-snap diff "$id" >../d$i
		) && test_grep "^+bbb$i" d$i || return 1
	done
'

test_expect_success 'restore of some paths: the rest is left as it is' '
	mkdir w && cd w && mkdir d && echo a >d/a && echo b >b && echo c >c &&
	id=$(agent-snap take) &&
	echo A >d/a && echo new >d/new && echo B >b && rm c &&
	agent-snap restore "$id" d c >/dev/null &&
	echo a >expect && test_cmp expect d/a &&
	test ! -e d/new && echo c >expect && test_cmp expect c &&
	echo B >expect && test_cmp expect b
'

test_expect_success 'the user repository: index, HEAD, stash, untracked files and a rebase in progress untouched' '
	mkdir w && cd w && git init -q . &&
	git config user.email u@example.com && git config user.name U &&
	echo base >f && git add f && git commit -q -m base &&
	git checkout -q -b other && echo theirs >f && git commit -q -am theirs &&
	git checkout -q - && echo ours >f && git commit -q -am ours &&
	test_must_fail git rebase other >/dev/null 2>&1 &&
	test -d .git/rebase-merge &&
	echo staged >s && git add s && echo untracked >u &&
	cp .git/index ../index1 && git --no-optional-locks status --porcelain >../st1 &&
	git rev-parse HEAD >../head1 && ls .git/rebase-merge >../rb1 &&
	find .git -type f | LC_ALL=C sort | xargs cksum >../git1 &&
	id=$(agent-snap take) && echo changed >u && rm s && echo x >f &&
	agent-snap restore "$id" >/dev/null &&
	git --no-optional-locks status --porcelain >../st2 && test_cmp ../st1 ../st2 &&
	cmp ../index1 .git/index && git rev-parse HEAD >../head2 &&
	test_cmp ../head1 ../head2 && ls .git/rebase-merge >../rb2 &&
	test_cmp ../rb1 ../rb2 &&
	find .git -type f | LC_ALL=C sort | xargs cksum >../git2 &&
	test_cmp ../git1 ../git2 &&
	echo untracked >expect && test_cmp expect u
'

test_expect_success 'ignored paths: not in a snapshot, left alone by a restore; --include-ignored takes them' '
	mkdir w && cd w && echo "*.o" >.gitignore && echo v1 >x.o && echo s >src &&
	id=$(agent-snap take) && echo v2 >x.o &&
	agent-snap restore "$id" >/dev/null && echo v2 >expect && test_cmp expect x.o &&
	id2=$(agent-snap --include-ignored take) && echo v3 >x.o &&
	agent-snap --include-ignored restore "$id2" >/dev/null &&
	test_cmp expect x.o
'

test_expect_success 'the workspace cannot make git run a program or change the bytes recorded' '
	mkdir w && cd w && git init -q . &&
	printf "* filter=evil diff=evil text eol=crlf ident\n" >.gitattributes &&
	git config filter.evil.clean "touch \"$PWD/../pwned-clean\"; cat" &&
	git config filter.evil.smudge "touch \"$PWD/../pwned-smudge\"; cat" &&
	git config core.fsmonitor "touch \"$PWD/../pwned-fsmonitor\"" &&
	git config core.hooksPath "$PWD/hooks" && mkdir hooks &&
	printf "#!/bin/sh\ntouch \"%s/../pwned-hook\"\n" "$PWD" >hooks/post-checkout &&
	chmod +x hooks/post-checkout &&
	printf "[core]\n\tfsmonitor = touch \"%s/../pwned-global\"\n[filter \"evil\"]\n\tclean = touch \"%s/../pwned-global\"\n" "$HOME" "$HOME" >../gitconfig &&
	printf "line\r\nlf\n\$Id\$\n" >data && manifest . >../m1 &&
	id=$(GIT_CONFIG_GLOBAL=$PWD/../gitconfig GIT_DIR=$PWD/.git GIT_EXTERNAL_DIFF="touch $PWD/../pwned-ext" agent-snap take) &&
	echo changed >data &&
	GIT_CONFIG_GLOBAL=$PWD/../gitconfig agent-snap diff "$id" >d &&
	GIT_CONFIG_GLOBAL=$PWD/../gitconfig agent-snap restore "$id" >/dev/null &&
	manifest . >../m2 && test_cmp ../m1 ../m2 &&
	printf "line\r\nlf\n\$Id\$\n" >expect && cmp expect data &&
	test_must_fail ls ../pwned-* 2>/dev/null
'

test_expect_success 'a .agent/snap that came with the repository is not used at all' '
	mkdir w && cd w && echo a >a && agent-snap take >../id &&
	cp -R .agent ../copied && mkdir ../w2 && cp -R ../copied ../w2/.agent &&
	printf "[core]\n\tfsmonitor = touch \"%s/../pwned\"\n" "$PWD" >>../w2/.agent/snap/git/config &&
	echo a >../w2/a &&
	test_expect_code 1 agent-snap -C ../w2 list 2>err &&
	test_grep "was not made by agent-snap for this user in this place" err &&
	test_expect_code 1 agent-snap -C ../w2 diff "$(cat ../id)" 2>err &&
	test_expect_code 1 agent-snap -C ../w2 restore "$(cat ../id)" 2>err &&
	test_must_fail ls ../pwned 2>/dev/null &&
	agent-snap -C ../w2 take >../id2 2>err &&
	test_grep "moved aside, unused, to .\.agent/snap\.refused\." err &&
	agent-snap -C ../w2 list >../l && test_line_count = 1 ../l &&
	test_must_fail ls ../pwned 2>/dev/null &&
	ls -d ../w2/.agent/snap.refused.* &&
	mkdir ../w3 && cp -R .agent ../w3/.agent && echo a >../w3/a &&
	agent-snap -C ../w3 take >../id3 2>err &&
	test_grep "moved aside" err &&
	agent-snap -C ../w3 list >../l && test_line_count = 1 ../l
'

test_expect_success 'a git of the workspace is never run' '
	mkdir w && cd w && mkdir bin &&
	printf "#!/bin/sh\ntouch \"%s/../pwned\"\nexit 1\n" "$PWD" >bin/git &&
	chmod +x bin/git && echo a >a &&
	PATH=$PWD/bin:.:$PATH agent-snap take >id &&
	test_must_fail ls ../pwned 2>/dev/null
'

test_expect_success 'restore never writes through a symbolic link out of the workspace' '
	mkdir w outside && cd w && mkdir sub && echo inside >sub/f &&
	id=$(agent-snap take) &&
	rm -rf sub && ln -s ../outside sub &&
	agent-snap restore "$id" >/dev/null &&
	test -d sub && test ! -L sub && echo inside >expect && test_cmp expect sub/f &&
	test_must_fail ls ../outside/f 2>/dev/null &&
	ln -s ../outside sub2 && id2=$(agent-snap take) && rm sub2 && mkdir sub2 &&
	echo x >sub2/f && agent-snap restore "$id" sub2 >/dev/null &&
	test ! -e sub2 && test_must_fail ls ../outside/f 2>/dev/null
'

test_expect_success 'restore is refused while a session holds the lock' '
	mkdir -p w/.agent && cd w && echo a >a && id=$(agent-snap take) &&
	echo b >a &&
	: >../hold &&
	{ flock .agent/lock sh -c "echo held >../held; while [ -e ../hold ]; do sleep 0.05; done" & pid=$!; } &&
	test_when_finished "rm -f ../hold" &&
	wait_until 10 test -s ../held &&
	test_expect_code 1 agent-snap restore "$id" 2>err &&
	test_grep "a session of agent-run is working here" err &&
	echo b >expect && test_cmp expect a &&
	exec 7>>.agent/lock &&
	test_expect_code 1 agent-snap restore --lock-fd 7 "$id" 2>err &&
	test_grep "not agent-run.s lock of this workspace, held" err &&
	rm ../hold && wait $pid &&
	flock 7 && agent-snap restore --lock-fd 7 "$id" >/dev/null &&
	echo a >expect && test_cmp expect a
'

# many FILES files of a few bytes in 100 directories
many_files() {
	i=0
	while [ "$i" -lt 100 ]; do
		mkdir -p "d$i" && seq 1 "$(($1 / 100))" | sed "s|.*|d$i/&|" |
			xargs -n 500 touch || return 1
		i=$((i + 1))
	done
}

test_expect_success 'kill -9 in the middle of a snapshot: the workspace and the repository stay usable' '
	mkdir w && cd w && many_files 6000 && manifest . >../m1 &&
	{ agent-snap take >/dev/null 2>&1 & pid=$!; } &&
	wait_until 20 test -e .agent/snap/index.lock &&
	kill -9 $pid && test_expect_code 137 wait $pid &&
	manifest . >../m2 && test_cmp ../m1 ../m2 &&
	id=$(agent-snap take) && echo x >d1/1 && rm d2/2 &&
	agent-snap restore "$id" >/dev/null && manifest . >../m3 &&
	test_cmp ../m1 ../m3
'

test_expect_success 'kill -9 in the middle of a restore: both usable, and the restore can be done again' '
	mkdir w && cd w && many_files 6000 && manifest . >../m1 &&
	id=$(agent-snap take) && rm -rf d1* d2* d3* && echo new >new &&
	manifest . >../m2 &&
	{ agent-snap restore "$id" >/dev/null 2>&1 & pid=$!; } &&
	wait_until 20 test -e d1 &&
	kill -9 $pid && test_expect_code 137 wait $pid &&
	agent-snap restore "$id" >/dev/null && manifest . >../m3 &&
	test_cmp ../m1 ../m3 &&
	agent-snap list >l && jq -e -s "map(select(.kind == \"before-restore\")) | length >= 1" l
'

test_expect_success 'gc: drops what is past the budget, never what a transcript names' '
	mkdir -p w/.agent/sessions && cd w && echo 1 >f && a=$(agent-snap take) &&
	echo 2 >f && b=$(agent-snap take) && echo 3 >f && c=$(agent-snap take) &&
	printf "{\"role\":\"assistant\",\"checkpoint\":\"%s\"}\n" "$a" >.agent/transcript.jsonl &&
	printf "{\"role\":\"assistant\",\"checkpoint\":\"%s\"}\n" "$b" >.agent/sessions/old.jsonl &&
	agent-snap gc --max-age 0 >out &&
	jq -e ".kept == 2 and .dropped == 1 and .referenced == 2" out &&
	agent-snap list >l && jq -r .id l | LC_ALL=C sort >ids &&
	printf "%s\n" "$a" "$b" | LC_ALL=C sort >expect && test_cmp expect ids &&
	test_expect_code 1 agent-snap restore "$c" 2>err &&
	agent-snap restore "$a" >/dev/null && echo 1 >expect && test_cmp expect f
'

test_done
