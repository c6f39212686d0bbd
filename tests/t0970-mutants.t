#!/bin/sh
# The list of mutants of `make mutate` (tests/mutants, tools/mutate.sh) is
# well formed; running them is too slow for make check.
. "$(dirname "$0")/lib.sh"

test_expect_success 'the mutants of tests/mutants are well formed' '
	sh "$SRC_DIR/tools/mutate.sh" --check >out &&
	test_grep -E "^[0-9]+ mutants: [0-9]+ to run" out
'

test_expect_success 'a malformed record, a missing test, a snippet not there are told' '
	mkdir m &&
	printf "mutant a\nfile lib/http.c\nfrom x\nto y\n" >m/a.txt &&
	MUTANTS_DIR=m test_expect_code 1 sh "$SRC_DIR/tools/mutate.sh" --check 2>err &&
	test_contains err "mutant '\''a'\'' has no '\''tests'\''" &&
	printf "mutant a\nfile lib/http.c\nfrom x\nto y\ntests t9999-none.t\n" >m/a.txt &&
	MUTANTS_DIR=m test_expect_code 1 sh "$SRC_DIR/tools/mutate.sh" --check 2>err &&
	test_contains err "no test '\''t9999-none.t'\''" &&
	printf "mutant a\nfile lib/http.c\nfrom no such text in it\n|at all\nto y\ntests t0340-http.t\n" >m/a.txt &&
	MUTANTS_DIR=m sh "$SRC_DIR/tools/mutate.sh" --check >out &&
	test_grep "^stale  *a " out &&
	test_grep "1 mutants: 0 to run, 0 equivalent, 1 stale" out
'

test_done
