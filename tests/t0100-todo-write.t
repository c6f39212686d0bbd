#!/bin/sh
# todo-write: the seed's rules and texts, from tests/data/todo-write.cases.
. "$(dirname "$0")/lib.sh"

# Splits the cases file into case-N/{args,status,expect}.
n=0
state=args
while IFS= read -r line; do
	case $state:$line in
	args:'#'*|args:'') continue ;;
	args:*)
		n=$((n + 1))
		mkdir "$SCRATCH/case-$n"
		printf '%s\n' "$line" >"$SCRATCH/case-$n/args"
		: >"$SCRATCH/case-$n/expect"
		state=status ;;
	status:*)
		printf '%s\n' "$line" >"$SCRATCH/case-$n/status"
		state=expect ;;
	expect:%%) state=args ;;
	expect:*) printf '%s\n' "$line" >>"$SCRATCH/case-$n/expect" ;;
	esac
done <"$TEST_DIR/data/todo-write.cases"

i=1
while [ "$i" -le "$n" ]; do
	c=$SCRATCH/case-$i
	test_expect_success "case $i: $(cut -c1-60 "$c/args")" "
		mkdir case-$i && cd case-$i &&
		status=0 &&
		{ todo-write <'$c/args' >actual || status=\$?; } &&
		test_cmp '$c/expect' actual &&
		test \"\$status\" -eq $(cat "$c/status") &&
		if test $(cat "$c/status") -eq 0; then
			todo-write --show >shown && test_cmp '$c/expect' shown
		else
			test ! -e todo.json && test ! -e .todo.json.tmp
		fi
	"
	i=$((i + 1))
done

test_done
