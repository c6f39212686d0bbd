#!/bin/sh
# Many tasks at once, each in its own copy of a project: one line of
# tasks.txt per task, 4 at a time.  Each run has its own transcript,
# audit log and todo.json in work/N.
#
#   examples/parallel.sh project/ tasks.txt
set -eu
src=${1:?usage: parallel.sh PROJECT TASKS}
tasks=${2:?usage: parallel.sh PROJECT TASKS}
mkdir -p work
n=0
while IFS= read -r task; do
	n=$((n + 1))
	rm -rf "work/$n" && cp -R "$src" "work/$n"
	printf '%s\0%s\0' "$n" "$task"
done <"$tasks" |
	xargs -0 -n 2 -P 4 sh -c 'agent-run -q -y -C "work/$1" "$2" >"work/$1.answer" 2>"work/$1.log"; echo "task $1: exit $?"' sh
