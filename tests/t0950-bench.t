#!/bin/sh
# The benchmark still runs (a smoke run; no time is asserted).
. "$(dirname "$0")/lib.sh"

test_expect_success 'bench/bench.py: 3 steps, both modes, a table' '
	python3 "$SRC_DIR/bench/bench.py" --bin "$AH_BIN" --steps 3 --runs 1 >out &&
	test_contains out "per step ms (p10-p90)" &&
	grep -q "^ring      3    1 |" out &&
	grep -q "^step      3    1 |" out
'

test_done
