#!/bin/sh
# The file tools and the sandbox against a hostile workspace: planted
# temporary files, metadata changes outside the write roots, and .git.
. "$(dirname "$0")/lib.sh"

# todo ID: a run_todo_write argument with one item.
todo() { printf '{"todos":[{"id":"%s","content":"step %s","status":"pending"}]}' "$1" "$1"; }
# ok OUT: the only result in OUT is not an error.
ok() { jq -e '.content | startswith("Error") | not' "$1" >/dev/null || { cat "$1" >&2; return 1; }; }
# only_planted: no file but the planted one has "tmp" in its name.
only_planted() { test "$(ls -A | grep tmp)" = "$1"; }

# --- temporary files (issue 15, item 10)

test_expect_success 'run_todo_write and todo-write: a FIFO at .todo.json.tmp does not hang them' '
	mkdir w && mkfifo w/.todo.json.tmp &&
	call_msg run_todo_write "$(todo a)" >in &&
	timeout 10 tool-exec -C w <in >out && ok out &&
	jq -e ".todos[0].id == \"a\"" w/todo.json &&
	todo b >list && (cd w && timeout 10 todo-write -q <../list) &&
	jq -e ".todos[0].id == \"b\"" w/todo.json &&
	test -p w/.todo.json.tmp && (cd w && only_planted .todo.json.tmp)
'

test_expect_success 'run_todo_write: a symlink at .todo.json.tmp is neither followed nor an error' '
	mkdir w && echo secret >victim && ln -s ../victim w/.todo.json.tmp &&
	call_msg run_todo_write "$(todo a)" >in &&
	timeout 10 tool-exec -C w <in >out && ok out &&
	jq -e ".todos[0].id == \"a\"" w/todo.json &&
	test "$(cat victim)" = secret && test -L w/.todo.json.tmp
'

test_expect_success 'write_file: a FIFO or a symlink at .NAME.tmp does not hang it or lead it elsewhere' '
	mkdir -p w/sub && mkfifo w/.new.txt.tmp w/sub/.f.txt.tmp &&
	echo old >w/sub/f.txt && echo secret >victim && ln -s ../victim w/.g.txt.tmp &&
	call_msg write_file "{\"path\":\"new.txt\",\"content\":\"one\\n\"}" >in &&
	timeout 10 tool-exec -C w <in >out && ok out && test "$(cat w/new.txt)" = one &&
	call_msg write_file "{\"path\":\"sub/f.txt\",\"content\":\"two\\n\"}" >in &&
	timeout 10 tool-exec -C w <in >out && ok out && test "$(cat w/sub/f.txt)" = two &&
	call_msg write_file "{\"path\":\"g.txt\",\"content\":\"three\\n\"}" >in &&
	timeout 10 tool-exec -C w <in >out && ok out && test "$(cat w/g.txt)" = three &&
	test "$(cat victim)" = secret && test -L w/.g.txt.tmp && test -p w/.new.txt.tmp
'

test_expect_success 'edit_file: a FIFO or a symlink at .NAME.tmp does not hang it or lead it elsewhere' '
	mkdir w && echo "a b c" >w/f.txt && echo "a b c" >w/g.txt && mkfifo w/.f.txt.tmp &&
	echo secret >victim && ln -s ../victim w/.g.txt.tmp &&
	call_msg edit_file "{\"path\":\"f.txt\",\"old_string\":\"b\",\"new_string\":\"B\"}" >in &&
	timeout 10 tool-exec -C w <in >out && ok out && test "$(cat w/f.txt)" = "a B c" &&
	call_msg edit_file "{\"path\":\"g.txt\",\"old_string\":\"c\",\"new_string\":\"C\"}" >in &&
	timeout 10 tool-exec -C w <in >out && ok out && test "$(cat w/g.txt)" = "a b C" &&
	test "$(cat victim)" = secret
'

test_expect_success 'a failed write leaves no temporary file, and a killed writer'"'"'s is removed by the next' '
	mkdir w && mkfifo w/.todo.json.tmp && : >w/.todo.json.AAAAbbbb1234.tmp &&
	jq -nc "{todos: [range(200) | {id: \"\(.)\", content: (\"step \" * 20), status: \"pending\"}]}" >big &&
	(cd w && trap "" XFSZ && ulimit -f 4 && test_must_fail timeout 10 todo-write -q <../big 2>../err) &&
	test_grep "File too large" err &&
	(cd w && only_planted .todo.json.tmp) &&
	: >w/.todo.json.CCCCdddd5678.tmp && todo a >list && (cd w && timeout 10 todo-write -q <../list) &&
	(cd w && only_planted .todo.json.tmp)
'

test_done
