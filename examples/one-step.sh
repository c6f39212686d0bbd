#!/bin/sh
# One step of the agent loop, typed as a pipeline: the model answers the
# transcript, its calls are decided, recorded, run, and their results
# recorded.  Run it again for the next step.
#
#   examples/one-step.sh t.jsonl
set -eu
t=${1:?usage: one-step.sh TRANSCRIPT}
tools=${TMPDIR:-/tmp}/agent-tools.$$.json
trap 'rm -f "$tools"' EXIT
tool-exec --schema >"$tools"
# shellcheck disable=SC2094 # agent-step reads all of it before it answers
agent-step --tools "$tools" <"$t" |
	hook-perm |
	hook-audit --tee "$t" |
	tool-exec -v |
	hook-audit --tee "$t" >/dev/null
tail -n 1 "$t"
