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

test_expect_success 'the splitter agrees with bash over 3000 lines (seed 29)' '
	{ python3 "$TEST_DIR/shdiff.py" --split "$SPLIT" --lines 3000 \
		--seed 29 >out || { cat out; false; }; } &&
	cat out &&
	test_grep "^shdiff: seed 29: 3000 lines, .*, 0 findings" out
'

test_done
