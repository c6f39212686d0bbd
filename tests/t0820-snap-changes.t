#!/bin/sh
# agent-snap checkpoint's snapshots from the paths changed since the last
# one: each must be the tree a whole walk (agent-snap take) finds at the
# same moment, and whenever the changed paths are not known for sure the
# snapshot must be a whole walk ("scan":"full").
. "$(dirname "$0")/lib.sh"

# The stage in the working directory (the workspace), fed through the
# fifo ../in on fd 3; its lines go to ../out.  (What the test keeps is
# beside the workspace, never in it.)
start_stage() {
	mkfifo ../in &&
	{ agent-snap checkpoint "$@" <../in >../out 2>../err & stage=$!; } &&
	exec 3>../in &&
	n=0
}
stop_stage() {
	exec 3>&- && wait "$stage"
}

# step: the stage takes a snapshot (before a bash call); its id in $cp
step() {
	n=$((n + 1)) &&
	call_msg bash "{}" allow "c$n" >&3 &&
	wait_for ../out "$n" &&
	cp=$(sed -n "${n}p" ../out | jq -r .checkpoint) &&
	case $cp in ????????????) ;; *) echo "no checkpoint: $cp" >&2; return 1 ;; esac
}

# empty_dirs ID: the empty directories snapshot ID records
empty_dirs() {
	git --git-dir=.agent/snap/git cat-file -p "$1" >../commit &&
	tail -n 1 ../commit | jq -c .dirs
}

# walked SCAN: the snapshot $cp is the tree (and the empty directories) a
# whole walk takes now, and was made by SCAN (changes or full)
walked() {
	full=$(agent-snap take) &&
	agent-snap diff "$cp" "$full" >../delta &&
	test_cmp /dev/null ../delta &&
	empty_dirs "$cp" >../dirs.cp && empty_dirs "$full" >../dirs.full &&
	test_cmp ../dirs.full ../dirs.cp &&
	agent-snap list >../list &&
	jq -r --arg id "$cp" 'select(.id == $id) | .scan' ../list >../scan &&
	echo "$1" >../want && test_cmp ../want ../scan
}

# first_two: the stage's first two snapshots, whole walks both (its
# watches are made for the second: a stage of --step takes one only)
first_two() {
	step && walked full && step && walked full
}

# a workspace of a few directories and files
fill() {
	mkdir -p w/a/deep w/b w/c && cd w &&
	for d in a a/deep b c; do
		for i in 1 2 3; do echo "file $i of $d" >"$d/f$i"; done
	done &&
	mkdir many && i=0 && while [ "$i" -lt 300 ]; do
		echo "$i" >"many/$i" && i=$((i + 1))
	done &&
	echo top >top.txt && ln -s top.txt link &&
	printf "*.log\n" >.gitignore
}

case $(stat -f -c %T . 2>/dev/null) in
ext2/ext3|xfs|btrfs|tmpfs|f2fs) fast=1 ;;
*) fast=0 ;;
esac

if [ "$fast" = 0 ]; then
	test_skip 'snapshots from the changes' "the scratch directory is on '$(stat -f -c %T .)', which the stage does not trust to report every change"
	test_done
	exit
fi

