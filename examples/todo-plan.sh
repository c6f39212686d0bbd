#!/bin/sh
# Keeps a task list from the shell, the way the model keeps it: every
# change is a whole new snapshot sent to todo-write.
#
#   examples/todo-plan.sh add "Run the tests"    # the first item is task-1
#   examples/todo-plan.sh start task-1
#   examples/todo-plan.sh done task-1
#   examples/todo-plan.sh show
set -eu

file=${AGENT_TODO_FILE:-todo.json}
[ -f "$file" ] || echo '{"todos":[]}' >"$file"

case ${1:-show} in
add)
	[ $# -eq 2 ] || { echo "usage: $0 add TEXT" >&2; exit 2; }
	jq -c --arg c "$2" \
		'.todos += [{id: "task-\(.todos | length + 1)", content: $c}]' \
		"$file" | todo-write -f "$file" ;;
start)
	# one in_progress at a time: whatever was running goes back to pending
	[ $# -eq 2 ] || { echo "usage: $0 start ID" >&2; exit 2; }
	jq -c --arg id "$2" '.todos |= map(
		if .id == $id then .status = "in_progress"
		elif .status == "in_progress" then .status = "pending"
		else . end)' "$file" | todo-write -f "$file" ;;
done)
	[ $# -eq 2 ] || { echo "usage: $0 done ID" >&2; exit 2; }
	jq -c --arg id "$2" \
		'(.todos[] | select(.id == $id)).status = "completed"' \
		"$file" | todo-write -f "$file" ;;
show)
	todo-write -f "$file" --show ;;
*)
	echo "usage: $0 add TEXT | start ID | done ID | show" >&2
	exit 2 ;;
esac
