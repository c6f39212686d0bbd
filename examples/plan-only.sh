#!/bin/sh
# Plan only: the model may read and keep a todo list, nothing else; the
# plan is printed at the end, also when the session failed, and the exit
# status is agent-run's.
#
#   examples/plan-only.sh -C project "migrate the build to meson"
set -eu
policy=$(mktemp "${TMPDIR:-/tmp}/plan-policy.XXXXXX")
trap 'rm -f "$policy"' EXIT
cat >"$policy" <<'JSON'
{"default": "deny", "rules": [
  {"name": "plan", "if": ".tool == \"run_todo_write\"", "decision": "allow",
   "reason": "planning"},
  {"name": "look", "if": ".tool == \"read_file\" or .tool == \"list_dir\"",
   "decision": "allow", "reason": "reading to plan"}]}
JSON
dir=.
if [ "${1:-}" = -C ]; then dir=$2; shift 2; fi
rc=0
agent-run -q --policy "$policy" --stop-checks 0 --max-steps 20 -C "$dir" \
	"Only plan, do not change anything: read what you need, then write the plan with run_todo_write and stop. The task: $*" >/dev/null ||
	rc=$?
todo-write -C "$dir" --show || :
exit "$rc"