test_expect_success 'a snapshot from the changes is the tree a whole walk finds' '
	fill && start_stage &&
	test_when_finished "exec 3>&-; wait $stage" &&
	first_two &&
	echo more >>a/f1 && step && walked changes &&
	echo FILE 2 of b >b/f2 && chmod +x b/f2 && step && walked changes &&
	chmod -x b/f2 && ln -sf a/f1 link && step && walked changes &&
	printf "\000\001\377" >c/f1 && rm c/f2 && step && walked changes &&
	mv a/f3 b/f1 && step && walked changes &&
	echo through >a/deep/../../c/f3 && step && walked changes &&
	sed -i s/file/FILE/ a/deep/f1 && step && walked changes &&
	for f in many/* a/f1 b/f1 c/f3; do echo again >>"$f"; done &&
	step && walked changes &&
	stop_stage
'

# inotify_fds: how many inotify descriptors the stage holds
inotify_fds() {
	n_fds=0
	for fd in /proc/"$stage"/fd/*; do
		if [ "$(readlink "$fd")" = "anon_inode:inotify" ]; then
			n_fds=$((n_fds + 1))
		fi
	done
	echo "$n_fds"
}

test_expect_success 'the first snapshot makes no watches (a stage of --step takes one only), the second does' '
	fill && start_stage &&
	test_when_finished "exec 3>&-; wait $stage" &&
	step && walked full && test "$(inotify_fds)" = 0 &&
	step && walked full && test "$(inotify_fds)" = 1 &&
	echo x >>a/f1 && step && walked changes &&
	stop_stage
'

test_expect_success 'a file written through a descriptor kept open (never closed between snapshots)' '
	fill && start_stage &&
	test_when_finished "exec 3>&- 4>&-; wait $stage" &&
	exec 4>>b/f1 &&
	first_two &&
	echo written >&4 && step && walked changes &&
	echo again >&4 && step && walked changes &&
	stop_stage
'

test_expect_success 'an edit of the same size in the second of the snapshot' '
	fill && start_stage &&
	test_when_finished "exec 3>&-; wait $stage" &&
	echo aaaa >c/f1 && first_two &&
	echo bbbb >c/f1 && step && first=$cp &&
	echo cccc >c/f1 && step &&
	git --git-dir=.agent/snap/git cat-file -p "$first:c/f1" >../got &&
	echo bbbb >../want && test_cmp ../want ../got &&
	git --git-dir=.agent/snap/git cat-file -p "$cp:c/f1" >../got &&
	echo cccc >../want && test_cmp ../want ../got &&
	walked changes &&
	stop_stage
'

test_expect_success 'an empty workspace: its snapshots from the changes too (the empty tree), a file made in it still taken' '
	mkdir w && cd w && start_stage &&
	test_when_finished "exec 3>&-; wait $stage || :" &&
	first_two && test "$(git --git-dir=.agent/snap/git rev-parse "$cp^{tree}")" = 4b825dc642cb6eb9a060e54bf8d69288fbee4904 &&
	step && walked changes && step && walked changes &&
	echo new >f && step && walked full && with_f=$cp &&
	echo more >>f && step && walked changes &&
	rm f && step && walked changes && without_f=$cp &&
	git --git-dir=.agent/snap/git cat-file -p "$with_f:f" >../got &&
	echo new >../want && test_cmp ../want ../got &&
	git --git-dir=.agent/snap/git ls-tree --name-only "$without_f" >../names &&
	test_line_count = 0 ../names &&
	step && walked changes &&
	mkdir -p e/mpty && step && walked full && test "$(empty_dirs "$cp")" = "[\"e\",\"e/mpty\"]" &&
	step && walked changes &&
	stop_stage &&
	agent-snap restore "$with_f" >/dev/null && echo new >../want && test_cmp ../want f &&
	agent-snap restore "$without_f" >/dev/null && test ! -e f
'

test_expect_success 'a workspace of only ignored files: the empty tree, from the changes' '
	mkdir w && cd w && printf "*\n" >.gitignore && echo x >a.log && start_stage &&
	test_when_finished "exec 3>&-; wait $stage" &&
	first_two && test "$(git --git-dir=.agent/snap/git rev-parse "$cp^{tree}")" = 4b825dc642cb6eb9a060e54bf8d69288fbee4904 &&
	step && walked changes &&
	stop_stage
'

test_expect_success 'the last file of the workspace removed: the empty tree, from the changes' '
	mkdir w && cd w && echo one >one && start_stage &&
	test_when_finished "exec 3>&-; wait $stage" &&
	first_two && rm one && step && walked changes &&
	echo new >two && step && walked full &&
	stop_stage
'

test_expect_success 'what the changes may not tell: a whole walk' '
	fill && start_stage &&
	test_when_finished "exec 3>&-; wait $stage" &&
	first_two &&
	echo new >b/new && step && walked full &&
	echo edit >>b/new && step && walked changes &&
	mkdir -p n/m && echo deep >n/m/x && step && walked full &&
	rm n/m/x && step && walked full &&
	echo "*.txt" >>.gitignore && echo y >z.txt && step && walked full &&
	echo ignored >b/x.log && step && walked full &&
	echo "*.txt" >.gitignore && step && walked full &&
	mv a/deep d2 && step && walked full &&
	chmod 700 d2 && step && walked full &&
	echo edit >>d2/f1 && step && walked changes &&
	stop_stage
'

test_expect_success 'a file git ignores written again: no whole walk; one new, or no longer ignored, walked for' '
	fill && echo log >b/x.log && start_stage &&
	test_when_finished "exec 3>&-; wait $stage" &&
	first_two &&
	echo more >>b/x.log && step && walked changes &&
	rm b/x.log && step && walked changes &&
	echo again >b/x.log && echo edit >>a/f1 && step && walked changes &&
	echo new >b/y.log && step && walked full &&
	echo more >>b/y.log && step && walked changes &&
	mkdir -p logs/deep && echo x >logs/deep/z.log && step && walked full &&
	echo more >>logs/deep/z.log && step && walked changes &&
	printf "*.txt\n" >.gitignore && step && walked full &&
	echo taken >>b/x.log && step && walked changes &&
	git --git-dir=.agent/snap/git cat-file -p "$cp:b/x.log" >../got &&
	printf "again\ntaken\n" >../want && test_cmp ../want ../got &&
	stop_stage
'

test_expect_success 'a directory git ignores: what changes in it is walked for' '
	fill && printf "build/\n" >>.gitignore && mkdir build && echo o >build/a.o && start_stage &&
	test_when_finished "exec 3>&-; wait $stage" &&
	first_two &&
	echo more >>build/a.o && step && walked full &&
	echo new >build/keep.txt && step && walked full &&
	stop_stage
'

test_expect_success 'a .gitignore that is a symbolic link: no file taken as ignored without a walk' '
	fill && printf "*.log\n" >../rules && mkdir r && ln -s ../../rules r/.gitignore &&
	printf "*.log\n" >.gitignore && echo x >r/x.log && start_stage &&
	test_when_finished "exec 3>&-; wait $stage" &&
	first_two &&
	echo more >>r/x.log && step && walked full &&
	stop_stage
'

test_expect_success 'a .gitignore that is a symbolic link git ignores: no file taken as ignored without a walk' '
	fill && printf "*.log\n" >../rules && mkdir r && ln -s ../../rules r/.gitignore &&
	printf "*.log\nr/.gitignore\n" >.gitignore && echo x >r/x.log && start_stage &&
	test_when_finished "exec 3>&-; wait $stage" &&
	first_two &&
	echo more >>r/x.log && step && walked full &&
	stop_stage
'

test_expect_success 'a file of two links, written through the other one' '
	fill && start_stage &&
	test_when_finished "exec 3>&-; wait $stage" &&
	ln b/f1 c/twin && first_two &&
	echo through the twin >>c/twin && step && walked full &&
	git --git-dir=.agent/snap/git cat-file -p "$cp:b/f1" >../got &&
	tail -n 1 ../got >../last && echo "through the twin" >../want && test_cmp ../want ../last &&
	stop_stage
'

test_expect_success 'an event queue that overflowed: a whole walk, nothing lost' '
	fill && start_stage &&
	test_when_finished "exec 3>&-; wait $stage" &&
	first_two &&
	limit=$(cat /proc/sys/fs/inotify/max_queued_events) &&
	i=0 && while [ $i -le "$limit" ]; do
		: >a/f1 && : >a/f2 && i=$((i + 1))
	done &&
	echo changed >>c/f3 && step && walked full &&
	echo then >>c/f3 && step && walked changes &&
	stop_stage
'

test_expect_success 'the last snapshot dropped by gc: a whole walk' '
	fill && start_stage &&
	test_when_finished "exec 3>&-; wait $stage" &&
	first_two && echo x >>a/f1 && step && walked changes &&
	agent-snap gc --max-age 0 >../gc.out &&
	agent-snap list >../left && test_line_count = 0 ../left &&
	echo y >>a/f1 && step && walked full &&
	git --git-dir=.agent/snap/git fsck --strict >../fsck 2>&1 &&
	stop_stage
'

test_expect_success 'the objects the stage writes are what git writes' '
	fill && start_stage &&
	test_when_finished "exec 3>&-; wait $stage" &&
	step && step &&
	printf "%s\n" 1 2 3 >a/f1 && printf "\377\376" >b/f2 && ln -sf c/f1 link &&
	chmod +x c/f2 && step &&
	git --git-dir=.agent/snap/git fsck --strict --no-dangling >../fsck 2>&1 &&
	sed "/^notice: HEAD points to an unborn branch/d" ../fsck >../bad &&
	test_line_count = 0 ../bad &&
	git --git-dir=.agent/snap/git cat-file -p "$cp" >../commit &&
	test_grep "^author agent-snap <agent-snap@localhost> [0-9]* +0000\$" ../commit &&
	tail -n 1 ../commit >../msg && jq -e ".scan == \"changes\" and .files == 4" ../msg &&
	stop_stage
'

test_expect_success 'checkpoint --full: every snapshot a whole walk' '
	fill && start_stage --full &&
	test_when_finished "exec 3>&-; wait $stage" &&
	step && walked full && step && walked full &&
	echo x >>a/f1 && step && walked full &&
	stop_stage
'

test_done
