#!/bin/sh
# The benchmark still runs (a smoke run; no time is asserted).
. "$(dirname "$0")/lib.sh"

test_expect_success 'bench/bench.py: 3 steps, both modes and the floors, a table with ratios' '
	python3 "$SRC_DIR/bench/bench.py" --bin "$AH_BIN" --steps 3 --runs 1 >out &&
	test_grep "per step ms (p10-p90)  xfloor  xphys" out &&
	test_grep "^physical floor: [0-9.]* ms (bash -c true [0-9.]* ms + loopback round trip [0-9.]* ms)" out &&
	test_grep "^workspace: a small repository (--workspace repo): 88 files in 6 directories and the top" out &&
	test_grep "^floor     3    1 | .*  1\.00 " out &&
	test_grep "^ring      3    1 |" out &&
	test_grep "^step      3    1 |" out
'

test_expect_success 'bench/bench.py: two builds side by side, each row named' '
	python3 "$SRC_DIR/bench/bench.py" --bin "a=$AH_BIN,b=$AH_BIN" --steps 2 --runs 1 \
		--modes ring --workspace empty >out &&
	test_grep "^workspace: empty (--workspace empty)" out &&
	test_grep "^ring      2    1 |.*   a$" out &&
	test_grep "^ring      2    1 |.*   b$" out
'

test_expect_success 'bench/bench.py --latency: the server waits before each answer, and the wait is not counted' '
	python3 "$SRC_DIR/bench/bench.py" --bin "$AH_BIN" --steps 3 --runs 1 \
		--modes ring --latency 300 >out &&
	test_grep "^the server waits 300 ms before each answer (not counted)$" out &&
	grep "^ring " out >row &&
	test_line_count = 1 row &&
	# the session took the waits (3 answers), the steps did not
	awk -F"|" "{ split(\$4, w, \" \"); split(\$2, s, \" \");
		exit !(w[1] >= 0.9 && s[1] < 300) }" row
'

test_expect_success 'bench/bench.py --checkpoints and --snap-disk: on and off side by side, the disk of the snapshots' '
	python3 "$SRC_DIR/bench/bench.py" --bin "$AH_BIN" --checkpoints 100 --steps 3 \
		--runs 1 >out &&
	test_grep "^     100          off | " out &&
	test_grep "^     100           on | .* [+-][0-9.]* | " out &&
	python3 "$SRC_DIR/bench/bench.py" --bin "$AH_BIN" --snap-disk 3 >out &&
	test_grep "^3 steps, each rewriting a 1 MB text file (one line changed): [0-9.]* MB in .agent/snap, [0-9.]* MB after agent-snap gc" out
'

test_expect_success 'bench/bench.py --snap-stage: the checkpoint stage alone, from the changes and by whole walks' '
	python3 "$SRC_DIR/bench/bench.py" --bin "$AH_BIN" --snap-stage 100 --steps 3 \
		--runs 1 >out &&
	test_grep "^     100  changes | *[0-9.]* ( *[0-9.]*- *[0-9.]*) *[0-9.]* | " out &&
	test_grep "^     100     full | " out
'

test_expect_success 'bench/bench.py --mcp: an MCP call direct and through tool-exec and mcp-bridge' '
	python3 "$SRC_DIR/bench/bench.py" --bin "$AH_BIN" --mcp 20 --runs 1 >out &&
	test_grep "^MCP tool call over stdio, 20 calls x 1 runs" out &&
	test_grep "^  the server.s own time  *[0-9.]* ms" out &&
	test_grep "^  through the harness  *[0-9.]* ms" out &&
	test_grep "^  added by the harness  *-*[0-9.]* ms (goal: at most 2 ms)" out
'

test_done
