#!/bin/sh
# The splitter against real bash (issue 29): tests/shdiff.py generates
# lines from a fixed seed, runs every line the splitter accepts in bash
# (bash -c, and tool-exec's way) with stub programs and a trace, in a
# throwaway namespace, and fails on any command bash ran that the
# splitter did not list.  `make fuzz-shell` runs it with a random seed.
. "$(dirname "$0")/lib.sh"

SPLIT=$AH_BIN/../tests/shsplit
export SPLIT

if ! unshare -Urmnpf --mount-proc true 2>/dev/null; then
	test_skip 'the differential test against bash' 'no user namespace here'
	test_done
	exit 0
fi

test_expect_success 'shdiff sees a command a splitter did not list' '
	# a splitter that lists too little: only the first command of a line
	cat >fake <<-\EOF &&
	#!/bin/sh
	"$SPLIT" --filter | jq -c ".commands |= .[0:1]"
	EOF
	chmod +x fake &&
	test_expect_code 1 python3 "$TEST_DIR/shdiff.py" --split ./fake \
		--lines 60 --seed 1 >out &&
	test_grep "^finding: \"cat f | head\"" out &&
	test_grep "program .head. ran" out
'

test_expect_success 'shdiff: no process outlives its run (a find / -exec left behind filled the tmpfs of a 100,000-line run)' '
	python3 "$TEST_DIR/shdiff.py" --split "$SPLIT" --timeout 1 \
		--line "find / -exec touch {} \;" --line "git status" >out &&
	cat out &&
	test_grep "^shdiff: seed [0-9]*: 2 lines, 2 accepted .*, 0 findings" out &&
	! grep "outlived its run" out
'

test_expect_success 'shdiff: the log of a stub killed while it wrote it is read up to there (it crashed a 100,000-line run)' '
	cat >parse.py <<-\EOF &&
	import sys
	sys.path.insert(0, sys.argv[1])
	import json
	import shdiff
	for data in (b"2\n2:ls2:-l1\n3:git", b"2\n2:ls2:-l2\n3:git1:", b"2\n2:ls2:-l1\n3:gi",
	             b"2\n2:ls2:-l1"):
	    print(json.dumps(shdiff.parse_log(data)))
	EOF
	python3 parse.py "$TEST_DIR" >out &&
	cat >expect <<-\EOF &&
	[["ls", "-l"], ["git"]]
	[["ls", "-l"], ["git"]]
	[["ls", "-l"]]
	[["ls", "-l"]]
	EOF
	test_cmp expect out
'

test_expect_success 'shdiff prints a finding as it finds it, not at the end of the run' '
	cat >fake <<-\EOF &&
	#!/bin/sh
	"$SPLIT" --filter | jq -c ".commands |= .[0:1]"
	EOF
	chmod +x fake &&
	test_when_finished "kill \$(cat pid) 2>/dev/null || :" &&
	{ python3 "$TEST_DIR/shdiff.py" --split ./fake --workers 1 --timeout 10 \
		--line "cat f | head" --line "find / -exec touch {} \;" >out &
	  echo $! >pid; } &&
	wait_until 15 grep "^finding: \"cat f | head\"" out &&
	! grep "^shdiff: seed" out &&
	test_expect_code 1 wait "$(cat pid)" &&
	test_grep "^shdiff: seed [0-9]*: 2 lines, 2 accepted .*, 2 findings" out
'

test_expect_success 'the splitter agrees with bash over 3000 lines (seed 29)' '
	{ python3 "$TEST_DIR/shdiff.py" --split "$SPLIT" --lines 3000 \
		--seed 29 >out || { cat out; false; }; } &&
	cat out &&
	test_grep "^shdiff: seed 29: 3000 lines, .*, 0 findings" out
'

test_done
