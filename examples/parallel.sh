#!/bin/sh
# Many tasks at once with GNU parallel, each in a directory of its own,
# every session's result collected in one JSON Lines file.
#
#   examples/parallel.sh REPO TASKS.jsonl > results.jsonl
#
# TASKS.jsonl has one task a line, {"id": "name", "task": "what to do"}
# ("id" optional: the line number).  Each task gets work/ID: a git
# worktree of REPO (detached at its HEAD) when REPO is a git repository,
# else a copy; there it runs as agent-run -y --json, its events in
# work/ID.events and its progress in work/ID.log.  Each result event,
# with "task_id" added, goes to stdout as its session ends.
#
# JOBS (4) sessions run at a time.  PARALLEL_OPTS goes to parallel, for
# example to spread the tasks over machines that have agent-harness and
# a copy of REPO at the same path:
#
#   PARALLEL_OPTS='--sshlogin 4/host1,4/host2 --workdir .' examples/parallel.sh ...
#
# Sessions that share one API key share its rate limit: the agent-steps
# of the machine share what the server said of it (agent-step(1), Rate
# limits), wait their turn rather than send a request it would refuse,
# and all wait out a 429's retry-after; AGENT_MAX_CONCURRENT bounds the
# requests in flight.  A session that still gets 429 after its retries
# fails with exit 1 and "status": "failed" in its result.  Exit status: 0 when every session is done, 1 when one is not
# (its result says why), 2 usage.
set -eu

if [ "${1:-}" = --one ]; then
	# one task: line $2 of $TASKS, run in its directory
	n=$2
	line=$(sed -n "${n}p" "$TASKS")
	[ -n "$line" ] || exit 0
	id=$(printf '%s\n' "$line" | jq -r --arg n "$n" '.id // $n | tostring')
	case $id in
	''|.*|*/*) echo "parallel.sh: task $n: id '$id' cannot name a directory" >&2; exit 1 ;;
	esac
	task=$(printf '%s\n' "$line" | jq -r '.task')
	dir=work/$id
	if [ ! -e "$dir" ]; then
		if git -C "$REPO" rev-parse --git-dir >/dev/null 2>&1; then
			git -C "$REPO" worktree add -q --detach "$PWD/$dir" >&2
		else
			cp -R "$REPO" "$dir"
		fi
	fi
	st=0
	agent-run -y --json -C "$dir" -- "$task" </dev/null \
		>"$dir.events" 2>"$dir.log" || st=$?
	# the last event is the result; none if agent-run could not start
	tail -n 1 "$dir.events" |
		jq -c --arg id "$id" --argjson st "$st" \
			'select(.type == "result") // {type: "result", status: "failed", exit: $st} | . + {task_id: $id}'
	exit "$st"
fi

[ $# -eq 2 ] || { echo "usage: parallel.sh REPO TASKS.jsonl > results.jsonl" >&2; exit 2; }
REPO=$(cd "$1" && pwd -P)
TASKS=$(cd "$(dirname "$2")" && pwd -P)/$(basename "$2")
export REPO TASKS
jq -e -s 'all(.[]; type == "object" and (.task | type == "string"))' "$TASKS" >/dev/null ||
	{ echo "parallel.sh: $2: each line must be an object with a \"task\" string" >&2; exit 2; }
mkdir -p work
# shellcheck disable=SC2086 # PARALLEL_OPTS is a list of options
seq "$(wc -l <"$TASKS")" |
	parallel --will-cite --line-buffer --jobs "${JOBS:-4}" ${PARALLEL_OPTS:-} \
		sh "$0" --one '{}' || exit 1
